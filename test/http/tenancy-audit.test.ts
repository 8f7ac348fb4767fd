/**
 * Tenancy audit: nothing of one client is visible to, or changeable by, another, and a team
 * member gets no more than its role allows (README "Team members"; spec Authentication rule 4).
 * Routes with their own scope tests (guest-id-scope, identity, analytics, erasure) are not
 * repeated here; this file holds what the audit found or did not find covered elsewhere.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/shared/logger.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../webhooks/receiver.js';
import { createClient, passwordToken, request, startTestService, type Client, type Reply, type TestService } from '../support/service.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
const times = { startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' };

let service: TestService;
let alice: Client;
let bob: Client;
/** Alice's door staff: same client (tenant) as Alice, role team_member. */
let door: { call: Client['call'] };
let doorUserName: string;
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
  doorUserName = userName;
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

describe('erasure reaches a team member’s stored answers', () => {
  it('a scan answer a team member stored under a key no longer names the erased guest', async () => {
    const id = randomUUID();
    const created = await alice.call('POST', `${api}/guest`, { id, eventId: event, firstName: 'Hedy', lastName: 'Lamarr', email: 'hedy@example.com' });
    expect(created.status).toBe(200);
    const key = { 'idempotency-key': `scan-${randomUUID()}` };
    const scan = await door.call('POST', `${api}/guests/${event}/checkin`, { guestId: id }, key);
    expect(JSON.stringify(scan.body)).toContain('Lamarr');
    expect((await alice.call('POST', `${api}/guest/${id}/erase`, { reason: 'GDPR art. 17' })).status).toBe(200);
    const replay = await door.call('POST', `${api}/guests/${event}/checkin`, { guestId: id }, key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.stringify(replay.body)).not.toContain('Lamarr');
    expect(JSON.stringify(replay.body)).not.toContain('hedy@example.com');
  });
});

describe('another client’s ids answer exactly as ids nobody has, and change nothing', () => {
  /** What a probe answers, with the probed id masked: equal for Alice's id and an unknown one. */
  const shape = (reply: Reply, ids: string[]) => {
    let text = JSON.stringify(reply.body ?? null);
    for (const id of ids) text = text.split(id).join('<id>');
    return { status: reply.status, body: text.replace(/"(scanId|at)":"[^"]*"/g, '"$1":"<x>"') };
  };

  it('undo, batch erase, block, send, invitations, funnel and timeline exports, deliveries, team members', async () => {
    const template = (await alice.call('POST', `${comms}/template`, { eventId: event, name: 'Invitation', html: '<p>Hi {{firstName}}</p>' })).body.id;
    const bobTemplate = (await bob.call('POST', `${comms}/template`, { eventId: bobEvent, name: 'Invitation', html: '<p>Hi</p>' })).body.id;
    const webhook = await alice.call('POST', `${comms}/webhook`, { url: 'http://127.0.0.1:9/hook' });
    expect(webhook.status).toBe(200);
    const delivery = (await alice.call('POST', `${comms}/webhook/test`, {})).body.webhookId;
    const sent = await alice.call('POST', `${comms}/send`, { templateId: template, attendeeIds: [guest] });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const invitation = sent.body.invitations[0].attendeeInvitationId;
    // The send worker finishes first, so what follows compares Alice's data at rest.
    await eventually(async () => (await alice.call('GET', `${comms}/invitations/${invitation}`)).body.status === 'sent', 30_000, 'the invitation sent');
    const scan = await alice.call('POST', `${api}/guests/${event}/checkin`, { customId: 'crm-ada', nonce: 'gate-1-0001', plusOnes: 0 });
    expect(scan.status).toBe(200);
    const member = (await alice.call('GET', `${api}/teammembers/user/${encodeURIComponent(alice.email)}/events`)).body[0];
    const aliceNow = async () =>
      JSON.stringify([
        (await alice.call('GET', `${api}/guest/${guest}`)).body,
        (await alice.call('GET', `${api}/guest/${guest}/history`)).body.events.length,
        (await alice.call('GET', `${comms}/invitations/${invitation}`)).body.status,
        (await alice.call('GET', `${api}/teammembers/user/${encodeURIComponent(alice.email)}/events`)).body,
        (await alice.call('GET', `${api}/event/${event}/stats`)).body,
      ]);
    const before = await aliceNow();

    const nobody = randomUUID();
    const probes: [method: string, path: (id: string) => string, body?: (id: string) => unknown][] = [
      ['POST', () => `${api}/guests/${bobEvent}/checkin/undo`, (id) => ({ scanId: id === nobody ? nobody : scan.body.scanId })],
      ['POST', () => `${api}/guests/${bobEvent}/checkin/undo`, (id) => ({ nonce: id === nobody ? 'gate-1-9999' : 'gate-1-0001' })],
      ['POST', () => `${api}/guests/${bobEvent}/checkin/undo`, (id) => ({ guestId: id })],
      ['POST', () => `${api}/guests/${bobEvent}/erase`, (id) => ({ reason: 'test', ids: [bobGuest, id] })],
      ['POST', () => `${api}/guests/${bobEvent}/block`, (id) => ({ ids: [bobGuest, id] })],
      ['POST', () => `${comms}/send`, (id) => ({ templateId: bobTemplate, attendeeIds: [bobGuest, id] })],
      ['GET', (id) => `${comms}/invitations/${id === nobody ? id : invitation}`],
      ['GET', (id) => `${comms}/invitations?attendeeId=${id}`],
      ['POST', (id) => `${comms}/funnel/export?templateId=${id === nobody ? id : template}`],
      ['POST', (id) => `${api}/event/${id === nobody ? 'no-such-event' : event}/timeline/export`],
      ['POST', (id) => `${comms}/webhook/deliveries/${id === nobody ? id : delivery}/redeliver`],
      ['GET', (id) => `${api}/teammembers/user/${id === nobody ? 'no-such-door' : member.userName}/events`],
    ];
    for (const [method, path, body] of probes) {
      const foreign = await bob.call(method, path(guest), body?.(guest));
      const missing = await bob.call(method, path(nobody), body?.(nobody));
      const masked = [guest, nobody, invitation, template, delivery, member.userName, 'no-such-door', event, 'no-such-event', scan.body.scanId, 'gate-1-0001', 'gate-1-9999'];
      // Refused, or (a list filtered by the id) empty.
      expect(foreign.status >= 400 || foreign.body.items?.length === 0, `${method} ${path(guest)}: ${foreign.status}`).toBe(true);
      expect(shape(foreign, masked), `${method} ${path(guest)}`).toEqual(shape(missing, masked));
    }
    // A team member id is scoped per client: Bob's with Alice's id is Bob's own, Alice's stays hers.
    const same = await bob.call('POST', `${api}/teammember`, { id: member.id, userName: `bob-door-${randomUUID().slice(0, 8)}`, password: 'south gate scanner 9', email: 'bobdoor@example.com' });
    expect(same.status).toBe(200);
    expect(await aliceNow()).toBe(before);
    // Bob's own guest was named next to Alice's in the batches: none of them changed it.
    const bobs = (await bob.call('GET', `${api}/guest/${bobGuest}`)).body;
    expect(bobs.blockedDate ?? null).toBeNull();
    expect(bobs.firstName).toBe('Bo');
  });
});

describe('a team member calls only the routes README "Team members" lists', () => {
  const allowed = new Set([
    'GET /checkin/v1/api/events',
    'GET /checkin/v1/api/event/{id}',
    'GET /checkin/v1/api/guest/{id}',
    'GET /checkin/v1/api/guests/{eventId}',
    'GET /checkin/v1/api/guests/{eventId}/byinfo',
    'POST /checkin/v1/api/guests/{eventId}/checkin',
    'POST /checkin/v1/api/guests/{eventId}/checkout',
    'POST /checkin/v1/api/guests/{eventId}/checkin/undo',
    'GET /checkin/v1/api/team/event/{id}',
    'GET /checkin/v1/api/event/{id}/ticket-keys',
    'GET /checkin/v1/api/event/{id}/tickets',
    'GET /checkin/v1/api/guest/{id}/ticket',
    'GET /checkin/v1/api/event/{id}/timeline',
    'GET /comms/v1/api/comms/funnel',
    'GET /checkin/v1/api/teammembers/user/{username}/events',
  ]);

  it('every other route of the document answers 403 forbidden, whatever it is given', async () => {
    const document = (await request(service.url, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const values: Record<string, string> = { id: guest, eventId: event, exportId: randomUUID(), username: 'door', keyId: randomUUID() };
    const seen: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      if (!/^\/(checkin|comms|users)\/v1\//.test(path)) continue;
      for (const method of Object.keys(operations)) {
        const route = `${method.toUpperCase()} ${path}`;
        const concrete = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? 'x'));
        const reply = await door.call(method.toUpperCase(), concrete, method === 'get' ? undefined : {});
        const forbidden = reply.status === 403 && reply.body?.code === 'forbidden';
        expect(forbidden, `${route}: ${reply.status} ${JSON.stringify(reply.body)}`).toBe(!allowed.has(route));
        seen.push(route);
      }
    }
    // The allowed list names routes that exist.
    for (const route of allowed) expect(seen).toContain(route);
  });
});

describe('a team member reads itself, and no one else, through teammembers/user/{username}/events', () => {
  it('answers its own record by its user name (any case), never a password; any other name is 404', async () => {
    const own = await door.call('GET', `${api}/teammembers/user/${encodeURIComponent(doorUserName.toUpperCase())}/events`);
    expect(own.status).toBe(200);
    expect(own.body).toEqual([expect.objectContaining({ userName: doorUserName, email: 'door@example.com', canForce: false })]);
    expect(own.body[0]).not.toHaveProperty('password');
    const colleague = `door-${randomUUID().slice(0, 8)}`;
    expect((await alice.call('POST', `${api}/teammember`, { userName: colleague, password: 'south gate scanner 8', email: 'door2@example.com' })).status).toBe(200);
    const bobsDoor = `bobdoor-${randomUUID().slice(0, 8)}`;
    expect((await bob.call('POST', `${api}/teammember`, { userName: bobsDoor, password: 'east gate scanner 9', email: 'door3@example.com' })).status).toBe(200);
    // A colleague, its client (by user name or email: the client's list of every team member), another client's door staff, nobody.
    for (const name of [colleague, alice.email, bobsDoor, 'no-such-door']) {
      const reply = await door.call('GET', `${api}/teammembers/user/${encodeURIComponent(name)}/events`);
      expect(reply.status, name).toBe(404);
    }
  });
});

describe('the request log holds no personal data of a URL (search text, cursors, customIds)', () => {
  it('logs the route, ids and filters, with search values, cursors and a customId path redacted', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logged = await startTestService({}, { logger: createLogger('info', sink) });
    try {
      const client = await createClient(logged, { commsApiEnabled: true, senderTrusted: true });
      const eventId = 'gala-log';
      expect((await client.call('POST', `${api}/event`, { id: eventId, title: 'Gala', ...times })).status).toBe(200);
      const personal = { firstName: 'Ada', lastName: 'Lovelace', email: 'ada.private@example.com', customId: 'ada.private@example.com', additionalInfo: 'vegetarian table 4' };
      const batch = [{ ...personal }, { firstName: 'Grace', lastName: 'Hopper', customId: 'crm-grace', additionalInfo: 'vegetarian table 5' }];
      expect((await client.call('POST', `${api}/guests/${eventId}`, batch)).status).toBe(200);
      expect((await client.call('GET', `${api}/guest/${encodeURIComponent(personal.customId)}?eventId=${eventId}`)).status).toBe(200);
      expect((await client.call('GET', `${api}/guests/${eventId}?q=Lovelace&limit=5`)).status).toBe(200);
      const page = await client.call('GET', `${api}/guests/${eventId}/byinfo?additionalInfo=${encodeURIComponent('vegetarian table')}&limit=1`);
      const cursor = page.headers.get('x-next-cursor');
      expect(cursor).toEqual(expect.any(String));
      // The next page of the same query (a cursor is bound to the query that returned it).
      expect((await client.call('GET', `${api}/guests/${eventId}/byinfo?additionalInfo=${encodeURIComponent('vegetarian table')}&limit=1&cursor=${cursor}`)).status).toBe(200);
      // A guest named by customId in a query (comms invitations take one instead of the id).
      expect((await client.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${encodeURIComponent(personal.customId)}`)).status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
      const log = lines.join('');
      for (const value of ['Lovelace', 'ada.private', 'vegetarian', cursor!]) expect(log, value).not.toContain(value);
      // What stays: the route, the event id and the page size.
      expect(log).toContain(`/checkin/v1/api/guests/${eventId}?q=[Redacted]&limit=5`);
      expect(log).toContain('/checkin/v1/api/guest/[Redacted]?eventId=gala-log');
      expect(log).toContain('/comms/v1/api/comms/invitations?attendeeId=[Redacted]');
    } finally {
      await logged.close();
    }
  });
});
