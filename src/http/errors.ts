import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ZodError } from 'zod';
import { DomainError } from '../domain/decider.js';
import { AppendTooLargeError, ConcurrencyError, StoreUnavailableError } from '../adapters/eventstore/port.js';
import { DuplicateKeyError, ReadStoreUnavailableError } from '../adapters/readstore/port.js';
import { InvalidCursorError } from '../adapters/readstore/cursor.js';
import { readModelsBehind } from '../commands/services.js';
import { withoutCredentials } from '../shared/without-credentials.js';

/** An error that is already an HTTP answer (the body shape of docs/api.md). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly errors?: { path: string; message: string }[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/** Retry-After on a 503 store_unavailable: about the time a client needs to reconnect. */
export const storeRetryAfterSeconds = 5;

export const notFound = (what = 'resource'): HttpError => new HttpError(404, 'not_found', `${what} not found`);

const domainStatus: Record<DomainError['code'], number> = {
  not_found: 404,
  validation_error: 400,
  conflict: 409,
  forbidden: 403,
  unprocessable: 422,
  unavailable: 503,
};

export function fromZodError(error: ZodError): HttpError {
  return new HttpError(
    400,
    'validation_error',
    'the request is not valid: see errors',
    error.issues.map((issue) => ({ path: issue.path.join('.') || '(body)', message: issue.message })),
  );
}

/** A path parameter that is not percent-encoded UTF-8 (`%E0%A4%A`, `%ZZ`): express cannot decode it. */
export const undecodableParam = (name: string) =>
  new HttpError(400, 'validation_error', 'the request is not valid: see errors', [
    { path: name, message: 'is not valid percent-encoding: encode the value as UTF-8, as encodeURIComponent does' },
  ]);

/** The one place that turns errors into HTTP responses. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof ZodError) return fromZodError(error);
  if (error instanceof DomainError) {
    const status = domainStatus[error.code];
    const errors = error.details?.errors as HttpError['errors'];
    const code = (error.details?.code as string | undefined) ?? error.code;
    // A domain error that knows when to come back (read_models_behind) says so in Retry-After.
    const retryAfter = error.details?.retryAfterSeconds;
    const headers = typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : undefined;
    return new HttpError(status, code, error.message, errors, headers);
  }
  if (error instanceof ConcurrencyError) {
    return new HttpError(409, 'conflict', 'the resource was changed by another request; retry');
  }
  if (error instanceof StoreUnavailableError) {
    return new HttpError(
      503,
      'store_unavailable',
      error.retryable
        ? 'the event store did not answer; retry after the delay in Retry-After (with the same Idempotency-Key, a retry cannot apply a request twice)'
        : 'the event store refused this service; an operator must fix its configuration (see the service log)',
      undefined,
      error.retryable ? { 'retry-after': String(storeRetryAfterSeconds) } : undefined,
    );
  }
  if (error instanceof ReadStoreUnavailableError) {
    return new HttpError(
      503,
      'store_unavailable',
      'the read store (MONGO_URL) did not answer; retry after the delay in Retry-After (with the same Idempotency-Key, a retry cannot apply a request twice)',
      undefined,
      { 'retry-after': String(storeRetryAfterSeconds) },
    );
  }
  if (error instanceof AppendTooLargeError) {
    return new HttpError(
      413,
      'payload_too_large',
      `what this request would store is larger than the event store takes in one write (${error.limit} bytes` +
        `${error.bytes === undefined ? '' : `; this is ${error.bytes}`}); nothing was changed. Large images or texts are the usual cause: ` +
        'keep images under 50 kB, or send fewer records per call',
    );
  }
  if (error instanceof InvalidCursorError) {
    return new HttpError(400, 'validation_error', 'the cursor is not one this query returned', [
      { path: 'cursor', message: 'use the nextCursor of the previous page of the same query' },
    ]);
  }
  if (error instanceof DuplicateKeyError) {
    return new HttpError(409, 'conflict', 'a resource with the same unique key already exists');
  }
  const bodyError = error as { type?: string; status?: number; charset?: string; encoding?: string };
  // body-parser's refusals in our words and error codes, not its own (`bad_request` was no code of ours).
  if (bodyError?.type === 'charset.unsupported') {
    return new HttpError(
      415,
      'unsupported_media_type',
      `the body's charset ${String(bodyError.charset ?? '').toUpperCase() || '(unknown)'} is not supported; send the JSON as UTF-8 (Content-Type: application/json; charset=utf-8)`,
    );
  }
  if (bodyError?.type === 'encoding.unsupported') {
    return new HttpError(
      415,
      'unsupported_media_type',
      `Content-Encoding ${bodyError.encoding ?? '(unknown)'} is not supported; send the body uncompressed, or as gzip, deflate or br`,
    );
  }
  if (bodyError?.type === 'entity.parse.failed') {
    return new HttpError(400, 'validation_error', 'the request body is not valid JSON', [
      { path: '(body)', message: 'invalid JSON' },
    ]);
  }
  if (bodyError?.type === 'entity.too.large') {
    return new HttpError(413, 'payload_too_large', 'the request body is larger than the service accepts');
  }
  // Express could not decode a path parameter (routes the dispatcher runs name it: dispatch.ts).
  if (error instanceof URIError && bodyError.status === 400) return undecodableParam('(path)');
  if (bodyError?.status && bodyError.status >= 400 && bodyError.status < 500) {
    return new HttpError(bodyError.status, 'bad_request', (error as Error).message);
  }
  return new HttpError(500, 'internal_error', 'an unexpected error happened; retry, and report the request id if it persists');
}

/**
 * An error of the JSON body parser as the answer it gets: a body that could not be read (a
 * compressed body that does not decompress, fewer bytes than Content-Length) is 400 naming
 * `(body)`, like malformed JSON; the rest goes to toHttpError as it is.
 */
export function bodyReadError(error: unknown): unknown {
  const failure = error as { status?: number; type?: string; message?: string } | undefined;
  if (error instanceof HttpError || failure?.status !== 400 || failure.type === 'entity.parse.failed') return error;
  return new HttpError(400, 'validation_error', 'the request body could not be read; send it again as JSON (uncompressed, or gzip, deflate or br)', [
    { path: '(body)', message: failure.message ?? 'unreadable body' },
  ]);
}

/**
 * A store outage the service expects and answers 503 `store_unavailable` for: the read store
 * (MONGO_URL) or the event store did not answer. Not a bug: while it lasts every request fails
 * the same way, so a stack per request only floods the operators' alerting. An event store that
 * refuses the service (`retryable: false`: wrong credentials, a configuration to fix) is not one.
 */
export function isStoreOutage(error: unknown): boolean {
  return error instanceof ReadStoreUnavailableError || (error instanceof StoreUnavailableError && error.retryable);
}

type RequestLogger = { error: (o: object, m: string) => void; warn: (o: object, m: string) => void };

/**
 * Logs a request's failure: a store outage as one `warn` line with its cause's message and no
 * stack (`store unavailable`), anything else as an `error` with the whole error (a bug to look at).
 */
export function logFailure(log: RequestLogger | undefined, error: unknown, fields: object, message: string): void {
  if (isStoreOutage(error)) {
    log?.warn({ ...fields, code: 'store_unavailable', cause: withoutCredentials((error as Error).message) }, `${message}: store unavailable`);
  } else {
    log?.error({ ...fields, err: error }, message);
  }
}

/** Renders every error; unexpected ones and store failures are logged with the request id (the body never carries the cause). */
export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  // The read store failed after this request's change was appended (its read-back): the change
  // stands, so the answer says read it back, not send it again (a retry without an
  // Idempotency-Key would apply it twice: a second guest, a second invitation email).
  const recorded = (res.locals.writes as { recorded: boolean } | undefined)?.recorded === true;
  const http = toHttpError(recorded && error instanceof ReadStoreUnavailableError ? readModelsBehind("this request's change") : error);
  // A 5xx made on purpose (an HttpError: the identity provider unreachable) was logged where it was decided, once per cause.
  if (http.status >= 500 && !(error instanceof HttpError)) {
    const log = req.log ?? (res.app.get('logger') as RequestLogger | undefined);
    logFailure(log, error, { requestId: res.locals.requestId, method: req.method, path: req.path }, 'request failed');
  }
  // An answer already begun (a streamed array cut short) cannot carry an error: it was ended
  // where it stood, and the error is only logged (above).
  if (res.headersSent) return;
  if (http.headers) res.set(http.headers);
  // Refused while its body is still arriving (a stranger's 401, a 413, a 415): close the
  // connection rather than read the rest off the socket only to throw it away.
  const hasBody = req.get('transfer-encoding') !== undefined || Number(req.get('content-length')) > 0;
  if (hasBody && !req.complete) res.set('Connection', 'close');
  res.status(http.status).json({
    code: http.code,
    message: http.message,
    ...(http.errors ? { errors: http.errors } : {}),
  });
};

export const unknownRoute: RequestHandler = (req, _res, next) => {
  next(new HttpError(404, 'not_found', `no route for ${req.method} ${req.path}`));
};
