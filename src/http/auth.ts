import type { RequestHandler } from 'express';
import type { Services } from '../commands/services.js';
import { InvalidTokenError, providerRetryAfterSec, providerUnavailableReasons } from '../identity/token-verifier.js';
import type { AccountDoc, TeamMemberRemovalDoc } from '../projections/accounts.js';
import { exactKey } from '../shared/ids.js';
import { sameSecret } from '../shared/secrets.js';
import type { Principal } from './context.js';
import { HttpError } from './errors.js';

/** What the authentication middleware needs from a token verifier. */
export interface BearerVerifier {
  verify(token: string): Promise<{ sub: string; tenant: string; role: string; iat: number; claims?: Record<string, unknown> }>;
}

/**
 * RFC 6750 section 3: a request without credentials gets the challenge without an error code;
 * a bad token gets error="invalid_token".
 */
const unauthorized = (message: string, error: 'invalid_token' | 'invalid_request' | null = 'invalid_token') =>
  new HttpError(401, 'unauthorized', message, undefined, {
    'WWW-Authenticate': `Bearer realm="checkin-service"${error ? `, error="${error}"` : ''}`,
  });

/**
 * A valid token with a missing or wrong subscription key. The challenge names the key (in the
 * form Azure API Management, whose header this is, uses), not the token: error="invalid_token"
 * would make OAuth client libraries throw a good token away and ask for a new one, to no avail.
 */
const subscriptionKeyRefused = (message: string) =>
  new HttpError(401, 'unauthorized', message, undefined, {
    'WWW-Authenticate': 'AzureApiManagementKey realm="checkin-service", name="Ocp-Apim-Subscription-Key", type="header"',
  });

/** The token could not be checked because the identity provider's metadata or keys could not be read: not the caller's fault. */
const providerUnavailable = () =>
  new HttpError(
    503,
    'identity_provider_unavailable',
    'the identity provider could not be reached to check the bearer token (the token may well be valid); ' +
      'retry after the delay in Retry-After with the same token',
    undefined,
    { 'Retry-After': String(providerRetryAfterSec) },
  );

/**
 * The answer to a failed verify. The message names the reason (and for claims, which claim):
 * never the token or anything taken from it. Provider failures are logged once per failed
 * attempt (the verifier hands out the same error while it backs off), with the cause the
 * operator needs and nothing of the token.
 */
function verifyFailure(error: unknown, logger: Services['logger'], logged: WeakSet<object>): HttpError {
  if (!(error instanceof InvalidTokenError)) {
    logger.error({ err: error }, 'bearer token check failed unexpectedly');
    return unauthorized('the bearer token is not valid');
  }
  if (providerUnavailableReasons.has(error.reason)) {
    // The verifier hands out the same cause while it backs off: one line per failed attempt.
    const cause = (error.cause ?? error) as object;
    if (!logged.has(cause)) {
      logged.add(cause);
      logger.warn(
        { err: cause, reason: error.reason },
        `identity provider unavailable: bearer tokens cannot be checked (answering 503 for ${providerRetryAfterSec} s before the next attempt)`,
      );
    }
    return providerUnavailable();
  }
  return unauthorized(`the bearer token is not valid: ${error.message}`);
}

/** Milliseconds when the token was issued: the dev provider adds `iat_ms`; others give whole seconds. */
function issuedAtMs(token: { iat: number; claims?: Record<string, unknown> }): number {
  const precise = token.claims?.iat_ms;
  return typeof precise === 'number' ? precise : token.iat * 1000;
}

/**
 * Spec, Users: signOutAllSessions signs out "all active sessions (web dashboard and mobile apps)",
 * the sign-ins with a password. A client_credentials token (the client authenticated as itself,
 * `client_id` = the account id) is an integration's, issued for the client secret, which a
 * password change does not touch: it stays valid. A token that does not say so counts as a sign-in.
 */
function isSignIn(token: { tenant: string; claims?: Record<string, unknown> }): boolean {
  const client = token.claims?.client_id ?? token.claims?.azp;
  return typeof client !== 'string' || client.toLowerCase() !== token.tenant.toLowerCase();
}

/**
 * Spec, Authentication: a bearer token from the identity provider AND a live subscription key
 * of the token's client. Tokens issued before a sign-out-all password change are refused.
 */
export function authenticate(verifier: BearerVerifier, services: Services): RequestHandler {
  const accounts = services.readStore.collection<AccountDoc>('accounts');
  const removals = services.readStore.collection<TeamMemberRemovalDoc>('team_member_removals');
  const logged = new WeakSet<object>();
  return async (req, res, next) => {
    const header = req.get('authorization') ?? '';
    if (!/^Bearer(\s|$)/i.test(header)) return next(unauthorized('a bearer token is required in the Authorization header', null));
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) return next(unauthorized('the Authorization header must be "Bearer <token>"', 'invalid_request'));
    let token: Awaited<ReturnType<BearerVerifier['verify']>>;
    try {
      token = await verifier.verify(match[1]!);
    } catch (error) {
      return next(verifyFailure(error, services.logger, logged));
    }
    const key = req.get('ocp-apim-subscription-key');
    if (!key) return next(subscriptionKeyRefused('the Ocp-Apim-Subscription-Key header (subscription key) is required'));
    // Read-only: the account is only read here and by later middleware (res.locals.account).
    const account = await accounts.get(token.tenant, { readOnly: true });
    if (!account) return next(unauthorized('the token names an unknown client'));
    // Compare against every live key so the time taken does not tell which one nearly matched.
    const keyMatches = Object.values(account.subscriptionKeys ?? {}).reduce((ok, hash) => sameSecret(key, hash) || ok, false);
    if (!keyMatches) return next(subscriptionKeyRefused('the subscription key is not valid for this client'));
    if (token.role === 'client' && account.sessionsValidAfter && isSignIn(token) && issuedAtMs(token) < Date.parse(account.sessionsValidAfter)) {
      return next(unauthorized('this session was signed out by a password change; get a new token'));
    }
    if (token.role !== 'client' && token.role !== 'team_member') return next(unauthorized('the token has no known role'));
    if (token.role === 'team_member') {
      // A removed team member's tokens end with it (DELETE teammember/{id}), not when they expire.
      const removal = await removals.get(exactKey(token.tenant, token.sub), { readOnly: true });
      if (removal && issuedAtMs(token) < Date.parse(removal.removedAt)) {
        return next(unauthorized('this team member was removed by its client; its tokens are no longer valid'));
      }
    }
    const principal: Principal = {
      tenantId: token.tenant,
      actor: { type: token.role, id: token.sub },
      role: token.role,
    };
    res.locals.principal = principal;
    res.locals.account = account;
    next();
  };
}

/**
 * Spec, Authentication rules 2 and 3: comms endpoints need comms API access, then sender trust.
 * `except` lists paths that skip the gates (the provider's event intake).
 */
export function commsGates(except: string[] = []): RequestHandler {
  return (req, res, next) => {
    if (except.some((path) => req.originalUrl.startsWith(path))) return next();
    const account = res.locals.account as AccountDoc | undefined;
    if (!account?.commsApiEnabled) {
      return next(new HttpError(403, 'comms_api_not_enabled', 'the comms API is not enabled for this account'));
    }
    if (!account.senderTrusted) {
      return next(new HttpError(403, 'trust_required', 'sender verification has not been completed for this account'));
    }
    next();
  };
}
