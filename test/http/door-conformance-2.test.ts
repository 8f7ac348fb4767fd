import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The door as door staff's scanning apps meet it: several devices at several gates, offline
 * devices that sync later, retries over bad networks, signed tickets (docs/guests.md, "The door";
 * docs/tickets.md).
 */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

let memberCount = 0;
/** A team member of `client`: headers that act as them. */
async function teamMember(client: Client): Promise<Record<string, string>> {
  memberCount += 1;
  const userName = `gate-${memberCount}-${Date.now()}`;
  const password = 'door staff pass 1';
  const created = await client.call('POST', '/checkin/v1/api/teammember', { userName, password, email: `${userName}@example.com` });
  expect(created.status).toBe(200);
  return { authorization: `Bearer ${await passwordToken(service.url, userName, password)}` };
}

const scan = (eventId: string, direction: 'checkin' | 'checkout', body: Record<string, unknown>, headers?: Record<string, string>) =>
  alice.call('POST', `/checkin/v1/api/guests/${eventId}/${direction}`, body, headers);
const stats = async (eventId: string) => (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
const scansOf = async (eventId: string) =>
  (await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans?limit=1000`)).body.items as Record<string, any>[];

describe('nonce: a retry key of one scan, not of another kind of scan or another device’s scan', () => {
  it('a check-out that carries the nonce of the guest’s check-in checks the guest out (it is no retry of the check-in)', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Out', barcode: 'OUT-1' }]);
    // An app that numbers check-ins and check-outs each from 1.
    const inScan = await scan(eventId, 'checkin', { barcode: 'OUT-1', nonce: '1' });
    expect(inScan.body).toMatchObject({ result: 'admitted', replayed: false });
    const outScan = await scan(eventId, 'checkout', { barcode: 'OUT-1', nonce: '1' });
    expect(outScan.body).toMatchObject({ result: 'discharged', replayed: false, guest: { discharged: expect.any(String) } });
    expect(outScan.body.scanId).not.toBe(inScan.body.scanId);
    expect((await stats(eventId)).insideNow).toEqual({ guests: 0, people: 0 });
    // Each is still retried safely: the same answer, nothing counted twice.
    expect((await scan(eventId, 'checkout', { barcode: 'OUT-1', nonce: '1' })).body).toMatchObject({ result: 'discharged', replayed: true, scanId: outScan.body.scanId });
    expect((await scan(eventId, 'checkin', { barcode: 'OUT-1', nonce: '1' })).body).toMatchObject({ result: 'admitted', replayed: true, scanId: inScan.body.scanId });
    expect((await scansOf(eventId)).map((s) => s.result).sort()).toEqual(['admitted', 'discharged']);
  });

  it('the same guest scanned at two gates by two team members whose apps number alike: the second is already_admitted, not a replay of the first', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Twin', barcode: 'TWIN-1' }]);
    const [north, south] = [await teamMember(alice), await teamMember(alice)];
    const first = await scan(eventId, 'checkin', { barcode: 'TWIN-1', nonce: '37', gate: 'North', device: 'n1' }, north);
    expect(first.body).toMatchObject({ result: 'admitted', replayed: false });
    // A copy of the same ticket at the other gate, the other app's scan number 37 too.
    const second = await scan(eventId, 'checkin', { barcode: 'TWIN-1', nonce: '37', gate: 'South', device: 's1' }, south);
    expect(second.body).toMatchObject({ result: 'rejected', reason: 'already_admitted', replayed: false });
    // The first app's retry still gets its own answer.
    expect((await scan(eventId, 'checkin', { barcode: 'TWIN-1', nonce: '37', gate: 'North', device: 'n1' }, north)).body).toMatchObject({
      result: 'admitted',
      replayed: true,
      scanId: first.body.scanId,
    });
    expect((await stats(eventId)).rejectedScans).toEqual({ already_admitted: 1 });
  });
});

describe('offline scans synced late never undo what the door recorded after them', () => {
  it('a check-in scanned before the guest’s last check-out and synced after it does not put the guest back inside', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Late', barcode: 'LATE-1' }]);
    const [gateA, exitB, offlineC] = [await teamMember(alice), await teamMember(alice), await teamMember(alice)];
    expect((await scan(eventId, 'checkin', { barcode: 'LATE-1', at: '2026-06-01T19:00:00Z', device: 'a' }, gateA)).body.result).toBe('admitted');
    expect((await scan(eventId, 'checkout', { barcode: 'LATE-1', at: '2026-06-01T21:00:00Z', device: 'b' }, exitB)).body.result).toBe('discharged');
    // Device C scanned the same guest at 18:55 without a network, and syncs once the guest has gone home.
    const late = await scan(eventId, 'checkin', { barcode: 'LATE-1', at: '2026-06-01T18:55:00Z', device: 'c', nonce: 'c-1' }, offlineC);
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ result: 'rejected', reason: 'already_admitted', at: '2026-06-01T18:55:00.000Z' });
    expect(late.body.guest).toMatchObject({ admitted: '2026-06-01T19:00:00.000Z', discharged: '2026-06-01T21:00:00.000Z' });
    const s = await stats(eventId);
    expect(s).toMatchObject({ admitted: 1, insideNow: { guests: 0, people: 0 } });
    // A scan after the check-out is a new visit, as before.
    expect((await scan(eventId, 'checkin', { barcode: 'LATE-1', at: '2026-06-01T21:30:00Z', device: 'a' }, gateA)).body.result).toBe('admitted');
  });

  it('a check-out scanned before the guest’s current visit began and synced during it does not check the guest out', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Back', barcode: 'BACK-1' }]);
    const [gateA, exitB, exitD] = [await teamMember(alice), await teamMember(alice), await teamMember(alice)];
    await scan(eventId, 'checkin', { barcode: 'BACK-1', at: '2026-06-01T17:00:00Z' }, gateA);
    // The guest leaves at 18:00 past two exit scanners: B is offline, D is online.
    expect((await scan(eventId, 'checkout', { barcode: 'BACK-1', at: '2026-06-01T18:00:30Z' }, exitD)).body.result).toBe('discharged');
    expect((await scan(eventId, 'checkin', { barcode: 'BACK-1', at: '2026-06-01T19:00:00Z' }, gateA)).body.result).toBe('admitted');
    // B syncs its 18:00 exit scan while the guest is back inside.
    const stale = await scan(eventId, 'checkout', { barcode: 'BACK-1', at: '2026-06-01T18:00:00Z', nonce: 'b-1' }, exitB);
    expect(stale.status).toBe(200);
    expect(stale.body).toMatchObject({ result: 'rejected', reason: 'already_discharged' });
    expect((await stats(eventId)).insideNow).toEqual({ guests: 1, people: 1 });
  });
});

describe('the same guest at many gates at once', () => {
  it('every gate gets its scan answered (one admitted, the others already_admitted), never a 409 to retry', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Crowd', barcode: 'CROWD-1', plusOnes: 9, isGroup: true }]);
    // A group's one code, shown on ten phones at ten turnstiles.
    const gates = await Promise.all(Array.from({ length: 10 }, () => teamMember(alice)));
    const answers = await Promise.all(gates.map((headers, i) => scan(eventId, 'checkin', { barcode: 'CROWD-1', gate: `T${i}` }, headers)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(answers.filter((a) => a.body.result === 'admitted')).toHaveLength(1);
    expect(answers.filter((a) => a.body.reason === 'already_admitted')).toHaveLength(9);
    expect((await stats(eventId)).insideNow).toEqual({ guests: 1, people: 10 });
  });
});
