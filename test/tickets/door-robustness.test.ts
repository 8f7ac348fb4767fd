import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { newTicketEvent as newEvent, newTicketedGuest as newGuest } from '../support/tickets.js';

/**
 * Issue 16: what real scanners send. Handheld imagers in keyboard-wedge mode end a code with
 * CR, LF, CR LF or Tab (some add a space or a prefix); phone apps paste it with a newline.
 */

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService();
  [alice, bob] = await Promise.all([createClient(service), createClient(service)]);
});
afterAll(async () => {
  await service?.close();
});

const checkin = (client: Client, eventId: string, body: Record<string, unknown>) =>
  client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body);

describe('door: a signed ticket as scanners send it', () => {
  it('a code with the CR, LF, CR LF, Tab, spaces or AIM identifier a scanner adds admits its guest', async () => {
    const eventId = await newEvent(alice);
    for (const suffix of ['\r\n', '\n', '\r', '\t', ' ', '\u0000', 'aim']) {
      const guest = await newGuest(alice, eventId);
      // `aim`: the AIM symbology identifier of a QR code (ISO/IEC 15424) that scanners can be set to send first.
      const barcode = suffix === 'aim' ? `]Q1${guest.code}\r` : `${suffix === ' ' ? '  ' : ''}${guest.code}${suffix}`;
      const scan = await checkin(alice, eventId, { barcode });
      expect(scan.status, JSON.stringify(suffix)).toBe(200);
      expect(scan.body, JSON.stringify(suffix)).toMatchObject({ result: 'admitted', guest: { id: guest.id } });
    }
  });

  it("a customer's own barcode with the CR LF or Tab a scanner adds matches its guest; an exact match is tried first", async () => {
    const eventId = await newEvent(alice);
    const plain = await newGuest(alice, eventId, { barcode: 'BC-1001' });
    const padded = await newGuest(alice, eventId, { barcode: 'BC-2002\t' }); // any string is a barcode, a Tab included
    const lookalike = await newGuest(alice, eventId, { barcode: 'BC-2002' });
    for (const sent of ['BC-1001\r\n', 'BC-1001\t', ' BC-1001\n']) {
      const scan = await checkin(alice, eventId, { barcode: sent, nonce: `n-${JSON.stringify(sent)}` });
      expect(scan.body, JSON.stringify(sent)).toMatchObject({ guest: { id: plain.id } });
    }
    expect((await checkin(alice, eventId, { barcode: 'BC-2002\t' })).body).toMatchObject({ result: 'admitted', guest: { id: padded.id } });
    expect((await checkin(alice, eventId, { barcode: 'BC-2002' })).body).toMatchObject({ result: 'admitted', guest: { id: lookalike.id } });
    expect((await checkin(alice, eventId, { barcode: '\r\n' })).body).toMatchObject({ result: 'rejected', reason: 'not_found' });
  });

  it('the second scan of the same code answers already_admitted', async () => {
    const eventId = await newEvent(alice);
    const guest = await newGuest(alice, eventId);
    expect((await checkin(alice, eventId, { barcode: guest.code })).body.result).toBe('admitted');
    const again = await checkin(alice, eventId, { barcode: `${guest.code}\r\n` });
    expect(again.body).toMatchObject({ result: 'rejected', reason: 'already_admitted', guest: { id: guest.id } });
  });

  it("a code typed with Caps Lock on (every letter's case swapped) admits; other case changes are not the ticket", async () => {
    const eventId = await newEvent(alice);
    const guest = await newGuest(alice, eventId);
    const swapped = guest.code.replace(/[A-Za-z]/g, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()));
    expect(swapped.startsWith('t1.')).toBe(true);
    // base64url is case-sensitive: an all-lower or all-upper copy is another value, which no key signed.
    for (const variant of [guest.code.toLowerCase(), guest.code.toUpperCase()]) {
      const scan = await checkin(alice, eventId, { barcode: variant });
      expect(scan.status).toBe(200);
      expect(scan.body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
    }
    expect((await checkin(alice, eventId, { barcode: `${swapped}\r` })).body).toMatchObject({ result: 'admitted', guest: { id: guest.id } });
  });

  it('garbage and overlong codes get a 200 rejection or a 400 in the spec shape, never a 500', async () => {
    const eventId = await newEvent(alice);
    for (const barcode of ['T1.', 'T1.%%%', 'T1.' + 'A'.repeat(5000), '\u{1F600}T1.x', 'T1.AAAA\u0000\u0001']) {
      const scan = await checkin(alice, eventId, { barcode });
      expect(scan.status, barcode.slice(0, 20)).toBe(200);
      expect(scan.body).toMatchObject({ result: 'rejected' });
    }
    // Longer than any QR code holds: refused before anything is recorded.
    const huge = await checkin(alice, eventId, { barcode: 'T1.' + 'A'.repeat(100_000) });
    expect(huge.status).toBe(400);
    expect(huge.body).toMatchObject({ code: 'validation_error', message: expect.any(String), errors: [expect.objectContaining({ path: 'barcode' })] });
    const rejected = await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans?result=rejected&limit=100`);
    expect(rejected.body.items).toHaveLength(5);
  });

  it('revoked, expired, not yet valid, other event, other client', async () => {
    const eventId = await newEvent(alice);
    const early = await newGuest(alice, eventId, { validFrom: '2098-01-01T00:00:00Z' });
    expect((await checkin(alice, eventId, { barcode: early.code })).body).toMatchObject({ result: 'rejected', reason: 'not_yet_valid' });
    const late = await newGuest(alice, eventId, { validTo: '2020-01-01T00:00:00Z' });
    expect((await checkin(alice, eventId, { barcode: late.code })).body).toMatchObject({ result: 'rejected', reason: 'expired' });
    const revoked = await newGuest(alice, eventId);
    expect((await alice.call('POST', `/checkin/v1/api/guest/${revoked.id}/ticket/revoke`)).status).toBe(204);
    expect((await checkin(alice, eventId, { barcode: revoked.code })).body).toMatchObject({ result: 'rejected', reason: 'revoked' });
    const other = await newGuest(alice, await newEvent(alice));
    expect((await checkin(alice, eventId, { barcode: other.code })).body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
    // Bob scanning Alice's ticket at his own event: not his ticket. At Alice's event: 404.
    const bobsEvent = await newEvent(bob);
    expect((await checkin(bob, bobsEvent, { barcode: revoked.code })).body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
    const fresh = await newGuest(alice, eventId);
    const foreign = await checkin(bob, eventId, { barcode: fresh.code });
    expect(foreign.status).toBe(404);
  });

  it('a ticket of a retired key scanned offline before the event ended, and sent after, admits (judged at `at`)', async () => {
    const ended = await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-01T23:00:00Z' });
    const eventId = ended.body.id;
    const [early, late] = [await newGuest(alice, eventId), await newGuest(alice, eventId)];
    expect((await alice.call('POST', `/checkin/v1/api/event/${eventId}/ticket-keys/rotate`)).status).toBe(200);
    const offline = await checkin(alice, eventId, { barcode: early.code, at: '2026-01-01T22:59:00Z', nonce: 'gate1-0001' });
    expect(offline.body).toMatchObject({ result: 'admitted', guest: { id: early.id } });
    const afterEnd = await checkin(alice, eventId, { barcode: late.code, at: '2026-01-01T23:01:00Z' });
    expect(afterEnd.body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
  });
});
