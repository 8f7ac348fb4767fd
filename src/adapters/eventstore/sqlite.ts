import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import type Database from 'better-sqlite3';
import { openSqliteFile } from '../sqlite-file.js';
import { overloadState } from '../../shared/overload-state.js';
import { backstopPages, checkpointInBackground } from '../sqlite-checkpointer.js';
import {
  ConcurrencyError,
  type AppendResult,
  type EventFilter,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type StoredEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionBatch,
} from './port.js';

/** An events-table row as queried; what one connection hands another (StoredRow, announceAppend). */
export interface StoredRow {
  position: number;
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
}

type Row = StoredRow;

/**
 * How long announced commits of another connection may wait for the subscribers (see
 * announceAppend). Measured with bench/profile/sends-profile.ts (docs/benchmarks.md): a wake per
 * commit cost the main thread 1,850-1,900 µs an email, 20 ms 1,450-1,470, 100 ms 1,190-1,220.
 */
const ANNOUNCED_WAKE_MS = 100;

const toEvent = (row: Row): StoredEvent => ({
  id: row.id,
  type: row.type,
  data: JSON.parse(row.data),
  metadata: JSON.parse(row.metadata),
  streamName: row.stream,
  revision: row.revision,
  position: row.position,
  recordedAt: row.recorded_at,
});

/**
 * Work another embedded adapter does inside an append's transaction, on the event store's own
 * connection (the key store writes the data keys of new guests there: src/adapters/keystore/embedded.ts).
 */
export interface AppendParticipant {
  /**
   * Runs inside the caller's savepoint, after its events are inserted: a throw fails that caller
   * alone (its events and whatever this wrote roll back). The returned function, if any, runs
   * once the transaction committed (before the caller's promise settles).
   */
  duringAppend(appends: StreamAppend[]): (() => void) | undefined;
}

/** Embedded event store: one SQLite table, global position = rowid. */
export class SqliteEventStore implements EventStore {
  readonly kind = 'sqlite';
  readonly atomicBatches = true;
  private readonly db: Database.Database;
  private readonly appended = new EventEmitter();
  private readonly statements;
  /** One caller's appends: all of its streams or none (a savepoint inside the group's transaction). */
  private readonly appendOne;
  /** Every append waiting in this tick, in one transaction: one commit (one fsync) for all. */
  private readonly appendGroup;
  /** WAL checkpoints in a background thread (src/adapters/sqlite-checkpointer.ts), not inside group commits. */
  private readonly checkpoints: { release(): Promise<void> };
  private readonly participants: AppendParticipant[] = [];
  private pending: { appends: StreamAppend[]; resolve: (r: AppendResult[]) => void; reject: (e: unknown) => void }[] = [];
  private closed = false;
  /** Durability off the event loop (synchronous=FULL on a file): see `whenDurable`. */
  private readonly wal?: WalSync;

  constructor(
    readonly file: string,
    options: { pollIntervalMs?: number; synchronous?: 'FULL' | 'NORMAL' } = {},
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    const durable = (options.synchronous ?? 'FULL') === 'FULL' && file !== ':memory:';
    // FULL durability is kept by syncing the WAL ourselves, off the event loop (WalSync); the
    // connection itself commits without an fsync.
    this.db = openSqliteFile(file, 'event store', durable ? 'NORMAL' : (options.synchronous ?? 'FULL'));
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        stream TEXT NOT NULL,
        revision INTEGER NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        metadata TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        UNIQUE (stream, revision)
      );
    `);
    this.db.pragma(`wal_autocheckpoint = ${backstopPages}`);
    this.checkpoints = checkpointInBackground(file, options.synchronous ?? 'FULL');
    this.appended.setMaxListeners(0);
    this.statements = {
      lastRevision: this.db.prepare<[string], { revision: number | null }>(
        'SELECT MAX(revision) AS revision FROM events WHERE stream = ?',
      ),
      byId: this.db.prepare<[string], { stream: string; revision: number; position: number }>(
        'SELECT stream, revision, position FROM events WHERE id = ?',
      ),
      insert: this.db.prepare(
        'INSERT INTO events (id, stream, revision, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      forwards: this.db.prepare<[string, number, number], Row>(
        'SELECT * FROM events WHERE stream = ? AND revision >= ? ORDER BY revision ASC LIMIT ?',
      ),
      // A whole stream (what every command reads): without a LIMIT the query runs ~2.5x faster.
      forwardsAll: this.db.prepare<[string, number], Row>('SELECT * FROM events WHERE stream = ? AND revision >= ? ORDER BY revision ASC'),
      backwards: this.db.prepare<[string, number, number], Row>(
        'SELECT * FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?',
      ),
      head: this.db.prepare<[], { position: number | null }>('SELECT MAX(position) AS position FROM events'),
      after: this.db.prepare<[number, number, number], Row>('SELECT * FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ?'),
      before: this.db.prepare<[number, number], Pick<Row, 'position' | 'stream' | 'type'>>(
        'SELECT position, stream, type FROM events WHERE position < ? ORDER BY position DESC LIMIT ?',
      ),
    };
    this.appendOne = this.db.transaction((appends: StreamAppend[]) => {
      const rows: Row[] = [];
      const results = appends.map((a) => this.appendInTransaction(a.streamName, a.events, a.expectedRevision, rows));
      let committed: (() => void)[] | undefined;
      for (const participant of this.participants) {
        const then = participant.duringAppend(appends);
        if (then) (committed ??= []).push(then);
      }
      return { results, committed, rows };
    });
    if (durable) this.wal = new WalSync(`${file}-wal`, () => Number(this.statements.head.get()?.position ?? -1));
    this.knownHead = Number(this.statements.head.get()?.position ?? -1);
    this.appendGroup = this.db.transaction((requests: StreamAppend[][]) =>
      requests.map((appends) => {
        try {
          return { ok: true as const, ...this.appendOne(appends) };
        } catch (error) {
          // better-sqlite3 rolled this caller's savepoint back; the others still commit.
          return { ok: false as const, error };
        }
      }),
    );
  }

  /**
   * The connection, for an adapter that keeps its table in this file and writes it in the same
   * transactions (`participate`). Its own transactions must be synchronous (never span an await).
   */
  get connection(): Database.Database {
    return this.db;
  }

  /**
   * `listener` hears each group of appends this connection committed, with the position up to
   * which the file is then durable and the rows the group wrote (another thread's store can then
   * be told: announceAppend).
   */
  onAppend(listener: (durablePosition: number, rows: StoredRow[]) => void): void {
    this.appended.on('append', (position: number, rows?: StoredRow[]) => {
      if (position >= 0) listener(position, rows ?? []);
    });
  }

  /**
   * Another connection to this file appended (the workers' thread), and synced the WAL up to
   * `durablePosition`: one fsync of the file covers every commit before it, this connection's
   * included, so subscribers read the rows now, without syncing them again, and read the `rows`
   * it wrote from memory, as if this connection had written them.
   */
  announceAppend(durablePosition: number, rows: StoredRow[] = []): void {
    this.recent.add(rows);
    this.noteKnown(rows);
    this.wal?.markDurable(durablePosition);
    // Subscribers take the announced commits together, at most every ANNOUNCED_WAKE_MS: the
    // thread commits an email's events one by one, and each wake costs every subscriber a batch.
    this.announcedWake ??= setTimeout(() => {
      this.announcedWake = undefined;
      this.appended.emit('append', -1);
    }, ANNOUNCED_WAKE_MS);
  }

  /**
   * Another connection of this process (the workers' thread) announces each of its commits with
   * its rows (announceAppend). From now on a subscriber woken by an append reads only as far as
   * the commits it was told of: rows committed by that connection and not yet announced come
   * with their announcement, from memory, instead of being read from the file (and synced again)
   * by whichever subscriber wakes first. Rows of other processes are still found by the
   * subscribers' polls, which read to the end of the table.
   */
  expectAnnouncements(): void {
    this.announced = true;
  }

  private noteKnown(rows: StoredRow[]): void {
    const last = rows[rows.length - 1];
    if (last && last.position > this.knownHead) this.knownHead = last.position;
  }

  /** `participant` writes inside every append's transaction from now on (see AppendParticipant). */
  participate(participant: AppendParticipant): void {
    this.participants.push(participant);
  }

  private readonly pollIntervalMs: number;
  /** See expectAnnouncements: whether another connection announces its commits, and the last position committed or announced. */
  private announced = false;
  private knownHead = -1;
  private announcedWake?: NodeJS.Timeout;
  /** The rows this process committed last, for subscribers that are caught up (RecentRows). */
  private readonly recent = new RecentRows();
  /** headPosition(filter) answers, with the store head each was found at (see headPosition). */
  private readonly filteredHeads = new Map<string, { scannedTo: number; position: number }>();

  async append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMany([{ streamName, events, expectedRevision }]);
    return result!;
  }

  /**
   * Group commit: appends that arrive in the same tick share one transaction, each in its own
   * savepoint, so concurrent requests pay for one fsync instead of one each. A caller's promise
   * settles only after the commit: an acknowledged append is on disk (synchronous=FULL).
   */
  appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (appends.length === 0) return Promise.resolve([]);
    if (this.closed) return Promise.reject(new Error(`the event store at ${this.file} is closed`));
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(() => this.flush());
      this.pending.push({ appends, resolve, reject });
    });
  }

  private flush(): void {
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return;
    let outcomes: ReturnType<typeof this.appendGroup>;
    try {
      outcomes = this.appendGroup.immediate(group.map((g) => g.appends));
    } catch (error) {
      for (const request of group) request.reject(error);
      return;
    }
    let position = -1;
    const committed: Row[] = [];
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) {
        // Committed (durable with the events, below): participants forget what they wrote.
        if (outcome.committed) for (const then of outcome.committed) then();
        position = Math.max(position, ...outcome.results.map((r) => r.position));
        this.recent.add(outcome.rows);
        this.noteKnown(outcome.rows);
        committed.push(...outcome.rows);
      } else group[i]!.reject(outcome.error);
    });
    const settle = () => {
      outcomes.forEach((outcome, i) => {
        if (outcome.ok) group[i]!.resolve(outcome.results);
      });
      if (position >= 0) this.appended.emit('append', position, committed);
    };
    if (!this.wal || position < 0) return settle();
    // Acknowledged (and shown to subscribers) once the WAL holding the commit is on disk.
    this.wal.whenDurable(position).then(settle, (error: unknown) => {
      outcomes.forEach((outcome, i) => {
        if (outcome.ok) group[i]!.reject(error);
      });
    });
  }

  /** The last metadata object serialised, and its JSON: the events of a batch share one (metadata is never mutated). */
  private lastMetadata?: NewEvent['metadata'];
  private lastMetadataJson = '';

  private metadataJson(metadata: NewEvent['metadata']): string {
    if (metadata !== this.lastMetadata) {
      this.lastMetadataJson = JSON.stringify(metadata);
      this.lastMetadata = metadata;
    }
    return this.lastMetadataJson;
  }

  private appendInTransaction(streamName: string, events: NewEvent[], expected: ExpectedRevision, rows: Row[]): AppendResult {
    const last = this.statements.lastRevision.get(streamName)?.revision ?? null;
    const actual = last === null ? 'no_stream' : last;
    // An event id already stored means this append is a retry of one that succeeded. As
    // EventStoreDB answers it: the revision and position of the retried events themselves (not
    // the stream's end, which a cached fold would otherwise take as including later writes), and
    // a conflict when only some of the events are stored, or stored elsewhere.
    const first = events[0] && this.statements.byId.get(events[0].id);
    if (first) {
      let stored = first;
      for (let i = 1; i < events.length; i++) {
        const next = this.statements.byId.get(events[i]!.id);
        if (!next || next.stream !== first.stream || next.revision !== first.revision + i) throw new ConcurrencyError(streamName, expected, actual);
        stored = next;
      }
      if (first.stream !== streamName) throw new ConcurrencyError(streamName, expected, actual);
      return { nextRevision: stored.revision, position: stored.position };
    }
    const ok =
      expected === 'any' ||
      (expected === 'no_stream' && last === null) ||
      (expected === 'stream_exists' && last !== null) ||
      (typeof expected === 'number' && last === expected);
    if (!ok) throw new ConcurrencyError(streamName, expected, actual);
    const recordedAt = new Date().toISOString();
    let revision = last ?? -1;
    let position = -1;
    for (const event of events) {
      revision += 1;
      const data = JSON.stringify(event.data);
      const metadata = this.metadataJson(event.metadata);
      const info = this.statements.insert.run(event.id, streamName, revision, event.type, data, metadata, recordedAt);
      position = Number(info.lastInsertRowid);
      rows.push({ position, id: event.id, stream: streamName, revision, type: event.type, data, metadata, recorded_at: recordedAt });
    }
    if (events.length === 0) position = Number(this.statements.head.get()?.position ?? -1);
    return { nextRevision: revision, position };
  }

  async readStream(streamName: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const max = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    const rows =
      options.direction === 'backwards'
        ? this.statements.backwards.all(streamName, options.fromRevision ?? Number.MAX_SAFE_INTEGER, max)
        : options.maxCount === undefined
          ? this.statements.forwardsAll.all(streamName, options.fromRevision ?? 0)
          : this.statements.forwards.all(streamName, options.fromRevision ?? 0, max);
    return rows.map(toEvent);
  }

  /** With a filter: walks back from the end, a page at a time, to the last matching event. */
  async headPosition(filter?: EventFilter): Promise<number> {
    const head = Number(this.statements.head.get()?.position ?? -1);
    if (!filter) return head;
    // Incremental: the answer for a filter is kept with the head it was found at, and a later
    // call walks back only over the events appended since. Without it a filter whose last match
    // is far back (the accounts projection behind a stream of scans) re-read the whole tail on
    // every call: the metrics probe asks for every projection each scrape.
    const key = JSON.stringify(filter);
    const known = this.filteredHeads.get(key);
    if (known && known.scannedTo >= head) return known.position;
    const matches = compileFilter(filter);
    const floor = known?.scannedTo ?? -1;
    let position = known?.position ?? -1;
    let before = head + 1;
    // The last event usually matches: a small first page, larger ones after.
    for (let page = 16; ; page = Math.min(page * 4, 4096)) {
      const rows = this.statements.before.all(before, page).filter((row) => row.position > floor);
      const hit = rows.find((row) => matches(row as Row));
      if (hit) {
        position = hit.position;
        break;
      }
      if (rows.length < page) break;
      before = rows[rows.length - 1]!.position;
    }
    if (this.filteredHeads.size >= 256) this.filteredHeads.clear();
    this.filteredHeads.set(key, { scannedTo: head, position });
    return position;
  }

  /** Catch-up then live: reads batches after the last position, waits for an append (or polls, for other processes). */
  subscribeToAll(options: SubscribeOptions = {}): Subscription {
    const batchSize = options.batchSize ?? 1000;
    const filter = compileFilter(options.filter);
    const read = this.reader(options.filter?.streamPrefixes);
    let position = options.fromPosition ?? -1;
    let stopped = false;
    let wake: (() => void) | undefined;
    const onAppend = () => wake?.();
    this.appended.on('append', onAppend);
    const store = this;

    async function* batches(): AsyncGenerator<SubscriptionBatch> {
      // Woken by an append (not by the poll): with announcements, read only what was announced.
      let woken = false;
      try {
        while (!stopped && !store.closed) {
          const knownOnly = woken && store.announced;
          // Only what is on disk reaches subscribers (read models, the bus): see WalSync. The
          // bound is taken when the rows are read (no await in between), so an append announced
          // meanwhile is never missed before the wait below.
          const unsynced = store.wal?.unsyncedHead(knownOnly ? store.knownHead : undefined);
          if (unsynced !== undefined) await store.wal!.whenDurable(unsynced);
          const durable = store.wal ? store.wal.durablePosition : Number.MAX_SAFE_INTEGER;
          const bound = knownOnly ? Math.min(durable, store.knownHead) : durable;
          const { rows, scannedTo } = read(position, batchSize, bound);
          if (scannedTo <= position) {
            woken = await new Promise<boolean>((resolve) => {
              const timer = setTimeout(() => resolve(false), store.pollIntervalMs);
              wake = () => {
                clearTimeout(timer);
                resolve(true);
              };
            });
            wake = undefined;
            continue;
          }
          position = scannedTo;
          const events = rows.filter(filter).map(toEvent);
          yield { events, position };
          // A full batch: more follow (a catch-up after a restart, a rebuild). Every read here and
          // every write of a read-store subscriber completes synchronously, so without a turn of
          // the event loop between batches the whole catch-up ran as one task: the service did
          // not listen, answer or write a log line until it was done (docs/operations.md).
          if (rows.length >= batchSize) await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        store.appended.off('append', onAppend);
      }
    }
    const iterator = batches();
    return {
      [Symbol.asyncIterator]: () => iterator,
      stop: async () => {
        stopped = true;
        wake?.();
        this.appended.off('append', onAppend);
      },
    };
  }

  /**
   * Reads the next rows after a position. With stream prefixes the filter runs in SQL (GLOB on
   * the stream name), so a subscriber to a few categories does not parse every other event;
   * it still learns how far the store was scanned, matching rows or not.
   */
  private reader(prefixes: string[] | undefined): (after: number, limit: number, bound: number) => { rows: Row[]; scannedTo: number } {
    const fromDisk = this.diskReader(prefixes);
    // A caught-up subscriber gets the rows this process just committed without a query (the
    // subscription's filter, applied to every batch, also applies the stream prefixes).
    return (after, limit, bound) => this.recent.after(after, limit, bound) ?? fromDisk(after, limit, bound);
  }

  private diskReader(prefixes: string[] | undefined): (after: number, limit: number, bound: number) => { rows: Row[]; scannedTo: number } {
    if (!prefixes || prefixes.length === 0 || prefixes.some((p) => p === '' || /[*?[\]]/.test(p))) {
      return (after, limit, bound) => {
        const rows = this.statements.after.all(after, bound, limit);
        return { rows, scannedTo: rows.length > 0 ? rows[rows.length - 1]!.position : after };
      };
    }
    const globs = prefixes.map((p) => `${p}*`);
    const statement = this.db.prepare<unknown[], Row>(
      `SELECT * FROM events WHERE position > ? AND position <= ? AND (${globs.map(() => 'stream GLOB ?').join(' OR ')}) ORDER BY position LIMIT ?`,
    );
    return (after, limit, bound) => {
      const head = Math.min(bound, Number(this.statements.head.get()?.position ?? -1));
      if (head <= after) return { rows: [], scannedTo: after };
      const rows = statement.all(after, head, ...globs, limit);
      return { rows, scannedTo: rows.length === limit ? rows[rows.length - 1]!.position : head };
    };
  }

  async ping(): Promise<void> {
    this.wal?.check();
    this.statements.head.get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Appends already accepted are written, and on disk, before the file closes.
    this.flush();
    this.closed = true;
    clearTimeout(this.announcedWake);
    await this.wal?.close();
    this.appended.emit('append', -1);
    await this.checkpoints.release();
    this.db.close();
  }
}

/**
 * The last rows this process committed (and those another thread of it announced), in position
 * order, as a query of the events table returns them. A subscriber caught up to just before them
 * reads them from here instead of querying. Only an unbroken run is served: at a gap in the
 * positions (rows another process committed in between) the subscriber queries the table, which
 * has them.
 */
export class RecentRows {
  private rows: Row[] = [];

  constructor(private readonly max = 4_096) {}

  /**
   * Adds one commit's rows, an unbroken run of positions. A run of another connection (the
   * workers' thread) may come after later rows of this one: it goes into its place.
   */
  add(rows: Row[]): void {
    if (rows.length === 0) return;
    const last = this.rows[this.rows.length - 1];
    if (!last || rows[0]!.position > last.position) this.rows.push(...rows);
    else {
      const at = this.indexAfter(rows[0]!.position - 1);
      // Already here (a run never overlaps another but itself).
      if (at < this.rows.length && this.rows[at]!.position <= rows[rows.length - 1]!.position) return;
      this.rows.splice(at, 0, ...rows);
    }
    if (this.rows.length > this.max) this.rows = this.rows.slice(this.rows.length - this.max / 2);
  }

  /** The rows after `after` up to `bound`, at most `limit`, when the next one is here; else undefined. */
  after(after: number, limit: number, bound: number): { rows: Row[]; scannedTo: number } | undefined {
    let at = this.indexAfter(after);
    if (at >= this.rows.length || this.rows[at]!.position !== after + 1 || after + 1 > bound || limit < 1) return undefined;
    const served: Row[] = [];
    for (let expected = after + 1; at < this.rows.length && served.length < limit; at++, expected++) {
      const row = this.rows[at]!;
      if (row.position !== expected || row.position > bound) break;
      served.push(row);
    }
    return { rows: served, scannedTo: served[served.length - 1]!.position };
  }

  /** The index of the first row after `position` (binary search: a gap anywhere in the run shifts indexes). */
  private indexAfter(position: number): number {
    let low = 0;
    let high = this.rows.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.rows[mid]!.position <= position) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/**
 * Group commit durability off the event loop. With synchronous=FULL SQLite fsyncs the WAL inside
 * every commit, and that fsync blocked the event loop for a millisecond or more per group (the
 * door's scans stalled behind it: about 7% of the wall time under load, 10% under overload).
 * Instead the connection commits at synchronous=NORMAL (the frames are written to the WAL, not
 * synced) and this syncs the WAL file in libuv's thread pool; an append is acknowledged, and
 * its events are shown to subscribers, only after an fsync that began after its commit has
 * finished. Durability is that of FULL: a commit's WAL frames are on disk before anyone hears
 * of it, and WAL recovery keeps every synced commit (frames are checksummed in order, so an
 * unsynced tail is dropped whole). One fsync covers every commit before it, so groups that
 * commit while one runs share the next; the event loop meanwhile serves the next requests.
 *
 * Subscribers read only up to the durable position: what a read model or the bus saw is
 * never lost by a power cut. Rows written by another process, which this one cannot know to be
 * synced, are synced here (one more fsync) before they are read. Command reads of a stream may
 * see a commit whose fsync is still running: anything decided from it is appended after it in
 * the same WAL, so it is durable only if that commit is too.
 */
class WalSync {
  private fd?: number;
  private durable: number;
  private syncing = false;
  private failure?: Error;
  private waiters: { position: number; resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly walFile: string,
    private readonly head: () => number,
  ) {
    // What is in the file at open may be a killed process's unsynced commits: sync once, here.
    this.syncNow();
    this.durable = head();
  }

  /** Resolves once every commit up to `position` is on disk. */
  whenDurable(position: number): Promise<void> {
    // After a failed fsync the kernel may have dropped the unsynced pages: nothing later is trusted.
    if (this.failure) return Promise.reject(this.failure);
    if (position <= this.durable) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ position, resolve, reject });
      this.start();
    });
  }

  /** Another connection's fsync of this WAL covered every commit up to `position`. */
  markDurable(position: number): void {
    if (position > this.durable) this.finish(position);
  }

  /** Every commit up to here is on disk. */
  get durablePosition(): number {
    return this.durable;
  }

  /** The store's head (or `head`) when it is ahead of what is on disk (another process's rows, or a sync still running). */
  unsyncedHead(head = this.head()): number | undefined {
    return head > this.durable ? head : undefined;
  }

  /** Throws the fsync failure, if one happened (readiness reports it). */
  check(): void {
    if (this.failure) throw this.failure;
  }

  async close(): Promise<void> {
    await this.whenDurable(this.head()).catch(() => undefined);
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private start(): void {
    if (this.syncing || this.waiters.length === 0) return;
    // Every commit up to the head now is in the WAL file: the fsync that starts now covers it.
    const covers = this.head();
    const fd = this.open();
    if (fd === undefined) return this.finish(covers);
    if (overloadState.shedding) {
      // Refusing requests: the loop's time goes to the accepted ones (src/shared/overload-state.ts).
      let failed: Error | undefined;
      try {
        fs.fsyncSync(fd);
      } catch (error) {
        failed = error as Error;
      }
      return this.synced(covers, failed);
    }
    this.syncing = true;
    fs.fsync(fd, (error) => {
      this.syncing = false;
      this.synced(covers, error ?? undefined);
    });
  }

  private synced(covers: number, error: Error | undefined): void {
    if (!error) return this.finish(covers);
    this.failure = new Error(
      `the event store could not make its write-ahead log ${this.walFile} durable (fsync: ${error.message}); ` +
        'appends are refused from now on: check the disk, then restart the service',
    );
    const failed = this.waiters;
    this.waiters = [];
    for (const waiter of failed) waiter.reject(this.failure);
  }

  private finish(covers: number): void {
    this.durable = Math.max(this.durable, covers);
    const ready = this.waiters.filter((w) => w.position <= this.durable);
    this.waiters = this.waiters.filter((w) => w.position > this.durable);
    for (const waiter of ready) waiter.resolve();
    this.start();
  }

  private syncNow(): void {
    const fd = this.open();
    if (fd !== undefined) fs.fsyncSync(fd);
  }

  /** The WAL's descriptor (an fsync on any descriptor of a file syncs the file); none before SQLite made it. */
  private open(): number | undefined {
    if (this.fd !== undefined) return this.fd;
    try {
      this.fd = fs.openSync(this.walFile, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return this.fd;
  }
}

function compileFilter(filter?: EventFilter): (row: Row) => boolean {
  if (!filter) return () => true;
  const prefixes = filter.streamPrefixes;
  const types = filter.eventTypes ? new Set(filter.eventTypes) : undefined;
  return (row) => (!prefixes || prefixes.some((p) => row.stream.startsWith(p))) && (!types || types.has(row.type));
}
