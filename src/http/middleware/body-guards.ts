import type { RequestHandler } from 'express';
import bytes from 'bytes';
import { HttpError } from '../errors.js';

const bodyMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Refuses a request whose declared Content-Length is over the limit before any byte of the
 * body is read (body-parser would first read the whole body off the socket), and closes the
 * connection so the client stops sending.
 */
export function declaredLengthLimit(limit: string): RequestHandler {
  const max = bytes.parse(limit) ?? Number.POSITIVE_INFINITY;
  return (req, res, next) => {
    const declared = Number(req.get('content-length'));
    if (Number.isFinite(declared) && declared > max) {
      res.set('Connection', 'close');
      return next(
        new HttpError(413, 'payload_too_large', `the request body declares ${declared} bytes; the service accepts at most ${max} (${limit})`),
      );
    }
    next();
  };
}

/** Our API bodies are JSON: a body in another media type is 415, not a misleading validation error. */
export const jsonOnly: RequestHandler = (req, _res, next) => {
  const length = req.get('content-length');
  const hasBody = req.get('transfer-encoding') !== undefined || (length !== undefined && length !== '0');
  if (!bodyMethods.has(req.method) || !hasBody) return next();
  if (req.is(['application/json', 'application/*+json'])) return next();
  const given = req.get('content-type');
  next(
    new HttpError(
      415,
      'unsupported_media_type',
      given
        ? `the body is ${given}; send JSON with Content-Type: application/json`
        : 'the body has no Content-Type; send JSON with Content-Type: application/json',
    ),
  );
};

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** body-parser's `verify` hook: a JSON body must be valid UTF-8, not quietly patched with U+FFFD. */
export function verifyUtf8(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  if (encoding.toLowerCase().replace('-', '') !== 'utf8') return;
  try {
    strictUtf8.decode(body);
  } catch {
    throw new HttpError(400, 'invalid_encoding', 'the request body is not valid UTF-8; encode the JSON as UTF-8', [
      { path: '(body)', message: 'invalid UTF-8 byte sequence' },
    ]);
  }
}
