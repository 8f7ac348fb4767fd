import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedBus } from '../../src/adapters/bus/embedded.js';
import { KafkaBus } from '../../src/adapters/bus/kafka.js';
import type { Bus, BusMessage } from '../../src/adapters/bus/port.js';
import { createLogger } from '../../src/shared/logger.js';
import { realServer } from '../support/real-servers.js';
import { busContract } from '../contract/bus.contract.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bus-contract-'));
const opened: Bus[] = [];
afterAll(async () => {
  await Promise.allSettled(opened.map((bus) => bus.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Retry warnings and kafkajs lines stay out of the test output unless LOG_LEVEL asks for them. */
const logger = createLogger(process.env.LOG_LEVEL ?? 'silent');

const openEmbedded = (file = path.join(dir, 'bus.sqlite')): EmbeddedBus => {
  const bus = new EmbeddedBus(file, { logger });
  opened.push(bus);
  return bus;
};

busContract('embedded', async () => openEmbedded());

async function eventually(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const embeddedModule = pathToFileURL(fileURLToPath(new URL('../../src/adapters/bus/embedded.ts', import.meta.url)));

/** Runs `body` (with EmbeddedBus imported) in another Node process: a second process on the same file. */
function startChild(name: string, body: string) {
  const script = path.join(dir, `${name}.mts`);
  fs.writeFileSync(script, `import { EmbeddedBus } from ${JSON.stringify(embeddedModule.href)};\n${body}\n`);
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
  return { process: child, exited, output: () => stdout };
}

describe('embedded bus file', () => {
  it('deletes old messages but each partition’s newest, so offsets keep counting and a group misses nothing new', async () => {
    const bus = new EmbeddedBus(path.join(dir, 'retention.sqlite'), { logger, partitions: 1 });
    await bus.publish('old', [1, 2, 3].map((i) => ({ key: 'k', value: `m${i}` })));
    expect(bus.deleteOlderThan(Date.now() + 1000)).toBe(2);
    await bus.publish('old', [{ key: 'k', value: 'm4' }]);
    const seen: { value: string; offset: string }[] = [];
    const consumer = await bus.consume({ groupId: 'late', topics: ['old'] }, async (m) => void seen.push({ value: m.value, offset: m.offset }));
    await eventually(() => seen.length === 2, 'the kept and the new message');
    expect(seen).toEqual([
      { value: 'm3', offset: '2' },
      { value: 'm4', offset: '3' },
    ]);
    expect(bus.deleteOlderThan(0)).toBe(0);
    await consumer.close();
    await bus.close();
  });

  it('refuses a corrupt file with an error naming its path', () => {
    const corrupt = path.join(dir, 'corrupt.sqlite');
    fs.writeFileSync(corrupt, 'this is not a database'.repeat(100));
    expect(() => new EmbeddedBus(corrupt)).toThrow(corrupt);
  });

  it('wakes the worker of the partition a publish wrote to, without waiting for a poll', async () => {
    // Polls far apart: a message that arrives came by its partition's wake (only that partition's
    // worker is woken; each of the eight keys below lands in a partition of its own or shares one).
    const bus = new EmbeddedBus(path.join(dir, 'wakes.sqlite'), { logger, pollIntervalMs: 600_000 });
    opened.push(bus);
    const seen: string[] = [];
    await bus.consume({ groupId: 'wakes', topics: ['events'] }, async (m) => void seen.push(m.value));
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const partitions = new Set<number>();
    bus.onPublish((_topic, written) => written.forEach((p) => partitions.add(p)));
    for (const key of keys) {
      await bus.publish('events', [{ key, value: key }]);
      await eventually(() => seen.includes(key), `the message keyed ${key}`);
    }
    expect(seen).toEqual(keys);
    expect(partitions.size).toBeGreaterThan(1);
  });

  it('keeps messages and committed offsets across a reopen of the file', async () => {
    const file = path.join(dir, 'reopen.sqlite');
    const first = new EmbeddedBus(file, { logger });
    const seen: string[] = [];
    const consumer = await first.consume({ groupId: 'relay', topics: ['events'] }, async (m) => void seen.push(m.value));
    await first.publish('events', [
      { key: 'a', value: '1' },
      { key: 'a', value: '2' },
    ]);
    await eventually(() => seen.length === 2, 'two messages');
    await consumer.close();
    await first.publish('events', [{ key: 'a', value: '3' }]);
    await first.close();

    const second = openEmbedded(file);
    const resumed: string[] = [];
    await second.consume({ groupId: 'relay', topics: ['events'] }, async (m) => void resumed.push(m.value));
    // A marker published after the reopen, with the same key (so behind '3' in its partition): once it
    // arrived, anything the group would wrongly re-read ('1', '2') has arrived too. A fixed sleep
    // could end before a slow machine's consumer fetched at all.
    await second.publish('events', [{ key: 'a', value: 'marker' }]);
    await eventually(() => resumed.includes('marker'), 'the marker published after the reopen');
    expect(resumed).toEqual(['3', 'marker']);
  });

  it('sees messages another process appends to the same file', async () => {
    const file = path.join(dir, 'shared.sqlite');
    const bus = openEmbedded(file);
    const seen: BusMessage[] = [];
    await bus.consume({ groupId: 'reader', topics: ['shared'] }, async (m) => void seen.push(m));

    const child = startChild(
      'publisher',
      `const bus = new EmbeddedBus(${JSON.stringify(file)});
await bus.publish('shared', [{ key: 'k', value: 'from-child', headers: { pid: String(process.pid) } }]);
await bus.close();`,
    );
    expect(await child.exited).toBe(0);

    await eventually(() => seen.length >= 1, 'the message from the other process');
    expect(seen[0].value).toBe('from-child');
    expect(seen[0].headers.pid).toMatch(/^\d+$/);
    expect(seen[0].headers.pid).not.toBe(String(process.pid));
  }, 30_000);

  it('moves the partitions of a crashed process to the rest of its group after the session timeout', async () => {
    const file = path.join(dir, 'crash.sqlite');
    const bus = new EmbeddedBus(file, { logger, sessionTimeoutMs: 1_000 });
    opened.push(bus);
    const published = Array.from({ length: 8 }, (_, n) => ({ key: `guest-${n}`, value: `m${n}` }));
    await bus.publish('checkins', published);

    // The other process takes every partition and hangs in its handler, then is killed.
    const child = startChild(
      'stuck-consumer',
      `const bus = new EmbeddedBus(${JSON.stringify(file)}, { sessionTimeoutMs: 1000 });
await bus.consume({ groupId: 'workers', topics: ['checkins'] }, async (m) => {
  console.log('started ' + m.value);
  await new Promise(() => {});
});`,
    );
    await eventually(() => child.output().includes('started'), 'the other process to start a handler');
    child.process.kill('SIGKILL');
    await child.exited;
    const startedThere = [...child.output().matchAll(/started (\S+)/g)].map((match) => match[1]);

    const seen: string[] = [];
    await bus.consume({ groupId: 'workers', topics: ['checkins'] }, async (m) => void seen.push(m.value));
    await eventually(() => seen.length >= published.length, 'every message in the surviving member');
    expect(startedThere.length).toBeGreaterThan(0);
    expect(seen.sort()).toEqual(published.map((m) => m.value).sort());
  }, 30_000);

  // Throughput is measured by `npm run bench -- store` (bus messages published/s); a test asserts no rate.
  it('publishes 40,000 messages in batches of 1,000, and a group reads each once, in order per key', async () => {
    const bus = openEmbedded(path.join(dir, 'throughput.sqlite'));
    const total = 40_000;
    const batch = 1_000;
    for (let n = 0; n < total; n += batch) {
      await bus.publish(
        'throughput',
        Array.from({ length: batch }, (_, i) => ({
          key: `guest-${(n + i) % 500}`,
          value: String(n + i),
          headers: { 'content-type': 'application/json' },
        })),
      );
    }
    const lastPerKey = new Map<string, number>();
    let received = 0;
    let outOfOrder = 0;
    await bus.consume({ groupId: 'throughput', topics: ['throughput'] }, async (m) => {
      const n = Number(m.value);
      if ((lastPerKey.get(m.key) ?? -1) >= n) outOfOrder += 1;
      lastPerKey.set(m.key, n);
      received += 1;
    });
    await eventually(() => received >= total, 'every message', 50_000);
    expect({ received, outOfOrder }).toEqual({ received: total, outOfOrder: 0 });
    await bus.close();
  }, 60_000);
});

describe('kafka bus without a broker', () => {
  it('ping rejects within its timeout when nothing answers', async () => {
    const bus = new KafkaBus({ brokers: ['127.0.0.1:9'], clientId: 'bus-ping', logger, pingTimeoutMs: 1_000 });
    // Its own timeout ends it (kafkajs alone would retry far longer); the test timeout is the hang guard.
    await expect(bus.ping()).rejects.toThrow('kafka did not answer within 1000 ms');
    await bus.close();
  }, 20_000);
});

const kafka = await realServer('kafka');
afterAll(() => kafka.stop());
if (kafka.url) {
  const brokers = kafka.url.split(',').map((broker) => broker.trim());
  busContract('kafka', async () => {
    const bus = new KafkaBus({ brokers, clientId: 'bus-contract', logLevel: 'warn', logger });
    opened.push(bus);
    return bus;
  });

  describe('kafka bus: a handler slower than the group session', () => {
    it('keeps its member in the group while one message takes longer than the session timeout (10 s): the message is handled once', async () => {
      // kafkajs sends a heartbeat only when eachBatch calls heartbeat(); before, that was between
      // messages and retries, so a handler busy past sessionTimeout (a slow provider call) had its
      // member dropped, the uncommitted message went to the group again and was handled twice.
      const bus = new KafkaBus({ brokers, clientId: 'bus-slow-handler', logLevel: 'nothing', logger });
      opened.push(bus);
      const topic = `slow-handler-${Date.now()}`;
      await bus.publish(topic, [{ key: 'guest-1', value: 'slow' }, { key: 'guest-1', value: 'next' }]);
      const calls: string[] = [];
      const consumer = await bus.consume({ groupId: `slow-${Date.now()}`, topics: [topic] }, async (message) => {
        calls.push(message.value);
        if (message.value === 'slow' && calls.filter((v) => v === 'slow').length === 1) await new Promise((resolve) => setTimeout(resolve, 13_000));
      });
      try {
        await eventually(() => calls.includes('next'), 'the second message', 60_000);
        // A marker behind both, with the same key (so the same partition): a member dropped while
        // 'slow' ran re-reads from the uncommitted 'slow', so a redelivery reaches the handler
        // before the marker does. (A fixed sleep here could end before a slow rejoin redelivered.)
        await bus.publish(topic, [{ key: 'guest-1', value: 'marker' }]);
        await eventually(() => calls.includes('marker'), 'the marker behind them', 60_000);
        expect(calls).toEqual(['slow', 'next', 'marker']);
      } finally {
        await consumer.close();
      }
    }, 120_000);
  });
} else {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`bus contract: kafka (skipped: ${kafka.skipReason})`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
}
