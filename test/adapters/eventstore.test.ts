import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EsdbEventStore } from '../../src/adapters/eventstore/esdb.js';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import { realServer } from '../support/real-servers.js';
import { eventStoreContract } from '../contract/eventstore.contract.js';

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
  describe.skip(`event store contract: eventstoredb (skipped: ${esdb.skipReason})`, () => {
    it('needs EVENTSTORE_URL or a container runtime', () => {});
  });
}
