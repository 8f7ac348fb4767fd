import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { decodeProtectedHeader, SignJWT } from 'jose';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { counterLimiter, sourceIp, type RateLimitStore } from '../http/middleware/rate-limit.js';
import type { Logger } from '../shared/logger.js';
import { newId } from '../shared/ids.js';
import type { CredentialVerifier, TokenSubject } from './credentials.js';
import type { RefreshTokens } from './refresh-tokens.js';
import { loadOrCreateSigningKey, type SigningKey } from './signing-key.js';

/** The one public client allowed to use the password grant (the check-in app). */
export const checkinAppClientId = 'checkin-app';

export interface DevIdentityProviderOptions {
  /** The issuer URL including `/core`, e.g. `http://127.0.0.1:8080/core`; read per request (the port may be ephemeral). */
  issuer: () => string;
  /** Where the private signing JWK lives (created with mode 0600 on first start). */
  keyFile: string;
  /** The key already read from keyFile (the composition root shares it with the token verifier). */
  signingKey?: SigningKey;
  credentials: CredentialVerifier;
  /** Access token lifetime; default 3600. */
  tokenTtlSeconds?: number;
  /** When set, every token carries this `aud`. */
  audience?: string;
  now?: () => Date;
  /** Failed password sign-ins of one user name from one address before it is refused for `seconds`; default 10 in 15 minutes. */
  failedSignIns?: { attempts: number; seconds: number };
  /** Where the failure counts live: the rate limits' shared store, so every api process counts together; per process without it. */
  failedSignInStore?: RateLimitStore;
  logger?: Logger;
  /** Refresh tokens for the password grant (RFC 6749 section 6); without it the grant answers none. */
  refreshTokens?: RefreshTokens;
}

/**
 * Password guessing: after `attempts` failed password sign-ins of one user name from one source
 * address, that pair is refused (429, Retry-After) until `seconds` have passed since the last
 * failure; a success clears its count. Keyed by name and address, so an attacker elsewhere cannot
 * lock door staff out; an IPv6 source counts by its /64, as the API's rate limit does. The counts
 * live in the rate limits' store, which every api process shares (docs/api.md, Sign-in): N
 * processes behind a load balancer still allow `attempts`, not N × `attempts`.
 */
class SignInThrottle {
  private readonly failures: RateLimiterAbstract;
  constructor(
    private readonly limit: { attempts: number; seconds: number },
    store: RateLimitStore,
    logger?: Logger,
  ) {
    this.failures = counterLimiter(store, { keyPrefix: 'signin', points: limit.attempts, duration: limit.seconds, blockDuration: limit.seconds }, logger)!;
  }
  /** Seconds until the pair may try again, or 0. */
  async waitSeconds(key: string): Promise<number> {
    const state = await this.failures.get(key);
    return state && state.consumedPoints >= this.limit.attempts ? Math.max(1, Math.ceil(state.msBeforeNext / 1000)) : 0;
  }
  async failed(key: string): Promise<void> {
    await this.failures.consume(key).catch(() => undefined);
  }
  async succeeded(key: string): Promise<void> {
    await this.failures.delete(key);
  }
}

/**
 * The built-in OpenID provider used when no `OIDC_ISSUER` is configured (README, Configuration).
 * Mount the router at `/core`: discovery, JWKS and an RFC 6749 token endpoint for the
 * client_credentials, password and (with refreshTokens) refresh_token grants, issuing RS256 JWT
 * access tokens; the password grant answers a refresh token too (refresh-tokens.ts).
 */
export function createDevIdentityProvider(options: DevIdentityProviderOptions): Router {
  const ttl = options.tokenTtlSeconds ?? 3600;
  if (!Number.isInteger(ttl) || ttl <= 0) throw new Error(`tokenTtlSeconds must be a positive integer, got ${ttl}`);
  const key = options.signingKey ?? loadOrCreateSigningKey(options.keyFile);
  const issueAccessToken = accessTokenIssuer({ ...options, ttl, key });
  const throttle = new SignInThrottle(options.failedSignIns ?? { attempts: 10, seconds: 15 * 60 }, options.failedSignInStore ?? { kind: 'memory' }, options.logger);

  const router = express.Router();
  router.get('/.well-known/openid-configuration', (_req, res) => void res.json(discoveryDocument(options.issuer(), options.refreshTokens !== undefined)));
  router.get('/.well-known/jwks', (_req, res) => void res.json({ keys: [key.publicJwk] }));
  router.post(
    '/connect/token',
    express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }),
    async (req: Request, res: Response) => {
      res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
      try {
        const { subject, clientId, refreshToken } = await authorize(req, options, throttle);
        const answer = { access_token: await issueAccessToken(subject, clientId), token_type: 'Bearer', expires_in: ttl };
        res.json(refreshToken ? { ...answer, refresh_token: refreshToken } : answer);
      } catch (err) {
        if (!(err instanceof TokenRequestError)) throw err;
        sendTokenError(res, err, options.issuer());
      }
    },
  );
  // RFC 7009 token revocation: the dashboard's "Sign out", an app's sign-out.
  router.post(
    '/connect/revocation',
    express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }),
    async (req: Request, res: Response) => {
      res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
      try {
        await revoke(req, options.refreshTokens);
        res.status(200).end();
      } catch (err) {
        if (!(err instanceof TokenRequestError)) throw err;
        sendTokenError(res, err, options.issuer());
      }
    },
  );
  // No browser flow (authorization code, implicit): the authorization endpoint the discovery
  // document must name (OpenID Connect Discovery 1.0 section 3) answers every request so, without
  // redirecting (no redirect_uri is registered, RFC 6749 4.1.2.1), instead of a bare 404.
  router.all('/connect/authorize', (_req, res) => {
    res.set({ 'Cache-Control': 'no-store' }).status(400).json({
      error: 'unsupported_response_type',
      error_description:
        'the built-in provider has no browser sign-in (authorization code or implicit flow): use grant_type=password or client_credentials at the token_endpoint, or set OIDC_ISSUER to a full OpenID provider',
    });
  });
  // A form the body parser refuses (too large, too many parameters, a Content-Encoding that does
  // not decode) is answered in RFC 6749 5.2's shape too: OAuth client libraries read `error`.
  router.use(['/connect/token', '/connect/revocation'], (err: unknown, _req: Request, res: Response, next: NextFunction) => {
    // body-parser's refusals are http-errors: a 4xx status, marked expose.
    const { type, status, expose } = (err ?? {}) as { type?: unknown; status?: unknown; expose?: unknown };
    if (expose !== true || typeof status !== 'number' || status < 400 || status >= 500) return next(err);
    res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
    res.status(type === 'entity.too.large' ? 413 : 400).json({
      error: 'invalid_request',
      error_description: `the form body could not be read (${(err as Error).message}); send it as application/x-www-form-urlencoded UTF-8`,
    });
  });
  return router;
}

/**
 * OpenID Connect Discovery 1.0 / RFC 8414 metadata, stating only what the provider does: no
 * browser flow, so the authorization endpoint refuses every response_type and
 * response_types_supported is empty (it said `token`, the implicit flow, which never existed);
 * revocation only where there are refresh tokens to revoke, for the public checkin-app (`none`).
 */
function discoveryDocument(issuer: string, refreshes: boolean) {
  const base = issuer.replace(/\/+$/, '');
  return {
    issuer,
    authorization_endpoint: `${base}/connect/authorize`,
    jwks_uri: `${base}/.well-known/jwks`,
    token_endpoint: `${base}/connect/token`,
    ...(refreshes ? { revocation_endpoint: `${base}/connect/revocation`, revocation_endpoint_auth_methods_supported: ['none'] } : {}),
    grant_types_supported: ['client_credentials', 'password', ...(refreshes ? ['refresh_token'] : [])],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'none'],
    id_token_signing_alg_values_supported: ['RS256'],
    response_types_supported: [],
    subject_types_supported: ['public'],
    claims_supported: ['iss', 'sub', 'aud', 'iat', 'nbf', 'exp', 'jti', 'client_id', 'tenant', 'role', 'iat_ms'],
  };
}

function accessTokenIssuer(options: DevIdentityProviderOptions & { ttl: number; key: SigningKey }) {
  const now = options.now ?? (() => new Date());
  return (subject: TokenSubject, clientId: string): Promise<string> => {
    const issuedAtMs = now().getTime();
    const issuedAt = Math.floor(issuedAtMs / 1000);
    // iat_ms: a sign-out-all password change must not refuse a token issued later in the same second.
    const jwt = new SignJWT({ tenant: subject.tenant, role: subject.role, client_id: clientId, iat_ms: issuedAtMs })
      .setProtectedHeader({ alg: options.key.alg, kid: options.key.kid, typ: 'at+jwt' })
      .setIssuer(options.issuer())
      .setSubject(subject.sub)
      .setIssuedAt(issuedAt)
      .setNotBefore(issuedAt)
      .setExpirationTime(issuedAt + options.ttl)
      .setJti(newId());
    if (options.audience) jwt.setAudience(options.audience);
    return jwt.sign(options.key.privateKey);
  };
}

// ---- the token request (RFC 6749 sections 2.3.1, 4.3, 4.4, 5.2, 6) ----

type TokenErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unsupported_grant_type' | 'unsupported_token_type';

class TokenRequestError extends Error {
  constructor(
    readonly error: TokenErrorCode,
    readonly description: string,
    /** Set: too many failed sign-ins (429 with Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
  }
}

function sendTokenError(res: Response, err: TokenRequestError, issuer: string): void {
  if (err.error === 'invalid_client') res.set('WWW-Authenticate', `Basic realm="${issuer}"`);
  if (err.retryAfterSeconds !== undefined) res.set('Retry-After', String(err.retryAfterSeconds));
  const status = err.retryAfterSeconds !== undefined ? 429 : err.error === 'invalid_client' ? 401 : 400;
  res.status(status).json({ error: err.error, error_description: err.description });
}

interface Grant {
  subject: TokenSubject;
  clientId: string;
  /** Only the password and refresh_token grants have one (RFC 6749 4.4.3: client_credentials none). */
  refreshToken?: string;
}

async function authorize(req: Request, options: DevIdentityProviderOptions, throttle: SignInThrottle): Promise<Grant> {
  const params = readParams(req);
  const grantType = params.grant_type;
  const { credentials, refreshTokens } = options;
  if (grantType === undefined || grantType === '') throw new TokenRequestError('invalid_request', 'grant_type is required');
  const supported = grantType === 'client_credentials' || grantType === 'password' || (grantType === 'refresh_token' && refreshTokens);
  if (!supported) throw new TokenRequestError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
  const client = readClient(req, params);
  if (grantType === 'client_credentials') return clientCredentialsGrant(client, credentials);
  if (grantType === 'refresh_token') return refreshTokenGrant(client, params, credentials, refreshTokens!);
  const grant = await passwordGrant(client, params, credentials, throttle, sourceIp(req));
  return refreshTokens ? { ...grant, refreshToken: await refreshTokens.issue(grant.subject, grant.clientId) } : grant;
}

/**
 * RFC 6749 section 6 with rotation (RFC 9700 4.14.2): the token is spent and a new one answered;
 * a spent token presented again ends the whole sign-in. A refusal of any kind is invalid_grant.
 */
async function refreshTokenGrant(client: ClientAuthentication, params: Params, credentials: CredentialVerifier, refreshTokens: RefreshTokens): Promise<Grant> {
  // Only checkin-app gets refresh tokens; it is a public client and has no secret to check.
  if (client.clientId !== checkinAppClientId) {
    throw new TokenRequestError('invalid_client', `the refresh_token grant is only for client_id ${checkinAppClientId}`);
  }
  const presented = params.refresh_token;
  if (presented === undefined || presented === '') throw new TokenRequestError('invalid_request', 'refresh_token is required');
  const result = await refreshTokens.rotate(presented, client.clientId, (family) => credentials.signInStands(family, family.signedInAtMs));
  if (!result.ok) {
    throw new TokenRequestError(
      'invalid_grant',
      result.reason === 'reused'
        ? 'the refresh token was already used; every token of its sign-in is revoked: sign in again'
        : 'the refresh token is not valid (unknown, expired, revoked, or its sign-in was signed out or removed): sign in again',
    );
  }
  const { sub, tenant, role } = result.family;
  return { subject: { sub, tenant, role }, clientId: result.family.clientId, refreshToken: result.token };
}

/**
 * RFC 7009: `token` (and an optional `token_type_hint`, which is only a hint: every token is
 * looked up as a refresh token) from checkin-app, the only client holding refresh tokens,
 * authenticated as the token endpoint does (a public client: its client_id). A refresh token of
 * the sign-in, live or just spent, ends the whole sign-in; an unknown, expired or already revoked
 * one is answered 200 all the same (2.2). An access token cannot be revoked (a self-contained JWT
 * that lapses at its exp): 400 unsupported_token_type (2.2.1), so a client knows it still works.
 */
async function revoke(req: Request, refreshTokens: RefreshTokens | undefined): Promise<void> {
  const params = readParams(req);
  const client = readClient(req, params);
  if (client.clientId !== checkinAppClientId) {
    throw new TokenRequestError('invalid_client', `revocation is only for client_id ${checkinAppClientId}, the one client given refresh tokens`);
  }
  const { token } = params;
  if (token === undefined || token === '') throw new TokenRequestError('invalid_request', 'token is required');
  const outcome = refreshTokens ? await refreshTokens.revokeToken(token, client.clientId) : 'unknown';
  if (outcome === 'unknown' && looksLikeJwt(token)) {
    throw new TokenRequestError(
      'unsupported_token_type',
      'access tokens are self-contained JWTs and cannot be revoked; they lapse at their exp. Revoke the refresh token to end the sign-in',
    );
  }
}

function looksLikeJwt(token: string): boolean {
  try {
    decodeProtectedHeader(token);
    return token.split('.').length === 3;
  } catch {
    return false;
  }
}

async function clientCredentialsGrant(client: ClientAuthentication, credentials: CredentialVerifier) {
  if (!client.clientId || client.clientSecret === undefined) {
    throw new TokenRequestError('invalid_client', 'client_id and client_secret are required');
  }
  const subject = await credentials.verifyClient(client.clientId, client.clientSecret);
  if (!subject) throw new TokenRequestError('invalid_client', 'client authentication failed');
  return { subject, clientId: client.clientId };
}

async function passwordGrant(client: ClientAuthentication, params: Params, credentials: CredentialVerifier, throttle: SignInThrottle, source: string) {
  // checkin-app is a public client: it identifies itself and has no secret to check.
  if (client.clientId !== checkinAppClientId) {
    throw new TokenRequestError('invalid_client', `the password grant is only for client_id ${checkinAppClientId}`);
  }
  const { username, password } = params;
  if (username === undefined || password === undefined) {
    throw new TokenRequestError('invalid_request', 'username and password are required');
  }
  const key = `${username.normalize('NFC').toLowerCase()}\u0000${source}`;
  const wait = await throttle.waitSeconds(key);
  if (wait > 0) {
    throw new TokenRequestError('invalid_grant', `too many failed sign-ins for this user name from this address; try again in ${wait} s`, wait);
  }
  const subject = await credentials.verifyPassword(username, password);
  if (!subject) {
    await throttle.failed(key);
    throw new TokenRequestError('invalid_grant', 'invalid username or password');
  }
  await throttle.succeeded(key);
  return { subject, clientId: checkinAppClientId };
}

type Params = Partial<Record<string, string>>;

function readParams(req: Request): Params {
  if (!req.is('application/x-www-form-urlencoded')) {
    throw new TokenRequestError('invalid_request', 'the body must be application/x-www-form-urlencoded');
  }
  const params: Params = {};
  for (const [name, value] of Object.entries((req.body ?? {}) as Record<string, unknown>)) {
    if (typeof value !== 'string') throw new TokenRequestError('invalid_request', `parameter ${name} is repeated`);
    params[name] = value;
  }
  return params;
}

interface ClientAuthentication {
  clientId?: string;
  clientSecret?: string;
}

/** Client credentials from HTTP Basic (form-encoded id and secret, RFC 6749 2.3.1) or from the body, never both. */
function readClient(req: Request, params: Params): ClientAuthentication {
  const header = req.get('authorization');
  if (header === undefined) return { clientId: params.client_id, clientSecret: params.client_secret };
  const basic = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
  if (!basic) throw new TokenRequestError('invalid_client', 'unsupported Authorization scheme; use Basic');
  if (params.client_secret !== undefined) {
    throw new TokenRequestError('invalid_request', 'use only one client authentication method');
  }
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new TokenRequestError('invalid_client', 'malformed Basic credentials');
  const clientId = formDecode(decoded.slice(0, colon));
  const clientSecret = formDecode(decoded.slice(colon + 1));
  if (params.client_id !== undefined && params.client_id !== clientId) {
    throw new TokenRequestError('invalid_request', 'client_id in the body differs from the Basic credentials');
  }
  return { clientId, clientSecret };
}

function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new TokenRequestError('invalid_client', 'malformed Basic credentials');
  }
}
