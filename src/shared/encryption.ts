import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Secrets at rest (webhook signing secrets): AES-256-GCM under a key named by a key id.
 * The ring holds every key that may still be needed to decrypt; new ciphertexts use
 * `currentKeyId`. Rotating the key = add a new key, make it current, keep the old one
 * until nothing stored names it any more.
 */
export interface Keyring {
  currentKeyId: string;
  keys: ReadonlyMap<string, Buffer>;
}

export interface Encrypted {
  /** base64url of iv (12 bytes) | tag (16 bytes) | ciphertext. */
  ciphertext: string;
  keyId: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/**
 * `context` is bound to the ciphertext as additional authenticated data (e.g. the owning
 * client), so a ciphertext copied to another record fails to decrypt.
 */
export function encrypt(keyring: Keyring, plaintext: string, context: string): Encrypted {
  const key = keyOf(keyring, keyring.currentKeyId);
  return { ciphertext: sealGcm(key, randomBytes(IV_BYTES), Buffer.from(context, 'utf8'), plaintext), keyId: keyring.currentKeyId };
}

/**
 * AES-256-GCM of `plaintext` under `key` with a caller-drawn 12-byte `iv` and `aad` as
 * additional data: base64url of iv | tag | ciphertext, the layout `decrypt` reads (also the
 * personal-data codec's and its data keys'). The output buffer is built once.
 */
export function sealGcm(key: Buffer, iv: Buffer, aad: Buffer, plaintext: string): string {
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const body = cipher.update(plaintext, 'utf8');
  cipher.final(); // GCM: no bytes held back
  const out = Buffer.allocUnsafe(IV_BYTES + TAG_BYTES + body.length);
  iv.copy(out, 0);
  cipher.getAuthTag().copy(out, IV_BYTES);
  body.copy(out, IV_BYTES + TAG_BYTES);
  return out.toString('base64url');
}

export function decrypt(keyring: Keyring, encrypted: Encrypted, context: string): string {
  const key = keyOf(keyring, encrypted.keyId);
  const raw = Buffer.from(encrypted.ciphertext, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('encrypted value is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

function keyOf(keyring: Keyring, keyId: string): Buffer {
  const key = keyring.keys.get(keyId);
  if (!key) throw new Error(`encryption key "${keyId}" is not in the keyring; add it to WEBHOOK_ENCRYPTION_KEYS`);
  return key;
}

/** A 32-byte key written as base64, base64url or 64 hex characters. */
export function parseKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64url');
  return key.length === KEY_BYTES ? key : undefined;
}

/** A keyring from configured `{id, key}` pairs; the current key is `currentKeyId` or the first. */
export function keyringOf(keys: { id: string; key: Buffer }[], currentKeyId?: string): Keyring {
  if (keys.length === 0) throw new Error('a keyring needs at least one key');
  const current = currentKeyId ?? keys[0]!.id;
  const map = new Map(keys.map((k) => [k.id, k.key]));
  if (!map.has(current)) throw new Error(`the current encryption key id "${current}" is not among the configured keys`);
  return { currentKeyId: current, keys: map };
}

/**
 * Development default: reads the keyring kept in `file`, or creates one with a random key
 * (mode 0600) on first start, so secrets stay readable across restarts.
 * File shape: `{"currentKeyId": "...", "keys": {"<id>": "<base64url key>"}}`.
 */
export function loadOrCreateKeyFile(file: string): Keyring {
  let text: string | undefined;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read the key file ${file}: ${(err as Error).message}`);
  }
  if (text === undefined) {
    const id = `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`;
    const created = JSON.stringify({ currentKeyId: id, keys: { [id]: randomBytes(KEY_BYTES).toString('base64url') } }, null, 2);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
    fs.writeFileSync(temp, created + '\n', { mode: 0o600, flag: 'wx' });
    try {
      // link() fails when the file exists: if another process won the race, use its keys.
      fs.linkSync(temp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(temp, { force: true });
    }
    text = fs.readFileSync(file, 'utf8');
  }
  return parseKeyFile(file, text);
}

function parseKeyFile(file: string, text: string): Keyring {
  const corrupt = (why: string) => new Error(`the key file ${file} is corrupt (${why}); fix or restore it`);
  let parsed: { currentKeyId?: unknown; keys?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw corrupt('not JSON');
  }
  if (typeof parsed.keys !== 'object' || parsed.keys === null) throw corrupt('no "keys" object');
  const keys = Object.entries(parsed.keys as Record<string, unknown>).map(([id, value]) => {
    const key = typeof value === 'string' ? parseKey(value) : undefined;
    if (!key) throw corrupt(`key "${id}" is not 32 bytes of base64url`);
    return { id, key };
  });
  try {
    return keyringOf(keys, typeof parsed.currentKeyId === 'string' ? parsed.currentKeyId : undefined);
  } catch (err) {
    throw corrupt((err as Error).message);
  }
}
