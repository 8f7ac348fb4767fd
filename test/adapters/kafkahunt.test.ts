/**
 * The Kafka bus against a real broker, where kafkajs's consumer group semantics decide what a
 * group handles again: progress made inside a fetched batch when the member leaves the batch
 * early (a close, a rebalance).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedBus } from '../../src/adapters/bus/embedded.js';
import { KafkaBus } from '../../src/adapters/bus/kafka.js';
import type { Bus, Consumer } from '../../src/adapters/bus/port.js';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import { createLogger } from '../../src/shared/logger.js';
import { commsSetup, until } from '../support/flows.js';
import { realServer } from '../support/real-servers.js';
import { startTestService } from '../support/service.js';

const logger = createLogger(process.env.LOG_LEVEL ?? 'silent');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkahunt-'));
const opened: Bus[] = [];
const kafka = await realServer('kafka');
afterAll(async () => {
  await Promise.allSettled(opened.map((bus) => bus.close()));
  await kafka.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function eventually(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const unique = () => `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
const messages = (count: number) => Array.from({ length: count }, (_, i) => ({ key: 'guest-1', value: `m${i}` }));

/**
 * A group member closed (SIGTERM) in the middle of a fetched batch: the messages it handled in
 * that batch before the close are committed, so the member that takes over does not handle them
 * again (a redelivered invitation becomes a comms.skipped webhook). The embedded bus commits after
 * each message; the Kafka bus must give the same answer.
 */
function closeMidBatch(open: () => Bus) {
  it('a close in the middle of a batch commits what was handled: the next member starts after it', async () => {
    const bus = open();
    const topic = `kafkahunt-close-${unique()}`;
    const groupId = `kafkahunt-close-${unique()}`;
    await bus.publish(topic, messages(40));
    const firstHandled = new Set<string>();
    let closed = false;
    const first = await bus.consume({ groupId, topics: [topic] }, async (message) => {
      await sleep(20);
      // Only handlers that finished before close() count; the one running at close() is abandoned (port: Consumer.close).
      if (!closed) firstHandled.add(message.value);
    });
    await eventually(() => firstHandled.size >= 10, 'ten messages handled by the first member');
    closed = true;
    await first.close();
    expect(firstHandled.size).toBeLessThan(40);

    const again: string[] = [];
    const seen = new Set<string>();
    const second = await bus.consume({ groupId, topics: [topic] }, async (message) => {
      seen.add(message.value);
      if (firstHandled.has(message.value)) again.push(message.value);
    });
    try {
      await eventually(() => seen.has('m39'), 'the last message at the second member');
      expect(again).toEqual([]);
      for (let i = 0; i < 40; i++) expect(firstHandled.has(`m${i}`) || seen.has(`m${i}`)).toBe(true);
    } finally {
      await second.close();
    }
  }, 120_000);
}

describe('send worker: a store that cannot be reached for a while', () => {
  it('an invitation whose recording fails longer than the bus default retries (1.5 s) is sent once the store answers, not dead-lettered', async () => {
    // The event store refuses the invitation streams' appends (EventStoreDB restarting): the send
    // worker's handler fails on the bus message that asks for the send. Before, the bus retried it
    // 5 times in 1.5 s and put it in comms.invitations.v1.dlq, which nothing reads: no email, no webhook.
    let down = false;
    let refused = 0;
    const failing = (inner: EventStore): EventStore =>
      new Proxy(inner, {
        get(target, property, receiver) {
          if (property === 'append') {
            return async (...args: Parameters<EventStore['append']>) => {
              if (down && args[0].startsWith('invitation-')) {
                refused += 1;
                throw new Error('event store unavailable (test)');
              }
              return target.append(...args);
            };
          }
          const value = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const service = await startTestService({}, { wrapEventStore: failing });
    try {
      const setup = await commsSetup(service);
      down = true;
      const guest = await setup.client.call('POST', '/checkin/v1/api/guest', {
        eventId: setup.eventId,
        firstName: 'Ann',
        email: 'ann-outage@example.com',
        commsTemplateId: setup.templateId,
      });
      expect(guest.status).toBe(200);
      // The bus's default budget (5 attempts) spent, and time for its dead letter to be written.
      await until(async () => (refused >= 5 ? true : undefined), 'five refused attempts');
      await sleep(1_000);
      down = false;
      const outbox = path.join(service.dataDir, 'outbox');
      const emails = await until(async () => {
        const files = fs.existsSync(outbox) ? fs.readdirSync(outbox).filter((f) => f.endsWith('.eml')) : [];
        return files.length > 0 ? files : undefined;
      }, 'the invitation email after the store came back');
      expect(emails).toHaveLength(1);
    } finally {
      down = false;
      await service.close();
    }
  }, 120_000);
});

describe('embedded bus: leaving a batch early', () => {
  closeMidBatch(() => {
    const bus = new EmbeddedBus(path.join(dir, `bus-${unique()}.sqlite`), { logger });
    opened.push(bus);
    return bus;
  });
});

if (kafka.url) {
  const brokers = kafka.url.split(',').map((broker) => broker.trim());
  const openKafka = (name: string, partitions?: number) => {
    const bus = new KafkaBus({ brokers, clientId: `kafkahunt-${name}`, logLevel: 'nothing', logger, ...(partitions ? { partitions } : {}) });
    opened.push(bus);
    return bus;
  };

  describe('kafka bus: leaving a batch early', () => {
    closeMidBatch(() => openKafka('close'));

    it('a rebalance in the middle of a batch commits what was handled: no message is handled twice', async () => {
      // One partition, so the whole topic is one batch at one member; a second member joining
      // makes the coordinator answer the first member's next heartbeat with REBALANCE_IN_PROGRESS,
      // which ends its batch (kafkajs rejoins). What it handled in that batch must stay committed.
      const bus = openKafka('rebalance', 1);
      const other = openKafka('rebalance-2', 1);
      const topic = `kafkahunt-rebalance-${unique()}`;
      const groupId = `kafkahunt-rebalance-${unique()}`;
      await bus.publish(topic, messages(60));
      const handled = new Map<string, number>();
      const handler = async (message: { value: string }) => {
        await sleep(25);
        handled.set(message.value, (handled.get(message.value) ?? 0) + 1);
      };
      const first = await bus.consume({ groupId, topics: [topic] }, handler);
      let second: Consumer | undefined;
      try {
        await eventually(() => handled.size >= 10, 'ten messages handled by the first member');
        second = await other.consume({ groupId, topics: [topic] }, handler);
        await eventually(() => handled.has('m59'), 'the last message');
        // A marker behind them on the one partition: a member re-reading from an offset left
        // uncommitted handles the redelivered messages before it. (A fixed sleep could end before
        // a slow rejoin redelivered anything, and pass.)
        await bus.publish(topic, [{ key: 'guest-1', value: 'marker' }]);
        await eventually(() => handled.has('marker'), 'the marker behind the 60 messages', 60_000);
        const twice = [...handled].filter(([, count]) => count > 1).map(([value]) => value);
        expect(twice).toEqual([]);
        expect(handled.size).toBe(61);
      } finally {
        await second?.close();
        await first.close();
      }
    }, 120_000);

    it('a member retrying a failing message lets a rebalance through: a new member joins, and the message is handled once it can be', async () => {
      // The workers retry a failing message for minutes (a store outage). kafkajs rejoins only after
      // eachBatch returns; a member that kept retrying held the whole group in its rebalance until
      // the coordinator's rebalance timeout (60 s) dropped it: the new member then took the
      // partition and handled the message, and so did the dropped member, still in its retries.
      const bus = openKafka('retrying', 2);
      const other = openKafka('retrying-2', 2);
      const topic = `kafkahunt-retrying-${unique()}`;
      const groupId = `kafkahunt-retrying-${unique()}`;
      await bus.publish(topic, [{ key: 'guest-1', value: 'failing' }]);
      let failing = true;
      let attempts = 0;
      const handled: string[] = [];
      const handler = async (message: { value: string }) => {
        attempts += 1;
        if (failing) throw new Error('store unavailable (test)');
        handled.push(message.value);
      };
      const options = { groupId, topics: [topic], maxAttempts: 10_000, retryDelayMs: () => 200 };
      const first = await bus.consume(options, handler);
      let second: Consumer | undefined;
      try {
        await eventually(() => attempts >= 3, 'the message failing at the first member');
        second = await other.consume(options, handler);
        failing = false;
        await eventually(() => handled.length > 0, 'the message handled');
        // A marker behind it (same key, same partition): a member that takes the partition from the
        // uncommitted offset handles 'failing' again before the marker. Then both members close
        // (close() ends a member's retries), so no handling can come after the check: a fixed sleep
        // could end before the dropped member's or the new owner's second handling.
        await bus.publish(topic, [{ key: 'guest-1', value: 'marker' }]);
        await eventually(() => handled.includes('marker'), 'the marker behind the message', 60_000);
        await second.close();
        await first.close();
        second = undefined;
        expect(handled).toEqual(['failing', 'marker']);
      } finally {
        await second?.close();
        await first.close();
      }
    }, 120_000);

  describe('kafka bus: a topic deleted while the service runs', () => {
    it('is created again by a later publish, as at a start: the relay does not fail for ever', async () => {
      // An operator deletes a topic to purge it. The bus created each topic once per process and
      // its producer does not create topics, so every publish to it failed ("This server does not
      // host this topic-partition") until the process was restarted: the relay stood still.
      const bus = openKafka('deleted');
      const topic = `kafkahunt-deleted-${unique()}`;
      await bus.publish(topic, [{ key: 'event-1', value: 'before' }]);
      const admin = bus.kafka.admin();
      await admin.connect();
      try {
        await admin.deleteTopics({ topics: [topic] });
        let gone = false;
        for (let i = 0; i < 300 && !gone; i++) {
          gone = !(await admin.listTopics()).includes(topic);
          if (!gone) await sleep(100);
        }
        expect(gone).toBe(true);
      } finally {
        await admin.disconnect();
      }
      // The relay publishes again from its checkpoint after a failure; three tries stand for that.
      let published = false;
      for (let i = 0; i < 3 && !published; i++) {
        published = await bus.publish(topic, [{ key: 'event-1', value: 'after' }]).then(
          () => true,
          () => false,
        );
      }
      expect(published).toBe(true);
      const values: string[] = [];
      const consumer = await bus.consume({ groupId: `kafkahunt-deleted-${unique()}`, topics: [topic] }, async (message) => void values.push(message.value));
      try {
        await eventually(() => values.length > 0, 'the message published after the deletion');
        expect(values).toEqual(['after']);
      } finally {
        await consumer.close();
      }
    }, 120_000);
  });
  });
} else {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`kafka bus: leaving a batch early (skipped: ${kafka.skipReason})`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
}
