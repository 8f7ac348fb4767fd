import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { JWK } from 'jose';

/** The dev identity provider's RSA signing key, as kept in its key file. */
export interface SigningKey {
  kid: string;
  alg: 'RS256';
  privateKey: KeyObject;
  /** What the JWKS endpoint publishes: public members plus kid, alg and use. */
  publicJwk: JWK;
}

/**
 * Reads the private JWK in `keyFile`, or generates an RSA 2048 key and stores it there
 * (mode 0600) on first start, so tokens stay valid across restarts. Synchronous on purpose:
 * it runs once while the app is wired, and a bad file must stop the start with its path.
 */
export function loadOrCreateSigningKey(keyFile: string): SigningKey {
  const text = readKeyFile(keyFile);
  return text === undefined ? createKeyFile(keyFile) : parseKeyFile(keyFile, text);
}

function readKeyFile(keyFile: string): string | undefined {
  try {
    return fs.readFileSync(keyFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`dev identity provider: cannot read signing key file ${keyFile}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function createKeyFile(keyFile: string): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  const stored = { ...jwk, kid: thumbprint(jwk), alg: 'RS256', use: 'sig' };
  fs.mkdirSync(path.dirname(keyFile), { recursive: true, mode: 0o700 });
  const temp = `${keyFile}.${process.pid}.${Date.now()}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(stored, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  try {
    // link() fails when the file exists: if another process won the race, use its key.
    fs.linkSync(temp, keyFile);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return parseKeyFile(keyFile, fs.readFileSync(keyFile, 'utf8'));
  } finally {
    fs.rmSync(temp, { force: true });
  }
  return toSigningKey(privateKey, stored.kid);
}

function parseKeyFile(keyFile: string, text: string): SigningKey {
  const corrupt = (why: string, cause?: unknown): Error =>
    new Error(`dev identity provider: signing key file ${keyFile} is corrupt (${why}); fix or delete it`, { cause });
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch (err) {
    throw corrupt('not JSON', err);
  }
  if (!isRsaPrivateJwk(jwk)) throw corrupt('expected an RSA private JWK with "n", "e" and "d"');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
  } catch (err) {
    throw corrupt((err as Error).message, err);
  }
  if ((privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw corrupt('RSA modulus shorter than 2048 bits');
  const kid = typeof jwk.kid === 'string' && jwk.kid !== '' ? jwk.kid : thumbprint(jwk);
  return toSigningKey(privateKey, kid);
}

function isRsaPrivateJwk(value: unknown): value is JsonWebKeyLike {
  if (typeof value !== 'object' || value === null) return false;
  const jwk = value as Record<string, unknown>;
  return jwk.kty === 'RSA' && typeof jwk.n === 'string' && typeof jwk.e === 'string' && typeof jwk.d === 'string';
}

type JsonWebKeyLike = { kty: 'RSA'; n: string; e: string; d: string; kid?: unknown } & Record<string, unknown>;

function toSigningKey(privateKey: KeyObject, kid: string): SigningKey {
  const { kty, n, e } = createPublicKey(privateKey).export({ format: 'jwk' });
  return { kid, alg: 'RS256', privateKey, publicJwk: { kty, n, e, kid, alg: 'RS256', use: 'sig' } };
}

/** RFC 7638 JWK thumbprint of an RSA key: SHA-256 over its required members in lexicographic order. */
function thumbprint(jwk: { e?: string; n?: string }): string {
  return createHash('sha256').update(JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n })).digest('base64url');
}
