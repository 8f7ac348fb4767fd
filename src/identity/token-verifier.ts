import { createHash } from 'node:crypto';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { allowInsecureRequests, discovery } from 'openid-client';
import type { TokenSubject } from './credentials.js';

/** A bearer token that passed every check; `claims` is the whole (frozen) payload. */
export interface VerifiedToken extends TokenSubject {
  iat: number;
  exp: number;
  claims: Readonly<JWTPayload>;
}

export type InvalidTokenReason =
  | 'malformed'
  | 'expired'
  | 'not yet valid'
  | 'bad signature'
  | 'wrong issuer'
  | 'wrong audience'
  | 'invalid claims'
  | 'discovery failed'
  | 'keys unavailable';

/** Every rejection: the HTTP layer answers 401 (or 503 for the two reasons about the issuer being unreachable). */
export class InvalidTokenError extends Error {
  override readonly name = 'InvalidTokenError';
  constructor(
    readonly reason: InvalidTokenReason,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
  }
}

export interface TokenVerifierOptions {
  /** The issuer identifier; discovery runs at `<issuer>/.well-known/openid-configuration`. */
  issuer: () => string;
  /** When set, a token's `aud` must contain it. */
  audience?: string;
  /** Allows a plain-http issuer and JWKS (the dev provider only). */
  allowInsecureIssuer?: boolean;
  /** Tolerated clock skew for exp/nbf; default 5. */
  clockToleranceSec?: number;
  /** Minimum time between two JWKS fetches triggered by an unknown kid; default 30 (jose's default). */
  jwksCooldownSec?: number;
  /** How many verified tokens to remember; default 10,000; 0 turns the cache off. */
  cacheSize?: number;
  now?: () => Date;
}

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
}

const algorithms = ['RS256', 'ES256', 'PS256'];
const maxTokenLength = 16 * 1024;
// openid-client needs a client id; a resource server only reads the issuer's metadata.
const resourceServerClientId = 'checkin-service';

/**
 * Verifies access tokens from any OpenID provider: the issuer is found by discovery (lazily,
 * on the first verify, retried after a failure), keys come from its JWKS (cached by jose and
 * refetched on an unknown kid), and verified tokens are remembered until they expire so a
 * repeated token costs a hash and a map lookup instead of an RSA check.
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const now = options.now ?? (() => new Date());
  const issuerKeys = retryAfterFailure(() => discoverIssuer(options));
  const cache = new VerifiedTokenCache(options.cacheSize ?? 10_000);

  return {
    async verify(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > maxTokenLength) {
        throw new InvalidTokenError('malformed');
      }
      const key = createHash('sha256').update(token).digest('base64url');
      const cached = cache.get(key, now().getTime());
      if (cached) return cached;
      const { issuer, keys } = await issuerKeys();
      const verified = await verifySignedToken(token, {
        issuer,
        keys,
        audience: options.audience,
        clockToleranceSec: options.clockToleranceSec ?? 5,
        currentDate: now(),
      });
      cache.set(key, verified, now().getTime());
      return verified;
    },
  };
}

interface IssuerKeys {
  issuer: string;
  keys: JWTVerifyGetKey;
}

async function discoverIssuer(options: TokenVerifierOptions): Promise<IssuerKeys> {
  try {
    const config = await discovery(new URL(options.issuer()), options.audience ?? resourceServerClientId, undefined, undefined, {
      timeout: 10,
      execute: options.allowInsecureIssuer ? [allowInsecureRequests] : [],
    });
    const metadata = config.serverMetadata();
    if (!metadata.jwks_uri) throw new Error('the discovery document has no jwks_uri');
    const jwksUri = new URL(metadata.jwks_uri);
    if (jwksUri.protocol !== 'https:' && !options.allowInsecureIssuer) throw new Error('jwks_uri must use https');
    const keys = createRemoteJWKSet(jwksUri, {
      cooldownDuration: (options.jwksCooldownSec ?? 30) * 1000,
      cacheMaxAge: 10 * 60 * 1000,
      timeoutDuration: 5000,
    });
    return { issuer: metadata.issuer, keys };
  } catch (err) {
    throw new InvalidTokenError('discovery failed', { cause: err });
  }
}

/** Shares one pending load between callers; a failed load is forgotten so the next call tries again. */
function retryAfterFailure<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= load().catch((err: unknown) => {
      pending = undefined;
      throw err;
    }));
}

interface VerifyContext extends IssuerKeys {
  audience?: string;
  clockToleranceSec: number;
  currentDate: Date;
}

async function verifySignedToken(token: string, context: VerifyContext): Promise<VerifiedToken> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, context.keys, {
      issuer: context.issuer,
      audience: context.audience,
      algorithms,
      clockTolerance: context.clockToleranceSec,
      currentDate: context.currentDate,
      requiredClaims: ['sub', 'iat', 'exp'],
    }));
  } catch (err) {
    throw new InvalidTokenError(reasonFor(err), { cause: err });
  }
  const { sub, tenant, role, iat, exp } = payload;
  if (typeof tenant !== 'string' || tenant === '' || (role !== 'client' && role !== 'team_member')) {
    throw new InvalidTokenError('invalid claims');
  }
  // jose has checked that sub is a string and iat/exp are numbers (requiredClaims).
  return Object.freeze({ sub: sub!, tenant, role, iat: iat!, exp: exp!, claims: Object.freeze(payload) });
}

function reasonFor(err: unknown): InvalidTokenReason {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return 'wrong issuer';
    if (err.claim === 'aud') return 'wrong audience';
    if (err.claim === 'nbf') return 'not yet valid';
    return 'invalid claims';
  }
  if (
    err instanceof errors.JWSSignatureVerificationFailed ||
    err instanceof errors.JWKSNoMatchingKey ||
    err instanceof errors.JWKSMultipleMatchingKeys ||
    err instanceof errors.JOSEAlgNotAllowed
  ) {
    return 'bad signature';
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid || err instanceof errors.JOSENotSupported) {
    return 'malformed';
  }
  // Whatever is left failed while fetching or reading the JWKS (timeout, network, bad JSON).
  return 'keys unavailable';
}

/** Least-recently-used map of verified tokens by hash; an entry lives until its token's exp. */
class VerifiedTokenCache {
  readonly #entries = new Map<string, VerifiedToken>();

  constructor(private readonly capacity: number) {}

  get(key: string, nowMs: number): VerifiedToken | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.exp * 1000 <= nowMs) return undefined;
    this.#entries.set(key, entry);
    return entry;
  }

  set(key: string, value: VerifiedToken, nowMs: number): void {
    if (this.capacity <= 0 || value.exp * 1000 <= nowMs) return;
    if (this.#entries.size >= this.capacity) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, value);
  }
}
