import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The door as a supervisor and a scanning app's developer read it (docs/guests.md "Who may
 * force", docs/api.md "Door"): what a forced admission is, what a second block does, and where
 * a validity window starts and ends.
 */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

const addGuests = async (eventId: string, records: Record<string, unknown>[]) => {
  const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, records);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as Record<string, any>[];
};
const checkin = (eventId: string, body: Record<string, unknown>) => alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body);
const block = (eventId: string, body: Record<string, unknown>) => alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, body);
const admissions = async (eventId: string) =>
  ((await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans?limit=1000`)).body.items as Record<string, any>[]).filter((s) => s.result === 'admitted');

describe('forced: an admission that overrode a block or the validity window, not any scan sent with force', () => {
  it('a force flag left on for guests nothing bars records ordinary admissions; the overrides stay marked', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    await addGuests(eventId, [
      { firstName: 'Plain', barcode: 'FRC-1' },
      { firstName: 'Barred', barcode: 'FRC-2' },
      { firstName: 'Late', barcode: 'FRC-3', validTo: '2026-06-01T23:00:00' },
    ]);
    expect((await block(eventId, { barcodes: ['FRC-2'], reason: 'unpaid' })).status).toBe(200);
    // A supervisor's app whose force toggle stayed on.
    for (const barcode of ['FRC-1', 'FRC-2']) expect((await checkin(eventId, { barcode, force: true })).body.result).toBe('admitted');
    expect((await checkin(eventId, { barcode: 'FRC-3', force: true, at: '2026-06-01T23:30:00' })).body.result).toBe('admitted');
    const byBarcode = new Map((await admissions(eventId)).map((s) => [s.guestId, s]));
    const guests = (await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=10`)).body.items as Record<string, any>[];
    const forcedOf = (barcode: string) => byBarcode.get(guests.find((g) => g.barcode === barcode)!.id)?.forced;
    expect(forcedOf('FRC-1')).toBeUndefined();
    expect(forcedOf('FRC-2')).toBe(true);
    expect(forcedOf('FRC-3')).toBe(true);
  });
});

describe('force on a check-out', () => {
  it('is ignored: a team member without canForce whose app sends the flag on every scan checks the guest out (the document lists no 403 there)', async () => {
    const eventId = await newEvent(alice);
    await addGuests(eventId, [{ firstName: 'Exit', barcode: 'OUT-F1' }]);
    const userName = `exit-gate-${Date.now()}`;
    const created = await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `${userName}@example.com` });
    expect(created.status).toBe(200);
    const member = { authorization: `Bearer ${await passwordToken(service.url, userName, 'door staff pass 1')}` };
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'OUT-F1' }, member)).body.result).toBe('admitted');
    const out = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, { barcode: 'OUT-F1', force: true }, member);
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ result: 'discharged', guest: { discharged: expect.any(String) } });
    // On a check-in the flag still needs canForce.
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'OUT-F1', force: true }, member)).body.code).toBe('force_not_allowed');
    const openapi = (await alice.call('GET', '/openapi.json')).body;
    expect(Object.keys(openapi.paths['/checkin/v1/api/guests/{eventId}/checkout'].post.responses)).not.toContain('403');
  });
});

describe('a block of a guest who is blocked already', () => {
  it('without a reason (or with "") leaves the block and its reason as they are; another reason replaces it', async () => {
    const eventId = await newEvent(alice);
    const [fraud, other] = await addGuests(eventId, [
      { firstName: 'Fraud', barcode: 'BLK-1' },
      { firstName: 'Other', barcode: 'BLK-2' },
    ]);
    const first = await block(eventId, { ids: [fraud!.id], reason: 'fraud' });
    expect(first.body[0]).toMatchObject({ blockedReason: 'fraud', blockedDate: expect.any(String) });
    const since = first.body[0].blockedDate;
    // A bulk block without a reason that names the guest again among others.
    const bulk = await block(eventId, { barcodes: ['BLK-1', 'BLK-2'] });
    expect(bulk.status).toBe(200);
    const byId = new Map((bulk.body as Record<string, any>[]).map((g) => [g.id, g]));
    expect(byId.get(fraud!.id)).toMatchObject({ blockedReason: 'fraud', blockedDate: since });
    expect(byId.get(other!.id)).toMatchObject({ blockedReason: '', blockedDate: expect.any(String) });
    expect((await block(eventId, { ids: [fraud!.id], reason: '' })).body[0]).toMatchObject({ blockedReason: 'fraud', blockedDate: since });
    // What door staff see on a scan.
    expect((await checkin(eventId, { barcode: 'BLK-1' })).body).toMatchObject({ result: 'rejected', reason: 'blocked', blockedReason: 'fraud' });
    // Another reason is the supervisor's correction: it replaces the reason.
    expect((await block(eventId, { ids: [fraud!.id], reason: 'chargeback' })).body[0]).toMatchObject({ blockedReason: 'chargeback' });
    const history = (await alice.call('GET', `/checkin/v1/api/guest/${fraud!.id}/history`)).body.events as Record<string, any>[];
    expect(history.filter((e) => e.type === 'GuestBlocked').map((e) => e.data.reason)).toEqual(['fraud', 'chargeback']);
  });
});

describe('the validity window includes both ends', () => {
  it('a scan at exactly validFrom or validTo (wall times of the event’s zone) admits; a millisecond outside does not', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    const window = { validFrom: '2026-06-01T18:00:00', validTo: '2026-06-01T23:00:00' };
    await addGuests(eventId, ['VW-1', 'VW-2', 'VW-3', 'VW-4'].map((barcode) => ({ firstName: barcode, barcode, ...window })));
    expect((await checkin(eventId, { barcode: 'VW-1', at: '2026-06-01T16:00:00Z' })).body).toMatchObject({ result: 'admitted' });
    expect((await checkin(eventId, { barcode: 'VW-2', at: '2026-06-01T23:00:00' })).body).toMatchObject({ result: 'admitted' });
    expect((await checkin(eventId, { barcode: 'VW-3', at: '2026-06-01T17:59:59.999+02:00' })).body).toMatchObject({ result: 'rejected', reason: 'not_yet_valid' });
    expect((await checkin(eventId, { barcode: 'VW-4', at: '2026-06-01T21:00:00.001Z' })).body).toMatchObject({ result: 'rejected', reason: 'expired' });
  });
});
