/**
 * How the @sendgrid/* clients fail, read once for both SendGrid adapters (mailer, domains).
 * Only the status and SendGrid's own messages are kept: the underlying error objects carry
 * the request config, Authorization header included, so they are neither kept nor wrapped.
 */

/** What the client rejects with on a >= 400 response (its ResponseError class is not exported at runtime). */
export interface SendGridResponseError {
  code: number;
  message: string;
  response: { body?: unknown };
}

export function isResponseError(error: unknown): error is SendGridResponseError {
  const candidate = error as Partial<SendGridResponseError> | undefined;
  return typeof candidate?.code === 'number' && typeof candidate.response === 'object';
}

/** The 4xx answers worth another try; every other 4xx refuses the request itself (or the key). */
const retryableClientStatuses = new Set([408, 429]);

export type SendGridFailure =
  | { kind: 'response'; status: number; statusText: string; permanent: boolean; messages: string[] }
  /** Network failures and timeouts (axios errors), or anything unexpected: worth another try. */
  | { kind: 'unreachable'; reason: string };

/** The failure in our terms; `withFields` adds SendGrid's `field` to each message. */
export function sendGridFailure(error: unknown, options: { withFields?: boolean } = {}): SendGridFailure {
  if (!isResponseError(error)) return { kind: 'unreachable', reason: (error as Error)?.message ?? String(error) };
  const status = error.code;
  return {
    kind: 'response',
    status,
    statusText: error.message,
    permanent: status >= 400 && status < 500 && !retryableClientStatuses.has(status),
    messages: providerMessages(error.response.body, options.withFields ?? false),
  };
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
