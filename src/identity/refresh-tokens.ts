import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Collection } from '../adapters/readstore/port.js';
import type { TokenSubject } from './credentials.js';

/**
 * One password sign-in's refresh tokens (a "family", RFC 9700 4.14.2): only the newest token of
 * the family is live, stored as its SHA-256. A refresh swaps it for a new one in one
 * compare-and-swap on the family's document, so of two processes (or two requests) presenting
 * the same token exactly one wins; the other, and any later use of a spent token, is reuse and
 * deletes the family (every token of that sign-in ends).
 *
 * Reuse grace (as Auth0's "reuse interval" and Okta's grace period): the token spent by the
 * family's last rotation is still taken for `reuseGraceSeconds` after that rotation, and answers
 * the very token that rotation answered, so two tabs, or an app retrying after a lost response,
 * end up holding the same live token instead of ending the sign-in. That token is not stored: it
 * is HMAC-SHA256(spent secret, rotationNonce), so only a holder of the spent token can recompute
 * it (the store keeps hashes and the nonce, not a usable token). Later than the window, or a
 * token older than the last one spent, is reuse as before.
 */
export interface RefreshFamilyDoc {
  _id: string;
  /** SHA-256 (base64url) of the secret half of the family's live token. */
  secretHash: string;
  sub: string;
  tenant: string;
  role: TokenSubject['role'];
  clientId: string;
  /** When the password sign-in happened (ms): sign-out-all and team member removal compare with it. */
  signedInAtMs: number;
  /** Absolute end of the sign-in (ms), whatever the refreshes. */
  expiresAtMs: number;
  /** When the live token lapses unused (ms): moved on by every refresh, never past expiresAtMs. */
  idleExpiresAtMs: number;
  /** SHA-256 of the secret the last rotation spent (absent before the first rotation). */
  previousSecretHash?: string;
  /** When the last rotation happened (ms): the spent token is taken until this plus the grace. */
  rotatedAtMs?: number;
  /** The live secret is HMAC-SHA256(spent secret, this nonce) (base64url); absent before the first rotation. */
  rotationNonce?: string;
}

export interface RefreshTokensOptions {
  /** Where families live: the read store, which every api process on a DATA_DIR or MongoDB database shares. */
  collection: Collection<RefreshFamilyDoc>;
  /** Absolute lifetime of a sign-in's refresh tokens; default 30 days. */
  lifetimeSeconds?: number;
  /** How long a refresh token may lie unused; default 7 days. */
  idleSeconds?: number;
  /** How long after a rotation the token it spent still answers the rotation's token; default 30, 0 turns it off. */
  reuseGraceSeconds?: number;
  now?: () => Date;
}

export type RotateResult =
  | { ok: true; family: RefreshFamilyDoc; token: string }
  | { ok: false; reason: 'unknown' | 'expired' | 'reused' | 'wrong client' };

const hash = (secret: string): string => createHash('sha256').update(secret).digest('base64url');
const random = (bytes: number): string => randomBytes(bytes).toString('base64url');
/** The secret a rotation answers for `spent`: 43 base64url characters, as a random 32-byte secret. */
const nextSecret = (spent: string, nonce: string): string => createHmac('sha256', spent).update(nonce).digest('base64url');

/** The whole token is `<family id>.<secret>`: opaque to the client, only the secret's hash is stored. */
function parse(token: string): { familyId: string; secret: string } | null {
  const match = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token);
  return match ? { familyId: match[1]!, secret: match[2]! } : null;
}

export class RefreshTokens {
  private readonly families: Collection<RefreshFamilyDoc>;
  private readonly lifetimeMs: number;
  private readonly idleMs: number;
  private readonly graceMs: number;
  private readonly now: () => Date;

  constructor(options: RefreshTokensOptions) {
    this.families = options.collection;
    this.lifetimeMs = (options.lifetimeSeconds ?? 30 * 86_400) * 1000;
    this.idleMs = (options.idleSeconds ?? 7 * 86_400) * 1000;
    this.graceMs = (options.reuseGraceSeconds ?? 30) * 1000;
    this.now = options.now ?? (() => new Date());
  }

  /** A new family for a password sign-in; answers its first token. */
  async issue(subject: TokenSubject, clientId: string): Promise<string> {
    const nowMs = this.now().getTime();
    const familyId = random(16);
    const secret = random(32);
    const expiresAtMs = nowMs + this.lifetimeMs;
    const family: Omit<RefreshFamilyDoc, '_id'> = {
      secretHash: hash(secret),
      sub: subject.sub,
      tenant: subject.tenant,
      role: subject.role,
      clientId,
      signedInAtMs: nowMs,
      expiresAtMs,
      idleExpiresAtMs: Math.min(expiresAtMs, nowMs + this.idleMs),
    };
    const { swapped } = await this.families.swap(familyId, null, family);
    if (!swapped) throw new Error('refresh token family id collision');
    return `${familyId}.${secret}`;
  }

  /**
   * Spends `token` and answers its family's next one. `stillValid` is asked before the swap (the
   * subject still exists, no sign-out since the sign-in); when it says no, the family is deleted.
   */
  async rotate(token: string, clientId: string, stillValid: (family: RefreshFamilyDoc) => Promise<boolean>): Promise<RotateResult> {
    const parsed = parse(token);
    if (!parsed) return { ok: false, reason: 'unknown' };
    // Read as the store holds it now (an embedded read store's memory may be another process's old copy).
    const family = (await this.families.swap(parsed.familyId, null, null)).current;
    if (!family) return { ok: false, reason: 'unknown' };
    const secretHash = hash(parsed.secret);
    if (family.secretHash !== secretHash) {
      // The token the last rotation spent, within the grace: the token that rotation answered.
      if (this.withinGrace(family, secretHash)) return this.answerAgain(family, parsed.secret, clientId, stillValid);
      await this.revoke(family);
      return { ok: false, reason: 'reused' };
    }
    if (family.clientId !== clientId) return { ok: false, reason: 'wrong client' };
    const nowMs = this.now().getTime();
    if (nowMs >= family.expiresAtMs || nowMs >= family.idleExpiresAtMs || !(await stillValid(family))) {
      await this.revoke(family);
      return { ok: false, reason: 'expired' };
    }
    const rotationNonce = random(16);
    const secret = nextSecret(parsed.secret, rotationNonce);
    const { _id, ...fields } = family;
    const next = {
      ...fields,
      secretHash: hash(secret),
      idleExpiresAtMs: Math.min(family.expiresAtMs, nowMs + this.idleMs),
      previousSecretHash: secretHash,
      rotatedAtMs: nowMs,
      rotationNonce,
    };
    const { swapped, current } = await this.families.swap(_id, { secretHash }, next);
    if (!swapped) {
      // Another request (here or in another process) spent this token first: within the grace,
      // this request gets the token that one got; otherwise the same token twice is reuse.
      if (current && this.withinGrace(current, secretHash)) return this.answerAgain(current, parsed.secret, clientId, stillValid);
      if (current) await this.revoke(current);
      return { ok: false, reason: 'reused' };
    }
    return { ok: true, family: { _id, ...next }, token: `${_id}.${secret}` };
  }

  /** Whether `secretHash` is the secret the family's last rotation spent, less than the grace ago. */
  private withinGrace(family: RefreshFamilyDoc, secretHash: string): boolean {
    if (this.graceMs <= 0 || family.previousSecretHash !== secretHash || family.rotatedAtMs === undefined) return false;
    // No lower bound: a rotation stamped a little ahead of this clock is another process's skew.
    return this.now().getTime() < family.rotatedAtMs + this.graceMs;
  }

  /** The token the last rotation answered, recomputed from the secret it spent; nothing is written. */
  private async answerAgain(
    family: RefreshFamilyDoc,
    spent: string,
    clientId: string,
    stillValid: (family: RefreshFamilyDoc) => Promise<boolean>,
  ): Promise<RotateResult> {
    if (family.clientId !== clientId) return { ok: false, reason: 'wrong client' };
    const secret = nextSecret(spent, family.rotationNonce ?? '');
    if (hash(secret) !== family.secretHash) {
      await this.revoke(family);
      return { ok: false, reason: 'reused' };
    }
    const nowMs = this.now().getTime();
    if (nowMs >= family.expiresAtMs || nowMs >= family.idleExpiresAtMs || !(await stillValid(family))) {
      await this.revoke(family);
      return { ok: false, reason: 'expired' };
    }
    return { ok: true, family, token: `${family._id}.${secret}` };
  }

  /**
   * RFC 7009: ends the sign-in `token` belongs to, when it is the family's live token or the one
   * its last rotation spent and the family is `clientId`'s. Answers what was done; an unknown
   * or malformed token is 'unknown' (the endpoint answers 200 all the same).
   */
  async revokeToken(token: string, clientId: string): Promise<'revoked' | 'unknown' | 'wrong client'> {
    const parsed = parse(token);
    if (!parsed) return 'unknown';
    const family = (await this.families.swap(parsed.familyId, null, null)).current;
    if (!family) return 'unknown';
    const secretHash = hash(parsed.secret);
    if (family.secretHash !== secretHash && family.previousSecretHash !== secretHash) return 'unknown';
    if (family.clientId !== clientId) return 'wrong client';
    await this.revoke(family);
    return 'revoked';
  }

  /** Deletes families past their lifetime; each delete is a compare-and-swap, so a family just refreshed elsewhere stays. */
  async purgeExpired(): Promise<number> {
    const nowMs = this.now().getTime();
    let purged = 0;
    const lapsed = { $or: [{ expiresAtMs: { $lte: nowMs } }, { idleExpiresAtMs: { $lte: nowMs } }] };
    for await (const family of this.families.stream(lapsed)) {
      if ((await this.families.swap(family._id, { secretHash: family.secretHash, idleExpiresAtMs: family.idleExpiresAtMs }, null)).swapped) purged++;
    }
    return purged;
  }

  /** Deletes the family, also when another request rotated it in the meantime. */
  private async revoke(family: RefreshFamilyDoc): Promise<void> {
    let current: RefreshFamilyDoc | null = family;
    for (let attempt = 0; current && attempt < 5; attempt++) {
      current = (await this.families.swap(current._id, { secretHash: current.secretHash }, null)).current;
    }
  }
}
