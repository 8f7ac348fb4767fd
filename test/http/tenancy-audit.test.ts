/**
 * Tenancy audit: nothing of one client is visible to, or changeable by, another, and a team
 * member gets no more than its role allows (README "Team members"; spec Authentication rule 4).
 * Routes with their own scope tests (guest-id-scope, identity, analytics, erasure) are not
 * repeated here; this file holds what the audit found or did not find covered elsewhere.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, createClient, passwordToken, request, startTestService, type Client, type Reply, type TestService } from '../support/service.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
const times = { startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' };

let service: TestService;
let alice: Client;
let bob: Client;
/** Alice's door staff: same client (tenant) as Alice, role team_member. */
let door: { call: Client['call'] };
const event = `gala-${randomUUID().slice(0, 8)}`;
const bobEvent = `party-${randomUUID().slice(0, 8)}`;
const guest = randomUUID();
const bobGuest = randomUUID();

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  expect((await alice.call('POST', `${api}/event`, { id: event, title: 'Gala', ...times })).status).toBe(200);
  expect((await bob.call('POST', `${api}/event`, { id: bobEvent, title: 'Party', ...times })).status).toBe(200);
  const created = await alice.call('POST', `${api}/guest`, {
    id: guest,
    eventId: event,
    firstName: 'Ada',
    lastName: 'Lovelace',
    email: 'ada@example.com',
    customId: 'crm-ada',
    barcode: 'BC-ADA',
  });
  expect(created.status).toBe(200);
  expect((await bob.call('POST', `${api}/guest`, { id: bobGuest, eventId: bobEvent, firstName: 'Bo', email: 'bo@example.com' })).status).toBe(200);
  const userName = `door-${randomUUID().slice(0, 8)}`;
  const password = 'north gate scanner 7';
  expect((await alice.call('POST', `${api}/teammember`, { userName, password, email: 'door@example.com' })).status).toBe(200);
  const token = await passwordToken(service.url, userName, password);
  door = {
    call: (method, pathname, body, headers = {}) =>
      request(service.url, method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': alice.subscriptionKey, ...headers }),
  };
});
afterAll(async () => {
  await service?.close();
});

describe('Idempotency-Key belongs to the caller, not only to its client', () => {
  it('a team member’s refused request under a key is not replayed to its client, who runs the request', async () => {
    const body = { id: event, title: 'Gala', ...times };
    const key = { 'idempotency-key': `export-${randomUUID()}` };
    const refused = await door.call('POST', `${api}/event/export`, body, key);
    expect(refused.status).toBe(403);
    const own = await alice.call('POST', `${api}/event/export`, body, key);
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.headers.get('idempotent-replayed')).toBeNull();
    expect(own.body.exportId).toEqual(expect.any(String));
  });

  it('a team member gets 403 for a client-only route, not the client’s stored answer under the same key', async () => {
    const body = { eventId: event, firstName: 'Grace' };
    const key = { 'idempotency-key': `guest-${randomUUID()}` };
    const own = await alice.call('POST', `${api}/guest`, body, key);
    expect(own.status).toBe(200);
    const replayedToDoor = await door.call('POST', `${api}/guest`, body, key);
    expect(replayedToDoor.status).toBe(403);
    expect(replayedToDoor.body.code).toBe('forbidden');
    expect(replayedToDoor.headers.get('idempotent-replayed')).toBeNull();
    // The client's own repeat is still its replay.
    const repeat = await alice.call('POST', `${api}/guest`, body, key);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body.id).toBe(own.body.id);
  });

  it('a scan a team member repeats under a key the client used runs as the team member’s own scan', async () => {
    const key = { 'idempotency-key': `scan-${randomUUID()}` };
    const body = { barcode: 'BC-ADA' };
    const first = await alice.call('POST', `${api}/guests/${event}/checkin`, body, key);
    expect(first.status).toBe(200);
    const second = await door.call('POST', `${api}/guests/${event}/checkin`, body, key);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.scanId).not.toBe(first.body.scanId);
  });
});
