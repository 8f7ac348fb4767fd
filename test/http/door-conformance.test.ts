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

  it('another device’s unmatched scan with the same nonce and another code is a scan of its own, answered and counted', async () => {
    const eventId = await newEvent(alice);
    const a = await scan(eventId, 'checkin', { barcode: 'NOBODY-A', nonce: '7', device: 'd1' });
    const b = await scan(eventId, 'checkin', { barcode: 'NOBODY-B', nonce: '7', device: 'd2' });
    expect(a.body).toMatchObject({ result: 'rejected', reason: 'not_found', replayed: false });
    expect(b.body).toMatchObject({ result: 'rejected', reason: 'not_found', replayed: false });
    expect(b.body.scanId).not.toBe(a.body.scanId);
    expect((await stats(eventId)).rejectedScans).toEqual({ not_found: 2 });
  });
});

describe('isGroup: all plus ones come in with the guest (spec, Guest.isGroup)', () => {
  it('a group scanned with a smaller plusOnes count still comes in whole, and is counted so', async () => {
    const eventId = await newEvent(alice);
    await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Class', barcode: 'GRP-1', plusOnes: 3, isGroup: true }]);
    // An app whose plus-one counter defaults to 1.
    const first = await scan(eventId, 'checkin', { barcode: 'GRP-1', plusOnes: 1 });
    expect(first.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 3, plusOnesLeft: 0, guest: { admittedPlusOnes: 3 } });
    expect((await scan(eventId, 'checkin', { barcode: 'GRP-1' })).body).toMatchObject({ result: 'rejected', reason: 'already_admitted' });
    expect((await stats(eventId)).insideNow).toEqual({ guests: 1, people: 4 });
    const out = await scan(eventId, 'checkout', { barcode: 'GRP-1' });
    expect(out.body.result).toBe('discharged');
    expect((await scan(eventId, 'checkin', { barcode: 'GRP-1', plusOnes: 0 })).body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 3 });
    const team = (await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`)).body;
    expect(team.find((r: { teamMemberId: string }) => r.teamMemberId === alice.id)).toMatchObject({ checkedIn: 8, checkedOut: 4 });
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
    const { image: _i, updated: _u, ...before } = out.body.guest;
    const { image: _j, updated: _v, ...after } = undone.body.guest;
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

describe('validity windows on the event’s clocks across DST changes (wall times without offset)', () => {
  // Europe/Berlin: on 2026-03-29 clocks jump from 02:00 to 03:00 (01:00Z); on 2026-10-25 they go back from 03:00 to 02:00 (01:00Z).
  it('a validTo in the hour that occurs twice ends at its second occurrence: the door clocks show 02:30 < 02:59 both times', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    const [g] = (await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Night', barcode: 'DST-1', validFrom: '2026-10-25T01:00:00', validTo: '2026-10-25T02:59:00' },
    ])).body;
    expect(g).toMatchObject({ validFrom: '2026-10-24T23:00:00.000Z', validTo: '2026-10-25T01:59:00.000Z' });
    // 02:30 for the second time (winter time).
    const second = await scan(eventId, 'checkin', { barcode: 'DST-1', at: '2026-10-25T02:30:00+01:00' });
    expect(second.body).toMatchObject({ result: 'admitted' });
    const out = await scan(eventId, 'checkout', { barcode: 'DST-1', at: '2026-10-25T02:40:00+01:00' });
    expect(out.body.result).toBe('discharged');
    expect((await scan(eventId, 'checkin', { barcode: 'DST-1', at: '2026-10-25T03:00:00+01:00' })).body.reason).toBe('expired');
  });

  it('a validFrom or validTo in the hour that is skipped is the moment the clocks jump', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    const [from, to] = (await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'From', barcode: 'DST-2', validFrom: '2026-03-29T02:30:00' },
      { firstName: 'To', barcode: 'DST-3', validFrom: '2026-03-29T00:00:00', validTo: '2026-03-29T02:30:00' },
    ])).body;
    expect(from.validFrom).toBe('2026-03-29T01:00:00.000Z');
    expect(to.validTo).toBe('2026-03-29T01:00:00.000Z');
    // 03:10 summer time: the door clocks are past 02:30.
    expect((await scan(eventId, 'checkin', { barcode: 'DST-2', at: '2026-03-29T03:10:00+02:00' })).body.result).toBe('admitted');
    expect((await scan(eventId, 'checkin', { barcode: 'DST-3', at: '2026-03-29T03:10:00+02:00' })).body.reason).toBe('expired');
    expect((await scan(eventId, 'checkin', { barcode: 'DST-3', at: '2026-03-29T01:59:00+01:00' })).body.result).toBe('admitted');
  });

  it('the same through the upsert, and other date-times keep the general rule', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    const [g] = (await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Up', barcode: 'DST-4' }])).body;
    expect((await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: g.id, validTo: '2026-10-25T02:30:00' }])).status).toBe(204);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${g.id}`)).body.validTo).toBe('2026-10-25T01:30:00.000Z');
    // A scan's own `at` without offset is still the first occurrence (docs/identifiers.md).
    expect((await scan(eventId, 'checkin', { barcode: 'DST-4', at: '2026-10-25T02:30:00' })).body.at).toBe('2026-10-25T00:30:00.000Z');
  });
});

describe('a customId sent with white space around it (a scanning app that pads what it read)', () => {
  it('finds the guest at the door as on the guest routes: its customId with or without the spaces it was stored with', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Plain', customId: 'CRM-7' },
      { firstName: 'Padded', customId: ' CRM-8 ' },
    ]);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const read = (customId: string) => alice.call('GET', `/checkin/v1/api/guest/${encodeURIComponent(customId)}?eventId=${eventId}`);
    for (const [customId, firstName] of [['  crm-7 ', 'Plain'], ['CRM-7', 'Plain'], [' CRM-8 ', 'Padded'], ['crm-8', 'Padded']]) {
      const route = await read(customId!);
      expect(route.status, `route ${JSON.stringify(customId)}: ${JSON.stringify(route.body)}`).toBe(200);
      expect(route.body.firstName).toBe(firstName);
      const checkin = await scan(eventId, 'checkin', { customId });
      expect(checkin.body, `door ${JSON.stringify(customId)}`).toMatchObject({ result: 'admitted', guest: { firstName } });
      expect((await scan(eventId, 'checkout', { customId })).body, `door ${JSON.stringify(customId)}`).toMatchObject({ result: 'discharged' });
    }
    // By guestId, a value that is no guest id is tried as a customId, the same way.
    expect((await scan(eventId, 'checkin', { guestId: ' CRM-7 ' })).body).toMatchObject({ result: 'admitted', guest: { firstName: 'Plain' } });
    const blocked = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { customIds: [' crm-8 '], reason: 'test' });
    expect(blocked.status, JSON.stringify(blocked.body)).toBe(200);
    // One customId of the event with or without the spaces: no second guest takes it.
    const again = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Other', customId: ' CRM-7 ' });
    expect(again.status, JSON.stringify(again.body)).toBe(409);
    expect((await guestsOf(eventId)).length).toBe(2);
    // A retried create of the padded guest, same content: the guest it made, not a conflict.
    const padded = { eventId, firstName: 'Retry', customId: ' CRM-9 ' };
    const first = await alice.call('POST', '/checkin/v1/api/guest', padded);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const retried = await alice.call('POST', '/checkin/v1/api/guest', padded);
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.id).toBe(first.body.id);
  });
});
