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

export const defaultRetryDelayMs = (attempt: number): number => Math.min(5000, 100 * 2 ** (attempt - 1));
