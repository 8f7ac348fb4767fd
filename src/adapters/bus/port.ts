/**
 * Bus port: keyed, partitioned topics with consumer groups.
 * Adapters: embedded (SQLite log with committed offsets) and Kafka (kafkajs).
 * Every adapter passes test/contract/bus.contract.ts.
 */

export interface OutgoingMessage {
  /** Partition key: messages with one key are delivered in publish order. */
  key: string;
  value: string;
  headers?: Record<string, string>;
}

export interface BusMessage {
  topic: string;
  partition: number;
  /** Offset inside its partition, as a decimal string (Kafka offsets are int64). */
  offset: string;
  key: string;
  value: string;
  headers: Record<string, string>;
  /** 1 on first delivery to this handler; counts in-process retries. */
  attempt: number;
}

export type MessageHandler = (message: BusMessage) => Promise<void>;

export interface ConsumerOptions {
  groupId: string;
  topics: string[];
  /**
   * Attempts before a message goes to `<topic>.dlq` (with headers `x-dlq-error`,
   * `x-dlq-attempts`, `x-dlq-source-*`) and its offset is committed. Default 5.
   */
  maxAttempts?: number;
  /** Delay before retry n (1-based). Default: 100 ms doubled each time, capped at 5 s. */
  retryDelayMs?: (attempt: number) => number;
  /** Start from the earliest offset when the group has none committed (default true). */
  fromBeginning?: boolean;
}

export interface Consumer {
  /**
   * Stop consuming. A handler still running is abandoned: its offset is not
   * committed, so the group redelivers that message (at-least-once).
   */
  close(): Promise<void>;
}

export interface Bus {
  readonly kind: string;
  /**
   * The largest message one publish may carry, counted by `messageBytes`; undefined when the
   * bus has no limit (the embedded bus). `publish` rejects a message above it with
   * MessageTooLargeError before sending anything of that call; a caller that must not stall on
   * size publishes a smaller form instead (the relay: `toMessage` in src/workers/event-message.ts).
   */
  readonly maxMessageBytes?: number;
  /** Publishes in order; may split the messages into several sends under the bus's size limit. */
  publish(topic: string, messages: OutgoingMessage[]): Promise<void>;
  /** Start a consumer; the returned promise resolves once it has joined its group. */
  consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer>;
  /**
   * Per topic: messages published and not yet committed by the group (its lag), summed over
   * partitions; a partition the group never committed counts from its oldest message.
   */
  consumerLag(groupId: string, topics: string[]): Promise<{ topic: string; messages: number }[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const deadLetterTopic = (topic: string): string => `${topic}.dlq`;

/** A message as a topic holds it (read by the dead-letter commands, not by a consumer group). */
export interface HeldMessage {
  partition: number;
  /** Decimal string, as BusMessage.offset. */
  offset: string;
  key: string;
  value: string;
  headers: Record<string, string>;
  /** When the bus stored it (the embedded bus's publish time; Kafka's record timestamp), ISO 8601. */
  timestamp: string;
}

/**
 * What both adapters add for the operator's dead-letter commands (src/commands/dead-letters.ts):
 * reading a whole topic without a consumer group, and publishing to several topics together.
 */
export interface ReadableBus extends Bus {
  /** Every message the topic holds now (retention may have removed older ones); none for a topic that does not exist. */
  readTopic(topic: string): Promise<HeldMessage[]>;
  /** How many messages the topic holds now (offsets only: cheap enough for every scrape). */
  heldMessages(topic: string): Promise<number>;
  /**
   * Publishes each batch to its topic, in order. The embedded bus stores them in one transaction (all
   * or none); Kafka sends them one after another (a failure leaves the earlier ones published).
   */
  publishAll(batches: { topic: string; messages: OutgoingMessage[] }[]): Promise<void>;
}

/** Whether this bus can be read and published to by the dead-letter commands (both adapters can; a test double may not). */
export const isReadableBus = (bus: Bus): bus is ReadableBus =>
  typeof (bus as Partial<ReadableBus>).readTopic === 'function' &&
  typeof (bus as Partial<ReadableBus>).heldMessages === 'function' &&
  typeof (bus as Partial<ReadableBus>).publishAll === 'function';

export const defaultRetryDelayMs = (attempt: number): number => Math.min(5000, 100 * 2 ** (attempt - 1));

/**
 * Header of a message published without its value's payload because the whole would exceed the
 * bus's `maxMessageBytes`; its value is `too-large`. On relayed events the value is then the stored
 * event without `data` (read the event from the event store: src/workers/event-message.ts); on a
 * dead letter the value is empty (the source message's topic, partition and offset are in its headers).
 */
export const dataOmittedHeader = 'x-data-omitted';

/**
 * Upper bound of a message's bytes in a Kafka record (v2 record batch): its key, value, header
 * names and values as UTF-8, plus the largest varint fields (length, attributes, timestamp and
 * offset deltas, key and value lengths, header count: 36 bytes) and each header's two lengths (10).
 */
export function messageBytes(message: OutgoingMessage): number {
  let bytes = 36 + Buffer.byteLength(message.key, 'utf8') + Buffer.byteLength(message.value, 'utf8');
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    bytes += 10 + Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value, 'utf8');
  }
  return bytes;
}

/** A publish carried a message larger than the bus's `maxMessageBytes`; nothing of that publish was sent. */
export class MessageTooLargeError extends Error {
  override readonly name = 'MessageTooLargeError';
  constructor(
    readonly topic: string,
    readonly key: string,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `a message of ${bytes} bytes (key ${key}) is larger than the ${maxBytes} bytes the bus accepts on ${topic}: ` +
        'publish it without its payload (see docs/operations.md, Kafka message size) or raise KAFKA_MAX_BATCH_BYTES together with the topic\'s max.message.bytes',
    );
  }
}

/** Header values of a message whose value was left out are cut to this many characters. */
const omittedHeaderChars = 1024;

/**
 * The message itself when it fits `maxBytes` (or there is no limit); else the same key and headers
 * (each value cut to 1,024 characters) with an empty value and `x-data-omitted: too-large`.
 * For messages whose value has no smaller form that still says what it was (dead letters).
 */
export function fitMessage(message: OutgoingMessage, maxBytes: number | undefined): OutgoingMessage {
  if (maxBytes === undefined || messageBytes(message) <= maxBytes) return message;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) headers[name] = value.slice(0, omittedHeaderChars);
  return { key: message.key, value: '', headers: { ...headers, [dataOmittedHeader]: 'too-large' } };
}
