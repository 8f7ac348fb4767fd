/**
 * The MongoDB driver's server monitor stopped (mongodb 7.0, seen here under load: after a server
 * stop the monitor emits no heartbeat again, the server stays Unknown, and every operation fails
 * with the lost connection's error long after the server is back). The read store notices the
 * silence while operations fail unreachable and connects again (src/adapters/readstore/mongo.ts,
 * unreachableFor). The stopped monitor is made here by closing the client's server monitors, the
 * state the driver was found in; the server is a private FerretDB stopped and started again.
 *
 * Needs the FerretDB build the scripts make (Go); under CI=true it must run.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MongoClient } from 'mongodb';
import { MongoReadStore } from '../../src/adapters/readstore/mongo.js';
import { ReadStoreUnavailableError } from '../../src/adapters/readstore/port.js';
import { startPrivate, type PrivateServer } from '../support/private-servers.js';

const goMissing = !fs.existsSync('/usr/bin/go') && !fs.existsSync('/usr/local/go/bin/go') && !process.env.GOROOT;

describe.skipIf(goMissing && process.env.CI !== 'true')('the MongoDB driver monitor stopped (skipped without Go to build FerretDB, never under CI=true)', () => {
  let server: PrivateServer;

  beforeAll(async () => {
    server = await startPrivate('ferretdb');
  });

  afterAll(async () => {
    await server?.remove();
  });

  it('a store whose driver stopped monitoring the server connects again once the server is back, with one warn line', async () => {
    const warnings: { obj: unknown; msg: string }[] = [];
    const logger = { warn: (obj: unknown, msg: string) => void warnings.push({ obj, msg }) };
    const store = new MongoReadStore({ url: server.url, dbName: `monitor_${randomUUID().slice(0, 8)}`, logger: logger as never, monitorSilentMs: 3_000 });
    const docs = store.collection<{ _id: string; n: number }>('docs');
    try {
      expect(await docs.updateOne('a', { $set: { n: 1 } }, { upsert: true })).toBe(true);
      // The state the driver was found in: its monitors stopped, the topology otherwise as it was.
      const client = (store as unknown as { client: MongoClient & { topology?: { s: { servers: Map<string, { monitor?: { close(): void } }> } } } }).client;
      const servers = [...client.topology!.s.servers.values()];
      expect(servers.length).toBeGreaterThan(0);
      for (const s of servers) s.monitor?.close();

      await server.stop();
      // While the server is down, operations fail as the port's unavailable error (503 upstream).
      const failed = await docs.get('a').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failed).toBeInstanceOf(ReadStoreUnavailableError);
      await server.resume();

      // Hang guard only: without the restart this never succeeds (the monitor never marks the server usable again).
      const deadline = Date.now() + 120_000;
      let doc: { _id: string; n: number } | null | undefined;
      let last: unknown;
      while (doc === undefined && Date.now() < deadline) {
        doc = await docs.get('a').catch((error: unknown) => {
          last = error;
          return undefined;
        });
        if (doc === undefined) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(doc, `still failing: ${String(last)}`).toEqual({ _id: 'a', n: 1 });
      expect(warnings.filter((w) => /server monitor stopped/.test(w.msg))).toHaveLength(1);
      // The reconnected client writes as well.
      expect(await docs.updateOne('a', { $set: { n: 2 } })).toBe(true);
      expect(await docs.get('a')).toEqual({ _id: 'a', n: 2 });
    } finally {
      await store.close();
    }
  });
});
