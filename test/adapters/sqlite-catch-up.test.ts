import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { newEvent } from '../contract/eventstore.contract.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-catch-up-'));
const opened: SqliteEventStore[] = [];
afterAll(async () => {
  await Promise.allSettled(opened.map((s) => s.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a subscriber catching up on the embedded event store', () => {
  // Reads and read-store writes complete synchronously: a catch-up of many batches ran as one
  // task, so a restarted service neither listened nor wrote a log line until it had finished.
  it('lets the event loop run between batches', async () => {
    const file = path.join(dir, 'events.sqlite');
    const writer = new SqliteEventStore(file, { synchronous: 'NORMAL' });
    for (let chunk = 0; chunk < 10; chunk++) {
      await writer.appendMany(Array.from({ length: 50 }, (_, i) => ({ streamName: `guest-${chunk}-${i}`, events: [newEvent('GuestAdded', { i })], expectedRevision: 'no_stream' as const })));
    }
    await writer.close();

    // A new connection, as after a restart: nothing in the recently-appended cache.
    const store = new SqliteEventStore(file, { synchronous: 'NORMAL' });
    opened.push(store);
    const head = await store.headPosition();
    let turns = 0;
    let caughtUp = false;
    const turn = () => {
      turns += 1;
      if (!caughtUp) setImmediate(turn);
    };
    setImmediate(turn);
    const turnsAtBatch: number[] = [];
    const subscription = store.subscribeToAll({ fromPosition: -1, batchSize: 50 });
    for await (const batch of subscription) {
      turnsAtBatch.push(turns);
      if (batch.position >= head) break;
    }
    caughtUp = true;
    await subscription.stop();
    expect(turnsAtBatch).toHaveLength(10);
    // The loop turned between the first batch and the last (before: 0 turns during all ten).
    expect(turnsAtBatch[9]! - turnsAtBatch[0]!).toBeGreaterThanOrEqual(9);
  });
});
