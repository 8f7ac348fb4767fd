/**
 * The webhook signature scheme (spec: Events, Signature), both sides, with no dependency
 * but node:crypto so a receiver can copy this file as it is.
 *
 *   X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the secret>
 *
 * Receiver steps: read the raw body bytes (do not parse and re-serialize), then
 * `verifyWebhook(rawBody, req.headers['x-service-signature'], secret)`; answer 401 and
 * ignore the event unless it returns `ok: true`; dedupe on X-Service-Webhook-Id.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Service-Signature';
export const DEFAULT_TOLERANCE_SEC = 300;

/** Signature versions this helper knows, highest first. */
const KNOWN_VERSIONS = ['v1'] as const;

export type VerifyFailure =
  | 'missing_header'
  | 'malformed_header'
  | 'no_known_version'
  | 'timestamp_outside_tolerance'
  | 'signature_mismatch';

export type VerifyResult = { ok: true; timestamp: number; version: string } | { ok: false; reason: VerifyFailure };

export interface VerifyOptions {
  /** Largest accepted |now - t| in seconds (default 300, the spec's replay window). */
  toleranceSec?: number;
  /** The current time (default: the system clock). */
  now?: Date | number;
}

/** The v1 digest: lowercase hex HMAC-SHA256 of `<unixTime>.<body>` keyed with the secret. */
export function signatureV1(secret: string, unixTime: number, body: string | Buffer): string {
  return createHmac('sha256', secret)
    .update(`${unixTime}.`, 'utf8')
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('hex');
}

/** The header value a sender puts on a delivery of `body` at `unixTime`. */
export function signatureHeader(secret: string, unixTime: number, body: string | Buffer): string {
  return `t=${unixTime},v1=${signatureV1(secret, unixTime, body)}`;
}

/**
 * The spec's receiver steps: parse t and the signatures, reject a t more than `toleranceSec`
 * from now, recompute over `t + "." + rawBody` and compare in constant time. Uses the
 * highest signature version it knows; a header may carry several signatures of one version
 * (any one matching is enough) and versions it does not know (ignored).
 */
export function verifyWebhook(
  rawBody: string | Buffer,
  signatureHeaderValue: string | string[] | undefined | null,
  secret: string,
  options: VerifyOptions = {},
): VerifyResult {
  const header = Array.isArray(signatureHeaderValue) ? signatureHeaderValue[0] : signatureHeaderValue;
  if (!header) return { ok: false, reason: 'missing_header' };
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { ok: false, reason: 'malformed_header' };
  const version = KNOWN_VERSIONS.find((v) => (parsed.signatures.get(v)?.length ?? 0) > 0);
  if (!version) return { ok: false, reason: 'no_known_version' };

  const nowMs = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime();
  const tolerance = options.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  if (Math.abs(Math.floor(nowMs / 1000) - parsed.timestamp) > tolerance) return { ok: false, reason: 'timestamp_outside_tolerance' };

  const expected = Buffer.from(signatureV1(secret, parsed.timestamp, rawBody), 'hex');
  const matches = parsed.signatures.get(version)!.some((candidate) => {
    if (!/^[0-9a-f]{64}$/.test(candidate)) return false;
    return timingSafeEqual(expected, Buffer.from(candidate, 'hex'));
  });
  return matches ? { ok: true, timestamp: parsed.timestamp, version } : { ok: false, reason: 'signature_mismatch' };
}

/** `t=<digits>` once, then `<version>=<value>` pairs; anything else is malformed. */
function parseSignatureHeader(header: string): { timestamp: number; signatures: Map<string, string[]> } | undefined {
  let timestamp: number | undefined;
  const signatures = new Map<string, string[]>();
  for (const part of header.split(',')) {
    const cut = part.indexOf('=');
    if (cut <= 0) return undefined;
    const key = part.slice(0, cut).trim();
    const value = part.slice(cut + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined || !/^\d{1,12}$/.test(value)) return undefined;
      timestamp = Number(value);
    } else {
      signatures.set(key, [...(signatures.get(key) ?? []), value.toLowerCase()]);
    }
  }
  return timestamp === undefined ? undefined : { timestamp, signatures };
}
