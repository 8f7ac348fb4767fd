/**
 * Kafka bus (kafkajs). One shared producer, created and connected on first publish; topics
 * are created on first use with `partitions` partitions. Each consume() is its own kafkajs
 * consumer reading a fetched batch at a time (eachBatch) with manual commits: a message's offset
 * is resolved after its handler resolved (or after it went to `<topic>.dlq`), and `offset + 1` of
 * the last resolved message is committed once per batch (or every COMMIT_EVERY messages of a long
 * one), so delivery is at least once and per partition in order. A crash redelivers at most the
 * messages handled since the last commit; the handlers are idempotent (see docs/invitations.md and docs/webhooks.md).
 */
import {
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Admin,
  type ConfigResourceTypes,
  type Consumer as KafkaConsumer,
  type EachBatchPayload,
  type IHeaders,
  type KafkaMessage,
  type LogEntry,
  type Producer,
  type SASLOptions,
} from 'kafkajs';
import { randomUUID } from 'node:crypto';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { createLogger, type Logger } from '../../shared/logger.js';
import { sleep } from '../../shared/backoff.js';
import {
  deadLetterTopic,
  defaultRetryDelayMs,
  fitMessage,
  messageBytes,
  MessageTooLargeError,
  type BusMessage,
  type Consumer,
  type ConsumerOptions,
  type HeldMessage,
  type MessageHandler,
  type OutgoingMessage,
  type ReadableBus,
} from './port.js';
import { deliverWithRetries, type Delivery } from './delivery.js';

export type KafkaBusLogLevel = 'nothing' | 'error' | 'warn' | 'info' | 'debug';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  /** Partitions of the topics this bus creates (default 8). */
  partitions?: number;
  /** kafkajs log level (default 'warn': kafkajs is chatty at info). */
  logLevel?: KafkaBusLogLevel;
  logger?: Logger;
  /** How long a consumer waits to join its group (default 30 s). */
  joinTimeoutMs?: number;
  /** Upper bound on a consumer's close() and the bus's close() per client (default 10 s). */
  closeTimeoutMs?: number;
  /** Upper bound on ping() (default 5 s). */
  pingTimeoutMs?: number;
  /**
   * Upper bound on the bytes of one record batch this bus sends (KAFKA_MAX_BATCH_BYTES, default
   * 1,000,000): a publish is split into sends that each stay under it, and no single message may
   * exceed it. Keep it at or below the topics' `max.message.bytes` (broker `message.max.bytes`,
   * default 1,048,588), which the broker enforces per record batch with MESSAGE_TOO_LARGE.
   */
  maxBatchBytes?: number;
  /**
   * KAFKA_NAMESPACE: put before every topic and consumer group name as `<namespace>.`, so that
   * several deployments (staging beside production, a bench beside a test run) can share one
   * cluster without consuming one another's messages. Callers keep using the plain names.
   */
  namespace?: string;
  /**
   * KAFKA_SSL / KAFKA_SSL_CA_FILE / KAFKA_SSL_CERT_FILE / KAFKA_SSL_KEY_FILE: TLS to the brokers.
   * `true` checks their certificates against Node's CAs; an object is passed to tls.connect (`{ ca }`
   * for a private CA, `{ cert, key }` for a client certificate: mutual TLS). Unset: plain TCP.
   */
  ssl?: boolean | TlsConnectionOptions;
  /** KAFKA_SASL_*: SASL authentication. The password goes to kafkajs only; nothing of this bus logs it. */
  sasl?: KafkaSasl;
  /**
   * KAFKA_REPLICATION_FACTOR: replicas of each topic this bus creates. Unset: the cluster's
   * `default.replication.factor` (the broker's own default is 1). Topics that exist are not changed.
   */
  replicationFactor?: number;
}

export const kafkaSaslMechanisms = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type KafkaSaslMechanism = (typeof kafkaSaslMechanisms)[number];
export interface KafkaSasl {
  mechanism: KafkaSaslMechanism;
  username: string;
  password: string;
}

/** What KAFKA_NAMESPACE may hold: Kafka's legal topic characters, leaving room for the names. */
export const kafkaNamespacePattern = /^[A-Za-z0-9._-]{1,100}$/;

/** Default of KafkaBusOptions.maxBatchBytes: 48 kB below the broker's default `message.max.bytes`. */
export const defaultKafkaMaxBatchBytes = 1_000_000;
/** A record batch's own header (v2: base offset, length, epoch, magic, crc, ...: 61 bytes). */
const recordBatchOverhead = 61;
/** The smallest maxBatchBytes accepted: room for a relayed event without its data. */
export const minKafkaMaxBatchBytes = 16_384;

/**
 * The shortest `retention.ms` of an existing topic that passes the start's check without a warning:
 * Kafka's default, 7 days. A message goes after it whether consumed or not, so a consumer stopped
 * longer never sees it (a requested invitation is then never sent), and a dead letter can be
 * replayed only that long.
 */
export const minKafkaRetentionMs = 7 * 24 * 3_600_000;

/**
 * kafkajs's ConfigResourceTypes.TOPIC. Not imported as a value: Node's ESM loader finds only the
 * first few of kafkajs's CommonJS exports by name (the ones before `CompressionTypes:
 * Compression.Types` in its index.js), and `import { ConfigResourceTypes }` fails at start there.
 */
const topicResource = 2 as ConfigResourceTypes;

const kafkaLogLevels: Record<KafkaBusLogLevel, KafkaLogLevel> = {
  nothing: KafkaLogLevel.NOTHING,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
};

/**
 * Routes kafkajs' own log lines to our logger, one structured line each. kafkajs reports every
 * protocol error response at ERROR, even those it handles itself (a rebalance, a coordinator
 * still loading): those become info, so a normal rebalance does not look like a failure.
 */
function kafkajsLogCreator(logger: Logger) {
  return () =>
    ({ namespace, level, log }: LogEntry): void => {
      const { message, timestamp: _timestamp, logger: _name, ...fields } = log;
      const entry = { kafkajs: namespace, ...fields };
      const handledByKafkajs = namespace === 'Connection' && message.startsWith('Response ');
      if (handledByKafkajs) logger.info(entry, message);
      else if (level === KafkaLogLevel.ERROR) logger.error(entry, message);
      else if (level === KafkaLogLevel.WARN) logger.warn(entry, message);
      else if (level === KafkaLogLevel.INFO) logger.info(entry, message);
      else logger.debug(entry, message);
    };
}

/** Resolves or rejects like `promise`, or rejects with `message` after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class KafkaBus implements ReadableBus {
  readonly kind = 'kafka';
  readonly kafka: Kafka;
  readonly logger: Logger;
  /** Bytes of one record batch, at most (see KafkaBusOptions.maxBatchBytes). */
  readonly maxBatchBytes: number;
  /** The largest single message, as messageBytes counts it: a batch of that message alone. */
  readonly maxMessageBytes: number;
  readonly partitions: number;
  /** Replicas of the topics this bus creates; undefined: the cluster's default. */
  readonly replicationFactor: number | undefined;
  readonly joinTimeoutMs: number;
  readonly closeTimeoutMs: number;
  private readonly pingTimeoutMs: number;
  /** `<namespace>.`, or nothing. */
  private readonly prefix: string;
  /** Topics known to exist (or being created), by their name on the server, so createTopics runs once per topic. */
  private readonly topics = new Map<string, Promise<void>>();
  private readonly consumers = new Set<KafkaBusConsumer>();
  private producer?: Promise<Producer>;
  private admin?: Promise<Admin>;

  constructor(options: KafkaBusOptions) {
    this.logger = options.logger ?? createLogger('warn');
    this.partitions = options.partitions ?? 8;
    this.joinTimeoutMs = options.joinTimeoutMs ?? 30_000;
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
    this.pingTimeoutMs = options.pingTimeoutMs ?? 5_000;
    this.maxBatchBytes = options.maxBatchBytes ?? defaultKafkaMaxBatchBytes;
    if (!Number.isInteger(this.maxBatchBytes) || this.maxBatchBytes < minKafkaMaxBatchBytes) {
      throw new Error(`kafka bus: maxBatchBytes must be an integer of at least ${minKafkaMaxBatchBytes}, got ${this.maxBatchBytes}`);
    }
    this.maxMessageBytes = this.maxBatchBytes - recordBatchOverhead;
    if (options.namespace !== undefined && !kafkaNamespacePattern.test(options.namespace)) {
      throw new Error(`kafka bus: namespace must be 1-100 of A-Z a-z 0-9 . _ -, got ${JSON.stringify(options.namespace)}`);
    }
    this.prefix = options.namespace ? `${options.namespace}.` : '';
    this.replicationFactor = options.replicationFactor;
    if (this.replicationFactor !== undefined && (!Number.isInteger(this.replicationFactor) || this.replicationFactor < 1)) {
      throw new Error(`kafka bus: replicationFactor must be a whole number of at least 1, got ${this.replicationFactor}`);
    }
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      ...(options.ssl ? { ssl: options.ssl } : {}),
      ...(options.sasl ? { sasl: { ...options.sasl } as SASLOptions } : {}),
      connectionTimeout: 3_000,
      retry: { initialRetryTime: 100, retries: 8 },
      logLevel: kafkaLogLevels[options.logLevel ?? 'warn'],
      logCreator: kafkajsLogCreator(this.logger),
    });
  }

  /** A topic's or consumer group's name on the server. */
  serverName(name: string): string {
    return this.prefix + name;
  }

  /** The name callers use for a topic the server names `name`. */
  callerName(name: string): string {
    return name.startsWith(this.prefix) ? name.slice(this.prefix.length) : name;
  }

  /**
   * kafkajs puts all messages of one partition of one send into one record batch, which the broker
   * refuses whole (MESSAGE_TOO_LARGE, not retriable) above the topic's `max.message.bytes`. So the
   * messages go out in consecutive sends of at most `maxBatchBytes` in all (over all partitions:
   * the partitioner runs inside kafkajs), each awaited before the next, so one key keeps its
   * order. A failed send leaves the earlier ones published: the caller publishes again from its
   * checkpoint and consumers drop repeats (at least once). A message above `maxMessageBytes` is
   * refused before anything of the call is sent.
   */
  async publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const sizes = messages.map(messageBytes);
    const over = sizes.findIndex((bytes) => bytes > this.maxMessageBytes);
    if (over >= 0) throw new MessageTooLargeError(topic, messages[over]!.key, sizes[over]!, this.maxMessageBytes);
    await this.ensureTopics([topic]);
    const producer = await this.connectedProducer();
    let start = 0;
    try {
      while (start < messages.length) {
        let end = start;
        let bytes = recordBatchOverhead;
        while (end < messages.length && (end === start || bytes + sizes[end]! <= this.maxBatchBytes)) bytes += sizes[end++]!;
        await producer.send({
          topic: this.serverName(topic),
          acks: -1,
          messages: messages.slice(start, end).map(({ key, value, headers }) => ({ key, value, headers: headers ?? {} })),
        });
        start = end;
      }
    } catch (error) {
      // The topic may be gone (deleted to purge it): the producer does not create topics, so
      // every later send would fail the same way. The next publish checks it again, as a start does.
      this.topics.delete(this.serverName(topic));
      throw error;
    }
  }

  /** One publish per batch, each awaited before the next: a failure leaves the earlier batches published. */
  async publishAll(batches: { topic: string; messages: OutgoingMessage[] }[]): Promise<void> {
    for (const { topic, messages } of batches) await this.publish(topic, messages);
  }

  /** Messages between each partition's low and high watermark, summed; 0 for a topic that does not exist. */
  async heldMessages(topic: string): Promise<number> {
    const admin = await this.connectedAdmin();
    const name = this.serverName(topic);
    if (!(await admin.listTopics()).includes(name)) return 0;
    const offsets = await retryRetriable(() => admin.fetchTopicOffsets(name));
    return offsets.reduce((sum, p) => sum + Math.max(0, Number(p.high) - Number(p.low)), 0);
  }

  /**
   * Every message the topic holds up to its high watermarks as read at the call, by partition and
   * offset. Read by a consumer of a group of its own (`<namespace>.dead-letters-reader-<uuid>`) that
   * commits nothing and is deleted afterwards.
   */
  async readTopic(topic: string): Promise<HeldMessage[]> {
    const admin = await this.connectedAdmin();
    const name = this.serverName(topic);
    if (!(await admin.listTopics()).includes(name)) return [];
    const ends = await retryRetriable(() => admin.fetchTopicOffsets(name));
    const left = new Map(ends.filter((p) => BigInt(p.high) > BigInt(p.low)).map((p) => [p.partition, BigInt(p.high)]));
    if (left.size === 0) return [];
    const groupId = this.serverName(`dead-letters-reader-${randomUUID()}`);
    const consumer = this.kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 250 });
    const held: HeldMessage[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [name], fromBeginning: true });
      await withTimeout(
        new Promise<void>((resolve, reject) => {
          consumer
            .run({
              autoCommit: false,
              eachBatch: async ({ batch }) => {
                const high = left.get(batch.partition);
                if (high === undefined) return;
                for (const message of batch.messages) {
                  if (BigInt(message.offset) >= high) break;
                  const { key, value, headers } = toBusMessage(topic, batch.partition, message);
                  held.push({ partition: batch.partition, offset: message.offset, key, value, headers, timestamp: new Date(Number(message.timestamp)).toISOString() });
                }
                const last = batch.messages.at(-1);
                if (last && BigInt(last.offset) + 1n >= high) left.delete(batch.partition);
                if (left.size === 0) resolve();
              },
            })
            .catch(reject);
        }),
        this.joinTimeoutMs * 2,
        `kafka bus: reading ${name} did not reach its end within ${this.joinTimeoutMs * 2} ms`,
      );
    } finally {
      await withTimeout(consumer.disconnect(), this.closeTimeoutMs, 'kafka consumer disconnect timed out').catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return held.sort((a, b) => a.partition - b.partition || (BigInt(a.offset) < BigInt(b.offset) ? -1 : 1));
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    if (options.topics.length === 0) throw new Error('kafka bus: consume() needs at least one topic');
    await this.ensureTopics(options.topics);
    if (options.fromBeginning ?? true) await this.warnIfGroupStartsOver(options.groupId, options.topics);
    const consumer = new KafkaBusConsumer(this, options, handler, () => this.consumers.delete(consumer));
    this.consumers.add(consumer);
    try {
      await consumer.start();
    } catch (error) {
      await consumer.close();
      throw error;
    }
    return consumer;
  }

  /**
   * A group with no committed offset on a topic that holds messages reads them all from the
   * beginning (`fromBeginning`): right for a new deployment (nothing published before the group
   * joined is lost), and also what happens when the broker dropped the offsets of a group that had
   * no member for `offsets.retention.minutes` (7 days by default): every retained message is
   * handled again. Said once per consume(), so an operator sees why after a long outage; a
   * failed look is no reason not to start.
   */
  private async warnIfGroupStartsOver(groupId: string, topics: string[]): Promise<void> {
    try {
      const admin = await this.connectedAdmin();
      const names = [...new Set(topics.map((topic) => this.serverName(topic)))];
      const committed = await retryRetriable(() => admin.fetchOffsets({ groupId: this.serverName(groupId), topics: names }));
      const rereads: { topic: string; messages: number }[] = [];
      for (const name of names) {
        const partitions = committed.find((c) => c.topic === name)?.partitions ?? [];
        if (partitions.some((p) => Number(p.offset) >= 0)) continue;
        const offsets = await retryRetriable(() => admin.fetchTopicOffsets(name));
        const messages = offsets.reduce((sum, p) => sum + Math.max(0, Number(p.high) - Number(p.low)), 0);
        if (messages > 0) rereads.push({ topic: this.callerName(name), messages });
      }
      if (rereads.length === 0) return;
      const total = rereads.reduce((sum, r) => sum + r.messages, 0);
      this.logger.warn(
        { groupId, serverGroupId: this.serverName(groupId), topics: rereads },
        `kafka bus: consumer group ${this.serverName(groupId)} has no committed offset on ${rereads.map((r) => this.serverName(r.topic)).join(', ')}: ` +
          `it reads the ${total} message(s) held there from the beginning. Expected on a new deployment; on one that ran before, the broker dropped the group's offsets ` +
          `(offsets.retention.minutes, 7 days by default, counted from when its last member left). No email goes out twice and no webhook is delivered twice, ` +
          `but each invitation already sent whose request is read again is reported once more as comms.skipped (docs/operations.md, Kafka consumer offsets)`,
      );
    } catch (error) {
      this.logger.debug({ err: error, groupId }, 'kafka bus: could not read the committed offsets of the group before it starts');
    }
  }

  async ping(): Promise<void> {
    const check = async () => {
      const admin = await this.connectedAdmin();
      await admin.describeCluster();
    };
    await withTimeout(check(), this.pingTimeoutMs, `kafka did not answer within ${this.pingTimeoutMs} ms`);
  }

  async consumerLag(groupId: string, topics: string[]): Promise<{ topic: string; messages: number }[]> {
    const admin = await this.connectedAdmin();
    const existing = new Set(await admin.listTopics());
    const present = topics.map((topic) => this.serverName(topic)).filter((name) => existing.has(name));
    const committed =
      present.length > 0 ? await retryRetriable(() => admin.fetchOffsets({ groupId: this.serverName(groupId), topics: present })) : [];
    return Promise.all(
      topics.map(async (topic) => {
        const name = this.serverName(topic);
        if (!existing.has(name)) return { topic, messages: 0 };
        const ends = await retryRetriable(() => admin.fetchTopicOffsets(name));
        const group = new Map((committed.find((c) => c.topic === name)?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
        let messages = 0;
        for (const end of ends) {
          const done = group.get(end.partition) ?? -1;
          messages += Math.max(0, Number(end.high) - (done >= 0 ? done : Number(end.low)));
        }
        return { topic, messages };
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((consumer) => consumer.close()));
    const clients = [this.producer, this.admin];
    this.producer = undefined;
    this.admin = undefined;
    await Promise.all(
      clients.map(async (client) => {
        if (!client) return;
        const disconnect = client.then((connected) => connected.disconnect());
        await withTimeout(disconnect, this.closeTimeoutMs, 'kafka client disconnect timed out').catch(
          (error: unknown) => this.logger.warn({ err: error }, 'kafka bus: disconnect failed'),
        );
      }),
    );
  }

  /**
   * Creates the topics that do not exist yet and remembers them. Which exist is asked first
   * (listTopics): Kafka answers a CreateTopics for a topic that exists with
   * TOPIC_AUTHORIZATION_FAILED when the principal lacks CREATE (KAFKA-6250), so a service allowed
   * only to read and write runs on topics an operator created.
   */
  async ensureTopics(topics: string[]): Promise<void> {
    const names = [...new Set(topics.map((topic) => this.serverName(topic)))];
    const fresh = names.filter((name) => !this.topics.has(name));
    if (fresh.length > 0) {
      const ready: Promise<void> = this.createTopics(fresh).catch((error: unknown) => {
        for (const name of fresh) if (this.topics.get(name) === ready) this.topics.delete(name);
        throw error;
      });
      for (const name of fresh) this.topics.set(name, ready);
    }
    await Promise.all(names.map((name) => this.topics.get(name)));
  }

  /**
   * Creates the missing ones of `topics` and waits until every partition of each has a leader.
   * kafkajs's own wait (`waitForLeaders`) retries only LEADER_NOT_AVAILABLE, but a broker that has
   * not yet learnt of a topic just created answers UNKNOWN_TOPIC_OR_PARTITION ("This server does
   * not host this topic-partition"): seen in CI on a fresh KRaft broker. Then, and when a topic was
   * there already, the leaders are waited for here.
   */
  private async createTopics(topics: string[]): Promise<void> {
    const admin = await this.connectedAdmin();
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((topic) => !existing.has(topic));
    if (missing.length > 0) {
      try {
        const replication = this.replicationFactor === undefined ? {} : { replicationFactor: this.replicationFactor };
        const created = await admin.createTopics({
          topics: missing.map((topic) => ({ topic, numPartitions: this.partitions, ...replication })),
          waitForLeaders: true,
        });
        if (created && missing.length === topics.length) return;
      } catch (error) {
        const types = errorTypes(error);
        if (types.some((type) => type === 'TOPIC_AUTHORIZATION_FAILED' || type === 'CLUSTER_AUTHORIZATION_FAILED')) {
          throw new Error(
            `kafka bus: not allowed to create the Kafka topics ${missing.join(', ')} (${[...new Set(types)].join(', ')}: this service's principal lacks the CREATE permission). ` +
              `An operator must create them, each with ${this.partitions} partitions and the replication factor the cluster needs, under exactly these names (KAFKA_NAMESPACE included), ` +
              `or grant this principal CREATE on them`,
            { cause: error },
          );
        }
        if (types.includes('INVALID_REPLICATION_FACTOR')) {
          throw new Error(
            `kafka bus: the cluster refused to create the topics ${missing.join(', ')} with ${this.replicationFactor === undefined ? "its default replication factor" : `KAFKA_REPLICATION_FACTOR=${this.replicationFactor}`} (INVALID_REPLICATION_FACTOR): it must be at most the number of brokers`,
            { cause: error },
          );
        }
        if (types.some((type) => type === 'POLICY_VIOLATION' || type === 'INVALID_PARTITIONS' || type === 'INVALID_CONFIG' || type === 'INVALID_REQUEST')) {
          throw new Error(
            `kafka bus: the cluster refused to create the topics ${missing.join(', ')} with ${this.partitions} partitions and ${this.replicationFactor === undefined ? 'its default replication factor' : `KAFKA_REPLICATION_FACTOR=${this.replicationFactor}`} ` +
              `(${[...new Set(types)].join(', ')}: ${innerMessages(error)}). Its topic creation policy decides what it takes: an operator must create them as it allows, ` +
              `under exactly these names (KAFKA_NAMESPACE included), with cleanup.policy=delete and a retention.ms of at least 7 days; the service then uses them as they are`,
            { cause: error },
          );
        }
        if (!types.includes('UNKNOWN_TOPIC_OR_PARTITION')) throw error;
      }
    }
    // Created, but its leaders not yet known everywhere; or it was there already (created by an operator, or by another process a moment ago).
    for (const topic of topics) await this.leadersOf(topic, admin);
    const preexisting = topics.filter((topic) => existing.has(topic));
    if (preexisting.length > 0) await this.checkTopicSettings(preexisting, admin);
  }

  /**
   * Topics that were there before this process (an operator's, or an older deployment's) are used
   * as they are, but a setting the service does not work well with is said, once per topic and
   * process, as a warning naming the topic and the fix: fewer partitions than the service creates
   * (fewer worker processes can share the work), fewer replicas than KAFKA_REPLICATION_FACTOR (or
   * one on a cluster of several brokers), `cleanup.policy` with `compact` (the broker keeps only
   * the latest message of each key, so a message not yet consumed can go), and a `retention.ms`
   * below `minKafkaRetentionMs`. A principal not allowed to describe them (DESCRIBE_CONFIGS) only
   * loses the check.
   */
  private async checkTopicSettings(names: string[], admin: Admin): Promise<void> {
    try {
      const [{ topics: metadata }, described, cluster] = await Promise.all([
        admin.fetchTopicMetadata({ topics: names }),
        admin.describeConfigs({
          includeSynonyms: false,
          resources: names.map((name) => ({ type: topicResource, name, configNames: ['cleanup.policy', 'retention.ms'] })),
        }),
        admin.describeCluster(),
      ]);
      for (const name of names) {
        const problems: string[] = [];
        const partitions = metadata.find((topic) => topic.name === name)?.partitions ?? [];
        if (partitions.length > 0 && partitions.length < this.partitions) {
          problems.push(`has ${partitions.length} partition(s), fewer than the ${this.partitions} the service creates: at most ${partitions.length} consumer(s) of a group share its messages and further worker processes sit idle (kafka-topics.sh --alter --partitions ${this.partitions})`);
        }
        const replicas = partitions.length > 0 ? Math.min(...partitions.map((p) => p.replicas.length)) : undefined;
        if (replicas !== undefined && this.replicationFactor !== undefined && replicas < this.replicationFactor) {
          problems.push(`has ${replicas} replica(s), fewer than KAFKA_REPLICATION_FACTOR=${this.replicationFactor} (topics that exist are not changed: kafka-reassign-partitions.sh adds replicas)`);
        } else if (replicas === 1 && this.replicationFactor === undefined && cluster.brokers.length > 1) {
          problems.push(`has 1 replica on a cluster of ${cluster.brokers.length} brokers: what its broker holds is lost with it (kafka-reassign-partitions.sh adds replicas)`);
        }
        const entries = described.resources.find((r) => r.resourceName === name && r.errorCode === 0)?.configEntries ?? [];
        const setting = (key: string) => entries.find((entry) => entry.configName === key)?.configValue;
        const cleanup = setting('cleanup.policy');
        if (cleanup !== undefined && cleanup.includes('compact')) {
          problems.push(`has cleanup.policy=${cleanup}: the broker keeps only the latest message of each key (an event stream), so a message not yet consumed can be removed and its invitation or webhook never happen (kafka-configs.sh --alter --add-config cleanup.policy=delete)`);
        }
        const retention = setting('retention.ms');
        if (retention !== undefined && Number(retention) >= 0 && Number(retention) < minKafkaRetentionMs) {
          problems.push(`has retention.ms=${retention} (${(Number(retention) / 3_600_000).toFixed(1)} h), below 7 days: a message goes after that whether consumed or not, so a consumer stopped longer never handles it (a requested invitation is never sent), and a dead letter can be replayed only that long (kafka-configs.sh --alter --add-config retention.ms=${minKafkaRetentionMs})`);
        }
        if (problems.length === 0) continue;
        this.logger.warn(
          { topic: this.callerName(name), serverTopic: name, problems },
          `kafka bus: the existing topic ${name} ${problems.join('; ')}. The service uses it as it is (docs/operations.md, Kafka topics the service creates)`,
        );
      }
    } catch (error) {
      this.logger.info({ err: error, topics: names }, 'kafka bus: could not check the settings of existing topics (the principal may lack DESCRIBE_CONFIGS); they are used as they are');
    }
  }

  private async leadersOf(topic: string, admin: Admin): Promise<void> {
    const deadline = Date.now() + this.joinTimeoutMs;
    for (;;) {
      try {
        const { topics: [metadata] } = await admin.fetchTopicMetadata({ topics: [topic] });
        if (metadata && metadata.partitions.length > 0 && metadata.partitions.every((p) => p.leader >= 0)) return;
      } catch (error) {
        const type = (error as { type?: string }).type;
        if (type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'LEADER_NOT_AVAILABLE') throw error;
      }
      if (Date.now() > deadline) throw new Error(`kafka bus: topic ${topic} has no leader for every partition after ${this.joinTimeoutMs} ms; check the brokers`);
      await sleep(100);
    }
  }

  private connectedProducer(): Promise<Producer> {
    this.producer ??= this.connect(
      this.kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: false,
        // One request in flight per broker: a retried batch cannot overtake a later one.
        maxInFlightRequests: 1,
      }),
      () => (this.producer = undefined),
    );
    return this.producer;
  }

  private connectedAdmin(): Promise<Admin> {
    this.admin ??= this.connect(this.kafka.admin(), () => (this.admin = undefined));
    return this.admin;
  }

  /** Connects a client; a failed connect is forgotten so the next call tries again. */
  private async connect<T extends { connect(): Promise<void> }>(client: T, forget: () => void): Promise<T> {
    try {
      await client.connect();
      return client;
    } catch (error) {
      forget();
      throw error;
    }
  }
}


/** A long batch commits its progress at least this often (messages), so a crash redelivers little. */
const COMMIT_EVERY = 500;

/** How often a consumer's member tells its group it is alive (kafkajs heartbeatInterval), also while a handler runs. */
const HEARTBEAT_MS = 500;

class KafkaBusConsumer implements Consumer {
  /** Replaced when kafkajs gives it up (see `restartAfterCrash`). */
  private consumer: KafkaConsumer;
  /** Set once a consumer has joined its group: a crash before that is start()'s to report. */
  private joinedOnce = false;
  private restarting = false;
  private readonly topics: string[];
  private readonly maxAttempts: number;
  private readonly retryDelayMs: (attempt: number) => number;
  /** Fired by close(): in-flight handler waits and retry delays end, nothing more is committed. */
  private readonly abort = new AbortController();
  private closing?: Promise<void>;

  constructor(
    private readonly bus: KafkaBus,
    private readonly options: ConsumerOptions,
    private readonly handler: MessageHandler,
    private readonly onClosed: () => void,
  ) {
    this.topics = [...new Set(options.topics)].map((topic) => bus.serverName(topic));
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    this.retryDelayMs = options.retryDelayMs ?? defaultRetryDelayMs;
    this.consumer = this.newConsumer();
  }

  private newConsumer(): KafkaConsumer {
    const consumer = this.bus.kafka.consumer({
      groupId: this.bus.serverName(this.options.groupId),
      allowAutoTopicCreation: false,
      // Short enough that a crashed member's partitions move on in seconds, long enough for slow handlers' retries.
      sessionTimeout: 10_000,
      heartbeatInterval: HEARTBEAT_MS,
      // Fetches wait at most this long for data, which bounds how long a rebalance or stop waits for them.
      maxWaitTimeInMs: 250,
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart && consumer === this.consumer && this.joinedOnce && !this.restarting) void this.restartAfterCrash(payload.error);
    });
    return consumer;
  }

  /**
   * kafkajs restarts a crashed consumer only after a retriable error; after some others (a group
   * coordinator not found when a broker comes back: kafkajs issues #1445 and #1630) it stays
   * stopped for good, and this process would consume nothing more. So a consumer kafkajs gives up
   * is replaced by a new one, started again with a back-off until it joins or the bus is closed.
   */
  private async restartAfterCrash(error: Error): Promise<void> {
    const { groupId } = this.options;
    this.bus.logger.error({ err: error, groupId }, 'kafka bus: consumer stopped after an error kafkajs does not restart from; starting a new one');
    this.restarting = true;
    try {
      for (let attempt = 1; !this.abort.signal.aborted; attempt++) {
        await this.consumer.disconnect().catch(() => undefined);
        if (this.abort.signal.aborted) return;
        this.consumer = this.newConsumer();
        try {
          await this.start();
          // Closed while it was joining: close() disconnected the one before.
          if (this.abort.signal.aborted) await this.consumer.disconnect().catch(() => undefined);
          else this.bus.logger.info({ groupId, attempt }, 'kafka bus: consumer restarted');
          return;
        } catch (failure) {
          this.bus.logger.warn({ err: failure, groupId, attempt }, 'kafka bus: consumer restart failed; trying again');
          await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 1_000 * attempt)).unref());
        }
      }
    } finally {
      this.restarting = false;
    }
  }

  /** Connects, subscribes and resolves once the consumer has joined its group. */
  async start(): Promise<void> {
    const { consumer } = this;
    const removers: Array<() => void> = [];
    const joined = new Promise<void>((resolve, reject) => {
      removers.push(consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
      removers.push(
        consumer.on(consumer.events.CRASH, ({ payload }) => {
          if (!payload.restart) reject(payload.error);
        }),
      );
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: this.topics, fromBeginning: this.options.fromBeginning ?? true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: this.bus.partitions,
        eachBatch: (payload) => this.onBatch(payload),
      });
      await withTimeout(
        joined,
        this.bus.joinTimeoutMs,
        `kafka consumer of group ${this.options.groupId} did not join within ${this.bus.joinTimeoutMs} ms`,
      );
      this.joinedOnce = true;
    } finally {
      for (const remove of removers) remove();
    }
  }

  /**
   * One fetched batch of one partition, in order. Offsets are committed once per batch (and every
   * COMMIT_EVERY messages), not once per message: a commit is a round trip to the group
   * coordinator, which cost more than most handlers.
   *
   * A batch left early (close(), a rebalance: kafkajs's heartbeat() then throws
   * REBALANCE_IN_PROGRESS, a failed dead-letter publish) still commits what it handled, or the
   * group would hand those messages out again (a redelivered invitation is a comms.skipped
   * webhook). That commit goes through the batch's own `commitOffsetsIfNecessary(offsets)`:
   * kafkajs's `consumer.commitOffsets` does nothing once the consumer is stopping, and the member
   * is still in its generation until the batch returns (the coordinator accepts a commit while
   * a rebalance waits for this member to rejoin).
   */
  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale, commitOffsetsIfNecessary }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    const callerTopic = this.bus.callerName(topic);
    let done: string | undefined;
    let sinceCommit = 0;
    const next = () => [{ topic, partition, offset: (BigInt(done!) + 1n).toString() }];
    const commit = async () => {
      if (done === undefined) return;
      await this.consumer.commitOffsets(next());
      done = undefined;
      sinceCommit = 0;
    };
    let finished = false;
    try {
      for (const message of batch.messages) {
        if (this.abort.signal.aborted || !isRunning() || isStale()) return;
        const delivery = await this.deliver(toBusMessage(callerTopic, partition, message), heartbeat);
        // The abandoned message stays uncommitted: the group redelivers it.
        if (delivery.outcome === 'abandoned' || this.abort.signal.aborted) return;
        // A dead letter too large for the bus goes without its value (its headers name the source offset).
        if (delivery.deadLetter) await this.bus.publish(deadLetterTopic(callerTopic), [fitMessage(delivery.deadLetter, this.bus.maxMessageBytes)]);
        resolveOffset(message.offset);
        done = message.offset;
        if (++sinceCommit >= COMMIT_EVERY) await commit();
        await heartbeat();
      }
      finished = true;
      if (!this.abort.signal.aborted) await commit();
    } finally {
      if (done !== undefined && (!finished || this.abort.signal.aborted)) {
        await commitOffsetsIfNecessary({ topics: [{ topic, partitions: next() }] }).catch((error: unknown) =>
          this.bus.logger.warn(
            { err: error, groupId: this.options.groupId, topic: callerTopic, partition, offset: done },
            'kafka bus: progress of a batch left early not committed; the group hands those messages out again',
          ),
        );
      }
    }
  }

  /**
   * Runs the handler with in-process retries; a message that exhausts them is dead-lettered.
   * kafkajs sends a heartbeat only when heartbeat() is called, so while the handler runs it is
   * called every HEARTBEAT_MS: a handler slower than the session timeout (a slow provider call)
   * would otherwise have this member dropped from its group and its message handled again by the
   * next owner. A rebalance such a heartbeat reports while the handler runs is left to the call
   * after the message; one reported between two attempts abandons the message (uncommitted, so the
   * group hands it out again): kafkajs rejoins only once the batch returns, and a member retrying
   * for minutes (the workers ride out a store outage) held the whole group in its rebalance until
   * the coordinator dropped it, and then handled the message beside its next owner.
   */
  private async deliver(message: BusMessage, heartbeat: () => Promise<void>): Promise<Delivery> {
    const keepAlive = setInterval(() => void heartbeat().catch(() => {}), HEARTBEAT_MS);
    const rebalance = new AbortController();
    try {
      return await deliverWithRetries(message, this.handler, {
        maxAttempts: this.maxAttempts,
        retryDelayMs: this.retryDelayMs,
        signal: AbortSignal.any([this.abort.signal, rebalance.signal]),
        logger: this.bus.logger,
        adapter: 'kafka bus',
        betweenAttempts: async () => {
          try {
            await heartbeat();
          } catch (error) {
            if (!leftGeneration(error)) return;
            this.bus.logger.info({ groupId: this.options.groupId, topic: message.topic, partition: message.partition, offset: message.offset }, 'kafka bus: the group rebalances; a retried message is left to the partition\'s next owner');
            rebalance.abort();
          }
        },
      });
    } finally {
      clearInterval(keepAlive);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.abort.abort();
      // kafkajs' disconnect waits for the running eachBatch calls; the abort above ends them,
      // except for a commit already under way for a handler that finished before close().
      const disconnect = this.consumer.disconnect();
      await withTimeout(disconnect, this.bus.closeTimeoutMs, 'kafka consumer disconnect timed out').catch(
        (error: unknown) => this.bus.logger.warn({ err: error, groupId: this.options.groupId }, 'kafka bus: consumer close'),
      );
      this.onClosed();
    })();
    return this.closing;
  }
}

/** Resolves with the promise's outcome, or 'aborted' as soon as the signal fires. */

function toBusMessage(topic: string, partition: number, message: KafkaMessage): BusMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString('utf8') ?? '',
    value: message.value?.toString('utf8') ?? '',
    headers: headersToStrings(message.headers),
    attempt: 1,
  };
}

/** kafkajs hands headers over as Buffers (an array when a name repeats: the last one wins). */
function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers ?? {})) {
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    if (value !== undefined) result[name] = Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
  }
  return result;
}

/** The group's coordinator answered that this member must rejoin (kafkajs's isRebalancing, and a member the group dropped). */
function leftGeneration(error: unknown): boolean {
  const type = (error as { type?: string }).type;
  return type === 'REBALANCE_IN_PROGRESS' || type === 'ILLEGAL_GENERATION' || type === 'UNKNOWN_MEMBER_ID' || type === 'NOT_COORDINATOR_FOR_GROUP';
}

/** The Kafka error codes in a kafkajs error: its own, and those of a KafkaJSAggregateError's errors (one per topic). */
function errorTypes(error: unknown): string[] {
  const { type, errors } = error as { type?: unknown; errors?: unknown };
  return [
    ...(typeof type === 'string' ? [type] : []),
    ...(Array.isArray(errors) ? errors.flatMap((inner: unknown) => errorTypes(inner)) : []),
  ];
}

/** The messages of a kafkajs error's inner errors (a KafkaJSAggregateError's, one per topic), else its own. */
function innerMessages(error: unknown): string {
  const { message, errors } = error as { message?: unknown; errors?: unknown };
  const inner = Array.isArray(errors) ? [...new Set(errors.map((e: unknown) => String((e as { message?: unknown }).message)))] : [];
  return inner.length > 0 ? inner.join('; ') : String(message);
}

/** Retries a Kafka admin call on a retriable error (a group's coordinator still loading answers NOT_COORDINATOR). */
async function retryRetriable<T>(call: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= attempts || !(error as { retriable?: boolean }).retriable) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}
