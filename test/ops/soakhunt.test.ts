/**
 * What a service running for days must not pile up (docs/operations.md, "Long runs"); found with
 * bench/soak.ts, a few minutes of mixed load on the service in a child process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { counterLimiter, PURGE_EVERY_MS } from '../../src/http/middleware/rate-limit.js';
import { loggedLines } from '../support/log-lines.js';
import { spawnService, type ChildService } from '../support/child-service.js';
import { createClient, newEvent, type Client } from '../support/service.js';

const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'soakhunt-'));
afterAll(() => fs.rmSync(tempDir, { recursive: true, force: true }));

describe('export downloads', () => {
  let service: ChildService;
  let alice: Client;
  beforeAll(async () => {
    // The service as operators run it (its own process, request logs at info): Node's warnings go to its stderr.
    service = await spawnService({ LOG_LEVEL: 'info' });
    alice = await createClient({ url: service.url! });
  });
  afterAll(async () => {
    service?.killGroup('SIGTERM');
    await service?.exited;
    if (service) fs.rmSync(service.dataDir, { recursive: true, force: true });
  });

  it('print no MaxListenersExceededWarning ("possible EventEmitter memory leak") for a download, compressed or not', async () => {
    const eventId = await newEvent(alice);
    for (let i = 0; i < 3; i++) expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: `Guest${i}`, lastName: 'Soak' })).status).toBe(200);
    const times = { startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
    const created = await alice.call('POST', '/checkin/v1/api/event/export', { id: eventId, title: 'Soak', ...times });
    expect(created.status).toBe(200);
    for (const encoding of ['gzip', 'identity']) {
      const file = await alice.call('GET', created.body.url, undefined, { 'accept-encoding': encoding });
      expect(file.status).toBe(200);
      expect(String(file.body)).toContain('Guest2');
    }
    // The file answered directly to the create (Accept: text/csv) goes the same way.
    const direct = await alice.call('POST', '/checkin/v1/api/event/export', { id: eventId, title: 'Soak', ...times }, { accept: 'text/csv' });
    expect(direct.status).toBe(200);
    expect(String(direct.body)).toContain('Guest0');
    // Node writes the warning as the listener is added, before the answer: a second is far more than it takes to arrive.
    await vi.waitFor(() => expect(service.stderr).toContain('MaxListenersExceededWarning'), { timeout: 1_000 }).catch(() => undefined);
    expect(service.stderr).not.toContain('MaxListenersExceededWarning');
  });
});

describe('rate-limit counters in SQLite (DATA_DIR/rate-limits.sqlite)', () => {
  afterEach(() => void vi.useRealTimers());

  it('a purge of expired counters that fails is logged, ends nothing, and the next purge still runs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const file = path.join(tempDir, 'limits.sqlite');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    // As another api process holding the file past the busy timeout would make it: refused at once.
    db.pragma('busy_timeout = 0');
    const { logger, lines } = loggedLines('warn');
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    const other = new Database(file);
    try {
      const limiter = counterLimiter({ kind: 'sqlite', db }, { keyPrefix: 'api', points: 10, duration: 60, blockDuration: 60 }, logger)!;
      // The table is made asynchronously; the first consume may still go to the insurance limiter.
      await vi.waitFor(() => expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'rate_limits'").get()).toEqual({ n: 1 }), { timeout: 60_000, interval: 1 });
      await limiter.consume('203.0.113.9');
      const stale = Date.now() - 2 * 3_600_000;
      db.prepare('INSERT INTO rate_limits (key, points, expire) VALUES (?, ?, ?)').run('api:198.51.100.7', 1, stale);
      const keys = () => (db.prepare('SELECT key FROM rate_limits ORDER BY key').all() as { key: string }[]).map((r) => r.key);
      expect(keys()).toEqual(['api:198.51.100.7', 'api:203.0.113.9']);

      other.exec('BEGIN IMMEDIATE');
      await vi.advanceTimersByTimeAsync(PURGE_EVERY_MS);
      await new Promise((resolve) => setImmediate(resolve));
      other.exec('ROLLBACK');
      expect(keys()).toEqual(['api:198.51.100.7', 'api:203.0.113.9']);

      await vi.advanceTimersByTimeAsync(PURGE_EVERY_MS);
      await new Promise((resolve) => setImmediate(resolve));
      // The counter expired over an hour ago is gone; the live one stays.
      expect(keys()).toEqual(['api:203.0.113.9']);
      expect(rejections).toEqual([]);
      expect(lines.some((l) => String(l.msg).startsWith('rate limit purge of expired counters failed'))).toBe(true);
    } finally {
      process.off('unhandledRejection', onRejection);
      other.close();
      db.close();
    }
  });
});
