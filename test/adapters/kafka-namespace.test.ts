/**
 * KAFKA_NAMESPACE: deployments sharing one Kafka cluster (staging beside production, a bench
 * beside a test run) each put their namespace before every topic and consumer group, so neither
 * consumes the other's messages. Callers keep the plain names: messages, lag and dead letters
 * come back under them.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KafkaBus } from '../../src/adapters/bus/kafka.js';
import { deadLetterTopic, type BusMessage } from '../../src/adapters/bus/port.js';
import { loadConfig } from '../../src/config.js';
import { kafkaBuses } from '../support/kafka-buses.js';
import { eventually as until } from '../webhooks/receiver.js';

/** Hang guard for a delivery, far above any real figure. */
const WAIT_MS = 30_000;
const eventually = (condition: () => boolean | Promise<boolean>, what: string) => until(async () => (await condition()) || undefined, WAIT_MS, what);

describe('KAFKA_NAMESPACE (no broker needed)', () => {
  it('is unset by default, taken as given, and refused with a reason when it holds other characters', () => {
    expect(loadConfig({}).kafkaNamespace).toBeUndefined();
    expect(loadConfig({ KAFKA_NAMESPACE: 'staging-eu.1_a' }).kafkaNamespace).toBe('staging-eu.1_a');
    expect(() => loadConfig({ KAFKA_NAMESPACE: 'staging eu' })).toThrow(/KAFKA_NAMESPACE may hold only letters, digits/);
    expect(() => loadConfig({ KAFKA_NAMESPACE: 'x'.repeat(101) })).toThrow(/KAFKA_NAMESPACE/);
    expect(() => new KafkaBus({ brokers: ['127.0.0.1:9'], clientId: 'ns', namespace: 'a/b' })).toThrow(/namespace must be/);
  });

  it('names topics and groups on the server with the prefix and gives callers their own names back', () => {
    const plain = new KafkaBus({ brokers: ['127.0.0.1:9'], clientId: 'ns' });
    expect(plain.serverName('invitations')).toBe('invitations');
    const staged = new KafkaBus({ brokers: ['127.0.0.1:9'], clientId: 'ns', namespace: 'staging' });
    expect(staged.serverName('invitations')).toBe('staging.invitations');
    expect(staged.callerName('staging.invitations')).toBe('invitations');
  });
});

const { kafka, open: openBus, consumers } = await kafkaBuses({ clientId: 'bus-namespace', partitions: 1 });

if (!kafka.url) {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`kafka namespaces (skipped: ${kafka.skipReason}; they are names on the broker)`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
} else {
  const open = (namespace: string): KafkaBus => openBus({ namespace });

  describe('kafka namespaces (real broker)', () => {
    it('keeps two deployments with the same topic and group names apart', async () => {
      const run = randomUUID().slice(0, 8);
      const [staging, production] = [open(`staging-${run}`), open(`production-${run}`)];
      const topic = `orders-${run}`;
      const group = 'send-worker';
      await staging.publish(topic, [{ key: 'k', value: 'from staging' }]);
      await production.publish(topic, [{ key: 'k', value: 'from production' }]);

      const seen = { staging: [] as BusMessage[], production: [] as BusMessage[] };
      consumers.push(await staging.consume({ groupId: group, topics: [topic] }, async (message) => void seen.staging.push(message)));
      consumers.push(await production.consume({ groupId: group, topics: [topic] }, async (message) => void seen.production.push(message)));
      await eventually(() => seen.staging.length >= 1 && seen.production.length >= 1, 'one message in each deployment');

      // Messages come under the caller's topic name; each deployment has its own committed offsets.
      expect(seen.staging.map((m) => [m.topic, m.value])).toEqual([[topic, 'from staging']]);
      expect(seen.production.map((m) => [m.topic, m.value])).toEqual([[topic, 'from production']]);
      await eventually(async () => (await staging.consumerLag(group, [topic]))[0]!.messages === 0, 'staging lag 0');
      expect(await production.consumerLag(group, [topic])).toEqual([{ topic, messages: 0 }]);

      // On the server: the prefixed topics and groups, no plain one.
      const admin = staging.kafka.admin();
      await admin.connect();
      try {
        const topics = await admin.listTopics();
        expect(topics).toEqual(expect.arrayContaining([`staging-${run}.${topic}`, `production-${run}.${topic}`]));
        expect(topics).not.toContain(topic);
        const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
        expect(groups).toEqual(expect.arrayContaining([`staging-${run}.${group}`, `production-${run}.${group}`]));
      } finally {
        await admin.disconnect();
      }

      // A message in production's namespace leaves staging's lag as it was.
      await production.publish(topic, [{ key: 'k', value: 'second' }]);
      await eventually(() => seen.production.length >= 2, 'the second production message');
      expect(seen.staging).toHaveLength(1);
    }, 120_000);

    it('dead-letters into the namespace, where a consumer of the plain dead-letter name finds it', async () => {
      const run = randomUUID().slice(0, 8);
      const bus = open(`dlq-${run}`);
      const topic = `failing-${run}`;
      await bus.publish(topic, [{ key: 'k', value: 'poison' }]);
      consumers.push(
        await bus.consume({ groupId: 'handler', topics: [topic], maxAttempts: 1, retryDelayMs: () => 10 }, async () => {
          throw new Error('refused');
        }),
      );
      const dead: BusMessage[] = [];
      consumers.push(await bus.consume({ groupId: 'dead-letters', topics: [deadLetterTopic(topic)] }, async (message) => void dead.push(message)));
      await eventually(() => dead.length >= 1, 'the dead letter');
      expect(dead[0]!.topic).toBe(deadLetterTopic(topic));
      const admin = bus.kafka.admin();
      await admin.connect();
      try {
        expect(await admin.listTopics()).toContain(`dlq-${run}.${deadLetterTopic(topic)}`);
      } finally {
        await admin.disconnect();
      }
    }, 120_000);
  });
}
