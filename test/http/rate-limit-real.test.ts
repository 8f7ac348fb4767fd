/**
 * Issue 12, item 9: the whole-API limit on the real-server path (MONGO_URL set), at the load
 * that found it failing open: 1,100 requests in a minute from one IP, 50 at a time.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { mongoCountsAtomically } from '../../src/http/middleware/rate-limit-store.js';
import { startTestService } from '../support/service.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * On a server that cannot count atomically (FerretDB, as in CI) the counters are in
 * DATA_DIR/rate-limits.sqlite. The test's own counter is put there before it sends, with an expiry an
 * hour ahead: the window it counts in then cannot end while the test runs, however slow the machine.
 * (With the spec's 60-second window, 1,000 requests that took longer than a minute started a new
 * window, and fewer than 100 were refused.) Returns the file, opened, for the check afterwards.
 */
async function hourLongWindow(dataDir: string, key: string): Promise<Database.Database> {
  const db = new Database(path.join(dataDir, 'rate-limits.sqlite'));
  db.pragma('busy_timeout = 5000');
  // The limiter creates its table just after the service started.
  for (let waited = 0; !db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'rate_limits'").get(); waited += 50) {
    if (waited > 30_000) throw new Error('the rate_limits table was not created within 30 s');
    await sleep(50);
  }
  db.prepare('INSERT OR REPLACE INTO rate_limits (key, points, expire) VALUES (?, 0, ?)').run(key, Date.now() + 3_600_000);
  return db;
}

// Needs a MongoDB-protocol server: runs in CI (which starts FerretDB) and wherever MONGO_URL is set.
describe.skipIf(!process.env.MONGO_URL)('rate limit with MONGO_URL (skipped without one)', () => {
  it('refuses exactly the requests over 1,000 of 1,100 sent 50 at a time from one IP', async () => {
    const dbName = `ratelimit_real_${Date.now()}`;
    const service = await startTestService({ MONGO_URL: process.env.MONGO_URL!, MONGO_DB: dbName, RATE_LIMIT_PER_MINUTE: '1000' });
    const statuses: number[] = [];
    const probe = new MongoClient(process.env.MONGO_URL!);
    const atomic = (await mongoCountsAtomically(probe).finally(() => probe.close())).atomic;
    // A MongoDB that counts atomically holds the counters itself; that path keeps the real window.
    const counters = atomic ? undefined : await hourLongWindow(service.dataDir, 'api:127.0.0.1');
    try {
      for (let sent = 0; sent < 1100; sent += 50) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, () => fetch(`${service.url}/checkin/v1/api/event/none`).then(async (r) => (await r.arrayBuffer(), r.status))),
        );
        statuses.push(...batch);
      }
      // The seeded counter was the one counted (a key of another form would leave the window real).
      expect(counters?.prepare("SELECT key FROM rate_limits WHERE key LIKE 'api:%'").all()).toEqual(atomic ? undefined : [{ key: 'api:127.0.0.1' }]);
    } finally {
      counters?.close();
      await service.close();
      const client = new MongoClient(process.env.MONGO_URL!);
      await client.db(dbName).dropDatabase().finally(() => client.close());
    }
    expect(statuses.filter((s) => s === 429)).toHaveLength(100);
    expect(statuses.filter((s) => s === 401)).toHaveLength(1000);
  }, 120_000);

  it('tells a server that counts atomically from one that does not', async () => {
    const client = new MongoClient(process.env.MONGO_URL!);
    try {
      const counting = await mongoCountsAtomically(client);
      // FerretDB (CI) loses concurrent increments; a real MongoDB does not.
      expect(counting.atomic).toBe(!counting.server.startsWith('FerretDB'));
      expect(counting.server).toMatch(/^(FerretDB|MongoDB) /);
    } finally {
      await client.close();
    }
  });
});
