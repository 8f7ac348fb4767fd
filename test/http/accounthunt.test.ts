import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

/**
 * The account side as an organizer administering door staff meets it: removing a team member
 * (a lost scanner phone, someone who left) ends its access at once, and its work stays counted.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

const password = 'north gate scanner 7';

async function teamMember(client: Client, userName: string, id: string, pw = password) {
  const created = await client.call('POST', '/checkin/v1/api/teammember', { userName, password: pw, email: `${userName}@example.com`, id });
  expect(created.status).toBe(200);
  const token = await passwordToken(service.url, userName, pw);
  const call = (method: string, pathname: string, body?: unknown) =>
    request(service.url, method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey });
  return { token, call };
}

async function signIn(userName: string, pw: string) {
  return fetch(`${service.url}/core/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username: userName, password: pw }),
  });
}

describe('DELETE /checkin/v1/api/teammember/{id}: the organizer removes door staff', () => {
  it('refuses the removed team member’s tokens at once and its password sign-in, drops it from the list, and keeps its scans counted', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const userName = `lost-phone-${Date.now()}`;
    const door = await teamMember(client, userName, 'door-lost');
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', plusOnes: 1, isGroup: true });
    const scan = await door.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: guest.body.id });
    expect(scan.body.result).toBe('admitted');

    const removed = await client.call('DELETE', '/checkin/v1/api/teammember/door-lost');
    expect(removed.status).toBe(204);

    // The phone's token was valid for an hour more: it is refused now.
    const after = await door.call('GET', `/checkin/v1/api/guests/${eventId}`);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthorized');
    const list = await client.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(client.email)}/events`);
    expect(list.body).toEqual([]);
    expect((await client.call('GET', `/checkin/v1/api/teammembers/user/${userName}/events`)).status).toBe(404);
    expect((await signIn(userName, password)).status).toBe(400);

    // What it did at the door stays counted, under its id; its user name goes with it (docs/personal-data.md).
    const stats = await client.call('GET', `/checkin/v1/api/team/event/${eventId}`);
    expect(stats.body).toEqual([expect.objectContaining({ teamMemberId: 'door-lost', username: '[erased]', checkedIn: 2 })]);
    // A retry of the removal changes nothing.
    expect((await client.call('DELETE', '/checkin/v1/api/teammember/door-lost')).status).toBe(204);
  });

  it('frees the user name: the same door staff is created anew with a new password, and the old token stays refused', async () => {
    const client = await createClient(service);
    const userName = `reset-${Date.now()}`;
    const before = await teamMember(client, userName, 'door-reset');
    expect((await client.call('DELETE', '/checkin/v1/api/teammember/door-reset')).status).toBe(204);
    expect((await signIn(userName, password)).status).toBe(400);

    const again = await teamMember(client, userName, 'door-reset', 'a brand new door passphrase');
    expect((await signIn(userName, password)).status).toBe(400);
    const self = await again.call('GET', `/checkin/v1/api/teammembers/user/${userName}/events`);
    expect(self.status).toBe(200);
    expect(self.body).toEqual([expect.objectContaining({ id: 'door-reset', userName })]);
    expect((await before.call('GET', `/checkin/v1/api/teammembers/user/${userName}/events`)).status).toBe(401);
  });

  it('a team member created anew under its id with another name: its statistics row shows the name it has now', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const first = await teamMember(client, `first-name-${Date.now()}`, 'door-renamed');
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada' });
    expect((await first.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: guest.body.id })).body.result).toBe('admitted');
    expect((await client.call('DELETE', '/checkin/v1/api/teammember/door-renamed')).status).toBe(204);
    const now = `second-name-${Date.now()}`;
    await teamMember(client, now, 'door-renamed');
    const stats = await client.call('GET', `/checkin/v1/api/team/event/${eventId}`);
    expect(stats.body).toEqual([expect.objectContaining({ teamMemberId: 'door-renamed', username: now, checkedIn: 1 })]);
  });

  it('is 404 for an id the client never used or another client’s team member, and 403 to a team member', async () => {
    const client = await createClient(service);
    const other = await createClient(service);
    const theirs = await teamMember(other, `theirs-${Date.now()}`, 'door-1');
    expect((await client.call('DELETE', '/checkin/v1/api/teammember/door-1')).status).toBe(404);
    expect((await client.call('DELETE', '/checkin/v1/api/teammember/never-made')).status).toBe(404);
    // The other client's team member is untouched.
    expect((await theirs.call('GET', `/checkin/v1/api/events`)).status).toBe(200);
    const mine = await teamMember(client, `mine-${Date.now()}`, 'door-2');
    const refused = await mine.call('DELETE', '/checkin/v1/api/teammember/door-2');
    expect(refused.status).toBe(403);
    expect((await mine.call('GET', `/checkin/v1/api/events`)).status).toBe(200);
  });
});

describe('GET /checkin/v1/api/team/event/{id}: the username of each row', () => {
  it('shows the client’s own row under its user name now, after a rename, whether or not it scanned since', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada' });
    expect((await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: guest.body.id })).body.result).toBe('admitted');
    const renamed = `box-office-${Date.now()}`;
    expect((await client.call('PUT', '/users/v1/api/user', { id: client.id, userName: renamed })).status).toBe(204);

    const stats = await client.call('GET', `/checkin/v1/api/team/event/${eventId}`);
    expect(stats.body).toEqual([expect.objectContaining({ teamMemberId: client.id, username: renamed, checkedIn: 1 })]);
    // The same name the users endpoint answers.
    const user = await client.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(client.email)}`);
    expect(user.body.userName).toBe(renamed);
  });
});

describe('POST /checkin/v1/api/teammember retried without an id', () => {
  it('answers the team member the first attempt made when the same body comes again (its user name is its key); other content stays 409 username_taken', async () => {
    const client = await createClient(service);
    const body = { userName: `retry-${Date.now()}`, password, email: 'door@example.com', firstName: 'Dora' };
    const first = await client.call('POST', '/checkin/v1/api/teammember', body);
    expect(first.status).toBe(200);
    // The answer was lost (a timeout): the CRM sends the same create again.
    const again = await client.call('POST', '/checkin/v1/api/teammember', body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const list = await client.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(client.email)}/events`);
    expect(list.body).toEqual([first.body]);

    for (const other of [{ password: 'another door passphrase' }, { email: 'someone@example.com' }, { userName: body.userName.toUpperCase() }]) {
      const refused = await client.call('POST', '/checkin/v1/api/teammember', { ...body, ...other });
      expect(refused.status, JSON.stringify(other)).toBe(409);
      expect(refused.body.code).toBe('username_taken');
    }
    // Another client sending the same body finds the name taken: it is not theirs.
    const stranger = await createClient(service);
    expect((await stranger.call('POST', '/checkin/v1/api/teammember', body)).body.code).toBe('username_taken');
  });
});

describe('removal on an event store without atomic batches (EventStoreDB)', () => {
  let alone: TestService;
  beforeAll(async () => {
    alone = await startTestService({}, { wrapEventStore: (inner) => new StreamByStreamStore(inner) });
  });
  afterAll(() => alone.close());

  it('removes the team member and gives its user name back, so it is created anew with a new password', async () => {
    const client = await createClient(alone);
    const userName = `esdb-door-${Date.now()}`;
    expect((await client.call('POST', '/checkin/v1/api/teammember', { userName, password, email: 'e', id: 'door-e' })).status).toBe(200);
    const token = await passwordToken(alone.url, userName, password);
    expect((await client.call('DELETE', '/checkin/v1/api/teammember/door-e')).status).toBe(204);
    const refused = await request(alone.url, 'GET', '/checkin/v1/api/events', undefined, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey });
    expect(refused.status).toBe(401);
    const again = await client.call('POST', '/checkin/v1/api/teammember', { userName, password: 'a brand new door passphrase', email: 'e', id: 'door-e' });
    expect(again.status).toBe(200);
    await expect(passwordToken(alone.url, userName, 'a brand new door passphrase')).resolves.toEqual(expect.any(String));
  });
});
