/**
 * npm run bench -- store: appends/s (single events and batches of 200), catch-up events/s
 * over 100,000 events, read-store upserts/s in batches, bus publish+consume messages/s,
 * for each adapter available (embedded always; MongoDB/Kafka when MONGO_URL/KAFKA_BROKERS).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { SqliteEventStore } from '../src/adapters/eventstore/sqlite.js';
import type { EventStore, NewEvent } from '../src/adapters/eventstore/port.js';
import { EmbeddedReadStore } from '../src/adapters/readstore/embedded.js';
import { MongoReadStore } from '../src/adapters/readstore/mongo.js';
import type { ReadStore, WriteOp } from '../src/adapters/readstore/port.js';
import { EmbeddedBus } from '../src/adapters/bus/embedded.js';
import { KafkaBus } from '../src/adapters/bus/kafka.js';
import type { Bus } from '../src/adapters/bus/port.js';
import { fmt, record, table, tempDir } from './support.js';

const metadata = { tenantId: 't', actor: { type: 'system' as const, id: 'bench' }, correlationId: 'c', occurredAt: new Date().toISOString() };
const event = (i: number): NewEvent => ({ id: randomUUID(), type: 'BenchHappened', data: { i, name: `guest ${i}`, tags: ['a', 'b'] }, metadata });

async function timed<T>(fn: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, value };
}

async function eventStoreFigures(name: string, store: EventStore): Promise<(string | number)[][]> {
  const singles = 5_000;
  const single = await timed(async () => {
    for (let i = 0; i < singles; i++) await store.append(`bench-${randomUUID()}`, [event(i)], 'no_stream');
  });
  const batches = 500;
  const batched = await timed(async () => {
    for (let b = 0; b < batches; b++) {
      await store.append(`benchbatch-${randomUUID()}`, Array.from({ length: 200 }, (_, i) => event(i)), 'no_stream');
    }
  });
  const head = await store.headPosition();
  const catchUp = await timed(async () => {
    let seen = 0;
    const subscription = store.subscribeToAll({ fromPosition: -1, batchSize: 2000 });
    for await (const batch of subscription) {
      seen += batch.events.length;
      if (batch.position >= head) break;
    }
    await subscription.stop();
    return seen;
  });
  return [
    [name, 'single appends/s', fmt(singles / single.seconds), '≥ 5,000'],
    [name, 'events/s appended in batches of 200', fmt((batches * 200) / batched.seconds), ''],
    [name, `catch-up events/s (${fmt(catchUp.value)} events)`, fmt(catchUp.value / catchUp.seconds), '≥ 50,000'],
  ];
}

async function readStoreFigures(name: string, store: ReadStore, total = 50_000): Promise<(string | number)[][]> {
  const batchSize = 500;
  const collection = `bench_${randomUUID().slice(0, 8)}`;
  let position = 0;
  const { seconds } = await timed(async () => {
    for (let b = 0; b < total / batchSize; b++) {
      const ops: WriteOp[] = Array.from({ length: batchSize }, (_, i) => ({
        kind: 'update',
        collection,
        id: `doc-${b * batchSize + i}`,
        upsert: true,
        position: ++position,
        update: { $set: { eventId: 'e1', lastName: `L${i}`, firstName: `F${b}` }, $inc: { scans: 1 } },
      }));
      await store.applyBatch(ops, { name: `bench:${collection}`, position });
    }
  });
  await store.dropCollection(collection);
  return [[name, `read-store upserts/s (${fmt(total)} in batches of ${batchSize})`, fmt(total / seconds), '≥ 20,000 (embedded)']];
}

export async function busFigures(name: string, bus: Bus): Promise<(string | number)[][]> {
  const total = 20_000;
  const topic = `bench-${randomUUID().slice(0, 8)}`;
  const published = await timed(async () => {
    for (let b = 0; b < total / 1000; b++) {
      await bus.publish(topic, Array.from({ length: 1000 }, (_, i) => ({ key: `k${i % 64}`, value: JSON.stringify({ i }) })));
    }
  });
  let received = 0;
  const consumed = await timed(
    () =>
      new Promise<void>((resolve) => {
        void bus.consume({ groupId: `bench-${topic}`, topics: [topic], fromBeginning: true }, async () => {
          received += 1;
          if (received === total) resolve();
        }).then((consumer) => {
          const check = setInterval(() => {
            if (received >= total) {
              clearInterval(check);
              void consumer.close();
            }
          }, 50);
        });
      }),
  );
  return [
    [name, 'bus messages published/s (batches of 1,000)', fmt(total / published.seconds), ''],
    [name, 'bus messages consumed/s (one group, committed per fetched batch)', fmt(total / consumed.seconds), ''],
  ];
}

export async function storeBench(): Promise<void> {
  const dir = tempDir('bench-store-');
  const rows: (string | number)[][] = [];
  for (const synchronous of ['FULL', 'NORMAL'] as const) {
    const store = new SqliteEventStore(path.join(dir, `events-${synchronous}.sqlite`), { synchronous });
    rows.push(...(await eventStoreFigures(`sqlite event store (synchronous=${synchronous})`, store)));
    await store.close();
  }
  const embedded = new EmbeddedReadStore(path.join(dir, 'read.sqlite'));
  rows.push(...(await readStoreFigures('embedded read store', embedded)));
  await embedded.close();
  if (process.env.MONGO_URL) {
    const mongo = new MongoReadStore({ url: process.env.MONGO_URL, dbName: `bench_${Date.now()}` });
    // FerretDB rewrites each document in SQLite: a smaller sample keeps the run short.
    rows.push(...(await readStoreFigures(`MongoDB-protocol read store (${process.env.MONGO_URL})`, mongo, 5_000)));
    await mongo.close();
  }
  const bus = new EmbeddedBus(path.join(dir, 'bus.sqlite'));
  rows.push(...(await busFigures('embedded bus', bus)));
  await bus.close();
  if (process.env.KAFKA_BROKERS) {
    const kafka = new KafkaBus({ brokers: process.env.KAFKA_BROKERS.split(','), clientId: 'bench' });
    rows.push(...(await busFigures('Kafka bus', kafka)));
    await kafka.close();
  }
  const output = table(['adapter', 'measure', 'figure', 'target'], rows);
  console.log(output);
  const notes = [
    "The service's default is synchronous=FULL (every append fsynced); set SQLITE_SYNCHRONOUS=NORMAL to trade the last writes on power loss for speed.",
    'Appends from concurrent requests share one commit (group commit), so the single-append figure (one caller, awaiting each) is the slowest case.',
    'The MongoDB-protocol figure is FerretDB 1.24 (SQLite backend), the real server this machine can run; every update is a JSON rewrite in SQLite there. Batches write by bare `_id` (the only filter FerretDB answers from an index) and fall back to replay-guarded filters only after a crash left a checkpoint pending. MongoDB itself is not measured here (no MongoDB server on this machine).',
    'Real servers were measured when MONGO_URL / KAFKA_BROKERS were set (scripts/test-servers.sh start), in the same run as the embedded adapters.',
  ];
  record('Store', `${output}\n\n${notes.join('\n')}`);
}
