import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { Bus, OutgoingMessage } from '../../src/adapters/bus/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { Projection } from '../../src/projections/projection.js';
import { ProjectionRunner } from '../../src/projections/runner.js';
import { Relay } from '../../src/workers/relay.js';
import { newEvent } from '../contract/eventstore.contract.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

/**
 * A store that ends every subscription after one batch (as a server restart or a dropped
 * connection does): the runner and the relay subscribe again from their checkpoints, with a
 * backoff, and say so in the log.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ended-subscriptions-'));
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, sink), lines };
}

function setup(name: string) {
  const store = new StreamByStreamStore(new SqliteEventStore(path.join(dir, `${name}-events.sqlite`), { pollIntervalMs: 20 }));
  store.endSubscriptionsAfter = 1;
  const readStore = new EmbeddedReadStore(path.join(dir, `${name}-read.sqlite`));
  closers.push(() => readStore.close(), () => store.close());
  return { store, readStore, ...capturingLogger() };
}

const counter: Projection = {
  name: 'counter',
  filter: { streamPrefixes: ['counted-'] },
  collections: [{ name: 'counted', indexes: [] }],
  apply: (event) => [{ kind: 'replace', collection: 'counted', id: event.id, doc: { type: event.type } }],
};

describe('an event store that ends subscriptions', () => {
  it('the projection runner resubscribes from its checkpoint and processes every event', async () => {
    const { store, readStore, logger, lines } = setup('runner');
    const runner = new ProjectionRunner(store, readStore, [counter], logger, { retryDelayMs: 1 });
    await runner.start();
    closers.push(() => runner.stop());
    let last = -1;
    for (let i = 0; i < 4; i++) last = (await store.append(`counted-${i}`, [newEvent('Counted')], 'no_stream')).position;
    expect(await runner.waitFor(last, 20_000)).toBe(true);
    expect((await readStore.collection('counted').find({}, { limit: 10 })).items).toHaveLength(4);
    expect(store.subscriptions).toBeGreaterThan(1);
    expect(lines.some((l) => l.msg.includes('ended the projection subscription'))).toBe(true);
    await runner.stop();
  });

  it('the relay resubscribes from its checkpoint and publishes every event once', async () => {
    const { store, readStore, logger, lines } = setup('relay');
    const published: OutgoingMessage[] = [];
    const bus = { kind: 'test', publish: async (_topic: string, messages: OutgoingMessage[]) => void published.push(...messages) } as unknown as Bus;
    const relay = new Relay(store, bus, readStore, [{ topic: 'counted', filter: { streamPrefixes: ['counted-'] } }], logger);
    await relay.start();
    closers.push(() => relay.stop());
    let last = -1;
    for (let i = 0; i < 4; i++) last = (await store.append(`counted-${i}`, [newEvent('Counted')], 'no_stream')).position;
    const deadline = Date.now() + 20_000; // hang guard only
    while (relay.position() < last && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(published.map((m) => m.key)).toEqual(['counted-0', 'counted-1', 'counted-2', 'counted-3']);
    expect(lines.some((l) => l.msg.includes('ended the relay subscription'))).toBe(true);
    await relay.stop();
  });
});
