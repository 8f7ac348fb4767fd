import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureHeader, verifyWebhook } from '../../src/webhooks/verify.js';

const secret = 'whsec_test';
const body = '{"id":"5b1f","type":"comms.test","createdAt":"2026-01-01T00:00:00.000Z","data":{"status":"test","error":null}}';
const now = 1_800_000_000;
const at = { now: now * 1000 };
const hmac = (t: number, text: string, key = secret) => createHmac('sha256', key).update(`${t}.${text}`).digest('hex');

describe('verifyWebhook (spec: Events, Signature, receiver steps)', () => {
  it('accepts t=<unix>,v1=<hex HMAC-SHA256 of "t.body">, as a string or as the raw bytes', () => {
    const header = `t=${now},v1=${hmac(now, body)}`;
    expect(signatureHeader(secret, now, body)).toBe(header);
    expect(verifyWebhook(body, header, secret, at)).toEqual({ ok: true, timestamp: now, version: 'v1' });
    expect(verifyWebhook(Buffer.from(body), header, secret, at).ok).toBe(true);
  });

  it('rejects a body that was re-serialized, changed by one byte, or signed with another secret', () => {
    const header = signatureHeader(secret, now, body);
    expect(verifyWebhook(JSON.stringify(JSON.parse(body), null, 1), header, secret, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyWebhook(body.replace('test', 'tesT'), header, secret, at).ok).toBe(false);
    expect(verifyWebhook(body, header, 'whsec_other', at).ok).toBe(false);
  });

  it('rejects a timestamp more than 300 s away in either direction, and honours toleranceSec', () => {
    for (const t of [now - 301, now + 301]) {
      expect(verifyWebhook(body, signatureHeader(secret, t, body), secret, at)).toEqual({ ok: false, reason: 'timestamp_outside_tolerance' });
    }
    for (const t of [now - 300, now + 300]) expect(verifyWebhook(body, signatureHeader(secret, t, body), secret, at).ok).toBe(true);
    expect(verifyWebhook(body, signatureHeader(secret, now - 20, body), secret, { ...at, toleranceSec: 10 }).ok).toBe(false);
  });

  it('rejects a signature moved to another timestamp (the timestamp is signed)', () => {
    const header = `t=${now + 1},v1=${hmac(now, body)}`;
    expect(verifyWebhook(body, header, secret, at).ok).toBe(false);
  });

  it('uses the highest version it knows: unknown versions are ignored, several v1 values are allowed', () => {
    const good = hmac(now, body);
    expect(verifyWebhook(body, `t=${now},v9=abc,v1=${good}`, secret, at).ok).toBe(true);
    expect(verifyWebhook(body, `t=${now},v1=${'0'.repeat(64)},v1=${good}`, secret, at).ok).toBe(true);
    expect(verifyWebhook(body, `t=${now},v2=${good}`, secret, at)).toEqual({ ok: false, reason: 'no_known_version' });
  });

  it('rejects a missing or malformed header', () => {
    expect(verifyWebhook(body, undefined, secret, at)).toEqual({ ok: false, reason: 'missing_header' });
    for (const header of ['garbage', `v1=${hmac(now, body)}`, `t=abc,v1=${hmac(now, body)}`, `t=${now},t=${now},v1=x`]) {
      expect(verifyWebhook(body, header, secret, at)).toEqual({ ok: false, reason: 'malformed_header' });
    }
    expect(verifyWebhook(body, `t=${now},v1=nothex`, secret, at)).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verifyWebhook(body, `t=${now},v1=${hmac(now, body).slice(2)}`, secret, at).ok).toBe(false);
  });

  it('defaults to the system clock and a 300 s window', () => {
    const t = Math.floor(Date.now() / 1000);
    expect(verifyWebhook(body, signatureHeader(secret, t, body), secret).ok).toBe(true);
    expect(verifyWebhook(body, signatureHeader(secret, t - 400, body), secret).ok).toBe(false);
  });
});
