import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { code128Image, codeImages } from '../../src/comms/code-images.js';
import { invitationMessage, type InvitationParts } from '../../src/comms/invitation-message.js';
import { decodeCode128, decodeQr, pngPixels } from '../support/decode-codes.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { newTicketEvent as newEvent } from '../support/tickets.js';

/**
 * Issue 16, the ticket path end to end, for what the other ticket tests leave out: barcodes the
 * spec allows (any string) drawn and scanned back, a guest whose barcode is empty, and erasure.
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

async function newGuest(client: Client, eventId: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee', ...fields });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

const ticketOf = (client: Client, guestId: string) => client.call('GET', `/checkin/v1/api/guest/${guestId}/ticket`);
const checkin = (client: Client, eventId: string, body: Record<string, unknown>) =>
  client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body);
const syncItemOf = async (client: Client, eventId: string, guestId: string) =>
  (await client.call('GET', `/checkin/v1/api/event/${eventId}/tickets?limit=1000`)).body.items.find((i: { guestId: string }) => i.guestId === guestId);

/** Barcodes the spec allows (a barcode is any string), each scanned as a phone or imager reads it. */
const unicode = 'Café-Zoë ✓ 票 😀';
const latin1 = 'é'.repeat(40);
const tooLongForBars = 'A'.repeat(1500);

describe('barcodes the spec allows, drawn and scanned back', () => {
  it('Code 128 draws ASCII codes as bars that read back exactly (spaces, Tab and a signed ticket included)', async () => {
    for (const code of ['GALA 0001', ' lead\tand trail ', `T1.${'AZxB4HoAAT8rjB5dSk57nB0q'.repeat(4)}`]) {
      expect(decodeCode128(pngPixels((await code128Image(code, 'test')).content))).toBe(code);
    }
  });

  it('{{barcodeImage}} of a code Code 128 cannot hold exactly (beyond ASCII, too long) is a QR code of the code, never bars that read as another value', async () => {
    for (const code of [unicode, latin1, tooLongForBars]) {
      const image = await code128Image(code, 'test');
      const pixels = pngPixels(image.content);
      const asBars = decodeCode128(pixels);
      expect(asBars === undefined || asBars === code, `bars read as ${asBars?.slice(0, 30)}`).toBe(true);
      expect(decodeQr(pixels)).toBe(code);
      expect(image).toMatchObject({ token: 'barcodeImage', alt: `Ticket code: ${code}` });
    }
  });

  it('the scanned text of a Unicode, spaced or long barcode admits exactly its guest', async () => {
    const eventId = await newEvent(alice);
    const codes = [unicode, latin1, ' lead and trail ', tooLongForBars];
    const ids = [];
    for (const barcode of codes) ids.push(await newGuest(alice, eventId, { barcode }));
    for (const [i, barcode] of codes.entries()) {
      const [image] = await codeImages(barcode, ['qrCode'], 'test');
      const scanned = decodeQr(pngPixels(image!.content))!;
      const scan = await checkin(alice, eventId, { barcode: scanned });
      expect(scan.body, barcode.slice(0, 20)).toMatchObject({ result: 'admitted', guest: { id: ids[i] } });
    }
  });
});

describe('a guest whose barcode is empty', () => {
  it('shows, emails and syncs the signed ticket it was issued (an empty barcode is no code)', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId, { barcode: '' });
    const ticket = await ticketOf(alice, guestId);
    expect(ticket.body).toMatchObject({ kind: 'signed', code: expect.stringMatching(/^T1\./) });
    expect(await syncItemOf(alice, eventId, guestId)).toMatchObject({ kind: 'signed', code: ticket.body.code });
    expect((await checkin(alice, eventId, { barcode: ticket.body.code })).body).toMatchObject({ result: 'admitted', guest: { id: guestId } });

    const parts: InvitationParts = {
      attendeeInvitationId: 'inv-1',
      clientId: 'c',
      guest: { id: guestId, email: 'ann@example.com', firstName: 'Ann', barcode: '', ticketCode: ticket.body.code },
      template: { html: '<p>{{qrCode}}</p>' },
      event: { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2099-12-12T23:00:00Z' },
      account: {},
    };
    const message = await invitationMessage(parts, { address: 'invites@checkin.test' });
    expect(message.attachments).toHaveLength(1);
    expect(decodeQr(pngPixels(message.attachments![0]!.content as Buffer))).toBe(ticket.body.code);
  });
});

describe('erasure and the ticket', () => {
  it('an erased guest has no code to show: GET …/ticket is no_ticket, the offline sync says none and a new export has no ticketCode', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    const code = (await ticketOf(alice, guestId)).body.code;
    const before = await syncItemOf(alice, eventId, guestId);
    expect((await alice.call('POST', `/checkin/v1/api/guest/${guestId}/erase`, { reason: 'guest request' })).status).toBe(200);

    const ticket = await ticketOf(alice, guestId);
    expect(ticket.status).toBe(404);
    expect(ticket.body).toMatchObject({ code: 'no_ticket' });
    // Not "reissue one with POST .../ticket/reissue": an erased guest's reissue is refused (guest_erased).
    expect(ticket.body.message).toBe("the guest's personal data was erased: it has no ticket, and none can be issued");
    expect((await alice.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/reissue`)).body).toMatchObject({ code: 'guest_erased' });
    const after = await (await alice.call('GET', `/checkin/v1/api/event/${eventId}/tickets?changedSince=${encodeURIComponent(before.updated)}`)).body.items;
    expect(after).toEqual([expect.objectContaining({ guestId, kind: 'none' })]);
    expect(JSON.stringify(after)).not.toContain(code);
    const scan = await checkin(alice, eventId, { barcode: code });
    expect(scan.body.result).not.toBe('admitted');
    // A new export (erasure deleted the old ones) lists the guest without the ticket.
    const exported = await alice.call('POST', '/checkin/v1/api/event/export?type=CSV', { id: eventId, title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2099-12-12T23:00:00Z' });
    expect(exported.status).toBe(200);
    const csv = await alice.call('GET', exported.body.url);
    expect(String(csv.body)).toContain(guestId);
    expect(String(csv.body)).not.toContain(code);
    // The code itself names the guest by id only: no name or email in its bytes.
    expect(Buffer.from(code.slice(3), 'base64url').toString('latin1')).not.toMatch(/Ann|Lee/);
  });
});
