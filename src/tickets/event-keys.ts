import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { EventStore } from '../adapters/eventstore/port.js';
import { handleCommand, type CommandContext } from '../commands/handle-command.js';
import type { Services } from '../commands/services.js';
import {
  currentTicketKey,
  ticketKeyDecider,
  ticketKeysStream,
  type NewTicketKey,
  type TicketKey,
  type TicketKeysState,
} from '../domain/ticket-key.js';
import type { TicketToIssue } from '../domain/guest.js';
import type { GuestDoc } from '../projections/guests.js';
import { decrypt, encrypt, type Keyring } from '../shared/encryption.js';
import { encodeTicket, maxSerial, parseTicket, ticketSpellings, verifyTicket } from './ticket-code.js';

/**
 * Event ticket keys (issue 16): creating and rotating them, signing tickets, and verifying a
 * scanned code at the door. Verification needs only public keys, kept in memory per event
 * (no read-model round trip per scan); an unknown key id reads the key stream again (a key
 * another process rotated in), and a rotation here drops the entry.
 */

/**
 * The code a guest shows at the door: the guest's own barcode, else the signed ticket the service
 * issued. An empty barcode is no code (no scanner reads one; the guest was issued a ticket).
 */
export const ticketCodeOf = (guest: Pick<GuestDoc, 'barcode' | 'ticketCode'>): string | undefined => guest.barcode || guest.ticketCode;

/** The AES-GCM additional data of a stored private key: it decrypts only as this event's key. */
const privateKeyContext = (clientId: string, eventId: string, keyId: string): string =>
  `ticket-key:${clientId}:${eventId}:${keyId}`;

function freshKey(keyring: Keyring, clientId: string, eventId: string): NewTicketKey {
  const keyId = randomBytes(4).toString('hex');
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url');
  const { ciphertext, keyId: encryptionKeyId } = encrypt(keyring, pkcs8, privateKeyContext(clientId, eventId, keyId));
  return { keyId, publicKey: publicKey.export({ format: 'jwk' }).x!, encryptedPrivateKey: ciphertext, encryptionKeyId };
}

const publicKeyObject = (raw: string): KeyObject => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw }, format: 'jwk' });

function requireKeyring(services: Services): Keyring {
  if (!services.secretsKeyring) throw new Error('ticket signing needs the secrets keyring (WEBHOOK_ENCRYPTION_KEYS or the data dir key file)');
  return services.secretsKeyring;
}

export async function readTicketKeys(store: EventStore, clientId: string, eventId: string): Promise<TicketKeysState> {
  let state = ticketKeyDecider.initialState();
  for (const event of await store.readStream(ticketKeysStream(clientId, eventId))) {
    state = ticketKeyDecider.evolve(state, event as never);
  }
  return state;
}

interface CachedKeys {
  keys: Map<string, { publicKey: KeyObject; retiredAt?: string }>;
}
const verifyCache = new WeakMap<EventStore, Map<string, CachedKeys>>();

function cacheOf(store: EventStore): Map<string, CachedKeys> {
  let cache = verifyCache.get(store);
  if (!cache) verifyCache.set(store, (cache = new Map()));
  return cache;
}

async function loadForVerify(store: EventStore, clientId: string, eventId: string): Promise<CachedKeys> {
  const state = await readTicketKeys(store, clientId, eventId);
  const entry: CachedKeys = {
    keys: new Map(state.keys.map((k) => [k.keyId, { publicKey: publicKeyObject(k.publicKey), ...(k.retiredAt ? { retiredAt: k.retiredAt } : {}) }])),
  };
  const cache = cacheOf(store);
  // Bounded: an event's entry is a few hundred bytes; the oldest go first.
  if (cache.size >= 10_000) cache.delete(cache.keys().next().value!);
  cache.set(ticketKeysStream(clientId, eventId), entry);
  return entry;
}

export type TicketCheck = { valid: true; guestId: string; serial: number } | { valid: false };

/**
 * Whether a scanned value is a genuine ticket of this event: well formed (after the scanner's
 * padding is taken off, see `ticketSpellings`), signed by one of the event's keys, and that
 * key still verifies (a rotated-out key until the event's end).
 */
export async function checkTicket(
  services: Services,
  clientId: string,
  event: { id: string; endTime: string },
  scanned: string,
  now: Date,
): Promise<TicketCheck> {
  for (const code of ticketSpellings(scanned)) {
    const check = await checkOneSpelling(services, clientId, event, code, now);
    if (check.valid) return check;
  }
  return { valid: false };
}

async function checkOneSpelling(
  services: Services,
  clientId: string,
  event: { id: string; endTime: string },
  code: string,
  now: Date,
): Promise<TicketCheck> {
  const ticket = parseTicket(code);
  if (!ticket) return { valid: false };
  const stream = ticketKeysStream(clientId, event.id);
  let keys = cacheOf(services.eventStore).get(stream);
  if (!keys?.keys.has(ticket.keyId)) keys = await loadForVerify(services.eventStore, clientId, event.id);
  const key = keys.keys.get(ticket.keyId);
  if (!key) return { valid: false };
  if (key.retiredAt && now.getTime() > Date.parse(event.endTime)) return { valid: false };
  return verifyTicket(ticket, event.id, key.publicKey) ? { valid: true, guestId: ticket.guestId, serial: ticket.serial } : { valid: false };
}

/** Signs tickets with the event's current key, creating the event's first key if needed. */
export interface TicketSigner {
  issue(guestId: string, serial: number): TicketToIssue;
}

export async function ticketSigner(services: Services, context: CommandContext, eventId: string): Promise<TicketSigner> {
  const keyring = requireKeyring(services);
  const clientId = context.tenantId;
  const result = await handleCommand(services.eventStore, ticketKeyDecider, ticketKeysStream(clientId, eventId), {
    type: 'EnsureTicketKey',
    clientId,
    eventId: eventId,
    key: freshKey(keyring, clientId, eventId),
    at: context.now.toISOString(),
  }, context);
  return signerFor(keyring, clientId, eventId, currentTicketKey(result.state)!, context.now.toISOString());
}

function signerFor(keyring: Keyring, clientId: string, eventId: string, key: TicketKey, at: string): TicketSigner {
  const pkcs8 = decrypt(keyring, { ciphertext: key.encryptedPrivateKey, keyId: key.encryptionKeyId }, privateKeyContext(clientId, eventId, key.keyId));
  const privateKey = createPrivateKey({ key: Buffer.from(pkcs8, 'base64url'), format: 'der', type: 'pkcs8' });
  return {
    issue(guestId, serial) {
      if (serial > maxSerial) throw new Error(`a guest's ticket can be reissued at most ${maxSerial - 1} times`);
      return { code: encodeTicket({ guestId, keyId: key.keyId, serial }, eventId, privateKey), keyId: key.keyId, serial, at };
    },
  };
}

/** Rotate: a new key signs from now on; the old ones verify until the event ends. */
export async function rotateTicketKey(services: Services, context: CommandContext, eventId: string): Promise<TicketKeysState> {
  const keyring = requireKeyring(services);
  const clientId = context.tenantId;
  const result = await handleCommand(services.eventStore, ticketKeyDecider, ticketKeysStream(clientId, eventId), {
    type: 'RotateTicketKey',
    clientId,
    eventId: eventId,
    key: freshKey(keyring, clientId, eventId),
    at: context.now.toISOString(),
  }, context);
  cacheOf(services.eventStore).delete(ticketKeysStream(clientId, eventId));
  return result.state;
}

/** The public half of the event's keys, as GET /checkin/v1/api/event/{id}/ticket-keys shows them. */
export interface TicketKeyView {
  keyId: string;
  algorithm: 'Ed25519';
  /** The public key as a JWK (RFC 8037): `{kty: 'OKP', crv: 'Ed25519', x}`. */
  publicKeyJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
  status: 'current' | 'retired';
  createdAt: string;
  retiredAt?: string;
  /** A retired key verifies until then (the event's end); absent for the current key. */
  verifiesUntil?: string;
}

export function ticketKeyViews(state: TicketKeysState, event: { endTime: string }): TicketKeyView[] {
  const current = currentTicketKey(state);
  return state.keys.map((key) => ({
    keyId: key.keyId,
    algorithm: 'Ed25519' as const,
    publicKeyJwk: { kty: 'OKP' as const, crv: 'Ed25519' as const, x: key.publicKey },
    status: key === current ? ('current' as const) : ('retired' as const),
    createdAt: key.createdAt,
    ...(key.retiredAt ? { retiredAt: key.retiredAt, verifiesUntil: event.endTime } : {}),
  }));
}

/** What re-encrypting one stored secret under the keyring's current key came to. */
export type ReencryptOutcome = 'reencrypted' | 'current' | 'none' | { missingKeyId: string };

/**
 * An operator's keyring rotation (`npm run admin -- reencrypt-secrets`): the event's current
 * private key encrypted again under the current keyring key. Retired keys only verify (their
 * public half), so their private halves are left as they are and need no key any more.
 */
export async function reencryptTicketKey(services: Services, context: CommandContext, clientId: string, eventId: string): Promise<ReencryptOutcome> {
  const keyring = requireKeyring(services);
  const key = currentTicketKey(await readTicketKeys(services.eventStore, clientId, eventId));
  if (!key) return 'none';
  if (key.encryptionKeyId === keyring.currentKeyId) return 'current';
  if (!keyring.keys.has(key.encryptionKeyId)) return { missingKeyId: key.encryptionKeyId };
  const keyContext = privateKeyContext(clientId, eventId, key.keyId);
  const pkcs8 = decrypt(keyring, { ciphertext: key.encryptedPrivateKey, keyId: key.encryptionKeyId }, keyContext);
  const again = encrypt(keyring, pkcs8, keyContext);
  const result = await handleCommand(services.eventStore, ticketKeyDecider, ticketKeysStream(clientId, eventId), {
    type: 'ReencryptTicketKey',
    clientId,
    eventId: eventId,
    keyId: key.keyId,
    from: key.encryptedPrivateKey,
    encryptedPrivateKey: again.ciphertext,
    encryptionKeyId: again.keyId,
  }, context);
  return result.events.length > 0 ? 'reencrypted' : 'current';
}
