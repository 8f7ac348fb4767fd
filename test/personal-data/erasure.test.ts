/**
 * Issue 14: crypto-shredding, erasure, retention and access, through HTTP. The grep test runs
 * on the embedded default and, when MONGO_URL is set (CI), on the MongoDB-protocol read store.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { readOutbox } from '../support/mail-readers.js';
import { eventually } from '../webhooks/receiver.js';
import type { RetentionWorker } from '../../src/workers/retention.js';
import { GuestResponse } from '../../src/http/schemas/guest.js';
import { customIdStream, reservationDecider } from '../../src/domain/reservation.js';
import { filesHolding, mongoDocsHolding } from '../support/files-holding.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';

const stores: { name: string; env: () => Record<string, string> }[] = [{ name: 'embedded read store', env: () => ({}) }];
if (process.env.MONGO_URL) {
  const dbName = `pii_${Date.now()}_${process.pid}`;
  stores.push({ name: 'MongoDB read store', env: () => ({ MONGO_URL: process.env.MONGO_URL!, MONGO_DB: dbName }) });
}

describe.each(stores)('personal data on the $name', ({ env }) => {
  let service: TestService;
  let client: Client;
  let eventId: string;
  let templateId: string;
  const settings = env();

  beforeAll(async () => {
    service = await startTestService({ ...settings, INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
    client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    eventId = (await client.call('POST', `${api}/event`, { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const template = await client.call('POST', `${comms}/template`, {
      eventId,
      name: 'Invitation',
      subject: 'Welcome {{firstName}}',
      html: '<p>Dear {{fullName}}, your code is {{barcode}}</p>',
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    templateId = template.body.id;
  });
  afterAll(async () => {
    if (settings.MONGO_URL) {
      const mongo = new MongoClient(settings.MONGO_URL);
      await mongo.db(settings.MONGO_DB).dropDatabase().catch(() => undefined);
      await mongo.close();
    }
    await service.close();
  });

  const person = () => {
    const tag = randomUUID().slice(0, 8);
    return {
      firstName: `Zebulon${tag}`,
      // Beyond ASCII: the search must find a name as the stores write it (UTF-8), not only ASCII ones.
      lastName: `Quïxoté${tag}`,
      email: `zeb.${tag}@example.com`,
      barcode: `BC-${tag}`,
      customId: `crm-${tag}`,
      additionalInfo: `allergic to ${tag}-nuts`,
    };
  };

  it('seals personal fields in the event store, and after an erase they are nowhere under DATA_DIR nor in the read store', async () => {
    const p = person();
    const created = await client.call('POST', `${api}/guest`, { eventId, ...p, commsTemplateId: templateId, plusOnes: 1 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    // The invitation email reaches the outbox (DATA_DIR/outbox); the hang guard is far above any real figure.
    await eventually(async () => (await readOutbox(path.join(service.dataDir, 'outbox'))).some((m) => m.to.email === p.email), 60_000, 'invitation email');
    const admitted = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: p.barcode, gate: 'North' });
    expect(admitted.body.result).toBe('admitted');
    const exported = await client.call('POST', `${api}/event/export?type=csv`, { id: eventId, title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    expect(exported.status, JSON.stringify(exported.body)).toBe(200);
    await eventually(async () => {
      const invitations = await client.call('GET', `${comms}/invitations?attendeeId=${id}`);
      return invitations.body.items?.[0]?.status === 'sent';
    }, 60_000, 'invitation sent');

    // Before: only ciphertext in the event store; the read models and files hold the data.
    const before = filesHolding(service.dataDir, [p.email, p.lastName, p.barcode]);
    // The search finds what is there (the outbox email, the read models when embedded, the export file)...
    expect(before).toEqual(expect.arrayContaining([expect.stringMatching(/^outbox\//), expect.stringMatching(/^exports\//)]));
    // ...and the event store holds only ciphertext.
    expect(before.filter((f) => f.startsWith('events.sqlite'))).toEqual([]);
    // The name beyond ASCII is found by itself where it is written as text (the CSV export).
    expect(filesHolding(service.dataDir, [p.lastName])).toEqual(expect.arrayContaining([expect.stringMatching(/^exports\//)]));
    const access = await client.call('GET', `${api}/guest/${id}/personal-data`);
    expect(access.status).toBe(200);
    expect(access.body).toMatchObject({
      guestId: id,
      eventId,
      guest: { firstName: p.firstName, email: p.email, barcode: p.barcode },
      invitations: [{ status: 'sent', to: p.email }],
      scans: [{ result: 'admitted', gate: 'North' }],
      ticketCode: null,
    });
    const registered = access.body.history.find((e: { type: string }) => e.type === 'GuestRegistered');
    expect(registered.data).toMatchObject({ firstName: p.firstName, lastName: p.lastName, email: p.email });
    expect(JSON.stringify(registered.data)).not.toContain('personalData"');

    const erased = await client.call('POST', `${api}/guest/${p.customId}/erase`, { reason: 'GDPR art. 17 request 42' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body).toMatchObject({ id, eventId, erased: true, erasedBy: client.id, reason: 'GDPR art. 17 request 42' });

    // After: the guest keeps ids, times and counts; its personal fields are null.
    const guest = await client.call('GET', `${api}/guest/${id}`);
    expect(guest.body).toMatchObject({ id, eventId, erased: true, firstName: null, lastName: null, email: null, barcode: null, customId: null, plusOnes: 1 });
    expect(guest.body.admitted).toEqual(expect.any(String));
    // The document's Guest answer allows it (null personal fields, erased, erasedAt): schemathesis checks answers against it.
    const documented = GuestResponse.safeParse(guest.body);
    expect(documented.success, JSON.stringify(documented.error?.issues)).toBe(true);
    expect((await client.call('GET', `${api}/guests/${eventId}/byinfo?additionalInfo=nuts`)).body).toEqual([]);
    const list = await client.call('GET', `${api}/guests/${eventId}`);
    expect(JSON.stringify(list.body)).not.toContain(p.lastName);
    const history = await client.call('GET', `${api}/guest/${id}/history`);
    expect(history.body.events.map((e: { type: string }) => e.type)).toContain('GuestErased');
    expect(history.body.events.find((e: { type: string }) => e.type === 'GuestRegistered').data).toMatchObject({ personalDataErased: true });
    expect(JSON.stringify(history.body)).not.toContain(p.email);
    const stats = await client.call("GET", `${api}/event/${eventId}/stats`);
    if (stats.status === 200) expect(JSON.stringify(stats.body)).not.toContain(p.lastName);

    // Idempotent: the second erase answers the first.
    const again = await client.call('POST', `${api}/guest/${id}/erase`, { reason: 'twice' });
    expect(again.body).toEqual(erased.body);

    const needles = [p.email, p.firstName, p.lastName, p.barcode, p.customId, p.additionalInfo];
    expect(filesHolding(service.dataDir, needles)).toEqual([]);
    if (settings.MONGO_URL) expect(await mongoDocsHolding(settings.MONGO_URL, settings.MONGO_DB!, needles)).toEqual([]);

    // A rebuild from the events gives the same guest, and still nothing readable.
    await service.runner!.rebuild([]);
    expect((await client.call('GET', `${api}/guest/${id}`)).body).toEqual(guest.body);
    expect(filesHolding(service.dataDir, needles)).toEqual([]);
    if (settings.MONGO_URL) expect(await mongoDocsHolding(settings.MONGO_URL, settings.MONGO_DB!, needles)).toEqual([]);

    // The barcode and customId are free again.
    const reuse = await client.call('POST', `${api}/guest`, { eventId, firstName: 'New', barcode: p.barcode, customId: p.customId });
    expect(reuse.status, JSON.stringify(reuse.body)).toBe(200);
    const scan = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: p.barcode });
    expect(scan.body).toMatchObject({ result: 'admitted' });
    expect(JSON.stringify(scan.body)).toContain(reuse.body.id);
  });

  it('erases a batch by ids, then every guest of the event; an unknown id erases nothing (404)', async () => {
    const event = (await client.call('POST', `${api}/event`, { title: 'Batch', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const people = [person(), person(), person()];
    const ids: string[] = [];
    for (const p of people) ids.push((await client.call('POST', `${api}/guest`, { eventId: event, ...p })).body.id);
    const refused = await client.call('POST', `${api}/guests/${event}/erase`, { reason: 'cleanup', ids: [ids[0], randomUUID()] });
    expect(refused.status).toBe(404);
    expect(refused.body.errors).toEqual([{ path: 'ids.1', message: expect.any(String) }]);
    expect((await client.call('GET', `${api}/guest/${ids[0]}`)).body.erased).toBeUndefined();
    expect((await client.call('POST', `${api}/guests/${event}/erase`, { reason: 'cleanup' })).status).toBe(400);

    const batch = await client.call('POST', `${api}/guests/${event}/erase`, { reason: 'cleanup', ids: [ids[0], people[1]!.customId] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.erased).toBe(2);
    expect((await client.call('GET', `${api}/guest/${ids[2]}`)).body.email).toBe(people[2]!.email);
    const all = await client.call('POST', `${api}/guests/${event}/erase`, { reason: 'event over', all: true });
    expect(all.body.erased).toBe(3);
    for (const id of ids) expect((await client.call('GET', `${api}/guest/${id}`)).body).toMatchObject({ erased: true, email: null });
    expect(filesHolding(service.dataDir, people.flatMap((p) => [p.email, p.lastName, p.barcode]))).toEqual([]);
  });

  it('an erasure retried by customId finds the guest it erased (a lost answer, a batch cut short): erasing is idempotent by customId too', async () => {
    const event = (await client.call('POST', `${api}/event`, { title: 'Retry', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const people = [person(), person()];
    const ids: string[] = [];
    for (const p of people) ids.push((await client.call('POST', `${api}/guest`, { eventId: event, ...p })).body.id);
    const first = await client.call('POST', `${api}/guest/${encodeURIComponent(people[0]!.customId)}/erase`, { reason: 'asked' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The same request again (its answer was lost): the same guest, erased.
    const again = await client.call('POST', `${api}/guest/${encodeURIComponent(people[0]!.customId)}/erase?eventId=${encodeURIComponent(event)}`, { reason: 'asked' });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ id: ids[0], erased: true });
    // A batch by customIds whose first attempt erased only the first guest: the retry erases the rest.
    const batch = await client.call('POST', `${api}/guests/${event}/erase`, { reason: 'asked', ids: people.map((p) => p.customId) });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.guests.map((g: { id: string }) => g.id).sort()).toEqual([...ids].sort());
    expect((await client.call('GET', `${api}/guest/${ids[1]}`)).body).toMatchObject({ erased: true, email: null });
    // Only erasures look for an erased guest by the customId it had: elsewhere it names no one.
    expect((await client.call('GET', `${api}/guest/${encodeURIComponent(people[0]!.customId)}/personal-data`)).status).toBe(404);
    // A new guest given the customId is the one it names from then on.
    const newcomer = (await client.call('POST', `${api}/guest`, { eventId: event, firstName: 'New', customId: people[0]!.customId })).body.id;
    const third = await client.call('POST', `${api}/guest/${encodeURIComponent(people[0]!.customId)}/erase`, { reason: 'asked' });
    expect(third.body.id).toBe(newcomer);
    expect(filesHolding(service.dataDir, people.flatMap((p) => [p.email, p.lastName, p.barcode]))).toEqual([]);
  });

  it("erases another client's guest never: 404", async () => {
    const other = await createClient(service);
    const p = person();
    const id = (await client.call('POST', `${api}/guest`, { eventId, ...p })).body.id;
    expect((await other.call('POST', `${api}/guest/${id}/erase`, { reason: 'x' })).status).toBe(404);
    expect((await other.call('GET', `${api}/guest/${id}/personal-data`)).status).toBe(404);
    expect((await client.call('GET', `${api}/guest/${id}`)).body.email).toBe(p.email);
  });

  it('retention: the worker erases the guests of an event retentionDays after its endTime (injected time)', async () => {
    const event = await client.call('POST', `${api}/event`, { title: 'Kept 2 days', startTime: '2026-01-10T18:00:00Z', endTime: '2026-01-10T23:00:00Z', retentionDays: 2 });
    expect(event.body.retentionDays).toBe(2);
    const p = person();
    const id = (await client.call('POST', `${api}/guest`, { eventId: event.body.id, ...p })).body.id;
    const worker = service.workers.find((w) => w.name === 'retention') as RetentionWorker;
    expect(await worker.runOnce(new Date('2026-01-12T22:59:00Z'))).toBe(0);
    expect((await client.call('GET', `${api}/guest/${id}`)).body.email).toBe(p.email);
    expect(await worker.runOnce(new Date('2026-01-12T23:00:00Z'))).toBeGreaterThanOrEqual(1);
    const guest = await client.call('GET', `${api}/guest/${id}`);
    expect(guest.body).toMatchObject({ erased: true, email: null });
    const history = await client.call('GET', `${api}/guest/${id}/history`);
    expect(history.body.events.find((e: { type: string }) => e.type === 'GuestErased')).toMatchObject({
      actor: { type: 'system', id: 'retention' },
      data: { reason: expect.stringContaining('retention') },
    });
    expect(await worker.runOnce(new Date('2026-02-01T00:00:00Z'))).toBe(0);
  });

  it("retention: a client's default (PUT user retentionDays) erases its events without their own; an event's own days win; other clients are untouched", async () => {
    const organiser = await createClient(service);
    const bystander = await createClient(service);
    expect((await organiser.call('PUT', '/users/v1/api/user', { id: organiser.id, retentionDays: 30 })).status).toBe(204);
    const me = await organiser.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(organiser.email)}`);
    expect(me.body.retentionDays).toBe(30);
    const ended = { startTime: '2026-03-01T18:00:00Z', endTime: '2026-03-01T23:00:00Z' };
    const byDefault = (await organiser.call('POST', `${api}/event`, { title: 'Default 30 days', ...ended })).body.id;
    const ownDays = (await organiser.call('POST', `${api}/event`, { title: 'Own 365 days', ...ended, retentionDays: 365 })).body.id;
    const noDefault = (await bystander.call('POST', `${api}/event`, { title: 'No default', ...ended })).body.id;
    const [a, b, c] = [person(), person(), person()];
    const idA = (await organiser.call('POST', `${api}/guest`, { eventId: byDefault, ...a })).body.id;
    const idB = (await organiser.call('POST', `${api}/guest`, { eventId: ownDays, ...b })).body.id;
    const idC = (await bystander.call('POST', `${api}/guest`, { eventId: noDefault, ...c })).body.id;
    const worker = service.workers.find((w) => w.name === 'retention') as RetentionWorker;

    await worker.runOnce(new Date('2026-03-31T22:59:00Z'));
    expect((await organiser.call('GET', `${api}/guest/${idA}`)).body.email).toBe(a.email);
    await worker.runOnce(new Date('2026-03-31T23:00:00Z'));
    expect((await organiser.call('GET', `${api}/guest/${idA}`)).body).toMatchObject({ erased: true, email: null });
    const history = await organiser.call('GET', `${api}/guest/${idA}/history`);
    expect(history.body.events.find((e: { type: string }) => e.type === 'GuestErased')?.data.reason).toBe("retention: 30 days after the event ended (the client's default)");
    expect((await organiser.call('GET', `${api}/guest/${idB}`)).body.email).toBe(b.email);
    expect((await bystander.call('GET', `${api}/guest/${idC}`)).body.email).toBe(c.email);

    // null is not given (a client writing every property keeps its default); "" removes the default:
    // a later event of the same client is kept.
    const everyProperty = { id: organiser.id, firstName: 'Org', lastName: null, userName: null, email: null, timeZoneId: null, companyName: null, customData: null, retentionDays: null };
    expect((await organiser.call('PUT', '/users/v1/api/user', everyProperty)).status).toBe(204);
    expect((await organiser.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(organiser.email)}`)).body.retentionDays).toBe(30);
    expect((await organiser.call('PUT', '/users/v1/api/user', { id: organiser.id, retentionDays: '' })).status).toBe(204);
    const later = (await organiser.call('POST', `${api}/event`, { title: 'After the default', ...ended })).body.id;
    const d = person();
    const idD = (await organiser.call('POST', `${api}/guest`, { eventId: later, ...d })).body.id;
    await worker.runOnce(new Date('2027-06-01T00:00:00Z'));
    expect((await organiser.call('GET', `${api}/guest/${idD}`)).body.email).toBe(d.email);
    expect((await organiser.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(organiser.email)}`)).body.retentionDays).toBeUndefined();
  });

  const holderOf = async (streamName: string) => {
    let state = reservationDecider.initialState();
    for (const event of await service.platform.eventStore.readStream(streamName)) state = reservationDecider.evolve(state, event as never);
    return state.ownerId;
  };

  it('names customId reservations by a keyed hash: an email as customId is nowhere under DATA_DIR after the erase, and stays unique meanwhile', async () => {
    const tag = randomUUID().slice(0, 8);
    const customId = `alice.${tag}@example.com`;
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Alice', customId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // The event store holds neither the stream name nor the key in plaintext (the read models do, while the guest exists).
    expect(filesHolding(service.dataDir, [customId]).filter((f) => path.basename(f).startsWith('events.sqlite'))).toEqual([]);
    const nameKey = await service.platform.dataKeys!.streamNameKey();
    expect(await holderOf(customIdStream(client.id, eventId, customId, nameKey))).toBe(created.body.id);
    // Unique within the event, any case; another event may use it.
    const twice = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Other', customId: customId.toUpperCase() });
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('custom_id_taken');
    const otherEvent = (await client.call('POST', `${api}/event`, { title: 'Other', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const elsewhere = await client.call('POST', `${api}/guest`, { eventId: otherEvent, firstName: 'Elsewhere', customId });
    expect(elsewhere.status).toBe(200);

    expect((await client.call('POST', `${api}/guest/${created.body.id}/erase`, { reason: 'request' })).status).toBe(200);
    expect((await client.call('POST', `${api}/guest/${elsewhere.body.id}/erase`, { reason: 'request' })).status).toBe(200);
    expect(filesHolding(service.dataDir, [customId])).toEqual([]);
    if (settings.MONGO_URL) expect(await mongoDocsHolding(settings.MONGO_URL, settings.MONGO_DB!, [customId])).toEqual([]);
    await service.runner!.rebuild([]);
    expect(filesHolding(service.dataDir, [customId])).toEqual([]);
    expect((await client.call('POST', `${api}/guest`, { eventId, firstName: 'Next', customId })).status).toBe(200);
  });

  it("deletes the erased guest's own outbox emails only: another client's guest with the same email keeps its copy", async () => {
    const other = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const otherEvent = (await other.call('POST', `${api}/event`, { title: 'Other gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const otherTemplate = (await other.call('POST', `${comms}/template`, { eventId: otherEvent, name: 'Invitation', subject: 'Hello {{firstName}}', html: '<p>Dear {{fullName}}</p>' })).body.id;
    const tag = randomUUID().slice(0, 8);
    const shared = { firstName: `Shared${tag}`, lastName: `Person${tag}`, email: `shared.${tag}@example.com` };
    const mine = (await client.call('POST', `${api}/guest`, { eventId, ...shared, commsTemplateId: templateId })).body.id;
    const theirs = (await other.call('POST', `${api}/guest`, { eventId: otherEvent, ...shared, commsTemplateId: otherTemplate })).body.id;
    const outbox = path.join(service.dataDir, 'outbox');
    const invitationOf = async (who: Client, guestId: string) => {
      let id: string | undefined;
      await eventually(async () => {
        id = (await who.call('GET', `${comms}/invitations?attendeeId=${guestId}`)).body.items?.find((i: { status: string }) => i.status === 'sent')?.attendeeInvitationId;
        return id !== undefined;
      }, 60_000, 'invitation sent');
      return id!;
    };
    const [myEmail, theirEmail] = [`${await invitationOf(client, mine)}.eml`, `${await invitationOf(other, theirs)}.eml`];
    expect(fs.existsSync(path.join(outbox, myEmail)) && fs.existsSync(path.join(outbox, theirEmail))).toBe(true);

    expect((await client.call('POST', `${api}/guest/${mine}/erase`, { reason: 'request' })).status).toBe(200);
    expect(fs.existsSync(path.join(outbox, myEmail))).toBe(false);
    expect(fs.existsSync(path.join(outbox, theirEmail))).toBe(true);
    expect((await readOutbox(outbox)).filter((m) => m.to.email === shared.email).map((m) => m.messageKey)).toEqual([theirEmail.replace(/\.eml$/, '')]);
  });

  it('a customId sent as guestId at the door before any guest had it leaves neither the scans list nor DATA_DIR once its guest is erased', async () => {
    const customId = `VIP-${randomUUID().slice(0, 8)}`;
    const early = await client.call('POST', `${api}/guests/${eventId}/checkin`, { guestId: customId, gate: 'East' });
    expect(early.body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    const id = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'Early', customId })).body.id;
    expect((await client.call('POST', `${api}/guest/${id}/erase`, { reason: 'request' })).status).toBe(200);
    const scans = (await client.call('GET', `${api}/event/${eventId}/scans?result=rejected&limit=1000`)).body.items as { scanId: string; lookup?: { guestId?: string } }[];
    expect(scans.find((s) => s.scanId === early.body.scanId)?.lookup).toBeUndefined();
    expect(filesHolding(service.dataDir, [customId])).toEqual([]);
  });

  it('a barcode scanned before any guest had it leaves neither the scans list nor DATA_DIR once the guest who then had it is erased', async () => {
    const tag = randomUUID().slice(0, 8);
    const barcode = `EARLY-${tag}`;
    const unrelated = `NOBODY-${tag}`;
    const scan = (code: string) => client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: code, gate: 'East' });
    expect((await scan(barcode)).body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    expect((await scan(unrelated)).body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    // The scanned text is sealed in the event store like a guest's fields.
    expect(filesHolding(service.dataDir, [barcode]).filter((f) => path.basename(f).startsWith('events.sqlite'))).toEqual([]);
    const id = (await client.call('POST', `${api}/guest`, { eventId, firstName: `Early${tag}`, barcode })).body.id;
    expect((await scan(barcode)).body).toMatchObject({ result: 'admitted' });
    const rejectedScans = async () => (await client.call('GET', `${api}/event/${eventId}/scans?result=rejected&limit=1000`)).body.items as { lookup?: { barcode?: string }; gate?: string }[];
    expect((await rejectedScans()).map((s) => s.lookup?.barcode)).toEqual(expect.arrayContaining([barcode, unrelated]));

    expect((await client.call('POST', `${api}/guest/${id}/erase`, { reason: 'request' })).status).toBe(200);
    const check = async () => {
      const scans = await rejectedScans();
      expect(JSON.stringify(scans)).not.toContain(barcode);
      // The rejected scan stays (counts and gates are kept); a scan of a value the guest never had keeps its text.
      expect(scans.filter((s) => s.gate === 'East' && s.lookup === undefined).length).toBeGreaterThanOrEqual(1);
      expect(scans.map((s) => s.lookup?.barcode)).toContain(unrelated);
      expect(filesHolding(service.dataDir, [barcode])).toEqual([]);
      if (settings.MONGO_URL) expect(await mongoDocsHolding(settings.MONGO_URL, settings.MONGO_DB!, [barcode])).toEqual([]);
    };
    await check();
    await service.runner!.rebuild([]);
    await check();
  });
});
