/**
 * Dead letters on a real Kafka broker (docs/operations.md, Dead letters): a consumer that fails
 * dead-letters a message to `<topic>.dlq`; `listDeadLetters` reads it back (the topic read without
 * committing, by a group of its own), `replayDeadLetters` publishes it to its source topic once,
 * and a second replay publishes nothing. Skipped, with the reason, without a broker.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deadLetterTopic, type BusMessage } from '../../src/adapters/bus/port.js';
import { listDeadLetters, replayDeadLetters, replayedTopic } from '../../src/commands/dead-letters.js';
import { kafkaBuses } from '../support/kafka-buses.js';
import { eventually as until } from '../webhooks/receiver.js';

/** Hang guard, far above any real figure. */
const WAIT_MS = 60_000;
const eventually = (condition: () => boolean | Promise<boolean>, what: string) => until(async () => (await condition()) || undefined, WAIT_MS, what);

const { kafka, open, consumers } = await kafkaBuses({ clientId: 'dlqreplay', partitions: 2 });

if (!kafka.url) {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`dead letters on kafka (skipped: ${kafka.skipReason}; reading and replaying a topic needs a broker)`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
} else {
  describe('dead letters on kafka (real broker)', () => {
    it('lists a dead letter, replays it once, and a second replay publishes nothing', async () => {
      const run = randomUUID().slice(0, 8);
      const bus = open({ namespace: `dlqreplay-${run}` });
      const topic = 'comms.invitations.v1';
      let healed = false;
      const handled: BusMessage[] = [];
      consumers.push(
        await bus.consume({ groupId: 'send-worker', topics: [topic], maxAttempts: 2, retryDelayMs: () => 10 }, async (message) => {
          if (!healed) throw new Error('template not found for ann@example.com');
          handled.push(message);
        }),
      );
      await bus.publish(topic, [{ key: 'guest-1', value: '{"data":{"personalData":"sealed:v1:abc"}}', headers: { 'event-id': 'evt-1', 'event-type': 'InvitationRequested' } }]);
      await eventually(async () => (await bus.heldMessages(deadLetterTopic(topic))) === 1, 'the message dead-lettered');

      const { bus: kind, topics: [listed] } = await listDeadLetters(bus, { topics: [topic], limit: 10 });
      expect(kind).toBe('kafka');
      expect(listed).toMatchObject({ topic, held: 1, replayed: 0, waiting: 1 });
      const [letter] = listed!.deadLetters;
      expect(letter).toMatchObject({ kind: 'consumer', sourceTopic: topic, sourceOffset: '0', key: 'guest-1', eventId: 'evt-1', attempts: 2, error: 'template not found for [Redacted]' });
      expect(JSON.stringify(listed)).not.toContain('sealed:v1');

      healed = true;
      const first = await replayDeadLetters(bus, { topics: [topic] });
      expect(first).toMatchObject({ bus: 'kafka', replayed: [letter!.id], alreadyReplayed: [], skipped: [] });
      await eventually(() => handled.length === 1, 'the replayed message handled');
      expect(handled[0]!.headers['x-replayed-from']).toBe(letter!.id);

      const second = await replayDeadLetters(bus, { topics: [topic], ids: [letter!.id] });
      expect(second).toMatchObject({ replayed: [], alreadyReplayed: [letter!.id] });
      expect(await bus.heldMessages(topic)).toBe(2);
      expect(await bus.heldMessages(replayedTopic(topic))).toBe(1);
      await eventually(async () => (await bus.consumerLag('send-worker', [topic]))[0]!.messages === 0, 'the group caught up');
      expect(handled).toHaveLength(1);
      const { topics: [after] } = await listDeadLetters(bus, { topics: [topic], limit: 10 });
      expect(after).toMatchObject({ held: 1, replayed: 1, waiting: 0 });
    }, 180_000);
  });
}
