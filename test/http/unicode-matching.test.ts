/**
 * Unicode-equivalent text finds the same guest, account and team member (docs/guests.md and
 * docs/identifiers.md, "Equivalent text"). Integrators send names composed (NFC: "é") or
 * decomposed (NFD: "e" + U+0301, macOS and some CRMs); the service compares caller text on its
 * NFC form, lower-cased where the match ignores case, and answers every value exactly as sent.
 * On the embedded read store, and on MongoDB (FerretDB in the tests) when one is reachable.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realServer } from '../support/real-servers.js';
import { adminKey, createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';

const nfc = (text: string) => text.normalize('NFC');
const nfd = (text: string) => text.normalize('NFD');

const mongo = await realServer('mongo');
const stores: [string, Record<string, string>][] = [['embedded read store', {}]];
if (mongo.url) stores.push(['MongoDB read store', { MONGO_URL: mongo.url, MONGO_DB: `unicode_${randomUUID().replaceAll('-', '').slice(0, 12)}` }]);
else describe.skip(`Unicode matching on MongoDB (skipped: ${mongo.skipReason})`, () => it('runs when MONGO_URL or a container runtime is available', () => {}));
afterAll(() => mongo.stop());

describe.each(stores)('Unicode-equivalent text on the %s', (_name, env) => {
  let service: TestService;
  let alice: Client;

  beforeAll(async () => {
    service = await startTestService(env);
    alice = await createClient(service);
  });
  afterAll(() => service?.close());

  const createGuests = async (eventId: string, records: Record<string, unknown>[]) => {
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`, records);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body as Record<string, any>[];
  };

  describe('guests', () => {
    it('byinfo finds additional info sent in the other form, in any case, and answers it exactly as sent', async () => {
      const eventId = await newEvent(alice);
      await createGuests(eventId, [
        { firstName: 'Composed', additionalInfo: nfc('Table Zoë, José') },
        { firstName: 'Decomposed', additionalInfo: nfd('Table Zoë, José') },
        { firstName: 'Other', additionalInfo: 'Table Zoe, Jose' },
      ]);
      for (const query of [nfc('josé'), nfd('josé'), nfd('ZOË')]) {
        const path = `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/byinfo?additionalInfo=${encodeURIComponent(query)}`;
        const found = await alice.call('GET', path);
        expect(found.status).toBe(200);
        const byName = Object.fromEntries((found.body as Record<string, any>[]).map((g) => [g.firstName, g.additionalInfo]));
        expect(byName, `byinfo ${JSON.stringify(query)}`).toEqual({ Composed: nfc('Table Zoë, José'), Decomposed: nfd('Table Zoë, José') });
        const paged = await alice.call('GET', `${path}&limit=10`);
        expect((paged.body as { firstName: string }[]).map((g) => g.firstName).sort()).toEqual(['Composed', 'Decomposed']);
      }
    });

    it('the guest list\'s q finds a name, email or customId sent in the other form; the tag filter a tag in the other form', async () => {
      const eventId = await newEvent(alice);
      await createGuests(eventId, [
        { firstName: nfd('Zoë'), lastName: nfd('Müller'), otherNames: nfd('Ångström'), email: nfd('zoë@example.com'), customId: nfd('CRM-Zoë'), tags: nfd('Café') },
        { firstName: 'Zoe', lastName: 'Muller', otherNames: 'Angstrom', tags: 'Cafe' },
      ]);
      const list = async (query: string) => {
        const reply = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}?${query}`);
        expect(reply.status).toBe(200);
        return (reply.body.items as Record<string, any>[]).map((g) => g.lastName);
      };
      for (const q of [nfc('ZOË'), nfc('müller'), nfc('ångström'), nfc('zoë@ex'), nfc('crm-zoë')]) {
        expect(await list(`q=${encodeURIComponent(q)}`), `q=${q}`).toEqual([nfd('Müller')]);
      }
      expect(await list(`tag=${encodeURIComponent(nfc('café'))}`)).toEqual([nfd('Müller')]);
      const [guest] = (await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}?tag=${encodeURIComponent(nfc('CAFÉ'))}`)).body.items;
      expect(guest).toMatchObject({ firstName: nfd('Zoë'), email: nfd('zoë@example.com'), customId: nfd('CRM-Zoë'), tags: nfd('Café') });
    });

    it('one tag in either form is one tag', async () => {
      const eventId = await newEvent(alice);
      const [guest] = await createGuests(eventId, [{ firstName: 'T', tags: `${nfc('Café')},${nfd('café')},VIP` }]);
      expect(guest!.tags).toBe(`${nfc('Café')},VIP`);
    });

    it('a customId in the other form names the same guest: on the guest route, at the door, and for uniqueness', async () => {
      const eventId = await newEvent(alice);
      const [guest] = await createGuests(eventId, [{ firstName: 'José', customId: nfc('José-7') }]);
      const read = await alice.call('GET', `/checkin/v1/api/guest/${encodeURIComponent(nfd('JOSÉ-7'))}?eventId=${encodeURIComponent(eventId)}`);
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(read.body).toMatchObject({ id: guest!.id, customId: nfc('José-7') });
      const scan = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/checkin`, { customId: nfd('josé-7') });
      expect(scan.body).toMatchObject({ result: 'admitted', guest: { id: guest!.id } });
      const other = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Another', customId: nfd('José-7') });
      expect(other.status).toBe(409);
      expect(other.body.code).toBe('custom_id_taken');
    });

    it('a barcode is matched exactly: a barcode in the other form is another code', async () => {
      const eventId = await newEvent(alice);
      await createGuests(eventId, [{ firstName: 'B', barcode: nfc('CAFÉ-1') }]);
      const scan = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/checkin`, { barcode: nfd('CAFÉ-1') });
      expect(scan.body).toMatchObject({ result: 'rejected', reason: 'not_found' });
      const exact = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/checkin`, { barcode: nfc('CAFÉ-1') });
      expect(exact.body).toMatchObject({ result: 'admitted' });
    });
  });

  describe('personal data', () => {
    it('a door scan that looked up the guest\'s customId in the other form is the guest\'s: listed in its personal data, and erased with it', async () => {
      const eventId = await newEvent(alice);
      const path = `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/checkin`;
      const before = await alice.call('POST', path, { guestId: nfd('crm-zoë-9') });
      expect(before.body).toMatchObject({ result: 'rejected', reason: 'not_found' });
      const [guest] = await createGuests(eventId, [{ firstName: 'Zoë', customId: nfc('CRM-Zoë-9') }]);
      const data = await alice.call('GET', `/checkin/v1/api/guest/${guest!.id}/personal-data`);
      expect(data.status, JSON.stringify(data.body)).toBe(200);
      expect(data.body.unmatchedScans.map((s: { lookup: unknown }) => s.lookup)).toEqual([{ guestId: nfd('crm-zoë-9') }]);
      expect((await alice.call('POST', `/checkin/v1/api/guest/${guest!.id}/erase`, { reason: 'request' })).status).toBe(200);
      const scans = await alice.call('GET', `/checkin/v1/api/event/${encodeURIComponent(eventId)}/scans?result=rejected`);
      expect(scans.body.items).toHaveLength(1);
      expect(scans.body.items[0].lookup).toBeUndefined();
    });
  });

  describe('accounts and team members', () => {
    const password = 'door staff pass 1';
    const member = (userName: string, fields: Record<string, unknown> = {}) =>
      alice.call('POST', '/checkin/v1/api/teammember', { userName, password, email: `door${randomUUID().slice(0, 8)}@example.com`, ...fields });

    it('a team member signs in and is listed by a user name typed in the other form, in any case; the name is answered as sent', async () => {
      const userName = nfc(`José.${randomUUID().slice(0, 6)}`);
      const created = await member(userName);
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const token = await passwordToken(service.url, nfd(userName.toUpperCase()), password);
      expect(token).toBeTruthy();
      const listed = await alice.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(nfd(userName))}/events`);
      expect(listed.status, JSON.stringify(listed.body)).toBe(200);
      expect(listed.body).toEqual([expect.objectContaining({ id: created.body.id, userName })]);
    });

    it('a user name in the other form is the same name: taken, and a password equal to it is refused', async () => {
      const userName = nfd(`Zoë.${randomUUID().slice(0, 6)}`);
      expect((await member(userName)).status).toBe(200);
      const again = await member(nfc(userName));
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('username_taken');
      const weak = await member(`other.${randomUUID().slice(0, 6)}`, { password: nfc('Zoë-Zoë-Zoë!'), userName: nfd('zoë-zoë-zoë!') });
      expect(weak.status).toBe(400);
      expect(weak.body.code).toBe('weak_password');
    });

    it('a user name reserved decomposed before names were keyed on NFC stays taken in the composed form', async () => {
      const userName = nfd(`Zoë.${randomUUID().slice(0, 6)}`);
      expect((await member(userName)).status).toBe(200);
      // Its reservation as the release before this one made it: under the name lower-cased as sent (decomposed), none under its NFC key.
      const { eventStore } = service.platform;
      const metadata = { tenantId: alice.id, actor: { type: 'system' as const, id: 'test' }, correlationId: randomUUID(), occurredAt: new Date().toISOString() };
      const stream = `username-${nfc(userName).toLowerCase()}`;
      const [reserved] = await eventStore.readStream(stream);
      await eventStore.append(stream, [{ id: randomUUID(), type: 'KeyReleased', data: { key: userName, ownerId: reserved!.data.ownerId }, metadata }], reserved!.revision);
      await eventStore.append(`username-${userName.toLowerCase()}`, [{ id: randomUUID(), type: 'KeyReserved', data: reserved!.data, metadata }], 'no_stream');
      for (const copy of [nfc(userName), nfc(userName).toUpperCase()]) {
        const taken = await member(copy);
        expect(taken.status, JSON.stringify(taken.body)).toBe(409);
        expect(taken.body.code).toBe('username_taken');
      }
      const admin = { authorization: `Bearer ${adminKey}` };
      const account = await request(service.url, 'POST', '/admin/v1/accounts', { email: `zoe${randomUUID().slice(0, 8)}@example.com`, password: 'correct horse battery staple', userName: nfc(userName) }, admin);
      expect(account.status, JSON.stringify(account.body)).toBe(409);
      expect(account.body.code).toBe('username_taken');
    });

    it('an account renamed to its own name in the other form keeps the name reserved and signs in by either form', async () => {
      const userName = nfc(`Émile.${randomUUID().slice(0, 6)}`);
      const admin = { authorization: `Bearer ${adminKey}` };
      const email = `emile${randomUUID().slice(0, 8)}@example.com`;
      const created = await request(service.url, 'POST', '/admin/v1/accounts', { email, password: 'correct horse battery staple', userName }, admin);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const token = await passwordToken(service.url, nfd(userName), 'correct horse battery staple');
      const headers = { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': created.body.subscriptionKey };
      const renamed = await request(service.url, 'PUT', '/users/v1/api/user', { id: created.body.id, userName: nfd(userName) }, headers);
      expect(renamed.status, JSON.stringify(renamed.body)).toBe(204);
      const taken = await member(nfc(userName));
      expect(taken.status, JSON.stringify(taken.body)).toBe(409);
      expect(await passwordToken(service.url, nfc(userName), 'correct horse battery staple')).toBeTruthy();
      const read = await request(service.url, 'GET', `/users/v1/api/users/email?email=${encodeURIComponent(email)}`, undefined, headers);
      expect(read.body.userName).toBe(nfd(userName));
    });

    it('users/email finds the caller by its email in a canonically equivalent form (U+212A KELVIN SIGN is K)', async () => {
      const admin = { authorization: `Bearer ${adminKey}` };
      const email = `kelvin${randomUUID().slice(0, 8)}@example.com`;
      const created = await request(service.url, 'POST', '/admin/v1/accounts', { email, password: 'correct horse battery staple' }, admin);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const token = await passwordToken(service.url, email, 'correct horse battery staple');
      const headers = { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': created.body.subscriptionKey };
      const read = await request(service.url, 'GET', `/users/v1/api/users/email?email=${encodeURIComponent(email.replace('k', '\u212A'))}`, undefined, headers);
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(read.body.email).toBe(email);
    });
  });
});
