import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EsdbEventStore } from '../../src/adapters/eventstore/esdb.js';
import { ConcurrencyError, type EventStore } from '../../src/adapters/eventstore/port.js';
import { realServer } from '../support/real-servers.js';
import { eventStoreContract, newEvent } from '../contract/eventstore.contract.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'es-contract-'));
const file = path.join(dir, 'events.sqlite');
const opened: EventStore[] = [];
afterAll(async () => {
  await Promise.allSettled(opened.map((s) => s.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});

eventStoreContract('sqlite', async () => {
  const store = new SqliteEventStore(file, { pollIntervalMs: 20 });
  opened.push(store);
  return store;
});

// EventStoreDB's write semantics (stream by stream) over the embedded store: the port's other promises hold.
eventStoreContract('sqlite, stream by stream', async () => {
  const store = new StreamByStreamStore(new SqliteEventStore(path.join(dir, 'stream-by-stream.sqlite'), { pollIntervalMs: 20 }));
  opened.push(store);
  return store;
});

describe('sqlite event store group commit', () => {
  it('commits appends of one tick together; a conflicting one fails alone', async () => {
    const store = new SqliteEventStore(path.join(dir, 'group.sqlite'), { pollIntervalMs: 20 });
    opened.push(store);
    await store.append('taken-1', [newEvent()], 'no_stream');
    const appends = Array.from({ length: 20 }, (_, i) => store.append(`group-${i}`, [newEvent('G', { i })], 'no_stream'));
    const conflicting = store.append('taken-1', [newEvent()], 'no_stream');
    const many = store.appendMany([
      { streamName: 'group-many-a', events: [newEvent()], expectedRevision: 'no_stream' },
      { streamName: 'taken-1', events: [newEvent()], expectedRevision: 'no_stream' },
    ]);
    const results = await Promise.allSettled([...appends, conflicting, many]);
    expect(results.slice(0, 20).every((r) => r.status === 'fulfilled')).toBe(true);
    expect(results[20]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
    expect(results[21]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
    for (let i = 0; i < 20; i++) expect(await store.readStream(`group-${i}`)).toHaveLength(1);
    // appendMany is all or nothing even inside a group.
    expect(await store.readStream('group-many-a')).toEqual([]);
    expect(await store.readStream('taken-1')).toHaveLength(1);
  });
});

describe('sqlite event store files', () => {
  it('refuses a corrupt file with an error naming its path', () => {
    const corrupt = path.join(dir, 'corrupt.sqlite');
    fs.writeFileSync(corrupt, 'this is not a database'.repeat(100));
    expect(() => new SqliteEventStore(corrupt)).toThrow(corrupt);
  });
});

const esdb = await realServer('eventstore');
afterAll(() => esdb.stop());
if (esdb.url) {
  const url = esdb.url;
  eventStoreContract('eventstoredb', async () => {
    const store = new EsdbEventStore(url);
    opened.push(store);
    return store;
  });
} else {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`event store contract: eventstoredb (skipped: ${esdb.skipReason})`, () => {
    it('needs EVENTSTORE_URL or a container runtime', () => {});
  });
}
