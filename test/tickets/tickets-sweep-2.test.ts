import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';
import { newTicketEvent as newEvent, newTicketedGuest as newGuest } from '../support/tickets.js';

/**
 * Issue 16, from the door: what an offline scanner syncs and what the door answers must agree, for
 * every code a guest may show (docs/tickets.md).
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(async () => {
  await service?.close();
});

async function doorStaff(client: Client): Promise<Record<string, string>> {
  const userName = `scanner-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const password = 'door staff pass 1';
  expect((await client.call('POST', '/checkin/v1/api/teammember', { userName, password, email: `${userName}@example.com` })).status).toBe(200);
  return { authorization: `Bearer ${await passwordToken(service.url, userName, password)}` };
}

const checkin = (client: Client, eventId: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
  client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body, headers);
const syncItemOf = async (client: Client, eventId: string, guestId: string) =>
  (await client.call('GET', `/checkin/v1/api/event/${eventId}/tickets?limit=1000`)).body.items.find((i: { guestId: string }) => i.guestId === guestId);

describe('offline sync: every code that admits at the door', () => {
  it('a guest with a signed ticket that later got its own barcode syncs both: the barcode its invitation shows and the ticket', async () => {
    const eventId = await newEvent(alice);
    const guest = await newGuest(alice, eventId);
    expect((await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: guest.id, barcode: 'CRM-4711' }])).status).toBe(204);
    // Invitations now draw the barcode; the ticket keeps admitting (docs/tickets.md).
    expect((await alice.call('GET', `/checkin/v1/api/guest/${guest.id}/ticket`)).body).toMatchObject({ kind: 'barcode', code: 'CRM-4711' });
    const item = await syncItemOf(alice, eventId, guest.id);
    expect(item).toMatchObject({ kind: 'signed', code: guest.code, serial: 1, barcode: 'CRM-4711' });
    // What the offline list says admits does admit online, each code.
    expect((await checkin(alice, eventId, { barcode: 'CRM-4711' })).body).toMatchObject({ result: 'admitted', guest: { id: guest.id } });
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, { barcode: guest.code })).body.result).toBe('discharged');
    expect((await checkin(alice, eventId, { barcode: guest.code })).body).toMatchObject({ result: 'admitted', guest: { id: guest.id } });
  });
});

describe('an erased guest at the door', () => {
  it('its ticket is answered as the offline sync says (`none`): 200 rejected `revoked`, recorded, and nothing of the guest in the answer', async () => {
    const eventId = await newEvent(alice);
    const guest = await newGuest(alice, eventId);
    const staff = await doorStaff(alice);
    const admitted = await checkin(alice, eventId, { barcode: guest.code }, staff);
    expect(admitted.body.result).toBe('admitted');
    expect((await alice.call('POST', `/checkin/v1/api/guest/${guest.id}/erase`, { reason: 'guest request' })).status).toBe(200);
    expect(await syncItemOf(alice, eventId, guest.id)).toMatchObject({ kind: 'none' });
    // Its check-in is no longer one to undo: the door's own 404, not a word of the erasure.
    const undo = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, { scanId: admitted.body.scanId }, staff);
    expect(undo.status).toBe(404);
    expect(undo.body.code).toBe('check_in_not_found');
    const scan = await checkin(alice, eventId, { barcode: guest.code, nonce: 'e-1' }, staff);
    expect(scan.status, JSON.stringify(scan.body)).toBe(200);
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'revoked', replayed: false });
    expect(scan.body.guest).toBeUndefined();
    expect(JSON.stringify(scan.body)).not.toMatch(/erase/i);
    // By its id it names no one, as its (erased) barcode does.
    const byId = await checkin(alice, eventId, { guestId: guest.id }, staff);
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    const out = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, { barcode: guest.code }, staff);
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ result: 'rejected', reason: 'revoked' });
    const stats = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
    expect(stats.rejectedScans).toEqual({ revoked: 2, not_found: 1 });
  });
});
