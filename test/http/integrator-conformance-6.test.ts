import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec's Check-in and Users parts read as an integrator with a generated typed
 * client reads them, sixth pass: the places where the service still differed and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const upsert = (client: Client, eventId: string, records: unknown[], query = '') =>
  client.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert${query}`, records);
const guest = async (client: Client, id: string) => (await client.call('GET', `/checkin/v1/api/guest/${encodeURIComponent(id)}`)).body;

describe('Check-in upsert: a guest’s email can be emptied, as any text field can', () => {
  it('email "" on an existing guest empties it (the CRM cell was cleared); null keeps it; "" at create is still no email', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: 'ada@example.com', customId: 'CRM-7' });
    expect(created.status).toBe(200);
    const id = created.body.id as string;

    expect((await upsert(alice, eventId, [{ id, email: null, firstName: 'Ada' }])).status).toBe(204);
    expect((await guest(alice, id)).email).toBe('ada@example.com');

    expect((await upsert(alice, eventId, [{ id, email: '', firstName: '' }])).status).toBe(204);
    const emptied = await guest(alice, id);
    expect(emptied.firstName).toBe('');
    expect(emptied.email).toBe('');
    // Nothing finds the guest by the old address any more.
    const found = await alice.call('GET', `/checkin/v1/api/guests/${eventId}?q=ada%40example.com`);
    expect(found.body.items).toEqual([]);

    // By customId instead of id, the same.
    await upsert(alice, eventId, [{ customId: 'CRM-7', email: 'ada@example.org' }]);
    expect((await guest(alice, id)).email).toBe('ada@example.org');
    await upsert(alice, eventId, [{ customId: 'CRM-7', email: '' }]);
    expect((await guest(alice, id)).email).toBe('');

    // A record that creates a guest: "" is no email, answered null, as at POST /guest.
    const batch = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'New', email: '' }]);
    expect(batch.body[0].email).toBeNull();
    expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, email: '' })).body.email).toBeNull();
  });
});

describe('Team members: the statistics list them in the order of the team member list', () => {
  it('GET team/event/{id} sorts by username without regard to case, as GET teammembers/user/{username}/events does', async () => {
    const owner = await createClient(service);
    const eventId = await newEvent(owner);
    for (const userName of [`Zed-${Date.now()}`, `amy-${Date.now()}`, `Bea-${Date.now()}`]) {
      const created = await owner.call('POST', '/checkin/v1/api/teammember', { userName, password: 'north gate scanner 7', email: '' });
      expect(created.status).toBe(200);
    }
    const listed = await owner.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(owner.email)}/events`);
    const stats = await owner.call('GET', `/checkin/v1/api/team/event/${encodeURIComponent(eventId)}`);
    expect(stats.status).toBe(200);
    const names = listed.body.map((m: { userName: string }) => m.userName);
    expect(names.map((n: string) => n.split('-')[0])).toEqual(['amy', 'Bea', 'Zed']);
    expect(stats.body.map((s: { username: string }) => s.username)).toEqual(names);
  });

  it('both lists order names by code point, as MongoDB does: an emoji after a fullwidth letter (U+FF41), whatever the read store', async () => {
    const owner = await createClient(service);
    const eventId = await newEvent(owner);
    const stamp = Date.now();
    // In UTF-16 code units the emoji (a surrogate pair, 0xD83D...) would come first.
    for (const userName of [`\u{1F600}door-${stamp}`, `\uFF41gate-${stamp}`]) {
      expect((await owner.call('POST', '/checkin/v1/api/teammember', { userName, password: 'north gate scanner 7', email: '' })).status).toBe(200);
    }
    const listed = await owner.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(owner.email)}/events`);
    const stats = await owner.call('GET', `/checkin/v1/api/team/event/${encodeURIComponent(eventId)}`);
    const names = listed.body.map((m: { userName: string }) => m.userName);
    expect(names).toEqual([`\uFF41gate-${stamp}`, `\u{1F600}door-${stamp}`]);
    expect(stats.body.map((s: { username: string }) => s.username)).toEqual(names);
  });
});

describe('Guest.createdBy: the document shows what the service answers', () => {
  it('a guest created without createdBy is answered with the caller’s User id, and so are the document’s examples', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada' });
    const user = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`);
    expect(created.body.createdBy).toBe(user.body.id);

    const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    const schemas = document.components.schemas;
    expect(schemas.GuestResponse.example.createdBy).toBe(schemas.User.example.id);
    expect(schemas.GuestResponse.properties.createdBy.description).toMatch(/id of the User/);
    const csv = document.paths['/checkin/v1/api/event/export'].post.responses['200'].content['text/csv'].example as string;
    expect(csv).toContain(`,${schemas.User.example.id},`);
    expect(csv).not.toContain('organizer@example.com');
  });
});

describe('Users: PUT user does not acknowledge a password it does not change', () => {
  it('a password in PUT user is 400 on the field, naming changepassword, and changes nothing; null and "" are not given', async () => {
    const carol = await createClient(service);
    const read = await carol.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(carol.email)}`);
    expect(read.status).toBe(200);
    const refused = await carol.call('PUT', '/users/v1/api/user', { ...read.body, companyName: 'Renamed Ltd', password: 'a brand new passphrase' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'password', message: expect.stringContaining('changepassword') })]);
    // Nothing of the body was applied, and the old password still signs in.
    expect((await carol.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(carol.email)}`)).body.companyName).toBe(read.body.companyName);
    expect((await passwordToken(service.url, carol.email, carol.password)).length).toBeGreaterThan(0);
    // The answer read back (no password), null and a blank field are taken as they always were.
    for (const password of [undefined, null, '']) {
      const taken = await carol.call('PUT', '/users/v1/api/user', { ...read.body, companyName: `Kept ${String(password)}`, password });
      expect(taken.status, JSON.stringify(taken.body)).toBe(204);
    }
    expect((await passwordToken(service.url, carol.email, carol.password)).length).toBeGreaterThan(0);
  });
});

describe('Batches: a 404 names the record it is about', () => {
  it('an unknown commsTemplateId or a guest of another event in a batch is 404 with the record’s field in errors, and nothing is applied', async () => {
    const eventId = await newEvent(alice);
    const otherEvent = await newEvent(alice);
    const elsewhere = await alice.call('POST', '/checkin/v1/api/guest', { eventId: otherEvent, firstName: 'Elsewhere' });
    const records = Array.from({ length: 5 }, (_, i) => ({ firstName: `R${i}` }));
    const badTemplate = [...records.slice(0, 3), { firstName: 'R3', commsTemplateId: '5d1d4a34-5f0e-4a53-9d2b-1b0b7f3c9a11' }, records[4]];
    const refused = await upsert(alice, eventId, badTemplate);
    expect(refused.status).toBe(404);
    expect(refused.body.errors).toEqual([{ path: '3.commsTemplateId', message: 'no template with this id in this event' }]);
    const wrongEvent = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`, [records[0], { id: elsewhere.body.id, firstName: 'Moved' }]);
    expect(wrongEvent.status).toBe(404);
    expect(wrongEvent.body.errors).toEqual([{ path: '1.id', message: 'no guest with this id in this event' }]);
    // A single create names the field alone.
    const single = await alice.call('POST', '/checkin/v1/api/guest', { eventId, commsTemplateId: '5d1d4a34-5f0e-4a53-9d2b-1b0b7f3c9a11' });
    expect(single.status).toBe(404);
    expect(single.body.errors).toEqual([{ path: 'commsTemplateId', message: 'no template with this id in this event' }]);
    const listed = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`);
    expect(listed.body.items ?? listed.body).toEqual([]);
  });
});

describe('Guest counts: a wrong plusOnes says what is taken', () => {
  it.each([-1, 1.5, 2_147_483_648, '3'])('plusOnes %s is 400 "must be a whole number from 0 to 2147483647" on the field', async (plusOnes) => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Count', plusOnes });
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'plusOnes', message: 'must be a whole number from 0 to 2147483647' }]);
  });
});
