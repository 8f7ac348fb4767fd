/**
 * MongoDB stores a document of at most 16 MiB and refuses an update that would make it larger; a
 * projection whose update is refused retries that batch for ever, and every later event of it is
 * never shown. FerretDB (the tests' MongoDB) and the embedded store take larger documents, so only
 * the API's rule keeps them out: an event, a comms template, an account and a team member hold at
 * most 4 MiB of text (UTF-8, with what a lower-cased copy takes beyond its text), as a guest does,
 * and a webhook test's correlationId at most 4,096 characters, as a send's (docs/api.md, Strings).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';

const LIMIT = 4 * 1024 * 1024;
const comms = '/comms/v1/api/comms';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

/** A 400 validation_error on `field` that says the 4 MiB and what to do. */
function expectTooLarge(reply: { status: number; body: any }, field: string, what: string) {
  expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(400);
  expect(reply.body.code).toBe('validation_error');
  expect(reply.body.errors).toEqual([{ path: field, message: expect.stringContaining(`${what} holds at most ${LIMIT} (4 MiB)`) }]);
}

describe('an event holds at most 4 MiB of text', () => {
  it('refuses an update one byte over with 400 on the field, keeps the event, and takes one at the limit', async () => {
    const ev = await newEvent(alice, { title: 'T', tags: 'ab' });
    const url = `/checkin/v1/api/event`;
    const base = { id: ev, title: 'T', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
    // title (1) and the stored tags (2) count with the new customData.
    const over = await alice.call('POST', url, { ...base, customData: 'x'.repeat(LIMIT - 3 + 1) });
    expectTooLarge(over, 'customData', 'an event');
    const kept = await alice.call('GET', `${url}/${ev}`);
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ title: 'T', tags: 'ab', customData: null });
    const at = await alice.call('POST', url, { ...base, customData: 'x'.repeat(LIMIT - 3) });
    expect(at.status).toBe(200);
    expect(at.body.customData).toHaveLength(LIMIT - 3);
    // A title of 2-byte characters counts in UTF-8 bytes: the same count of characters is over.
    const utf8 = await alice.call('POST', url, { ...base, customData: 'x', title: 'é'.repeat(LIMIT / 2) });
    expectTooLarge(utf8, 'title', 'an event');
    // A new event over it is not created.
    const created = await alice.call('POST', url, { ...base, id: 'too-large', title: 'y'.repeat(LIMIT + 1) });
    expectTooLarge(created, 'title', 'an event');
    expect((await alice.call('GET', `${url}/too-large`)).status).toBe(404);
  });
});

describe('a comms template holds at most 4 MiB of text', () => {
  it('refuses a template one byte over with 400 on its largest field and stores nothing; one at the limit is created', async () => {
    const ev = await newEvent(alice);
    const id = '0d6f6d8e-1c1a-4b8e-9a51-6b5d3f0c2a11';
    const body = (html: string) => ({ id, eventId: ev, name: 'N', subject: 'S', html });
    // name (1) and subject (1) count with the html.
    const over = await alice.call('POST', `${comms}/template`, body(`<p>${'x'.repeat(LIMIT - 2 - 7 + 1)}</p>`));
    expectTooLarge(over, 'html', 'a template');
    expect((await alice.call('GET', `${comms}/template/${id}`)).status).toBe(404);
    const at = await alice.call('POST', `${comms}/template`, body(`<p>${'x'.repeat(LIMIT - 2 - 7)}</p>`));
    expect(at.status, JSON.stringify(at.body).slice(0, 300)).toBe(200);
    expect(at.body.html).toHaveLength(LIMIT - 2);
  });
});

describe('an account holds at most 4 MiB of text', () => {
  it('refuses PUT user one byte over (its lower-cased user name counted) and keeps the account; one at the limit is taken', async () => {
    const bob = await createClient(service);
    const show = async () => (await bob.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(bob.email)}`)).body;
    const before = await show();
    expect(before.customData).toBeNull();
    // email and userName (the email here) count twice when their lower-cased copy adds bytes; ASCII adds none.
    const used = Buffer.byteLength(before.email) + Buffer.byteLength(before.userName);
    const over = await bob.call('PUT', '/users/v1/api/user', { id: bob.id, customData: 'c'.repeat(LIMIT - used + 1) });
    expectTooLarge(over, 'customData', 'an account');
    expect(await show()).toEqual(before);
    // `İ` is 2 bytes, its lower case `i̇` 3: a companyName of such letters holds 2 bytes each, but a userName 3.
    const k = Math.floor((LIMIT - Buffer.byteLength(before.email)) / 3) + 1;
    const keyed = await bob.call('PUT', '/users/v1/api/user', { id: bob.id, userName: 'İ'.repeat(k) });
    expect(Buffer.byteLength(before.email) + 2 * k).toBeLessThan(LIMIT);
    expectTooLarge(keyed, 'userName', 'an account');
    expect(await show()).toEqual(before);
    const at = await bob.call('PUT', '/users/v1/api/user', { id: bob.id, customData: 'c'.repeat(LIMIT - used) });
    expect(at.status, String(JSON.stringify(at.body)).slice(0, 300)).toBeLessThan(300);
    expect((await show()).customData).toHaveLength(LIMIT - used);
  });

  it('refuses an admin account create over it, and creates none', async () => {
    const email = `big-${Date.now()}@example.com`;
    const admin = { authorization: `Bearer ${adminKey}` };
    const over = await request(service.url, 'POST', '/admin/v1/accounts', { email, password: 'correct horse battery staple', companyName: 'c'.repeat(LIMIT) }, admin);
    expectTooLarge(over, 'companyName', 'an account');
    const again = await request(service.url, 'POST', '/admin/v1/accounts', { email, password: 'correct horse battery staple', companyName: 'Small' }, admin);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
  });
});

describe('a team member holds at most 4 MiB of text', () => {
  it('refuses a registration over it (its lower-cased user name counted) and registers none; one at the limit is registered', async () => {
    const member = (fields: Record<string, unknown>) => ({ id: 'door-big', password: 'north gate scanner 7', email: 'e', ...fields });
    // 'İ' × n is 2n bytes of text and n more in userNameLower: 3n, one byte over the limit with email's 1.
    const n = Math.ceil(LIMIT / 3);
    const keyed = await alice.call('POST', '/checkin/v1/api/teammember', member({ userName: 'İ'.repeat(n) }));
    expect(2 * n + 1).toBeLessThan(LIMIT);
    expectTooLarge(keyed, 'userName', 'a team member');
    const over = await alice.call('POST', '/checkin/v1/api/teammember', member({ userName: 'doorbig', firstName: 'f'.repeat(LIMIT - 8 + 1) }));
    expectTooLarge(over, 'firstName', 'a team member');
    // Nothing was registered: the id and the user name are free.
    const at = await alice.call('POST', '/checkin/v1/api/teammember', member({ userName: 'doorbig', firstName: 'f'.repeat(LIMIT - 8) }));
    expect(at.status, JSON.stringify(at.body).slice(0, 300)).toBe(200);
    expect(at.body.firstName).toHaveLength(LIMIT - 8);
  });
});

describe("a webhook test's correlationId", () => {
  it('is at most 4,096 characters, as a send’s', async () => {
    expect((await alice.call('POST', `${comms}/webhook`, { url: 'http://127.0.0.1:9/hook' })).status).toBe(200);
    const over = await alice.call('POST', `${comms}/webhook/test`, { correlationId: 'k'.repeat(4097) });
    expect(over.status).toBe(400);
    expect(over.body.errors).toEqual([{ path: 'correlationId', message: expect.stringContaining('at most 4096 characters') }]);
    const deliveries = await alice.call('GET', `${comms}/webhook/deliveries`);
    expect(deliveries.body.items).toEqual([]);
    const at = await alice.call('POST', `${comms}/webhook/test`, { correlationId: 'k'.repeat(4096) });
    expect(at.status).toBe(200);
  });
});
