/**
 * Embedded bus: a partitioned log in a SQLite file (better-sqlite3), with consumer groups.
 *
 * - A topic has a fixed number of partitions (default 8), fixed when it is first used.
 *   A message goes to partition `murmur2(key) % partitions` (Kafka's default partitioner),
 *   and gets the next offset of that partition, so one key keeps its publish order.
 * - A consumer group owns partitions through leases in the same file. Live members of a group
 *   (in this process or in another one on the same file) split a topic's partitions by their
 *   index: partition p goes to member `p % members`. A member hands a partition over only
 *   after the message it is handling there is committed, so a partition never has two
 *   messages in flight for one group. A member that stopped heartbeating for
 *   `sessionTimeoutMs` (a crashed process) is evicted and its partitions reassigned.
 * - Delivery is at least once: an offset is committed after the handler resolved. A handler
 *   that keeps failing is retried, then its message is appended to `<topic>.dlq` and committed
 *   in the same transaction.
 * - Consumers wake at once on a publish in this process and poll for other processes' writes.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { createLogger, type Logger } from '../../shared/logger.js';
import { openSqliteFile } from '../sqlite-file.js';
import {
  deadLetterTopic,
  defaultRetryDelayMs,
  type ReadableBus,
  type BusMessage,
  type Consumer,
  type ConsumerOptions,
  type HeldMessage,
  type MessageHandler,
  type OutgoingMessage,
} from './port.js';
import { deliverWithRetries, type Delivery } from './delivery.js';

export interface EmbeddedBusOptions {
  /** Partitions of a topic this bus creates (default 8). An existing topic keeps its count. */
  partitions?: number;
  /** How often consumers look for other processes' writes and heartbeat (default 200 ms). */
  pollIntervalMs?: number;
  /** A group member silent for this long is evicted (default 10 s). */
  sessionTimeoutMs?: number;
  /**
   * Messages older than this are deleted, as Kafka's retention.ms does (default 7 days); the
   * newest message of each partition stays, so offsets keep counting up. 0 keeps everything.
   */
  retentionMs?: number;
  logger?: Logger;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS bus_topics (
  topic TEXT PRIMARY KEY,
  partitions INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS bus_messages (
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  message_offset INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  headers TEXT NOT NULL,
  published_at INTEGER NOT NULL,
  PRIMARY KEY (topic, partition_no, message_offset)
);
CREATE TABLE IF NOT EXISTS bus_offsets (
  group_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (group_id, topic, partition_no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bus_members (
  group_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  member_id TEXT NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  PRIMARY KEY (group_id, topic, member_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bus_leases (
  group_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  member_id TEXT NOT NULL,
  PRIMARY KEY (group_id, topic, partition_no)
) WITHOUT ROWID;
`;

const FETCH_BATCH = 100;

/** Kafka's murmur2 (as in its Java client and kafkajs), so keys land where Kafka would put them. */
export function murmur2(key: string): number {
  const data = Buffer.from(key, 'utf8');
  const m = 0x5bd1e995;
  let h = 0x9747b28c ^ data.length;
  const whole = data.length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  switch (data.length % 4) {
    case 3:
      h ^= data[whole + 2] << 16;
    // falls through
    case 2:
      h ^= data[whole + 1] << 8;
    // falls through
    case 1:
      h ^= data[whole];
      h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

export const partitionForKey = (key: string, partitions: number): number => (murmur2(key) & 0x7fffffff) % partitions;

/** In-process wake-ups, shared by every EmbeddedBus of this process that opened the same file. */
const signals = new EventEmitter();
signals.setMaxListeners(0);

interface MessageRow {
  message_offset: number;
  key: string;
  value: string;
  headers: string;
}

function prepareStatements(db: Database.Database) {
  return {
    insertTopic: db.prepare('INSERT OR IGNORE INTO bus_topics (topic, partitions) VALUES (?, ?)'),
    topicPartitions: db.prepare<[string], { partitions: number }>('SELECT partitions FROM bus_topics WHERE topic = ?'),
    endOffset: db.prepare<[string, number], { next: number }>(
      'SELECT coalesce(max(message_offset) + 1, 0) AS next FROM bus_messages WHERE topic = ? AND partition_no = ?',
    ),
    insertMessage: db.prepare(
      `INSERT INTO bus_messages (topic, partition_no, message_offset, key, value, headers, published_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    fetch: db.prepare<[string, number, number, number], MessageRow>(
      `SELECT message_offset, key, value, headers FROM bus_messages
       WHERE topic = ? AND partition_no = ? AND message_offset >= ? ORDER BY message_offset LIMIT ?`,
    ),
    committed: db.prepare<[string, string, number], { next_offset: number }>(
      'SELECT next_offset FROM bus_offsets WHERE group_id = ? AND topic = ? AND partition_no = ?',
    ),
    commit: db.prepare(
      `INSERT INTO bus_offsets (group_id, topic, partition_no, next_offset) VALUES (?, ?, ?, ?)
       ON CONFLICT (group_id, topic, partition_no) DO UPDATE SET next_offset = excluded.next_offset`,
    ),
    heartbeat: db.prepare(
      `INSERT INTO bus_members (group_id, topic, member_id, heartbeat_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (group_id, topic, member_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
    ),
    expiredMembers: db.prepare<[string, number], { member_id: string }>(
      'SELECT DISTINCT member_id FROM bus_members WHERE group_id = ? AND heartbeat_at < ?',
    ),
    members: db.prepare<[string, string], { member_id: string }>(
      'SELECT member_id FROM bus_members WHERE group_id = ? AND topic = ? ORDER BY member_id',
    ),
    deleteMember: db.prepare('DELETE FROM bus_members WHERE group_id = ? AND member_id = ?'),
    deleteMemberLeases: db.prepare('DELETE FROM bus_leases WHERE group_id = ? AND member_id = ?'),
    claimLease: db.prepare(
      'INSERT OR IGNORE INTO bus_leases (group_id, topic, partition_no, member_id) VALUES (?, ?, ?, ?)',
    ),
    leaseOwner: db.prepare<[string, string, number], { member_id: string }>(
      'SELECT member_id FROM bus_leases WHERE group_id = ? AND topic = ? AND partition_no = ?',
    ),
    memberLeases: db.prepare<[string, string], { topic: string; partition_no: number }>(
      'SELECT topic, partition_no FROM bus_leases WHERE group_id = ? AND member_id = ?',
    ),
    releaseLease: db.prepare(
      'DELETE FROM bus_leases WHERE group_id = ? AND topic = ? AND partition_no = ? AND member_id = ?',
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

export class EmbeddedBus implements ReadableBus {
  readonly kind = 'embedded';
  readonly db: Database.Database;
  private readonly partitions: number;
  readonly pollIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly logger: Logger;
  /** Name of this file on the in-process signal emitter. */
  private readonly channel: string;
  private readonly topicPartitions = new Map<string, number>();
  private readonly consumers = new Set<EmbeddedConsumer>();
  private closed = false;
  private closing?: Promise<void>;
  readonly sql: Statements;
  private readonly transaction: Database.Transaction<(work: () => unknown) => unknown>;
  private readonly retentionTimer?: NodeJS.Timeout;

  constructor(
    readonly file: string,
    options: EmbeddedBusOptions = {},
  ) {
    this.partitions = options.partitions ?? 8;
    this.pollIntervalMs = options.pollIntervalMs ?? 200;
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10_000;
    this.logger = options.logger ?? createLogger('warn');
    const inMemory = file === ':memory:' || file === '';
    this.channel = inMemory ? `memory:${randomUUID()}` : path.resolve(file);
    const db = openSqliteFile(file, 'embedded bus log', 'NORMAL');
    try {
      db.exec(SCHEMA);
    } catch (error) {
      db.close();
      throw new Error(`cannot create the embedded bus tables in ${path.resolve(file)}: ${(error as Error).message}`);
    }
    this.db = db;
    this.sql = prepareStatements(db);
    this.transaction = db.transaction((work: () => unknown) => work());
    const retentionMs = options.retentionMs ?? 7 * 24 * 3_600_000;
    if (retentionMs > 0) {
      this.retentionTimer = setInterval(() => {
        try {
          const deleted = this.deleteOlderThan(Date.now() - retentionMs);
          if (deleted > 0) this.logger.info({ deleted, retentionMs }, 'embedded bus: old messages deleted');
        } catch (error) {
          this.logger.warn({ err: error }, 'embedded bus: retention run failed; it runs again in an hour');
        }
      }, 3_600_000);
      this.retentionTimer.unref();
    }
  }

  /** Deletes messages published before `cutoffMs`, except each partition's newest. Returns how many. */
  deleteOlderThan(cutoffMs: number): number {
    this.assertOpen();
    return this.write(
      () =>
        this.db
          .prepare(
            `DELETE FROM bus_messages AS m WHERE published_at < ? AND message_offset <
               (SELECT max(message_offset) FROM bus_messages WHERE topic = m.topic AND partition_no = m.partition_no)`,
          )
          .run(cutoffMs).changes,
    );
  }

  /** Wakes every partition worker of the topic (a publish whose partitions are not known). */
  topicChannel(topic: string): string {
    return `${this.channel}\0topic\0${topic}`;
  }

  /** Wakes the one partition worker of this partition: a publish wakes only the partitions it wrote to. */
  partitionChannel(topic: string, partition: number): string {
    return `${this.topicChannel(topic)}\0${partition}`;
  }

  groupChannel(groupId: string): string {
    return `${this.channel}\0group\0${groupId}`;
  }

  /** Partition count of a topic, creating the topic with this bus's default when it is new. */
  partitionsOf(topic: string): number {
    const known = this.topicPartitions.get(topic);
    if (known !== undefined) return known;
    this.sql.insertTopic.run(topic, this.partitions);
    const count = this.sql.topicPartitions.get(topic)!.partitions;
    this.topicPartitions.set(topic, count);
    return count;
  }

  /**
   * Appends inside the caller's write transaction; the caller signals consumers after it commits.
   * Returns the partitions written to.
   */
  append(topic: string, messages: OutgoingMessage[]): number[] {
    const partitions = this.partitionsOf(topic);
    const nextOffsets = new Map<number, number>();
    const now = Date.now();
    for (const message of messages) {
      const partition = partitionForKey(message.key, partitions);
      const offset = nextOffsets.get(partition) ?? this.sql.endOffset.get(topic, partition)!.next;
      this.sql.insertMessage.run(
        topic,
        partition,
        offset,
        message.key,
        message.value,
        JSON.stringify(message.headers ?? {}),
        now,
      );
      nextOffsets.set(partition, offset + 1);
    }
    return [...nextOffsets.keys()];
  }

  /** Runs `work` in a write transaction taken up front (so offsets are read and written atomically). */
  write<T>(work: () => T): T {
    return this.transaction.immediate(work) as T;
  }

  async publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    if (messages.length === 0) return;
    this.announce(topic, this.write(() => this.append(topic, messages)));
  }

  /** After a commit: wakes the consumers of the partitions written to, and tells the publish listeners. */
  private announce(topic: string, partitions: number[]): void {
    this.wakePartitions(topic, partitions);
    for (const listener of this.publishListeners) listener(topic, partitions);
  }

  /** Publishes to several topics in one transaction: all of them are stored, or none (a dead letter's replay and its mark). */
  async publishAll(batches: { topic: string; messages: OutgoingMessage[] }[]): Promise<void> {
    this.assertOpen();
    const written = this.write(() => batches.map(({ topic, messages }) => ({ topic, partitions: messages.length > 0 ? this.append(topic, messages) : [] })));
    for (const { topic, partitions } of written) if (partitions.length > 0) this.announce(topic, partitions);
  }

  /** Every message the topic holds (after retention), by partition and offset; none for a topic never used. */
  async readTopic(topic: string): Promise<HeldMessage[]> {
    this.assertOpen();
    const rows = this.db
      .prepare<[string], { partition_no: number; message_offset: number; key: string; value: string; headers: string; published_at: number }>(
        `SELECT partition_no, message_offset, key, value, headers, published_at FROM bus_messages
         WHERE topic = ? ORDER BY partition_no, message_offset`,
      )
      .all(topic);
    return rows.map((row) => ({
      partition: row.partition_no,
      offset: String(row.message_offset),
      key: row.key,
      value: row.value,
      headers: JSON.parse(row.headers) as Record<string, string>,
      timestamp: new Date(row.published_at).toISOString(),
    }));
  }

  /** How many messages the topic holds (after retention). */
  async heldMessages(topic: string): Promise<number> {
    this.assertOpen();
    return this.db.prepare<[string], { held: number }>('SELECT count(*) AS held FROM bus_messages WHERE topic = ?').get(topic)!.held;
  }

  /**
   * Only the workers of the partitions written to look (a topic has 8 and a publish of one
   * message wrote to one: waking all had each of the other 7 query an empty partition).
   */
  private wakePartitions(topic: string, partitions: number[]): void {
    for (const partition of partitions) signals.emit(this.partitionChannel(topic, partition));
  }

  private readonly publishListeners: ((topic: string, partitions: number[]) => void)[] = [];

  /** `listener` hears each publish of this bus, its topic and partitions (a consumer in another thread can then be woken). */
  onPublish(listener: (topic: string, partitions: number[]) => void): void {
    this.publishListeners.push(listener);
  }

  /** Another connection to this file published to these partitions of `topic` (the main thread): its consumers here look now, not at their next poll. */
  announcePublished(topic: string, partitions: number[]): void {
    this.wakePartitions(topic, partitions);
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    this.assertOpen();
    if (options.topics.length === 0) throw new Error('embedded bus: consume() needs at least one topic');
    const consumer = new EmbeddedConsumer(this, options, handler, () => this.consumers.delete(consumer));
    this.consumers.add(consumer);
    await consumer.start();
    return consumer;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    this.db.prepare('SELECT 1').get();
  }

  async consumerLag(groupId: string, topics: string[]): Promise<{ topic: string; messages: number }[]> {
    this.assertOpen();
    const lag = this.db.prepare<[string, string, string], { messages: number }>(
      `SELECT coalesce(sum(m.next - coalesce(o.next_offset, m.first)), 0) AS messages
       FROM (SELECT partition_no, min(message_offset) AS first, max(message_offset) + 1 AS next
             FROM bus_messages WHERE topic = ? GROUP BY partition_no) AS m
       LEFT JOIN bus_offsets AS o ON o.group_id = ? AND o.topic = ? AND o.partition_no = m.partition_no`,
    );
    return topics.map((topic) => ({ topic, messages: Math.max(0, lag.get(topic, groupId, topic)?.messages ?? 0) }));
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      clearInterval(this.retentionTimer);
      await Promise.all([...this.consumers].map((consumer) => consumer.close()));
      this.db.close();
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`embedded bus ${this.file} is closed`);
  }
}

class EmbeddedConsumer implements Consumer {
  readonly memberId = randomUUID();
  readonly groupId: string;
  private readonly topics: string[];
  private readonly maxAttempts: number;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly fromBeginning: boolean;
  private readonly workers = new Map<string, PartitionWorker>();
  private readonly abort = new AbortController();
  private timer?: NodeJS.Timeout;
  private rebalanceQueued = false;
  /** Resolves start() once every partition this member wants is its own. */
  private onSettled?: () => void;
  private closing?: Promise<void>;

  constructor(
    readonly bus: EmbeddedBus,
    options: ConsumerOptions,
    readonly handler: MessageHandler,
    private readonly onClosed: () => void,
  ) {
    this.groupId = options.groupId;
    this.topics = [...new Set(options.topics)];
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    this.retryDelayMs = options.retryDelayMs ?? defaultRetryDelayMs;
    this.fromBeginning = options.fromBeginning ?? true;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * Joins the group and resolves once this member holds its share of the partitions, like a
   * Kafka group join. Another member hands a partition over after its in-flight message; a
   * crashed one only after the session timeout, so the wait is bounded by that.
   */
  async start(): Promise<void> {
    const settled = new Promise<void>((resolve) => (this.onSettled = resolve));
    signals.on(this.bus.groupChannel(this.groupId), this.queueRebalance);
    this.rebalance();
    signals.emit(this.bus.groupChannel(this.groupId));
    this.timer = setInterval(() => this.rebalance(), this.bus.pollIntervalMs);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.bus.sessionTimeoutMs + 2 * this.bus.pollIntervalMs);
    });
    await Promise.race([settled, timeout]);
    clearTimeout(timer);
  }

  private readonly queueRebalance = (): void => {
    if (this.rebalanceQueued || this.abort.signal.aborted) return;
    this.rebalanceQueued = true;
    setImmediate(() => {
      this.rebalanceQueued = false;
      this.rebalance();
    });
  };

  /** Heartbeats, evicts silent members, claims this member's share and hands back the rest. */
  private rebalance(): void {
    if (this.abort.signal.aborted) return;
    let assignment: { owned: Set<string>; wanted: Set<string>; evicted: boolean };
    try {
      assignment = this.bus.write(() => this.assign());
    } catch (error) {
      this.bus.logger.warn({ err: error, groupId: this.groupId }, 'embedded bus: rebalance failed, retrying on next poll');
      return;
    }
    if (assignment.evicted) signals.emit(this.bus.groupChannel(this.groupId));
    if ([...assignment.wanted].every((id) => assignment.owned.has(id))) this.onSettled?.();
    for (const [id, worker] of this.workers) {
      if (!assignment.owned.has(id)) worker.stop();
      else if (!assignment.wanted.has(id)) worker.revoke();
    }
    for (const id of assignment.owned) {
      if (this.workers.has(id)) continue;
      const [topic, partition] = splitPartitionId(id);
      if (!assignment.wanted.has(id)) {
        this.releaseLease(topic, partition);
        continue;
      }
      const worker = new PartitionWorker(this, topic, partition);
      this.workers.set(id, worker);
      void worker.run().finally(() => {
        if (this.workers.get(id) === worker) this.workers.delete(id);
      });
    }
  }

  private assign() {
    const { sql } = this.bus;
    const now = Date.now();
    let evicted = false;
    for (const { member_id } of sql.expiredMembers.all(this.groupId, now - this.bus.sessionTimeoutMs)) {
      if (member_id === this.memberId) continue;
      sql.deleteMember.run(this.groupId, member_id);
      sql.deleteMemberLeases.run(this.groupId, member_id);
      evicted = true;
    }
    const wanted = new Set<string>();
    for (const topic of this.topics) {
      sql.heartbeat.run(this.groupId, topic, this.memberId, now);
      const members = sql.members.all(this.groupId, topic).map((row) => row.member_id);
      const index = members.indexOf(this.memberId);
      const partitions = this.bus.partitionsOf(topic);
      for (let partition = index; partition < partitions; partition += members.length) {
        wanted.add(partitionId(topic, partition));
        sql.claimLease.run(this.groupId, topic, partition, this.memberId);
      }
    }
    const owned = new Set(
      sql.memberLeases.all(this.groupId, this.memberId).map((row) => partitionId(row.topic, row.partition_no)),
    );
    return { owned, wanted, evicted };
  }

  releaseLease(topic: string, partition: number): void {
    try {
      this.bus.write(() => this.bus.sql.releaseLease.run(this.groupId, topic, partition, this.memberId));
    } catch (error) {
      this.bus.logger.warn({ err: error, groupId: this.groupId, topic, partition }, 'embedded bus: lease release failed');
      return;
    }
    signals.emit(this.bus.groupChannel(this.groupId));
  }

  /** Where a newly owned partition starts: the committed offset, else the start or the end. */
  startOffset(topic: string, partition: number): number {
    const { sql } = this.bus;
    return this.bus.write(() => {
      const committed = sql.committed.get(this.groupId, topic, partition);
      if (committed) return committed.next_offset;
      if (this.fromBeginning) return 0;
      // Remember "latest" as a commit, so a restart does not skip what was published meanwhile.
      const end = sql.endOffset.get(topic, partition)!.next;
      sql.commit.run(this.groupId, topic, partition, end);
      return end;
    });
  }

  /** Commits `offset + 1` if this member still holds the partition; false when it lost it. */
  commit(topic: string, partition: number, offset: number, deadLetter?: OutgoingMessage): boolean {
    const { sql } = this.bus;
    const committed = this.bus.write(() => {
      if (sql.leaseOwner.get(this.groupId, topic, partition)?.member_id !== this.memberId) return false;
      if (deadLetter) this.bus.append(deadLetterTopic(topic), [deadLetter]);
      sql.commit.run(this.groupId, topic, partition, offset + 1);
      return true;
    });
    if (committed && deadLetter) signals.emit(this.bus.topicChannel(deadLetterTopic(topic)));
    return committed;
  }

  /** Runs the handler with retries; 'abandoned' when the consumer stopped meanwhile. */
  deliver(message: BusMessage, signal: AbortSignal): Promise<Delivery> {
    return deliverWithRetries(message, this.handler, {
      maxAttempts: this.maxAttempts,
      retryDelayMs: this.retryDelayMs,
      signal,
      logger: this.bus.logger,
      adapter: 'embedded bus',
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.abort.abort();
      clearInterval(this.timer);
      signals.off(this.bus.groupChannel(this.groupId), this.queueRebalance);
      const running = [...this.workers.values()];
      for (const worker of running) worker.stop();
      await Promise.all(running.map((worker) => worker.done));
      try {
        this.bus.write(() => {
          this.bus.sql.deleteMemberLeases.run(this.groupId, this.memberId);
          this.bus.sql.deleteMember.run(this.groupId, this.memberId);
        });
      } catch (error) {
        // The file may be gone or closed; the member then expires after the session timeout.
        this.bus.logger.warn({ err: error, groupId: this.groupId }, 'embedded bus: could not leave the group');
      }
      signals.emit(this.bus.groupChannel(this.groupId));
      this.onClosed();
    })();
    return this.closing;
  }
}

const partitionId = (topic: string, partition: number): string => `${partition}\0${topic}`;

function splitPartitionId(id: string): [string, number] {
  const cut = id.indexOf('\0');
  return [id.slice(cut + 1), Number(id.slice(0, cut))];
}


/** Delivers one partition's messages in order, one at a time, for one group member. */
class PartitionWorker {
  private readonly abort = new AbortController();
  /** Set when the partition should go to another member after the current message. */
  private revoked = false;
  private wake?: () => void;
  /** A publish was heard since the last fetch (see loop). */
  private published = false;
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly consumer: EmbeddedConsumer,
    private readonly topic: string,
    private readonly partition: number,
  ) {}

  run(): Promise<void> {
    this.done = this.loop().catch((error: unknown) => {
      this.consumer.bus.logger.error(
        { err: error, topic: this.topic, partition: this.partition },
        'embedded bus: partition worker stopped',
      );
    });
    return this.done;
  }

  /** Abandon at once: an in-flight message is not committed. */
  stop(): void {
    this.abort.abort();
  }

  /** Hand the partition back after the current message is committed. */
  revoke(): void {
    this.revoked = true;
    this.wake?.();
  }

  private async loop(): Promise<void> {
    const { consumer, topic, partition } = this;
    const { bus } = consumer;
    const signal = AbortSignal.any([this.abort.signal, consumer.signal]);
    // Publishes to this partition (or a wake of the whole topic) are heard all along, not only
    // while idle: one that comes while messages are delivered makes the next fetch, and a worker
    // that heard of none since its last fetch of a short batch idles without fetching again.
    const channels = [bus.topicChannel(topic), bus.partitionChannel(topic, partition)];
    const onPublish = () => {
      this.published = true;
      this.wake?.();
    };
    for (const channel of channels) signals.on(channel, onPublish);
    try {
      let position = consumer.startOffset(topic, partition);
      while (!signal.aborted && !this.revoked) {
        this.published = false;
        const rows = bus.sql.fetch.all(topic, partition, position, FETCH_BATCH);
        for (const row of rows) {
          if (signal.aborted || this.revoked) break;
          const message: BusMessage = {
            topic,
            partition,
            offset: String(row.message_offset),
            key: row.key,
            value: row.value,
            headers: JSON.parse(row.headers) as Record<string, string>,
            attempt: 1,
          };
          const delivery = await consumer.deliver(message, signal);
          if (delivery.outcome === 'abandoned' || signal.aborted) return;
          if (!consumer.commit(topic, partition, row.message_offset, delivery.deadLetter)) return;
          position = row.message_offset + 1;
        }
        if (signal.aborted || this.revoked) break;
        // A short batch was the partition's end when it was read: unless a publish came since, wait.
        if (rows.length < FETCH_BATCH && !this.published) await this.idle(signal);
      }
    } finally {
      for (const channel of channels) signals.off(channel, onPublish);
    }
    if (this.revoked && !signal.aborted) consumer.releaseLease(topic, partition);
  }

  /** Waits for a publish to the partition (this process, or announced), the poll interval (other processes), a revoke or a stop. */
  private idle(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.consumer.bus.pollIntervalMs);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}
