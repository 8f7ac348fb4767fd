import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions, type JWTVerifyResult } from 'jose';
import { allowInsecureRequests, ClientError, discovery } from 'openid-client';
import type { TokenSubject } from './credentials.js';
import { createRemoteKeySet, KeysUnavailableError } from './remote-key-set.js';

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
  | 'wrong type'
  | 'invalid claims'
  | 'discovery failed'
  | 'keys unavailable';

/** Default of retryAfterFailureSec: how long a failed discovery or JWKS fetch is not retried (and the 503's Retry-After). */
export const providerRetryAfterSec = 10;

/** The two reasons that say nothing about the token: the issuer's metadata or keys could not be read. */
export const providerUnavailableReasons: ReadonlySet<InvalidTokenReason> = new Set(['discovery failed', 'keys unavailable']);

/**
 * Every rejection: the HTTP layer answers 401, or 503 for the reasons in providerUnavailableReasons.
 * `message` is the reason, plus for 'invalid claims' which claim (only checked once the signature
 * holds, so it tells nothing to someone forging tokens); `cause` is for the operator's log only.
 */
export class InvalidTokenError extends Error {
  override readonly name = 'InvalidTokenError';
  constructor(
    readonly reason: InvalidTokenReason,
    options?: { cause?: unknown; detail?: string },
  ) {
    super(options?.detail ? `${reason}: ${options.detail}` : reason, options);
  }
}

export interface TokenVerifierOptions {
  /** The issuer identifier; discovery runs at `<issuer>/.well-known/openid-configuration`. */
  issuer: () => string;
  /** When set, a token's `aud` must contain it. */
  audience?: string;
  /**
   * The claims that carry the account id and the role (OIDC_TENANT_CLAIM, OIDC_ROLE_CLAIM;
   * default `tenant` and `role`): an Auth0 Action must namespace custom claims
   * (`https://example.com/tenant`), Entra ID sends app roles as a `roles` array.
   */
  claimNames?: { tenant?: string; role?: string };
  /**
   * The issuer's keys when the issuer runs in this process (the built-in dev provider): no
   * discovery and no fetch, `iss` must equal issuer(). Its own keys fetched over HTTP through
   * PUBLIC_URL made every token uncheckable where the service cannot reach itself by that URL
   * (behind a proxy, a remapped container port).
   */
  localKeys?: JSONWebKeySet;
  /** Allows a plain-http issuer and JWKS (the dev provider only). */
  allowInsecureIssuer?: boolean;
  /** Tolerated clock skew for exp, nbf and iat; default 5. */
  clockToleranceSec?: number;
  /** Minimum time between two JWKS fetches triggered by an unknown kid; default 30. */
  jwksCooldownSec?: number;
  /** After a failed discovery or JWKS fetch, no new attempt for this long; default 10. */
  retryAfterFailureSec?: number;
  /** How many verified tokens to remember; default 10,000; 0 turns the cache off. */
  cacheSize?: number;
  now?: () => Date;
}

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
}

/**
 * Asymmetric JWS algorithms only: HS* (a secret shared with the provider, or the public key
 * misused as one) and `none` never verify. Which of these a token may use is narrowed further by
 * its key: a JWK that declares `alg` accepts only that one, and kty/crv must fit (jose's key
 * selection). Keycloak lists HS256 in its discovery document, so that list is not used.
 */
export const allowedAlgorithms = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/** Header `typ` values of access tokens: RFC 9068's at+jwt and plain JWT (Keycloak, Entra ID, Okta); absent is fine too. */
const accessTokenTypes = new Set(['application/at+jwt', 'application/jwt']);
/** A token without kid is tried against at most this many candidate keys. */
const maxCandidateKeys = 8;
const maxTokenLength = 16 * 1024;
// openid-client needs a client id; a resource server only reads the issuer's metadata.
const resourceServerClientId = 'checkin-service';

/**
 * Verifies access tokens from any OpenID provider: the issuer is found by discovery (lazily,
 * on the first verify, so a provider that is down never holds up the start; a failure is retried
 * after a back-off), keys come from its jwks_uri (remote-key-set.ts: cached, refetched on an
 * unknown kid, kept when a refresh fails), and verified tokens are remembered until they expire
 * so a repeated token costs a hash and a map lookup instead of an RSA check.
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const now = options.now ?? (() => new Date());
  const backoffMs = (options.retryAfterFailureSec ?? providerRetryAfterSec) * 1000;
  const localKeys = options.localKeys ? createLocalJWKSet(options.localKeys) : undefined;
  const issuerKeys = localKeys
    ? async (): Promise<IssuerKeys> => ({ issuer: options.issuer(), keys: localKeys })
    : retryAfterFailure(() => discoverIssuer(options, () => now().getTime()), backoffMs, () => now().getTime());
  const cache = new VerifiedTokenCache(options.cacheSize ?? 10_000);

  return {
    async verify(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > maxTokenLength) {
        throw new InvalidTokenError('malformed');
      }
      const segments = token.split('.').length;
      if (segments !== 3) throw new InvalidTokenError('malformed', { detail: notAJwt(segments) });
      const key = createHash('sha256').update(token).digest('base64url');
      const cached = cache.get(key, now().getTime());
      if (cached) return cached;
      const checks = {
        audience: options.audience,
        tenantClaim: options.claimNames?.tenant ?? 'tenant',
        roleClaim: options.claimNames?.role ?? 'role',
        clockToleranceSec: options.clockToleranceSec ?? 5,
        currentDate: now(),
      };
      let verified: VerifiedToken;
      try {
        verified = await verifySignedToken(token, { ...(await issuerKeys()), ...checks });
      } catch (err) {
        // Spec, Authentication rule 1: an expired or malformed token is 401 even while the provider is down.
        if (err instanceof InvalidTokenError && providerUnavailableReasons.has(err.reason)) throw refusalWithoutKeys(token, checks) ?? err;
        throw err;
      }
      cache.set(key, verified, now().getTime());
      return verified;
    },
  };
}

/**
 * What a token that is not a signed JWT probably is: an opaque access token (Auth0 issues one when
 * the token request names no audience, Google always does) or an encrypted one. The caller's
 * integrator needs that hint: the provider has to be asked for a JWT access token for this API.
 */
function notAJwt(segments: number): string {
  return segments === 5
    ? 'an encrypted token (JWE), not a signed JWT; the provider must issue signed JWT access tokens for this API'
    : 'not a JWT (an opaque access token?); request the token for this API\'s audience, for which the provider issues a JWT';
}

/**
 * When the issuer's metadata or keys cannot be read: what makes the token invalid whatever its
 * signature (not a JWS, an algorithm never accepted, expired, not yet valid, another audience),
 * so that it is answered 401 (get a new token), not 503 (retry with the same one). A forged token
 * is invalid either way, so reading its claims unverified tells nothing wrong.
 */
function refusalWithoutKeys(token: string, context: Omit<VerifyContext, keyof IssuerKeys>): InvalidTokenError | undefined {
  let alg: unknown;
  let payload: JWTPayload;
  try {
    alg = decodeProtectedHeader(token).alg;
    payload = decodeJwt(token);
  } catch (err) {
    return new InvalidTokenError('malformed', { cause: err });
  }
  if (typeof alg !== 'string' || !allowedAlgorithms.includes(alg)) return new InvalidTokenError('bad signature');
  // jose's comparisons (whole seconds, the same tolerance).
  const nowSec = Math.floor(context.currentDate.getTime() / 1000);
  if (typeof payload.exp === 'number' && payload.exp <= nowSec - context.clockToleranceSec) return new InvalidTokenError('expired');
  if (typeof payload.nbf === 'number' && payload.nbf > nowSec + context.clockToleranceSec) return new InvalidTokenError('not yet valid');
  if (issuedInFuture(payload, context)) return new InvalidTokenError('not yet valid');
  const { audience } = context;
  if (audience !== undefined && !(payload.aud === audience || (Array.isArray(payload.aud) && payload.aud.includes(audience)))) {
    return new InvalidTokenError('wrong audience');
  }
  return undefined;
}

/** `iat` later than now plus the clock tolerance (whole seconds, as jose compares nbf). */
function issuedInFuture(payload: JWTPayload, context: { clockToleranceSec: number; currentDate: Date }): boolean {
  const nowSec = Math.floor(context.currentDate.getTime() / 1000);
  return typeof payload.iat === 'number' && payload.iat > nowSec + context.clockToleranceSec;
}

interface IssuerKeys {
  issuer: string;
  keys: JWTVerifyGetKey;
}

async function discoverIssuer(options: TokenVerifierOptions, nowMs: () => number): Promise<IssuerKeys> {
  const configured = options.issuer();
  try {
    const config = await discovery(new URL(configured), options.audience ?? resourceServerClientId, undefined, undefined, {
      timeout: 10,
      execute: options.allowInsecureIssuer ? [allowInsecureRequests] : [],
    });
    const metadata = config.serverMetadata();
    // Entra ID's multi-tenant endpoints (common, organizations, consumers) state a template as
    // issuer; openid-client lets that through, and no token's iss would ever equal it.
    if (/\{tenantid\}/i.test(metadata.issuer)) {
      throw new Error(
        `the discovery document at ${configured} states the template issuer "${metadata.issuer}" (a multi-tenant endpoint); ` +
          'set OIDC_ISSUER to the tenant-specific issuer, e.g. https://login.microsoftonline.com/<tenant id>/v2.0',
      );
    }
    if (!metadata.jwks_uri) throw new Error('the discovery document has no jwks_uri');
    const jwksUri = new URL(metadata.jwks_uri);
    if (jwksUri.protocol !== 'https:' && !options.allowInsecureIssuer) throw new Error('jwks_uri must use https');
    const keys = createRemoteKeySet(jwksUri, {
      unknownKidCooldownMs: (options.jwksCooldownSec ?? 30) * 1000,
      failureBackoffMs: (options.retryAfterFailureSec ?? providerRetryAfterSec) * 1000,
      cacheMaxAgeMs: 10 * 60 * 1000,
      timeoutMs: 5000,
      now: nowMs,
    });
    // `iss` is compared with the issuer exactly as the provider states it (RFC 9068 section 4).
    return { issuer: metadata.issuer, keys };
  } catch (err) {
    throw new InvalidTokenError('discovery failed', { cause: explainDiscoveryFailure(configured, err) });
  }
}

/** openid-client's issuer mismatch names neither value (they sit in its cause): the operator needs both. */
function explainDiscoveryFailure(configured: string, err: unknown): unknown {
  const cause = (err as { cause?: { attribute?: unknown; body?: { issuer?: unknown } } }).cause;
  if (err instanceof ClientError && cause?.attribute === 'issuer') {
    return new Error(
      `the discovery document at ${configured} states the issuer "${String(cause.body?.issuer)}", which is not the configured "${configured}" ` +
        '(OpenID Connect Discovery 4.3: they must be identical, trailing slash included); set OIDC_ISSUER to the stated issuer',
      { cause: err },
    );
  }
  return err;
}

/**
 * Shares one pending load between callers; a failed load is remembered for `backoffMs` (callers
 * get the same failure without a new attempt, so a provider that is down is not asked on every
 * request), then the next call tries again.
 */
function retryAfterFailure<T>(load: () => Promise<T>, backoffMs: number, nowMs: () => number): () => Promise<T> {
  let pending: Promise<T> | undefined;
  let failedAt: number | undefined;
  return () => {
    if (failedAt !== undefined && failedAt + backoffMs <= nowMs()) {
      pending = undefined;
      failedAt = undefined;
    }
    return (pending ??= load().catch((err: unknown) => {
      failedAt = nowMs();
      throw err;
    }));
  };
}

interface VerifyContext extends IssuerKeys {
  audience?: string;
  tenantClaim: string;
  roleClaim: string;
  clockToleranceSec: number;
  currentDate: Date;
}

async function verifySignedToken(token: string, context: VerifyContext): Promise<VerifiedToken> {
  const verifyOptions: JWTVerifyOptions = {
    issuer: context.issuer,
    audience: context.audience,
    algorithms: allowedAlgorithms,
    clockTolerance: context.clockToleranceSec,
    currentDate: context.currentDate,
    requiredClaims: ['sub', 'iat', 'exp'],
  };
  let result: JWTVerifyResult;
  try {
    result = await jwtVerify(token, context.keys, verifyOptions).catch((err: unknown) => {
      if (err instanceof errors.JWKSMultipleMatchingKeys) return verifyWithCandidates(token, err, verifyOptions);
      throw err;
    });
  } catch (err) {
    const reason = reasonFor(err);
    // jose checks claims only once the signature holds: naming the claim helps whoever set up the provider.
    const detail =
      reason === 'invalid claims' && err instanceof errors.JWTClaimValidationFailed
        ? `the "${err.claim}" claim is ${err.reason === 'missing' ? 'missing' : 'not valid'}`
        : undefined;
    throw new InvalidTokenError(reason, { cause: err, ...(detail ? { detail } : {}) });
  }
  const { payload, protectedHeader } = result;
  const typ = protectedHeader.typ?.toLowerCase();
  if (typ !== undefined && !accessTokenTypes.has(typ.includes('/') ? typ : `application/${typ}`)) {
    throw new InvalidTokenError('wrong type', { detail: 'the token is not an access token (header typ)' });
  }
  const { sub, iat, exp } = payload;
  // jose checks iat only against a maxTokenAge: a token issued in the future (a provider's clock
  // far ahead, or a token minted to outlive a sign-out-all) is refused as nbf is, same tolerance.
  if (issuedInFuture(payload, context)) throw new InvalidTokenError('not yet valid', { detail: 'the "iat" claim is in the future' });
  const tenant = claimValue(payload, context.tenantClaim);
  // jose has checked that iat and exp are numbers; sub is only known to be present.
  if (typeof sub !== 'string' || sub === '') throw claimError('sub', 'a non-empty string');
  if (typeof tenant !== 'string' || tenant === '') throw claimError(context.tenantClaim, 'a non-empty string: the account id');
  const role = roleOf(claimValue(payload, context.roleClaim));
  if (!role) throw claimError(context.roleClaim, '"client" or "team_member" (or an array holding exactly one of them)');
  return Object.freeze({ sub, tenant, role, iat: iat!, exp: exp!, claims: Object.freeze(payload) });
}

/**
 * A claim by its name; when no top-level claim has that exact name (an Auth0 namespaced claim is
 * a URL with dots), a dotted name is a path into nested objects: Keycloak keeps its realm roles in
 * `realm_access.roles` and a client's in `resource_access.<client>.roles`.
 */
function claimValue(payload: JWTPayload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let value: unknown = payload;
  for (const segment of name.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** The role a claim names: the value itself, or the one of the two an array of roles (Entra ID's `roles`) holds. */
function roleOf(claim: unknown): 'client' | 'team_member' | undefined {
  const known = (value: unknown): value is 'client' | 'team_member' => value === 'client' || value === 'team_member';
  if (known(claim)) return claim;
  if (!Array.isArray(claim)) return undefined;
  const roles = [...new Set(claim.filter(known))];
  return roles.length === 1 ? roles[0] : undefined;
}

const claimError = (claim: string, expected: string) =>
  new InvalidTokenError('invalid claims', { detail: `the "${claim}" claim must be ${expected}` });

/**
 * A token without kid and several keys that fit it (jose's documented pattern): try each, up to
 * maxCandidateKeys. Only a failed signature moves on to the next key.
 */
async function verifyWithCandidates(
  token: string,
  candidates: errors.JWKSMultipleMatchingKeys,
  options: JWTVerifyOptions,
): Promise<JWTVerifyResult> {
  let tried = 0;
  for await (const key of candidates) {
    if (++tried > maxCandidateKeys) break;
    try {
      return await jwtVerify(token, key, options);
    } catch (err) {
      if (!(err instanceof errors.JWSSignatureVerificationFailed)) throw err;
    }
  }
  throw new errors.JWSSignatureVerificationFailed();
}

function reasonFor(err: unknown): InvalidTokenReason {
  if (err instanceof KeysUnavailableError) return 'keys unavailable';
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
  // JWSInvalid, JWTInvalid, JOSENotSupported, and anything else a crafted token may provoke:
  // the key set's own failures are KeysUnavailableError, so what is left is about the token.
  return 'malformed';
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
