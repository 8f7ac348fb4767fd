import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';
import { newTicketEvent, newTicketedGuest } from '../support/tickets.js';

/**
 * Offline door devices sync in any order, and nothing they did is lost: the guest's state and every
 * count end the same whichever device syncs first (docs/guests.md, "Scans synced out of order").
 */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

let memberCount = 0;
/** A team member of alice: their id and headers that act as them. */
async function teamMember(): Promise<{ id: string; headers: Record<string, string> }> {
  memberCount += 1;
  const userName = `order-${memberCount}-${Date.now()}`;
  const password = 'door staff pass 1';
  const created = await alice.call('POST', '/checkin/v1/api/teammember', { userName, password, email: `${userName}@example.com` });
  expect(created.status).toBe(200);
  return { id: created.body.id, headers: { authorization: `Bearer ${await passwordToken(service.url, userName, password)}` } };
}

type Scan = { direction: 'checkin' | 'checkout'; body: Record<string, unknown>; by: Record<string, string> };
const send = (eventId: string, s: Scan) => alice.call('POST', `/checkin/v1/api/guests/${eventId}/${s.direction}`, s.body, s.by);

/** What an operator reads after the sync: the guest, the event's counts, the team's counts, the timeline. */
async function outcome(eventId: string, members: { id: string }[]) {
  const [guest] = (await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=10`)).body.items;
  const stats = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
  const team = (await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`)).body as Record<string, any>[];
  const timeline = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60&from=2026-06-01T00:00:00Z&to=2026-06-02T00:00:00Z`)).body;
  const scans = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans?limit=100`)).body.items as Record<string, any>[];
  return {
    guest: { admitted: guest.admitted, discharged: guest.discharged, admittedPlusOnes: guest.admittedPlusOnes },
    stats: { admitted: stats.admitted, insideNow: stats.insideNow, plusOnes: stats.plusOnes, rejectedScans: stats.rejectedScans, admissionsByGate: stats.admissionsByGate },
    team: members.map((m) => {
      const row = team.find((r) => r.teamMemberId === m.id);
      return { checkedIn: row?.checkedIn, checkedOut: row?.checkedOut };
    }),
    timeline: timeline.totals,
    scans: scans.map((s) => ({ result: s.result, at: s.at, people: s.people, gate: s.gate })).sort((a, b) => a.at.localeCompare(b.at)),
  };
}

/** The same scans synced in two orders, each into an event of its own; both outcomes. */
async function bothOrders(guest: Record<string, unknown>, scans: (members: { headers: Record<string, string> }[]) => Scan[], memberCount = 2) {
  const members = await Promise.all(Array.from({ length: memberCount }, teamMember));
  const list = scans(members);
  const results = [];
  for (const order of [list, [...list].reverse()]) {
    const eventId = await newEvent(alice);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [guest])).status).toBe(200);
    const answers = [];
    for (const s of order) answers.push(await send(eventId, s));
    results.push({ answers, outcome: await outcome(eventId, members) });
  }
  return results;
}

describe('a check-out synced before the check-in it follows', () => {
  it('is recorded (200 discharged), and once the check-in syncs the guest and every count are as if synced in order', async () => {
    const [inOrder, reversed] = await bothOrders({ firstName: 'Ada', barcode: 'ORD-1', plusOnes: 2 }, ([gate, exit]) => [
      { direction: 'checkin', body: { barcode: 'ORD-1', plusOnes: 2, at: '2026-06-01T19:00:00Z', gate: 'North', device: 'a', nonce: 'a-1' }, by: gate!.headers },
      { direction: 'checkout', body: { barcode: 'ORD-1', at: '2026-06-01T21:00:00Z', gate: 'Exit', device: 'b', nonce: 'b-1' }, by: exit!.headers },
    ]);
    for (const { answers } of [inOrder!, reversed!]) {
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(answers.map((a) => a.body.result).sort()).toEqual(['admitted', 'discharged']);
    }
    expect(reversed!.outcome).toEqual(inOrder!.outcome);
    expect(reversed!.outcome).toMatchObject({
      guest: { admitted: '2026-06-01T19:00:00.000Z', discharged: '2026-06-01T21:00:00.000Z', admittedPlusOnes: 2 },
      stats: { admitted: 1, insideNow: { guests: 0, people: 0 } },
      team: [{ checkedIn: 3, checkedOut: 0 }, { checkedIn: 0, checkedOut: 3 }],
      timeline: { admissions: 1, admitted: 3, exits: 3, insideNow: 0 },
    });
  });

  it('of a group: the group leaves whole, counted once', async () => {
    const [inOrder, reversed] = await bothOrders({ firstName: 'Class', barcode: 'ORD-2', plusOnes: 3, isGroup: true }, ([gate, exit]) => [
      { direction: 'checkin', body: { barcode: 'ORD-2', at: '2026-06-01T19:00:00Z' }, by: gate!.headers },
      { direction: 'checkout', body: { barcode: 'ORD-2', at: '2026-06-01T20:00:00Z' }, by: exit!.headers },
    ]);
    expect(reversed!.outcome).toEqual(inOrder!.outcome);
    expect(reversed!.outcome.team).toEqual([{ checkedIn: 4, checkedOut: 0 }, { checkedIn: 0, checkedOut: 4 }]);
  });

  it('before the guest came back in: both visits are recorded, the guest is inside from the second', async () => {
    // Visit 1 (in at 17:00 on a, out at 18:00 on b), visit 2 (in at 19:00 on c); a syncs last.
    const [inOrder, reversed] = await bothOrders(
      { firstName: 'Back', barcode: 'ORD-3' },
      ([a, b, c]) => [
        { direction: 'checkin', body: { barcode: 'ORD-3', at: '2026-06-01T17:00:00Z' }, by: a!.headers },
        { direction: 'checkout', body: { barcode: 'ORD-3', at: '2026-06-01T18:00:00Z' }, by: b!.headers },
        { direction: 'checkin', body: { barcode: 'ORD-3', at: '2026-06-01T19:00:00Z' }, by: c!.headers },
      ],
      3,
    );
    expect(reversed!.answers.map((a) => a.body.result)).toEqual(['admitted', 'discharged', 'admitted']);
    expect(reversed!.outcome).toEqual(inOrder!.outcome);
    expect(reversed!.outcome).toMatchObject({
      guest: { admitted: '2026-06-01T19:00:00.000Z', discharged: '2026-06-01T18:00:00.000Z' },
      stats: { admitted: 1, insideNow: { guests: 1, people: 1 } },
      team: [{ checkedIn: 1, checkedOut: 0 }, { checkedIn: 0, checkedOut: 1 }, { checkedIn: 1, checkedOut: 0 }],
      timeline: { admissions: 2, admitted: 2, exits: 1, insideNow: 1 },
    });
  });

  it('of two visits, the exit device syncing both before the entry device: every scan counted in its own visit, as if synced in order', async () => {
    // Entry device a scans 17:00 and 17:20, exit device b 17:03 and 17:23; b syncs all it has first.
    const [a, b] = await Promise.all([teamMember(), teamMember()]);
    const scan = (direction: Scan['direction'], at: string, by: typeof a): Scan => ({ direction, body: { barcode: 'ORD-5', at, device: by === a ? 'a' : 'b' }, by: by.headers });
    const [in1, out1, in2, out2] = [scan('checkin', '2026-06-01T17:00:00Z', a), scan('checkout', '2026-06-01T17:03:00Z', b), scan('checkin', '2026-06-01T17:20:00Z', a), scan('checkout', '2026-06-01T17:23:00Z', b)];
    const outcomes = [];
    for (const order of [[in1, out1, in2, out2], [out1, out2, in1, in2]]) {
      const eventId = await newEvent(alice);
      expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Twice', barcode: 'ORD-5' }])).status).toBe(200);
      const answers = [];
      for (const s of order) answers.push((await send(eventId, s!)).body.result);
      expect(answers.sort()).toEqual(['admitted', 'admitted', 'discharged', 'discharged']);
      outcomes.push(await outcome(eventId, [a, b]));
    }
    const [inOrder, exitsFirst] = outcomes;
    expect(exitsFirst).toEqual(inOrder);
    expect(exitsFirst).toMatchObject({
      guest: { admitted: '2026-06-01T17:20:00.000Z', discharged: '2026-06-01T17:23:00.000Z' },
      stats: { admitted: 1, insideNow: { guests: 0, people: 0 } },
      team: [{ checkedIn: 2, checkedOut: 0 }, { checkedIn: 0, checkedOut: 2 }],
      timeline: { admissions: 2, admitted: 2, exits: 2, insideNow: 0 },
    });
  });

  it('a second exit scan of a visit already checked out is answered 200 rejected already_discharged, recorded, and counts no exit', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Twice', barcode: 'ORD-4' }]);
    await send(eventId, { direction: 'checkin', body: { barcode: 'ORD-4', at: '2026-06-01T17:00:00Z' }, by: {} });
    expect((await send(eventId, { direction: 'checkout', body: { barcode: 'ORD-4', at: '2026-06-01T18:00:00Z' }, by: {} })).body.result).toBe('discharged');
    const again = await send(eventId, { direction: 'checkout', body: { barcode: 'ORD-4', at: '2026-06-01T18:02:00Z', nonce: 'x-2' }, by: {} });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ result: 'rejected', reason: 'already_discharged', replayed: false, guest: { discharged: '2026-06-01T18:00:00.000Z' } });
    // Its retry gets the same answer; it is counted once, with the rejected scans.
    const retry = await send(eventId, { direction: 'checkout', body: { barcode: 'ORD-4', at: '2026-06-01T18:02:00Z', nonce: 'x-2' }, by: {} });
    expect(retry.body).toMatchObject({ result: 'rejected', reason: 'already_discharged', replayed: true, scanId: again.body.scanId });
    expect((await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body.rejectedScans).toEqual({ already_discharged: 1 });
    const team = (await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`)).body;
    expect(team.find((r: { teamMemberId: string }) => r.teamMemberId === alice.id)).toMatchObject({ checkedIn: 1, checkedOut: 1 });
  });
});

describe('a revoked ticket at the exit', () => {
  it('lets its guest out (200 discharged, counted) though it lets no one in', async () => {
    const eventId = await newTicketEvent(alice);
    const guest = await newTicketedGuest(alice, eventId);
    expect((await send(eventId, { direction: 'checkin', body: { barcode: guest.code }, by: {} })).body.result).toBe('admitted');
    expect((await alice.call('POST', `/checkin/v1/api/guest/${guest.id}/ticket/revoke`)).status).toBe(204);
    const out = await send(eventId, { direction: 'checkout', body: { barcode: guest.code }, by: {} });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ result: 'discharged', guest: { id: guest.id } });
    expect((await send(eventId, { direction: 'checkin', body: { barcode: guest.code }, by: {} })).body).toMatchObject({ result: 'rejected', reason: 'revoked' });
    const stats = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
    expect(stats).toMatchObject({ insideNow: { guests: 0, people: 0 }, rejectedScans: { revoked: 1 } });
    const team = (await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`)).body;
    expect(team.find((r: { teamMemberId: string }) => r.teamMemberId === alice.id)).toMatchObject({ checkedIn: 1, checkedOut: 1 });
  });
});

describe('a scan time `at` outside what the door accepts', () => {
  it('more than 5 minutes ahead of the server: 400 naming `at`, nothing recorded, either direction', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Soon', barcode: 'AT-1' }]);
    const ahead = new Date(Date.now() + 10 * 60_000).toISOString();
    for (const direction of ['checkin', 'checkout'] as const) {
      const reply = await send(eventId, { direction, body: { barcode: 'AT-1', at: ahead }, by: {} });
      expect(reply.status).toBe(400);
      expect(reply.body.errors).toEqual([expect.objectContaining({ path: 'at' })]);
    }
    expect((await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans`)).body.items).toEqual([]);
  });

  it('days before the guest’s validFrom: recorded as rejected not_yet_valid, the guest unchanged', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Early', barcode: 'AT-2', validFrom: '2026-06-01T17:00:00Z' }]);
    const early = await send(eventId, { direction: 'checkin', body: { barcode: 'AT-2', at: '2026-05-20T10:00:00Z' }, by: {} });
    expect(early.status).toBe(200);
    expect(early.body).toMatchObject({ result: 'rejected', reason: 'not_yet_valid', guest: { admitted: null } });
    const stats = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
    expect(stats).toMatchObject({ admitted: 0, insideNow: { guests: 0, people: 0 }, rejectedScans: { not_yet_valid: 1 } });
  });
});
