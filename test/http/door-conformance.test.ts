import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

/** The door as scanning apps rely on it: each test is a wrong answer found by probing (docs/guests.md, "The door"). */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

const scan = (eventId: string, direction: 'checkin' | 'checkout', body: Record<string, unknown>) =>
  alice.call('POST', `/checkin/v1/api/guests/${eventId}/${direction}`, body);
const stats = async (eventId: string) => (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
const guestsOf = async (eventId: string) =>
  (await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=1000`)).body.items as Record<string, any>[];

describe('nonce: a retry gets the first answer; another scan is another scan', () => {
  it('the same nonce sent by two devices for two guests admits and records both guests', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'A', barcode: 'NA-1' },
      { firstName: 'B', barcode: 'NB-1' },
    ]);
    // Two devices that each number their scans from 1.
    const a = await scan(eventId, 'checkin', { barcode: 'NA-1', nonce: '1', device: 'd1' });
    const b = await scan(eventId, 'checkin', { barcode: 'NB-1', nonce: '1', device: 'd2' });
    expect(a.body).toMatchObject({ result: 'admitted', replayed: false });
    expect(b.body).toMatchObject({ result: 'admitted', replayed: false, guest: { firstName: 'B' } });
    expect(b.body.scanId).not.toBe(a.body.scanId);
    expect(b.body.guest.admitted).not.toBeNull();
    expect((await guestsOf(eventId)).every((g) => g.admitted !== null)).toBe(true);
    expect((await stats(eventId)).insideNow).toEqual({ guests: 2, people: 2 });
    const scans = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans`)).body.items;
    expect(scans.map((s: { device: string }) => s.device).sort()).toEqual(['d1', 'd2']);
    // Each device's retry still gets its own first answer.
    const retry = await scan(eventId, 'checkin', { barcode: 'NB-1', nonce: '1', device: 'd2' });
    expect(retry.body).toMatchObject({ result: 'admitted', replayed: true, scanId: b.body.scanId });
    // Undo by that nonce cannot tell the two apart: it asks for the scan id, and undoes nothing.
    const undo = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, { nonce: '1' });
    expect(undo.status).toBe(409);
    expect(undo.body.code).toBe('ambiguous_nonce');
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, { scanId: b.body.scanId })).status).toBe(200);
  });

  it('the same nonce for a matched scan after an unmatched one records the admission', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'C', barcode: 'NC-1' }]);
    expect((await scan(eventId, 'checkin', { barcode: 'TYPO', nonce: 'n-7' })).body.reason).toBe('not_found');
    const admitted = await scan(eventId, 'checkin', { barcode: 'NC-1', nonce: 'n-7' });
    expect(admitted.body.result).toBe('admitted');
    expect((await stats(eventId)).insideNow).toEqual({ guests: 1, people: 1 });
  });
});

describe('nonce: a retry of a scan that matched no guest', () => {
  it('gets the first answer (its time, replayed) and is counted once', async () => {
    const eventId = await newEvent(alice);
    const first = await scan(eventId, 'checkin', { barcode: 'NOBODY', nonce: 'lost-1' });
    expect(first.body).toMatchObject({ result: 'rejected', reason: 'not_found', replayed: false });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const retry = await scan(eventId, 'checkin', { barcode: 'NOBODY', nonce: 'lost-1' });
    expect(retry.body).toEqual({ ...first.body, replayed: true });
    expect((await stats(eventId)).rejectedScans).toEqual({ not_found: 1 });
  });
});

describe('undo restores the state before the check-in', () => {
  const undo = (eventId: string, body: Record<string, unknown>) => alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, body);

  it('an undone re-admission leaves the guest as after the check-out: discharged, with the plus ones admitted before', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Re', barcode: 'RE-1', plusOnes: 2 }]);
    await scan(eventId, 'checkin', { barcode: 'RE-1', plusOnes: 1 });
    const out = await scan(eventId, 'checkout', { barcode: 'RE-1' });
    expect(out.body.guest).toMatchObject({ admittedPlusOnes: 1 });
    const again = await scan(eventId, 'checkin', { barcode: 'RE-1', plusOnes: 2 });
    const undone = await undo(eventId, { scanId: again.body.scanId });
    expect(undone.status).toBe(200);
    const { image: _i, ...before } = out.body.guest;
    const { image: _j, ...after } = undone.body.guest;
    expect(after).toEqual(before);
  });

  it('undoing a late plus-one scan, then the check-in before it, both within the window, leaves the guest outside', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Two', barcode: 'TWO-1', plusOnes: 2 }]);
    const first = await scan(eventId, 'checkin', { barcode: 'TWO-1', nonce: 'k1' });
    await scan(eventId, 'checkin', { barcode: 'TWO-1', nonce: 'k2', plusOnes: 1 });
    expect((await undo(eventId, { nonce: 'k2' })).status).toBe(200);
    const second = await undo(eventId, { nonce: 'k1' });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ annulled: first.body.scanId, guest: { admitted: null, admittedPlusOnes: 0 } });
    const s = await stats(eventId);
    expect(s).toMatchObject({ admitted: 0, insideNow: { guests: 0, people: 0 }, annulledCheckIns: 2, admissionsByGate: {} });
    const team = (await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`)).body;
    expect(team.find((r: { teamMemberId: string }) => r.teamMemberId === alice.id)).toMatchObject({ checkedIn: 0, checkedInActivity: [] });
  });
});
