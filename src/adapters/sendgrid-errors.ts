/**
 * How the @sendgrid/* clients fail, read once for both SendGrid adapters (mailer, domains).
 * Only the status and SendGrid's own messages are kept: the underlying error objects carry
 * the request config, Authorization header included, so they are neither kept nor wrapped.
 */

/** What the client rejects with on a >= 400 response (its ResponseError class is not exported at runtime). */
export interface SendGridResponseError {
  code: number;
  message: string;
  response: { body?: unknown; headers?: Record<string, unknown> };
}

export function isResponseError(error: unknown): error is SendGridResponseError {
  const candidate = error as Partial<SendGridResponseError> | undefined;
  return typeof candidate?.code === 'number' && typeof candidate.response === 'object';
}

/** The 4xx answers worth another try; every other 4xx refuses the request itself (or the key). */
const retryableClientStatuses = new Set([408, 429]);

export type SendGridFailure =
  | {
      kind: 'response';
      status: number;
      statusText: string;
      permanent: boolean;
      messages: string[];
      /** 429: how long until SendGrid's rate limit resets (`X-RateLimit-Reset`, or `Retry-After`), capped at an hour. */
      retryAfterMs?: number;
    }
  /**
   * No answer: network failures and timeouts (axios errors), or anything unexpected; worth another
   * try. `requestSent` false: the connection failed before the request could go out (refused, no
   * DNS, no route, TLS), so SendGrid cannot have acted on it. True: it may have (a timeout, a
   * connection dropped while waiting for the answer).
   */
  | { kind: 'unreachable'; reason: string; requestSent: boolean };

/**
 * Error codes of a connection that never carried the request: the socket did not connect (refused,
 * no DNS answer, no route) or TLS did not complete, so nothing was written to it.
 */
const notSentCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Longest wait a rate-limit answer may ask for; a reset further away is taken as this. */
const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * Whether SendGrid refused our API key rather than the request: every 401 (a key that is wrong,
 * deleted or revoked: "The provided authorization grant is invalid, expired, or revoked"; "Maximum
 * credits exceeded"; "Authenticated user is not authorized to send mail"), and a 403 unless its
 * message is about the message's sender (`access forbidden` is a key without the needed scope, e.g.
 * `mail.send`). A 403 "The from address does not match a verified Sender Identity" refuses that
 * message's From, not the key (SendGrid's "4XX API Errors and Troubleshooting Suggestions").
 */
export function refusesCredentials(status: number, messages: string[]): boolean {
  if (status === 401) return true;
  if (status !== 403) return false;
  return !messages.some((message) => /sender identity|from address|from email|send from/i.test(message));
}

/** The failure in our terms; `withFields` adds SendGrid's `field` to each message. */
export function sendGridFailure(error: unknown, options: { withFields?: boolean } = {}): SendGridFailure {
  if (!isResponseError(error)) {
    const code = (error as { code?: unknown } | undefined)?.code;
    return { kind: 'unreachable', reason: (error as Error)?.message ?? String(error), requestSent: !(typeof code === 'string' && notSentCodes.has(code)) };
  }
  const status = error.code;
  const retryAfterMs = status === 429 ? rateLimitWait(error.response.headers ?? {}, Date.now()) : undefined;
  return {
    kind: 'response',
    status,
    statusText: error.message,
    permanent: status >= 400 && status < 500 && !retryableClientStatuses.has(status),
    messages: providerMessages(error.response.body, options.withFields ?? false),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/**
 * How long a 429 asks to wait. SendGrid sends `X-RateLimit-Reset`, the Unix time (seconds) when
 * the limit's refresh period ends (v3 API "Rate Limits"); `Retry-After` (seconds or an HTTP date)
 * is read too, in case a proxy in front answers. Undefined when neither is usable.
 */
export function rateLimitWait(headers: Record<string, unknown>, now: number): number | undefined {
  const header = (name: string): string | undefined => {
    const value = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
    return typeof value === 'string' || typeof value === 'number' ? String(value).trim() : undefined;
  };
  const waits: number[] = [];
  const reset = header('x-ratelimit-reset');
  if (reset && /^\d+$/.test(reset)) waits.push(Number(reset) * 1000 - now);
  const retryAfter = header('retry-after');
  if (retryAfter && /^\d+$/.test(retryAfter)) waits.push(Number(retryAfter) * 1000);
  else if (retryAfter && !Number.isNaN(Date.parse(retryAfter))) waits.push(Date.parse(retryAfter) - now);
  if (waits.length === 0) return undefined;
  return Math.min(Math.max(0, ...waits), MAX_RETRY_AFTER_MS);
}

/** `{"errors":[{"message","field","help"}]}`, as SendGrid answers 4xx and most 5xx. */
function providerMessages(body: unknown, withFields: boolean): string[] {
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  const errors = (parsed as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors.flatMap((entry: { message?: unknown; field?: unknown } | null) => {
    if (typeof entry?.message !== 'string' || entry.message === '') return [];
    return [withFields && entry.field ? `${entry.message} (${String(entry.field)})` : entry.message];
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
