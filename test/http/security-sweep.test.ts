/**
 * Security sweep: what the earlier audits (tenancy-audit, auth-bearer, identity, rate-limit)
 * did not cover. Spec, Limits: "all requests to the API host, per source IP: 1000 requests per
 * minute; 429, 60-second mitigation window".
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { adminKey, createClient, request, startTestService, type TestService } from '../support/service.js';

let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** Statuses of `count` GETs of `path` with these headers. */
async function statuses(path: string, count: number, headers: (i: number) => Record<string, string> = () => ({})): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0; i < count; i++) seen.push((await request(service!.url, 'GET', path, undefined, headers(i))).status);
  return seen;
}

describe('the per-source-IP limit counts every request to the API host (spec: Limits)', () => {
  it('refuses /openapi.json, /docs and /dashboard with 429 rate_limit once the budget is spent', async () => {
    service = await startTestService({ RATE_LIMIT_PER_MINUTE: '3' });
    expect(await statuses('/checkin/v1/api/events', 3)).toEqual([401, 401, 401]);
    for (const path of ['/openapi.json', '/docs', '/dashboard']) {
      const refused = await request(service.url, 'GET', path);
      expect(refused.status, path).toBe(429);
      expect(refused.body.code, path).toBe('rate_limit');
      expect(refused.headers.get('retry-after'), path).toBe('60');
    }
  });

  it('keeps answering /healthz and /readyz during the block (orchestrator probes)', async () => {
    service = await startTestService({ RATE_LIMIT_PER_MINUTE: '2' });
    expect(await statuses('/checkin/v1/api/events', 3)).toEqual([401, 401, 429]);
    expect(await statuses('/healthz', 1)).toEqual([200]);
    expect((await statuses('/readyz', 1))[0]).not.toBe(429);
  });

  it('does not take a client’s own X-Forwarded-For or Forwarded header as its source IP without TRUST_PROXY', async () => {
    service = await startTestService({ RATE_LIMIT_PER_MINUTE: '3' });
    const forged = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i}`, forwarded: `for=203.0.113.${i}` });
    expect(await statuses('/checkin/v1/api/events', 5, forged)).toEqual([401, 401, 401, 429, 429]);
  });
});

describe('an IPv6 client counts by its /64, the block every IPv6 host is routinely given', () => {
  it('refuses a client that moves to another address of its /64 for each request', async () => {
    // A proxy on loopback reports the client's address (TRUST_PROXY=loopback, as behind a local proxy).
    service = await startTestService({ RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: 'loopback' });
    const roaming = (i: number) => ({ 'x-forwarded-for': `2001:db8:7:1::${(i + 1).toString(16)}` });
    expect(await statuses('/checkin/v1/api/events', 5, roaming)).toEqual([401, 401, 401, 429, 429]);
    // The same address written longhand is the same client; another /64 has its own budget.
    expect(await statuses('/checkin/v1/api/events', 1, () => ({ 'x-forwarded-for': '2001:0db8:0007:0001:0000:0000:0000:00ff' }))).toEqual([429]);
    expect(await statuses('/checkin/v1/api/events', 1, () => ({ 'x-forwarded-for': '2001:db8:7:2::1' }))).toEqual([401]);
    // IPv4 addresses stay one budget each.
    expect(await statuses('/checkin/v1/api/events', 2, (i) => ({ 'x-forwarded-for': `192.0.2.${i + 1}` }))).toEqual([401, 401]);
  });
});

describe('TRUST_PROXY=true, which lets a client behind an appending proxy choose its source IP', () => {
  /** Start a service with these settings and return its log lines. */
  async function startLogged(env: Record<string, string>): Promise<string[]> {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _encoding, done) => void (lines.push(String(chunk)), done()) });
    service = await startTestService(env, { logger: createLogger('info', sink) });
    return lines;
  }

  it('lets each request pick a new source IP (the proxy appended the real one), unlike a hop count', async () => {
    const appended = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i}, 192.0.2.50` });
    await startLogged({ RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '1' });
    expect(await statuses('/checkin/v1/api/events', 3, appended)).toEqual([401, 401, 429]);
    await service!.close();
    await startLogged({ RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: 'true' });
    expect(await statuses('/checkin/v1/api/events', 3, appended)).toEqual([401, 401, 401]);
  });

  it('is warned about at start, naming the setting to use instead; a hop count is not', async () => {
    const warned = (lines: string[]) => lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40 && /TRUST_PROXY=true/.test(entry.msg));
    const warnings = warned(await startLogged({ TRUST_PROXY: 'true' }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].msg).toMatch(/number of proxy hops/);
    await service!.close();
    expect(warned(await startLogged({ TRUST_PROXY: '1' }))).toHaveLength(0);
  });
});

describe('answers no cache may keep', () => {
  it('marks every API answer no-store: the webhook secret shown once, the admin API\'s client secret, a guest\'s data, an error', async () => {
    // Before, only the token endpoint, /metrics, the dashboard and export downloads said so: a
    // browser (the dashboard's, an integrator's tool) could keep a guest list or a secret on disk.
    service = await startTestService();
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const webhook = await client.call('POST', '/comms/v1/api/comms/webhook', { url: 'https://example.com/hook' });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(200);
    expect(webhook.body).toHaveProperty('secret');
    const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-02T02:00:00Z' });
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: 'Ada', email: 'ada@example.com' });
    const read = await client.call('GET', `/checkin/v1/api/guest/${guest.body.id}`);
    const missing = await client.call('GET', '/checkin/v1/api/guest/00000000-0000-4000-8000-000000000000');
    const account = await request(service.url, 'POST', '/admin/v1/accounts', { email: 'second@example.com', password: 'a long enough passphrase' }, { authorization: `Bearer ${adminKey}` });
    expect(account.status).toBe(201);
    expect(account.body).toHaveProperty('clientSecret');
    for (const reply of [webhook, event, guest, read, missing, account]) expect(reply.headers.get('cache-control')).toBe('no-store');
    expect(missing.status).toBe(404);
  });
});
