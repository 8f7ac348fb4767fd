import { describe, expect, it } from 'vitest';
import { KafkaBus } from '../../src/adapters/bus/kafka.js';

/**
 * Creating a topic on a fresh broker (KRaft): right after CreateTopics a broker may answer
 * UNKNOWN_TOPIC_OR_PARTITION for it (a CI run failed on that: kafkajs's own wait retries only
 * LEADER_NOT_AVAILABLE). The bus waits both out, and fails on anything else. A stand-in admin
 * client plays the broker's answers; nothing is sent over the network.
 */
function busWithAdmin(answers: (() => unknown)[]) {
  const bus = new KafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'topics-test', joinTimeoutMs: 5_000 });
  const created: unknown[] = [];
  const admin = {
    // kafkajs: true when it created the topic and saw its leaders; here its wait fails as on a fresh KRaft broker.
    createTopics: async (options: unknown) => {
      created.push(options);
      throw Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
    },
    listTopics: async () => [],
    fetchTopicMetadata: async () => answers.shift()!(),
    disconnect: async () => {},
  };
  (bus as unknown as { admin: Promise<unknown> }).admin = Promise.resolve(admin);
  return { bus, created, answers };
}
const brokerError = (type: string) => () => {
  throw Object.assign(new Error(type), { type });
};
const leaders = (...leader: number[]) => () => ({ topics: [{ name: 't', partitions: leader.map((l, partitionId) => ({ partitionId, leader: l })) }] });

describe('Kafka bus: a topic it creates', () => {
  it('is ready once every partition has a leader, through UNKNOWN_TOPIC_OR_PARTITION and LEADER_NOT_AVAILABLE', async () => {
    const { bus, created, answers } = busWithAdmin([brokerError('UNKNOWN_TOPIC_OR_PARTITION'), brokerError('LEADER_NOT_AVAILABLE'), leaders(1, -1), leaders(1, 2)]);
    await bus.ensureTopics(['t']);
    expect(answers).toHaveLength(0);
    expect(created).toEqual([{ topics: [{ topic: 't', numPartitions: 8 }], waitForLeaders: true }]);
  });

  it('fails on any other answer, and is tried again by the next publish', async () => {
    const { bus, created } = busWithAdmin([brokerError('TOPIC_AUTHORIZATION_FAILED'), leaders(1)]);
    await expect(bus.ensureTopics(['t'])).rejects.toMatchObject({ type: 'TOPIC_AUTHORIZATION_FAILED' });
    await bus.ensureTopics(['t']);
    expect(created).toHaveLength(2);
  });
});
