import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let bob: Client;
let eventId: string;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
  bob = await createClient(service);
  eventId = await newEvent(alice);
});
afterAll(() => service.close());

const guest = (fields: Record<string, unknown> = {}) => ({ firstName: 'Ada', lastName: 'Lovelace', eventId, ...fields });
const checkin = (client: Client, event: string, body: Record<string, unknown>) =>
  client.call('POST', `/checkin/v1/api/guests/${event}/checkin`, body);

describe('guest create (spec: Check-in rules 1 and 4)', () => {
  it('keeps a caller-supplied id and returns every given field', async () => {
    const id = randomUUID().toUpperCase();
    const reply = await alice.call('POST', '/checkin/v1/api/guest', guest({
      id,
      otherNames: 'King',
      email: 'ada@example.com',
      plusOnes: 2,
      additionalInfo: 'Table 7',
      barcode: 'B-1',
      tags: 'vip, speaker',
      validFrom: '2026-01-01T00:00:00Z',
      validTo: '2027-01-01T00:00:00Z',
      isGroup: false,
      customId: 'crm-1',
      correlationId: 'crm-sync-42',
    }));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      // Answered as sent (docs/identifiers.md, Which ids are GUIDs).
      id,
      eventId,
      otherNames: 'King',
      plusOnes: 2,
      admittedPlusOnes: 0,
      tags: 'vip,speaker',
      validFrom: '2026-01-01T00:00:00.000Z',
      customId: 'crm-1',
      correlationId: 'crm-sync-42',
      createdBy: alice.id,
    });
    expect((await alice.call('GET', `/checkin/v1/api/guest/${id}`)).body).toEqual(reply.body);
  });

  it('requires eventId, a GUID id and an event of the caller (400, 400, 404)', async () => {
    expect((await alice.call('POST', '/checkin/v1/api/guest', { firstName: 'x' })).status).toBe(400);
    const badId = await alice.call('POST', '/checkin/v1/api/guest', guest({ id: 'nope' }));
    expect(badId.status).toBe(400);
    expect(badId.body.errors[0].path).toBe('id');
    const bobEvent = await newEvent(bob);
    expect((await alice.call('POST', '/checkin/v1/api/guest', guest({ eventId: bobEvent }))).status).toBe(404);
  });

  it('refuses a second guest with the same customId in the event (409), case-insensitively', async () => {
    await alice.call('POST', '/checkin/v1/api/guest', guest({ customId: 'dup-1' }));
    const again = await alice.call('POST', '/checkin/v1/api/guest', guest({ customId: 'DUP-1' }));
    expect(again.status).toBe(409);
  });

  it('takes admission and block fields in a create body (docs/guests.md; more in conformance-guests.test.ts)', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/guest', guest({ plusOnes: 3, admitted: '2026-01-01T00:00:00Z', blockedDate: '2026-01-01T00:00:00Z', blockedReason: 'x', admittedPlusOnes: 3 }));
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ admitted: '2026-01-01T00:00:00.000Z', blockedDate: '2026-01-01T00:00:00.000Z', blockedReason: 'x', admittedPlusOnes: 3 });
  });
});

describe('invitation requests (spec: check-in rule 1)', () => {
  it('records an invitation request when a guest is created or upserted naming a template; empty means none', async () => {
    const carol = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const event = await newEvent(carol);
    const newTemplate = async () =>
      (await carol.call('POST', '/comms/v1/api/comms/template', { eventId: event, name: 'Invite', html: '<p>Hi {{firstName}}</p>' })).body.id as string;
    const [template, other] = [await newTemplate(), await newTemplate()];
    const history = async (guestId: string) => (await carol.call('GET', `/checkin/v1/api/guest/${guestId}/history`)).body.events;
    // The guest's own stream (the history also carries each invitation email's events).
    const types = async (guestId: string) =>
      (await history(guestId)).filter((e: { stream: string }) => e.stream.startsWith('guest-')).map((e: { type: string }) => e.type);
    const invitee = (fields: Record<string, unknown>) => guest({ eventId: event, email: 'ada@example.com', ...fields });

    const created = await carol.call('POST', '/checkin/v1/api/guest', invitee({ commsTemplateId: template, correlationId: 'crm-1' }));
    expect(created.body.commsTemplateId).toBe(template);
    const events = await history(created.body.id);
    // events[1] is TicketIssued: a guest without a barcode gets a signed ticket (issue 16), before its invitation.
    expect(events[1]).toMatchObject({ type: 'TicketIssued' });
    expect(events[2]).toMatchObject({ type: 'InvitationRequested', data: { templateId: template, correlationId: 'crm-1' } });
    expect(events[2].data.attendeeInvitationId).toMatch(/^[0-9a-f-]{36}$/);

    const none = await carol.call('POST', '/checkin/v1/api/guest', invitee({ commsTemplateId: '' }));
    expect(await types(none.body.id)).toEqual(['GuestRegistered', 'TicketIssued']);

    await carol.call('PUT', `/checkin/v1/api/guests/${event}/upsert`, [{ id: created.body.id, commsTemplateId: template }]);
    expect(await types(created.body.id)).toEqual(['GuestRegistered', 'TicketIssued', 'InvitationRequested']);
    await carol.call('PUT', `/checkin/v1/api/guests/${event}/upsert`, [{ id: created.body.id, commsTemplateId: other }]);
    expect(await types(created.body.id)).toEqual(['GuestRegistered', 'TicketIssued', 'InvitationRequested', 'GuestDetailsChanged', 'InvitationRequested']);
    expect((await carol.call('POST', '/checkin/v1/api/guest', invitee({ commsTemplateId: 'not-a-guid' }))).status).toBe(400);
    // A template that does not exist (or is not this client's, or not this event's) is 404.
    expect((await carol.call('POST', '/checkin/v1/api/guest', invitee({ commsTemplateId: randomUUID() }))).status).toBe(404);
  });
});

describe('batch upsert (spec: rules 2 and 3, Limits)', () => {
  it('matches by id then customId, merges fields and merges tags by default', async () => {
    const ev = await newEvent(alice);
    const [a, b] = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [
      { firstName: 'A', customId: 'c-a', tags: 'red' },
      { firstName: 'B', customId: 'c-b', tags: 'blue', email: 'b@example.com' },
    ])).body;
    const reply = await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, [
      { id: a.id, lastName: 'Alpha', tags: 'green' },
      { customId: 'c-b', firstName: 'Bee' },
      { customId: 'c-new', firstName: 'New' },
    ]);
    expect(reply.status).toBe(204);
    const after = (await alice.call('GET', `/checkin/v1/api/guests/${ev}?limit=10`)).body.items;
    const byCustom = Object.fromEntries(after.map((g: { customId: string }) => [g.customId, g]));
    expect(byCustom['c-a']).toMatchObject({ id: a.id, firstName: 'A', lastName: 'Alpha', tags: 'red,green' });
    expect(byCustom['c-b']).toMatchObject({ id: b.id, firstName: 'Bee', email: 'b@example.com', tags: 'blue' });
    expect(byCustom['c-new']).toMatchObject({ firstName: 'New' });
    expect(after).toHaveLength(3);
  });

  it('keeps only the request’s tags when removeObsoleteTags=true', async () => {
    const ev = await newEvent(alice);
    const [g] = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'T', tags: 'a,b' }])).body;
    await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert?removeObsoleteTags=true`, [{ id: g.id, tags: 'c' }]);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${g.id}`)).body.tags).toBe('c');
  });

  it('never changes admission or block status through upsert', async () => {
    const ev = await newEvent(alice);
    const [g] = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'U', barcode: 'U-1' }])).body;
    await checkin(alice, ev, { barcode: 'U-1' });
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/block`, { ids: [g.id], reason: 'test' });
    const before = (await alice.call('GET', `/checkin/v1/api/guest/${g.id}`)).body;
    await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, [
      { id: g.id, admitted: null, blockedDate: null, blockedReason: '', discharged: '2026-01-01T00:00:00Z', admittedPlusOnes: 5, firstName: 'U2' },
    ]);
    const after = (await alice.call('GET', `/checkin/v1/api/guest/${g.id}`)).body;
    expect(after).toMatchObject({ firstName: 'U2', admitted: before.admitted, blockedDate: before.blockedDate, blockedReason: 'test', admittedPlusOnes: 0 });
    expect(after.discharged).toBeNull();
  });

  it('refuses 201 records with 400 and applies nothing; takes 200', async () => {
    const ev = await newEvent(alice);
    const records = (n: number) => Array.from({ length: n }, (_, i) => ({ firstName: `G${i}` }));
    const tooMany = await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, records(201));
    expect(tooMany.status).toBe(400);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${ev}`, records(201))).status).toBe(400);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}`)).body.items).toHaveLength(0);
    expect((await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, records(200))).status).toBe(204);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}?limit=1000`)).body.items).toHaveLength(200);
  });

  it('validates the whole batch before appending anything', async () => {
    const ev = await newEvent(alice);
    const reply = await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, [{ firstName: 'ok' }, { plusOnes: -1 }]);
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].path).toBe('1.plusOnes');
    const dupes = await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, [{ customId: 'x' }, { customId: 'X' }]);
    expect(dupes.status).toBe(400);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}`)).body.items).toHaveLength(0);
  });

  it('never touches another client’s guest or event (404); the same guest id is the caller’s own guest', async () => {
    const ev = await newEvent(alice);
    const [g] = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Mine' }])).body;
    const bobEvent = await newEvent(bob);
    expect((await bob.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, [{ firstName: 'x' }])).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/guest/${g.id}`)).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/guest/${g.id}/history`)).status).toBe(404);
    // Guest ids are scoped per client (docs/identifiers.md): Bob's record with this id is a guest of Bob's.
    expect((await bob.call('PUT', `/checkin/v1/api/guests/${bobEvent}/upsert`, [{ id: g.id, firstName: 'Other' }])).status).toBe(204);
    expect((await bob.call('GET', `/checkin/v1/api/guest/${g.id}`)).body).toMatchObject({ id: g.id, eventId: bobEvent, firstName: 'Other' });
    expect((await bob.call('GET', `/checkin/v1/api/guests/${ev}`)).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/guests/${ev}/byinfo?additionalInfo=x`)).status).toBe(404);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${g.id}`)).body.firstName).toBe('Mine');
  });
});

describe('search', () => {
  it('byinfo matches a literal, case-insensitive text, sorted by last then first name, paged', async () => {
    const ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [
      { firstName: 'Zed', lastName: 'Brown', additionalInfo: 'Needs WHEELCHAIR access' },
      { firstName: 'Amy', lastName: 'Brown', additionalInfo: 'wheelchair' },
      { firstName: 'Bob', lastName: 'Adams', additionalInfo: 'Wheelchair (electric)' },
      { firstName: 'No', lastName: 'Match', additionalInfo: 'vegan' },
      { firstName: 'Dot', lastName: 'Star', additionalInfo: 'a.*b' },
    ]);
    const reply = await alice.call('GET', `/checkin/v1/api/guests/${ev}/byinfo?additionalInfo=wheelCHAIR`);
    expect(reply.status).toBe(200);
    expect(reply.body.map((g: { firstName: string }) => g.firstName)).toEqual(['Bob', 'Amy', 'Zed']);
    const regexLike = await alice.call('GET', `/checkin/v1/api/guests/${ev}/byinfo?additionalInfo=${encodeURIComponent('a.*b')}`);
    expect(regexLike.body.map((g: { firstName: string }) => g.firstName)).toEqual(['Dot']);
    const page1 = await alice.call('GET', `/checkin/v1/api/guests/${ev}/byinfo?additionalInfo=wheelchair&limit=2`);
    expect(page1.body).toHaveLength(2);
    const cursor = page1.headers.get('x-next-cursor')!;
    const page2 = await alice.call('GET', `/checkin/v1/api/guests/${ev}/byinfo?additionalInfo=wheelchair&limit=2&cursor=${cursor}`);
    expect(page2.body.map((g: { firstName: string }) => g.firstName)).toEqual(['Zed']);
    expect(page2.headers.get('x-next-cursor')).toBeNull();
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}/byinfo`)).status).toBe(400);
  });

  it('byinfo answers each guest as it is now: a change and an admission after an earlier answer show in the next one', async () => {
    // Each guest's answer text is kept with its stored document (src/commands/guests.ts, guestViewJson).
    const ev = await newEvent(alice);
    const [created] = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Ann', lastName: 'Lee', barcode: 'BY-1', additionalInfo: 'balcony' }])).body;
    const byinfo = async () => (await alice.call('GET', `/checkin/v1/api/guests/${ev}/byinfo?additionalInfo=balcony`)).body;
    expect(await byinfo()).toMatchObject([{ id: created.id, firstName: 'Ann' }]);
    expect((await byinfo())[0].admitted).toBeNull();
    await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, [{ id: created.id, firstName: 'Anna', lastName: 'Lee', barcode: 'BY-1', additionalInfo: 'balcony' }]);
    expect(await byinfo()).toMatchObject([{ id: created.id, firstName: 'Anna' }]);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: 'BY-1' })).status).toBe(200);
    const [admitted] = await byinfo();
    expect(admitted.firstName).toBe('Anna');
    expect(typeof admitted.admitted).toBe('string');
  });

  it('lists by tag, state and free text, and by change time for offline sync', async () => {
    const ev = await newEvent(alice);
    const created = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [
      { firstName: 'Tag', tags: 'VIP', barcode: 'L-1' },
      { firstName: 'Other', email: 'findme@example.com', barcode: 'L-2' },
    ])).body;
    await new Promise((r) => setTimeout(r, 5));
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    await checkin(alice, ev, { barcode: 'L-2' });
    const names = async (query: string) =>
      (await alice.call('GET', `/checkin/v1/api/guests/${ev}?${query}`)).body.items.map((g: { firstName: string }) => g.firstName);
    expect(await names('tag=vip')).toEqual(['Tag']);
    expect(await names('state=admitted')).toEqual(['Other']);
    expect(await names('state=not_admitted')).toEqual(['Tag']);
    expect(await names('q=FINDME')).toEqual(['Other']);
    expect(await names('q=L-1')).toEqual(['Tag']);
    expect(await names(`changedSince=${encodeURIComponent(since)}`)).toEqual(['Other']);
    expect(created).toHaveLength(2);
  });
});

describe('door: check-in', () => {
  let ev: string;
  beforeAll(async () => {
    ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [
      { firstName: 'Solo', barcode: 'S-1' },
      { firstName: 'Plus', barcode: 'P-1', plusOnes: 3 },
      { firstName: 'Group', barcode: 'G-1', plusOnes: 4, isGroup: true },
      { firstName: 'Early', barcode: 'E-1', validFrom: '2099-01-01T00:00:00Z' },
      { firstName: 'Late', barcode: 'L-1', validTo: '2020-01-01T00:00:00Z' },
      { firstName: 'Twin1', barcode: 'T-1' },
      { firstName: 'Twin2', barcode: 'T-1' },
      { firstName: 'Custom', customId: 'door-custom' },
      { firstName: 'Blocked', barcode: 'X-1' },
    ]);
    const blocked = (await alice.call('GET', `/checkin/v1/api/guests/${ev}?q=X-1`)).body.items[0];
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/block`, { ids: [blocked.id], reason: 'unpaid ticket' });
  });

  it('admits a guest by barcode and tells the scanner what to show', async () => {
    const reply = await checkin(alice, ev, { barcode: 'S-1', gate: 'North', device: 'ipad-1' });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 0, plusOnesLeft: 0, replayed: false, guest: { firstName: 'Solo' } });
    expect(reply.body.guest.admitted).toBeTruthy();
  });

  it('rejects a guest already inside with no plus ones left: already_admitted', async () => {
    const reply = await checkin(alice, ev, { barcode: 'S-1' });
    expect(reply.body).toMatchObject({ result: 'rejected', reason: 'already_admitted' });
  });

  it('admits plus ones later on a second scan, never more than plusOnes', async () => {
    const first = await checkin(alice, ev, { barcode: 'P-1', plusOnes: 1 });
    expect(first.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 1, plusOnesLeft: 2 });
    const second = await checkin(alice, ev, { barcode: 'P-1', plusOnes: 5 });
    expect(second.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 2, plusOnesLeft: 0 });
    expect(second.body.guest.admittedPlusOnes).toBe(3);
    expect((await checkin(alice, ev, { barcode: 'P-1', plusOnes: 1 })).body.reason).toBe('already_admitted');
  });

  it('admits all plus ones of a group with the guest', async () => {
    const reply = await checkin(alice, ev, { barcode: 'G-1' });
    expect(reply.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 4, plusOnesLeft: 0 });
  });

  it('rejects before validFrom (not_yet_valid), after validTo (expired), blocked with the reason, unknown and ambiguous barcodes', async () => {
    expect((await checkin(alice, ev, { barcode: 'E-1' })).body.reason).toBe('not_yet_valid');
    expect((await checkin(alice, ev, { barcode: 'L-1' })).body.reason).toBe('expired');
    const blocked = await checkin(alice, ev, { barcode: 'X-1' });
    expect(blocked.body).toMatchObject({ result: 'rejected', reason: 'blocked', blockedReason: 'unpaid ticket' });
    expect((await checkin(alice, ev, { barcode: 'NOPE' })).body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    expect((await checkin(alice, ev, { barcode: 'T-1' })).body).toMatchObject({ result: 'rejected', reason: 'ambiguous' });
  });

  it('lets a supervisor force a blocked or out-of-window guest in', async () => {
    expect((await checkin(alice, ev, { barcode: 'E-1', force: true })).body.result).toBe('admitted');
  });

  it('finds a guest by customId and by id; another client’s guest is not_found', async () => {
    expect((await checkin(alice, ev, { customId: 'DOOR-CUSTOM' })).body.result).toBe('admitted');
    const solo = (await alice.call('GET', `/checkin/v1/api/guests/${ev}?q=S-1`)).body.items[0];
    expect((await checkin(alice, ev, { guestId: solo.id })).body.reason).toBe('already_admitted');
    const bobEvent = await newEvent(bob);
    expect((await checkin(bob, bobEvent, { guestId: solo.id })).body.reason).toBe('not_found');
    expect((await checkin(bob, ev, { guestId: solo.id })).status).toBe(404);
  });

  it('lists rejected scans, unknown barcodes included, for the organizer', async () => {
    const reply = await alice.call('GET', `/checkin/v1/api/event/${ev}/scans?result=rejected&limit=100`);
    expect(reply.status).toBe(200);
    const reasons = reply.body.items.map((s: { reason: string }) => s.reason);
    expect(reasons).toEqual(expect.arrayContaining(['already_admitted', 'not_yet_valid', 'expired', 'blocked', 'not_found', 'ambiguous']));
    const unknown = reply.body.items.find((s: { reason: string }) => s.reason === 'not_found');
    expect(unknown.lookup).toEqual({ barcode: 'NOPE' });
  });

  it('requires exactly one way to name the guest', async () => {
    expect((await checkin(alice, ev, {})).status).toBe(400);
    expect((await checkin(alice, ev, { barcode: 'S-1', customId: 'x' })).status).toBe(400);
  });
});

describe('door: concurrency, nonces, offline scans, undo, check-out', () => {
  it('admits a guest scanned at two doors at once exactly once', async () => {
    const ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Race', barcode: 'R-1' }]);
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => checkin(alice, ev, { barcode: 'R-1', gate: `door-${i}` })));
    const results = replies.map((r) => r.body.result);
    expect(results.filter((r) => r === 'admitted')).toHaveLength(1);
    expect(results.filter((r) => r === 'rejected')).toHaveLength(5);
    const stats = (await alice.call('GET', `/checkin/v1/api/event/${ev}/stats`)).body;
    expect(stats.insideNow).toEqual({ guests: 1, people: 1 });
  });

  it('answers a repeated nonce with the first result and changes nothing', async () => {
    const ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Nonce', barcode: 'N-1', plusOnes: 2 }]);
    const first = await checkin(alice, ev, { barcode: 'N-1', nonce: 'scan-0001', plusOnes: 1 });
    const again = await checkin(alice, ev, { barcode: 'N-1', nonce: 'scan-0001', plusOnes: 1 });
    expect(again.body).toMatchObject({ result: 'admitted', scanId: first.body.scanId, plusOnesAdmitted: 1, replayed: true });
    expect(again.body.guest.admittedPlusOnes).toBe(1);
    const concurrent = await Promise.all([1, 2, 3].map(() => checkin(alice, ev, { barcode: 'N-1', nonce: 'scan-0002', plusOnes: 1 })));
    expect(new Set(concurrent.map((r) => r.body.scanId)).size).toBe(1);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}?q=N-1`)).body.items[0].admittedPlusOnes).toBe(2);
  });

  it('uses an offline scanner’s time for validity, and refuses a time far in the future', async () => {
    const ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Off', barcode: 'O-1', validTo: '2026-06-01T00:00:00Z' }]);
    const reply = await checkin(alice, ev, { barcode: 'O-1', at: '2026-05-31T20:00:00Z', device: 'offline-1' });
    expect(reply.body).toMatchObject({ result: 'admitted', at: '2026-05-31T20:00:00.000Z' });
    expect(reply.body.guest.admitted).toBe('2026-05-31T20:00:00.000Z');
    expect((await checkin(alice, ev, { barcode: 'O-1', at: '2099-01-01T00:00:00Z' })).status).toBe(400);
  });

  it('undoes a check-in by scan id or nonce, as an audited event', async () => {
    const ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Undo', barcode: 'U-1', plusOnes: 1 }]);
    const admitted = await checkin(alice, ev, { barcode: 'U-1', nonce: 'undo-1' });
    const undo = await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin/undo`, { nonce: 'undo-1' });
    expect(undo.status).toBe(200);
    expect(undo.body.guest.admitted).toBeNull();
    expect((await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin/undo`, { scanId: admitted.body.scanId })).status).toBe(404);
    const history = (await alice.call('GET', `/checkin/v1/api/guest/${undo.body.guest.id}/history`)).body.events;
    expect(history.map((e: { type: string }) => e.type)).toEqual(['GuestRegistered', 'GuestAdmitted', 'GuestAdmissionAnnulled']);
    expect((await checkin(alice, ev, { barcode: 'U-1' })).body.result).toBe('admitted');
  });

  it('checks a guest out and lets them in again', async () => {
    const ev = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Out', barcode: 'C-1' }]);
    await checkin(alice, ev, { barcode: 'C-1' });
    const out = await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkout`, { barcode: 'C-1' });
    expect(out.body.result).toBe('discharged');
    expect(out.body.guest.discharged).toBeTruthy();
    expect((await checkin(alice, ev, { barcode: 'C-1' })).body.result).toBe('admitted');
    const notIn = await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkout`, { barcode: 'NOPE' });
    expect(notIn.body.reason).toBe('not_found');
  });
});

describe('bulk block and unblock', () => {
  it('blocks by ids and barcodes with a reason, all or nothing, at most 200', async () => {
    const ev = await newEvent(alice);
    const created = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [
      { firstName: 'B1', barcode: 'BB-1' },
      { firstName: 'B2', barcode: 'BB-2' },
    ])).body;
    const bad = await alice.call('POST', `/checkin/v1/api/guests/${ev}/block`, { ids: [created[0].id], barcodes: ['NOPE'], reason: 'x' });
    // Spec, Errors: 404 for a guest not found (or not the caller's); `errors` names each one.
    expect(bad.status).toBe(404);
    expect(bad.body.errors).toEqual([{ path: 'barcodes.0', message: 'no guest of this event has this barcode' }]);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}?state=blocked`)).body.items).toHaveLength(0);
    const ok = await alice.call('POST', `/checkin/v1/api/guests/${ev}/block`, { ids: [created[0].id], barcodes: ['BB-2'], reason: 'fraud' });
    expect(ok.status).toBe(200);
    expect(ok.body.map((g: { blockedReason: string }) => g.blockedReason)).toEqual(['fraud', 'fraud']);
    const unblock = await alice.call('POST', `/checkin/v1/api/guests/${ev}/unblock`, { barcodes: ['BB-1'] });
    expect(unblock.body[0].blockedDate).toBeNull();
    const tooMany = await alice.call('POST', `/checkin/v1/api/guests/${ev}/block`, { barcodes: Array.from({ length: 201 }, (_, i) => `x${i}`) });
    expect(tooMany.status).toBe(400);
    const bobEvent = await newEvent(bob);
    expect((await bob.call('POST', `/checkin/v1/api/guests/${bobEvent}/block`, { ids: [created[1].id] })).status).toBe(404);
    expect((await bob.call('POST', `/checkin/v1/api/guests/${ev}/block`, { ids: [created[1].id] })).status).toBe(404);
  });
});

describe('team statistics, event stats and history', () => {
  it('counts people per team member, with activity buckets, and event stats by gate, device and reason', async () => {
    const ev = await newEvent(alice);
    const userName = `stats-${Date.now()}`;
    await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `${userName}@example.com` });
    const token = await passwordToken(service.url, userName, 'door staff pass 1');
    const asMember = { authorization: `Bearer ${token}` };
    await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [
      { firstName: 'S1', barcode: 'ST-1', plusOnes: 2, isGroup: true },
      { firstName: 'S2', barcode: 'ST-2' },
    ]);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: 'ST-1', gate: 'A', device: 'd1', at: '2026-11-21T10:01:00Z' }, asMember);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: 'ST-2', gate: 'B.2', device: 'd1', at: '2026-11-21T10:20:00Z' }, asMember);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: 'ST-9' }, asMember);
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkout`, { barcode: 'ST-2' }, asMember);
    const team = await alice.call('GET', `/checkin/v1/api/team/event/${ev}`);
    expect(team.status).toBe(200);
    expect(team.body).toHaveLength(1);
    expect(team.body[0]).toMatchObject({
      eventId: ev,
      username: userName,
      checkedIn: 4,
      checkedOut: 1,
      checkedInActivity: [
        { admitted: '2026-11-21T10:00:00.000Z', admittedCount: 3 },
        { admitted: '2026-11-21T10:15:00.000Z', admittedCount: 1 },
      ],
    });
    const hourly = await alice.call('GET', `/checkin/v1/api/team/event/${ev}?bucket=60`);
    expect(hourly.body[0].checkedInActivity).toEqual([{ admitted: '2026-11-21T10:00:00.000Z', admittedCount: 4 }]);
    const stats = (await alice.call('GET', `/checkin/v1/api/event/${ev}/stats`)).body;
    expect(stats).toMatchObject({
      invited: 2,
      admitted: 2,
      insideNow: { guests: 1, people: 3 },
      rejectedScans: { not_found: 1 },
      admissionsByGate: { A: { admissions: 1, people: 3 }, 'B.2': { admissions: 1, people: 1 } },
      admissionsByDevice: { d1: { admissions: 2, people: 4 } },
    });
    expect((await bob.call('GET', `/checkin/v1/api/team/event/${ev}`)).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/event/${ev}/stats`)).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/event/${ev}/scans`)).status).toBe(404);
  });

  it('returns every event of a guest with actor and correlation id, and the state as of a moment', async () => {
    const ev = await newEvent(alice);
    const [g] = (await alice.call('POST', `/checkin/v1/api/guests/${ev}`, [{ firstName: 'Hist', barcode: 'H-1' }], { 'x-correlation-id': 'import-7' })).body;
    const beforeAdmission = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    await checkin(alice, ev, { barcode: 'H-1' });
    const full = (await alice.call('GET', `/checkin/v1/api/guest/${g.id}/history`)).body;
    expect(full.events.map((e: { type: string }) => e.type)).toEqual(['GuestRegistered', 'GuestAdmitted']);
    expect(full.events[0]).toMatchObject({ actor: { type: 'client', id: alice.id }, correlationId: 'import-7', data: { firstName: 'Hist' } });
    const asOf = (await alice.call('GET', `/checkin/v1/api/guest/${g.id}/history?asOf=${encodeURIComponent(beforeAdmission)}`)).body;
    expect(asOf.events).toHaveLength(1);
    expect(asOf.state).toMatchObject({ firstName: 'Hist', inside: false });
    expect(asOf.state.admitted).toBeUndefined();
  });
});
