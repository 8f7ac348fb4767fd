import { createPublicKey, verify } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTicket, signedMessage } from '../../src/tickets/ticket-code.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/** Issue 16, item 3: signed tickets, through HTTP. */

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

async function newEvent(client: Client, endTime = '2099-12-12T23:00:00Z'): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

async function newGuest(client: Client, eventId: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee', ...fields });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

const ticketOf = async (client: Client, guestId: string) => client.call('GET', `/checkin/v1/api/guest/${guestId}/ticket`);
const checkin = (client: Client, eventId: string, body: Record<string, unknown>) =>
  client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body);

/** The one-flip change a damaged or forged code carries: one base64url character of the signature. */
function altered(code: string, at = code.length - 10): string {
  const c = code[at] === 'A' ? 'B' : 'A';
  return code.slice(0, at) + c + code.slice(at + 1);
}

describe('signed tickets (issue 16)', () => {
  it('issues a ticket to a guest without a barcode; it verifies offline with the public keys and admits at the door', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    const ticket = await ticketOf(alice, guestId);
    expect(ticket.status).toBe(200);
    expect(ticket.body).toMatchObject({ guestId, eventId, kind: 'signed', serial: 1, code: expect.stringMatching(/^T1\.[A-Za-z0-9_-]+$/) });

    const keys = await alice.call('GET', `/checkin/v1/api/event/${eventId}/ticket-keys`);
    expect(keys.status).toBe(200);
    expect(keys.body.keys).toHaveLength(1);
    expect(keys.body.keys[0]).toMatchObject({ keyId: ticket.body.keyId, algorithm: 'Ed25519', status: 'current' });
    // No key material beyond the public key.
    expect(Object.keys(keys.body.keys[0]).sort()).toEqual(['algorithm', 'createdAt', 'keyId', 'publicKeyJwk', 'status']);
    expect(JSON.stringify(keys.body)).not.toMatch(/private|encrypted|"d":/i);

    // An offline scanner: the public key as a JWK, the signature over the payload + 0x00 + event id.
    const parsed = parseTicket(ticket.body.code)!;
    expect(parsed).toMatchObject({ guestId, keyId: ticket.body.keyId, serial: 1 });
    const publicKey = createPublicKey({ key: keys.body.keys[0].publicKeyJwk, format: 'jwk' });
    expect(verify(null, signedMessage(parsed.signed, eventId), publicKey, parsed.signature)).toBe(true);
    expect(verify(null, signedMessage(parsed.signed, 'another-event'), publicKey, parsed.signature)).toBe(false);

    const scan = await checkin(alice, eventId, { barcode: ticket.body.code });
    expect(scan.body).toMatchObject({ result: 'admitted', guest: { id: guestId } });
  });

  it("the guest's code is in its personal-data answer (issue 16, item 4), and the reissued one after a reissue", async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    const first = (await ticketOf(alice, guestId)).body.code;
    const access = await alice.call('GET', `/checkin/v1/api/guest/${guestId}/personal-data`);
    expect(access.status, JSON.stringify(access.body)).toBe(200);
    expect(access.body.ticketCode).toBe(first);
    expect((await alice.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/reissue`, {})).status).toBe(200);
    const second = (await ticketOf(alice, guestId)).body.code;
    expect(second).not.toBe(first);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${guestId}/personal-data`)).body.ticketCode).toBe(second);
  });

  it('the offline verification examples of docs/tickets.md (node:crypto and WebCrypto) work as printed', async () => {
    const doc = fs.readFileSync(new URL('../../docs/tickets.md', import.meta.url), 'utf8');
    const examples = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(examples).toHaveLength(2);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ticket-doc-'));
    type Check = (code: string, eventId: string, keys: unknown[], now?: Date) => { valid: boolean; guestId?: string; serial?: number } | Promise<{ valid: boolean }>;
    const checks: Check[] = [];
    for (const [i, example] of examples.entries()) {
      const file = path.join(dir, `check-ticket-${i}.mjs`);
      fs.writeFileSync(file, example);
      const module = (await import(file)) as Record<string, Check>;
      checks.push(Object.values(module)[0]!);
    }
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    const keys = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/ticket-keys`)).body.keys;
    const { code } = (await ticketOf(alice, guestId)).body;
    const otherEvent = await newEvent(alice);
    for (const checkTicket of checks) {
      expect(await checkTicket(code, eventId, keys)).toEqual({ valid: true, guestId, serial: 1 });
      expect(await checkTicket(`${code}\r\n`, eventId, keys)).toEqual({ valid: true, guestId, serial: 1 });
      expect(await checkTicket(altered(code), eventId, keys)).toEqual({ valid: false });
      expect(await checkTicket(code.slice(0, -3), eventId, keys)).toEqual({ valid: false });
      expect(await checkTicket('T1.!!', eventId, keys)).toEqual({ valid: false });
      expect(await checkTicket(code, otherEvent, keys)).toEqual({ valid: false });
    }
    // After a rotation the old ticket verifies with the retired key until the event's end, not after.
    const rotated = (await alice.call('POST', `/checkin/v1/api/event/${eventId}/ticket-keys/rotate`)).body.keys;
    for (const checkTicket of checks) {
      expect(await checkTicket(code, eventId, rotated)).toEqual({ valid: true, guestId, serial: 1 });
      expect(await checkTicket(code, eventId, rotated, new Date('2100-01-01T00:00:00Z'))).toEqual({ valid: false });
    }
  });

  it('rejects a forged or altered code with invalid_signature and lists it with the rejected scans', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    const { code } = (await ticketOf(alice, guestId)).body;
    const forged = altered(code);
    const scan = await checkin(alice, eventId, { barcode: forged });
    expect(scan.status).toBe(200);
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
    expect(scan.body.guest).toBeUndefined();
    // Truncated, and a code of another event (signed with that event's key), are not this event's tickets either.
    expect((await checkin(alice, eventId, { barcode: code.slice(0, -4) })).body.reason).toBe('invalid_signature');
    const otherEvent = await newEvent(alice);
    const otherCode = (await ticketOf(alice, await newGuest(alice, otherEvent))).body.code;
    expect((await checkin(alice, eventId, { barcode: otherCode })).body.reason).toBe('invalid_signature');

    const rejected = await alice.call('GET', `/checkin/v1/api/event/${eventId}/scans?result=rejected&limit=100`);
    const reasons = rejected.body.items.map((s: { reason: string }) => s.reason);
    expect(reasons.filter((r: string) => r === 'invalid_signature')).toHaveLength(3);
    expect(rejected.body.items.find((s: { lookup?: { barcode?: string } }) => s.lookup?.barcode === forged)).toMatchObject({ reason: 'invalid_signature' });
    const stats = await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`);
    expect(stats.body.rejectedScans).toMatchObject({ invalid_signature: 3 });
    // The genuine code still admits.
    expect((await checkin(alice, eventId, { barcode: code })).body.result).toBe('admitted');
  });

  it('a customer barcode that merely starts like a ticket still finds its guest', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId, { barcode: 'T1.CUSTOMER-0001' });
    expect((await ticketOf(alice, guestId)).body).toMatchObject({ kind: 'barcode', code: 'T1.CUSTOMER-0001' });
    expect((await checkin(alice, eventId, { barcode: 'T1.CUSTOMER-0001' })).body.result).toBe('admitted');
  });

  it('upsert never changes an issued code; a guest with its own barcode gets none', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId, { customId: 'CRM-1' });
    const first = (await ticketOf(alice, guestId)).body;
    const upsert = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [
      { customId: 'CRM-1', firstName: 'Anna', barcode: 'OWN-1' },
      { customId: 'CRM-2', firstName: 'Bo', barcode: 'OWN-2' },
    ]);
    expect(upsert.status, JSON.stringify(upsert.body)).toBe(204);
    await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'CRM-1', firstName: 'Ann' }]);
    // The guest's own barcode is now what invitations draw; the issued ticket is unchanged and still admits (below).
    expect((await ticketOf(alice, guestId)).body).toMatchObject({ kind: 'barcode', code: 'OWN-1' });
    const history = await alice.call('GET', `/checkin/v1/api/guest/${guestId}/history`);
    expect(history.body.events.filter((e: { type: string }) => e.type === 'TicketIssued')).toHaveLength(1);
    // The barcode guest: its code is the barcode, and reissue is refused.
    const bo = await alice.call('GET', `/checkin/v1/api/guest/CRM-2?eventId=${eventId}`);
    expect((await ticketOf(alice, bo.body.id)).body).toEqual({ guestId: bo.body.id, eventId, code: 'OWN-2', kind: 'barcode' });
    const refused = await alice.call('POST', `/checkin/v1/api/guest/${bo.body.id}/ticket/reissue`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('guest_has_barcode');
    // The old ticket still admits after the upserts.
    expect((await checkin(alice, eventId, { barcode: first.code })).body.result).toBe('admitted');
  });

  it('reissue: the old code is rejected as revoked, the new one admits; reissue and revoke are in the guest history', async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    const old = (await ticketOf(alice, guestId)).body;
    const reissued = await alice.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/reissue`);
    expect(reissued.status, JSON.stringify(reissued.body)).toBe(200);
    expect(reissued.body).toMatchObject({ guestId, kind: 'signed', serial: 2 });
    expect(reissued.body.code).not.toBe(old.code);
    expect((await ticketOf(alice, guestId)).body.code).toBe(reissued.body.code);

    const stale = await checkin(alice, eventId, { barcode: old.code, force: true });
    expect(stale.body).toMatchObject({ result: 'rejected', reason: 'revoked', guest: { id: guestId } });
    expect((await checkin(alice, eventId, { barcode: reissued.body.code })).body.result).toBe('admitted');

    expect((await alice.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/revoke`)).status).toBe(204);
    expect((await checkin(alice, eventId, { barcode: reissued.body.code, plusOnes: 1 })).body.reason).toBe('revoked');
    expect((await ticketOf(alice, guestId)).status).toBe(404);
    expect((await alice.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/revoke`)).status).toBe(404);
    // An upsert does not bring a revoked ticket back.
    await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: guestId, firstName: 'Ann' }]);
    expect((await ticketOf(alice, guestId)).status).toBe(404);

    const history = await alice.call('GET', `/checkin/v1/api/guest/${guestId}/history`);
    const types = history.body.events.map((e: { type: string }) => e.type);
    expect(types).toEqual(expect.arrayContaining(['TicketIssued', 'TicketRevoked']));
    const revocations = history.body.events.filter((e: { type: string }) => e.type === 'TicketRevoked');
    expect(revocations.map((e: { data: { serial: number; reissue: boolean; by: string } }) => e.data)).toEqual([
      expect.objectContaining({ serial: 1, reissue: true, by: alice.id }),
      expect.objectContaining({ serial: 2, reissue: false, by: alice.id }),
    ]);
    const stats = await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`);
    expect(stats.body.rejectedScans).toMatchObject({ revoked: 2 });
  });

  it('rotation: new tickets use the new key; tickets signed before still verify until the event ends', async () => {
    const eventId = await newEvent(alice);
    const before = (await ticketOf(alice, await newGuest(alice, eventId))).body;
    const rotated = await alice.call('POST', `/checkin/v1/api/event/${eventId}/ticket-keys/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.keys.map((k: { status: string }) => k.status)).toEqual(['retired', 'current']);
    expect(rotated.body.keys[0]).toMatchObject({ keyId: before.keyId, verifiesUntil: '2099-12-12T23:00:00.000Z' });
    const after = (await ticketOf(alice, await newGuest(alice, eventId))).body;
    expect(after.keyId).toBe(rotated.body.keys[1].keyId);
    expect((await checkin(alice, eventId, { barcode: before.code })).body.result).toBe('admitted');
    expect((await checkin(alice, eventId, { barcode: after.code })).body.result).toBe('admitted');
  });

  it('a retired key verifies nothing after the event ended', async () => {
    const eventId = await newEvent(alice, '2026-01-01T23:00:00Z');
    const before = (await ticketOf(alice, await newGuest(alice, eventId))).body;
    await alice.call('POST', `/checkin/v1/api/event/${eventId}/ticket-keys/rotate`);
    const scan = await checkin(alice, eventId, { barcode: before.code, force: true });
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'invalid_signature' });
  });

  it("another client's event and guest are not found", async () => {
    const eventId = await newEvent(alice);
    const guestId = await newGuest(alice, eventId);
    expect((await bob.call('GET', `/checkin/v1/api/event/${eventId}/ticket-keys`)).status).toBe(404);
    expect((await bob.call('POST', `/checkin/v1/api/event/${eventId}/ticket-keys/rotate`)).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/guest/${guestId}/ticket`)).status).toBe(404);
    expect((await bob.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/reissue`)).status).toBe(404);
    expect((await bob.call('POST', `/checkin/v1/api/guest/${guestId}/ticket/revoke`)).status).toBe(404);
    // Alice's ticket scanned at Bob's event is no ticket of Bob's.
    const bobEvent = await newEvent(bob);
    const { code } = (await ticketOf(alice, guestId)).body;
    expect((await checkin(bob, bobEvent, { barcode: code })).body.reason).toBe('invalid_signature');
  });
});
