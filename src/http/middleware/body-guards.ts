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

/**
 * The deepest nesting of arrays and objects a JSON body may have. RFC 8259 section 9 lets a
 * parser set one; no body of the API is deeper than five, and past a few thousand levels code
 * that walks a value recursively (the Idempotency-Key fingerprint, a serializer) overflows the
 * stack: the request was answered 500 instead of 400.
 */
export const maxJsonDepth = 100;

/**
 * After the JSON parser: refuses a body nested deeper than `maxJsonDepth` (400 on `(body)`), and
 * a string or object key holding a lone UTF-16 surrogate (`"\ud800"`, an escape JSON allows but
 * which is no Unicode character; RFC 7493, I-JSON, section 2.1 forbids it) with 400
 * `invalid_encoding` naming the field, as a body that is not valid UTF-8 is: written as UTF-8
 * (the MongoDB read store's BSON, an email, a file) it turns into U+FFFD, so what was stored
 * would not be what is read back. Walks the parsed value without recursion.
 */
export const wellFormedJson: RequestHandler = (req, _res, next) => {
  const body: unknown = req.body;
  if (body === null || typeof body !== 'object') return next(typeof body === 'string' && hasLoneSurrogate(body) ? loneSurrogate('(body)') : undefined);
  const pending: { value: object; path: string; depth: number }[] = [{ value: body, path: '', depth: 1 }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    if (item.depth > maxJsonDepth) {
      return next(
        new HttpError(400, 'validation_error', 'the request is not valid: see errors', [
          { path: '(body)', message: `is nested deeper than ${maxJsonDepth} levels of arrays and objects` },
        ]),
      );
    }
    for (const [key, field] of Object.entries(item.value)) {
      const path = item.path ? `${item.path}.${key}` : key;
      if (hasLoneSurrogate(key)) return next(loneSurrogate(path));
      if (typeof field === 'string' && hasLoneSurrogate(field)) return next(loneSurrogate(path));
      if (field !== null && typeof field === 'object') pending.push({ value: field as object, path, depth: item.depth + 1 });
    }
  }
  next();
};

/** In unicode mode a surrogate pair is one code point, so only a surrogate alone is of category Cs. */
const hasLoneSurrogate = (text: string) => /\p{Cs}/u.test(text);

const loneSurrogate = (path: string) =>
  new HttpError(400, 'invalid_encoding', 'the request body holds text that is not Unicode; send every string as UTF-8 text', [
    { path, message: 'holds a lone UTF-16 surrogate (an escape such as \\ud800 without its pair), which is no character' },
  ]);

/**
 * Before the JSON parser: names of what it reads that body-parser does not know, as it knows
 * them. `Content-Encoding: x-gzip` is gzip (RFC 9110 section 8.4.1.3: a recipient should take it
 * so); a charset the WHATWG Encoding Standard labels UTF-8 (`utf8`, `unicode-1-1-utf-8`, in any
 * case) is UTF-8. Both were 415, the charset one telling a client that sent UTF-8 to send UTF-8.
 */
export const knownBodyNames: RequestHandler = (req, _res, next) => {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() === 'x-gzip') req.headers['content-encoding'] = 'gzip';
  const type = req.headers['content-type'];
  const charset = type === undefined ? undefined : /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(type);
  if (type !== undefined && charset && !charset[1]!.toLowerCase().startsWith('utf-') && utf8Labels(charset[1]!)) {
    req.headers['content-type'] = `${type.slice(0, charset.index)}; charset=utf-8${type.slice(charset.index + charset[0].length)}`;
  }
  next();
};

/** Whether the WHATWG Encoding Standard (node's TextDecoder) reads `label` as UTF-8. */
function utf8Labels(label: string): boolean {
  try {
    return new TextDecoder(label).encoding === 'utf-8';
  } catch {
    return false;
  }
}
