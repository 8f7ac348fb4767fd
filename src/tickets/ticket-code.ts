import { sign, verify, type KeyObject } from 'node:crypto';
import { isUuid, normalizeId } from '../shared/ids.js';

/**
 * The signed ticket code (issue 16; docs/tickets.md "Format"): what a guest without a barcode
 * shows at the door. Text: `T1.` then base64url (no padding) of
 *
 *   byte 0      form of the guest id: 1 = a GUID in 16 bytes, 2 = any other id as
 *               1 length byte + UTF-8 (at most 255 bytes)
 *   bytes 1-4   key id: the event key that signed (shown as 8 hex digits)
 *   bytes 5-6   serial, big-endian: 1 for the first ticket, +1 on every reissue
 *   then        the guest id
 *   last 64     Ed25519 signature of (all bytes above) + 0x00 + UTF-8 of the event id
 *
 * The event id is signed but not written: a scanner knows which event it is at, and a code of
 * another event fails. Pure functions; keys come from src/tickets/event-keys.ts.
 */
export const ticketPrefix = 'T1.';
const signatureBytes = 64;
const formUuid = 1;
const formText = 2;
export const maxSerial = 0xffff;

export interface TicketFields {
  guestId: string;
  /** 8 hex digits. */
  keyId: string;
  serial: number;
}

export interface ParsedTicket extends TicketFields {
  signed: Buffer;
  signature: Buffer;
}

/** Whether a scanned value is meant as a signed ticket (it may still be forged or damaged). */
export const looksLikeTicket = (value: string): boolean => ticketSpellings(value).length > 0;

/** White space and control characters a scanner or an app puts around a code (CR, LF, Tab, NUL, spaces). */
const scannerPadding = /^[\s\u0000-\u001f\u007f]+|[\s\u0000-\u001f\u007f]+$/g;

/** The scanned value without the white space and control characters a scanner put around it. */
export const withoutScannerPadding = (value: string): string => value.replace(scannerPadding, '');

/** An AIM symbology identifier a scanner may be set to send first (ISO/IEC 15424): `]Q1` for a QR code. */
const aimIdentifier = /^\][A-Za-z][0-9A-Za-z]/;

const swapCase = (text: string): string =>
  text.replace(/[A-Za-z]/g, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()));

/**
 * The ways a scanned value may spell a signed ticket (docs/tickets.md "What scanners send"):
 * without the CR, LF, Tab or spaces a scanner adds before or after it and without an AIM
 * symbology identifier (`]Q1`) in front, and, when it starts
 * with `t1.`, with every letter's case swapped back (a keyboard-wedge scanner typing while
 * Caps Lock is on inverts the case of every letter). Empty: not meant as a ticket. Each
 * spelling still has to carry a valid signature, so none can admit a guest it was not made for.
 */
export function ticketSpellings(value: string): string[] {
  const trimmed = withoutScannerPadding(value).replace(aimIdentifier, '');
  if (trimmed.startsWith(ticketPrefix)) return [trimmed];
  if (trimmed.startsWith(ticketPrefix.toLowerCase())) return [swapCase(trimmed)];
  return [];
}

function payloadOf(fields: TicketFields): Buffer {
  const head = Buffer.alloc(7);
  const id = normalizeId(fields.guestId);
  const uuid = isUuid(id);
  head[0] = uuid ? formUuid : formText;
  Buffer.from(fields.keyId, 'hex').copy(head, 1);
  head.writeUInt16BE(fields.serial, 5);
  if (uuid) return Buffer.concat([head, Buffer.from(id.replace(/-/g, ''), 'hex')]);
  const text = Buffer.from(id, 'utf8');
  if (text.length > 255) throw new Error('a guest id longer than 255 bytes cannot be put in a ticket code');
  return Buffer.concat([head, Buffer.from([text.length]), text]);
}

/** What the signature covers: the payload, a zero byte, the event id. */
export const signedMessage = (payload: Buffer, eventId: string): Buffer =>
  Buffer.concat([payload, Buffer.from([0]), Buffer.from(eventId, 'utf8')]);

export function encodeTicket(fields: TicketFields, eventId: string, privateKey: KeyObject): string {
  if (!/^[0-9a-f]{8}$/.test(fields.keyId)) throw new Error(`ticket key id must be 8 hex digits, not ${fields.keyId}`);
  if (!Number.isInteger(fields.serial) || fields.serial < 1 || fields.serial > maxSerial) throw new Error(`ticket serial out of range: ${fields.serial}`);
  const payload = payloadOf(fields);
  const signature = sign(null, signedMessage(payload, eventId), privateKey);
  return ticketPrefix + Buffer.concat([payload, signature]).toString('base64url');
}

/** The fields of a well-formed code, or undefined (not a ticket, or damaged). Checks no signature. */
export function parseTicket(code: string): ParsedTicket | undefined {
  if (!looksLikeTicket(code)) return undefined;
  const body = code.slice(ticketPrefix.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) return undefined;
  const raw = Buffer.from(body, 'base64url');
  // Re-encoding must give the same text: no second spelling of one ticket.
  if (raw.toString('base64url') !== body || raw.length < 7 + 16 + signatureBytes) return undefined;
  const keyId = raw.subarray(1, 5).toString('hex');
  const serial = raw.readUInt16BE(5);
  let guestId: string;
  let end: number;
  if (raw[0] === formUuid) {
    const hex = raw.subarray(7, 23).toString('hex');
    guestId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    end = 23;
  } else if (raw[0] === formText) {
    const length = raw[7]!;
    end = 8 + length;
    guestId = raw.subarray(8, end).toString('utf8');
  } else {
    return undefined;
  }
  if (raw.length !== end + signatureBytes || serial < 1) return undefined;
  return { guestId, keyId, serial, signed: raw.subarray(0, end), signature: raw.subarray(end) };
}

export function verifyTicket(ticket: ParsedTicket, eventId: string, publicKey: KeyObject): boolean {
  return verify(null, signedMessage(ticket.signed, eventId), publicKey, ticket.signature);
}
