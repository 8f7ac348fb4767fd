/**
 * A holder whose write was applied but whose answer was lost keeps holding.
 *
 * On MongoDB a write can be applied by the server and still come back as an error: the reply is
 * lost (a network error), or a `w: "majority"` write times out waiting for the secondaries. The
 * driver retries a write once, and only on a replica set: "Retryable writes ... do not support
 * standalone instances" and retry "a single time"
 * (https://www.mongodb.com/docs/manual/core/retryable-writes/; mongodb 7.0.0
 * lib/operations/execute_operation.js: `maxTries = willRetry ? 2 : 1`, `supportsRetryableWrites`
 * false for a Standalone). So the holder can hear an error for a heartbeat that is stored. The
 * stand-in below applies the swap, then throws as the driver does then.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoNetworkError } from 'mongodb';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { Collection, Doc, ReadStore } from '../../src/adapters/readstore/port.js';
import { claimProjections, holderCollection, projectionsHolderId, type HolderDoc } from '../../src/projections/holder.js';
import { createLogger } from '../../src/shared/logger.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-holder-lost-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** The store, with the holder's swaps numbered `lose` applied and then answered by a network error. */
function losingReplies(store: ReadStore, lose: Set<number>): { store: ReadStore; swaps: () => number } {
  let calls = 0;
  const wrapped: ReadStore = Object.create(store) as ReadStore;
  wrapped.collection = <T extends { _id: string } = Doc>(name: string): Collection<T> => {
    const inner = store.collection<T>(name);
    if (name !== holderCollection) return inner;
    const outer = Object.create(inner) as Collection<T>;
    outer.swap = async (id, expected, next) => {
      const call = ++calls;
      const result = await inner.swap(id, expected, next);
      if (lose.has(call)) throw new MongoNetworkError('connection 3 to db:27017 closed');
      return result;
    };
    return outer;
  };
  return { store: wrapped, swaps: () => calls };
}

describe('the projections holder, when the store applied a write whose answer was lost', () => {
  it('keeps holding after a heartbeat that was stored but answered with a network error', async () => {
    const embedded: ReadStore = new EmbeddedReadStore(path.join(dataDir, 'beat.sqlite'));
    try {
      // Swap 1 takes the document; swap 2 (the first beat) is stored and its answer lost.
      const { store, swaps } = losingReplies(embedded, new Set([2]));
      let lostTo: HolderDoc | null | undefined;
      const claim = await claimProjections(store, createLogger('silent'), { role: 'projections', as: { pid: 101, host: 'door-a', heartbeatMs: 10 }, onLost: (taker) => (lostTo = taker) });
      expect('holding' in claim).toBe(true);
      await vi.waitFor(() => expect(swaps() >= 5 || lostTo !== undefined).toBe(true), { timeout: 60_000, interval: 10 });
      if ('holding' in claim) await claim.holding.stop();
      // Before: beat 3 expected beat 1 (beat 2's answer was lost), found beat 2, and took it for
      // another process's: "another process took over", with itself named as the taker.
      expect(lostTo).toBeUndefined();
      expect(await embedded.collection<HolderDoc>(holderCollection).get(projectionsHolderId)).toBeNull();
    } finally {
      await embedded.close();
    }
  });

  it('holds after a claim that was stored but answered with a network error', async () => {
    const embedded: ReadStore = new EmbeddedReadStore(path.join(dataDir, 'claim.sqlite'));
    try {
      const { store } = losingReplies(embedded, new Set([1]));
      const claim = await claimProjections(store, createLogger('silent'), { role: 'projections', as: { pid: 202, host: 'door-b', heartbeatMs: 60_000 } });
      expect('holding' in claim).toBe(true);
      if ('holding' in claim) await claim.holding.stop();
      expect(await embedded.collection<HolderDoc>(holderCollection).get(projectionsHolderId)).toBeNull();
    } finally {
      await embedded.close();
    }
  });
});
