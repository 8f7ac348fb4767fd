import { createHash, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

/** scrypt parameters: N=2^15, r=8 needs 32 MiB per hash (memory-hard, about 50-100 ms). */
const params = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/** Hash a password for storage: `scrypt$N$r$p$<salt b64>$<hash b64>`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password.normalize('NFC'), salt, 32, params);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** A stored hash to compare against when the user does not exist, so timing does not tell. */
export const dummyPasswordHash =
  'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password.normalize('NFC'), Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: params.maxmem,
  });
  return timingSafeEqual(actual, expected);
}

/** A random secret for a machine (client secret, subscription key): 32 bytes, base64url. */
export const newSecret = (prefix: string): string => `${prefix}_${randomBytes(32).toString('base64url')}`;

/** Secrets of 256 random bits need no slow hash: SHA-256 hex is what we store and compare. */
export const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');

export function sameSecret(presented: string, storedSha256: string): boolean {
  const a = Buffer.from(sha256(presented), 'hex');
  const b = Buffer.from(storedSha256, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
