/**
 * Issue 12, item 9: the whole-API limit on the real-server path (MONGO_URL set), at the load
 * that found it failing open: 1,100 requests in a minute from one IP, 50 at a time.
 */
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { mongoCountsAtomically } from '../../src/http/middleware/rate-limit-store.js';
import { startTestService } from '../support/service.js';

// Needs a MongoDB-protocol server: runs in CI (which starts FerretDB) and wherever MONGO_URL is set.
describe.skipIf(!process.env.MONGO_URL)('rate limit with MONGO_URL (skipped without one)', () => {
  it('refuses exactly the requests over 1,000 of 1,100 sent 50 at a time from one IP', async () => {
    const dbName = `ratelimit_real_${Date.now()}`;
    const service = await startTestService({ MONGO_URL: process.env.MONGO_URL!, MONGO_DB: dbName, RATE_LIMIT_PER_MINUTE: '1000' });
    const statuses: number[] = [];
    try {
      for (let sent = 0; sent < 1100; sent += 50) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, () => fetch(`${service.url}/checkin/v1/api/event/none`).then(async (r) => (await r.arrayBuffer(), r.status))),
        );
        statuses.push(...batch);
      }
    } finally {
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
