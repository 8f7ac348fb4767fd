import fs from 'node:fs';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { openSqliteFile } from '../sqlite-file.js';
import type { SqliteEventStore } from '../eventstore/sqlite.js';
import type { StreamAppend } from '../eventstore/port.js';
import { DataKeyConflictError, type KeyStore, type StoredDataKey } from './port.js';

export interface EmbeddedKeyStoreOptions {
  /** A key store file of an earlier version whose rows are moved into this one on open. */
  migrateFrom?: string;
  logger?: Logger;
}

/** A key kept for the first append that uses it (KeyStore.stage). */
interface Staged {
  row: StoredDataKey;
  /** performance.now() when staged. */
  at: number;
}

/** Staged keys no append took within this long are inserted on their own (their append failed or never came). */
const STAGED_FOR_MS = 60_000;

/**
 * Embedded key store: the table `personal_data_keys` in a SQLite file. `secure_delete`
 * overwrites deleted rows with zeros, and `purgeDeleted` checkpoints the WAL, so an erased
 * guest's key cannot be read back from the file.
 *
 * In the embedded default it lives in the event store's own file and connection
 * (`EmbeddedKeyStore.inEventStore`): a new key is staged in memory and written inside the
 * transaction of the first append that stores an event sealed with it, so a key row and its
 * first events commit together (one commit, one fsync; after a crash a key exists if and only if
 * an event uses it). Erasure and rotation commit at once, synced.
 */
export class EmbeddedKeyStore implements KeyStore {
  readonly kind = 'embedded';
  private readonly db: Database.Database;
  /** Set when the connection is the event store's: it is not this store's to close. */
  private readonly shared: boolean;
  private readonly staged = new Map<string, Staged>();

  /** The key store in the event store's file, written in its append transactions (see the class). */
  static inEventStore(events: SqliteEventStore, options: EmbeddedKeyStoreOptions = {}): EmbeddedKeyStore {
    const store = new EmbeddedKeyStore(events.connection, options);
    events.participate({ duringAppend: (appends) => store.writeStaged(appends) });
    store.stage = (keys) => store.stageKeys(keys);
    return store;
  }

  /** A file of its own (every commit synced), or a connection another adapter opened and owns. */
  constructor(file: string | Database.Database, private readonly options: EmbeddedKeyStoreOptions = {}) {
    this.shared = typeof file !== 'string';
    this.db = typeof file === 'string' ? openSqliteFile(file, 'personal-data key store', 'FULL') : file;
    this.db.pragma('secure_delete = ON');
    // A rowid table with a unique index on the guest id: a batch of random guest ids dirties
    // fewer pages than a WITHOUT ROWID table keyed by them (11 vs 17 µs CPU per key inserted
    // here). Files made by earlier versions keep their WITHOUT ROWID table; the SQL is the same.
    this.db.exec(`CREATE TABLE IF NOT EXISTS personal_data_keys (
      guest_id TEXT NOT NULL UNIQUE,
      wrapped TEXT,
      master_key_id TEXT,
      created_at TEXT NOT NULL,
      erased_at TEXT
    )`);
    this.insertKey = this.db.prepare('INSERT OR IGNORE INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)');
    this.wrappedOf = this.db.prepare('SELECT wrapped FROM personal_data_keys WHERE guest_id = ?').pluck();
    if (options.migrateFrom) this.migrate(options.migrateFrom);
  }

  /**
   * Moves the rows (keys and tombstones) of an earlier key store file into this one, in one
   * synced transaction, then deletes the old file and its WAL. Rows already here win.
   */
  private migrate(oldFile: string): void {
    if (!fs.existsSync(oldFile)) return;
    const old = new Database(oldFile, { fileMustExist: true });
    let moved = 0;
    try {
      const rows = old.prepare('SELECT guest_id, wrapped, master_key_id, created_at, erased_at FROM personal_data_keys').all() as Row[];
      const insert = this.db.prepare(
        'INSERT OR IGNORE INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at, erased_at) VALUES (?, ?, ?, ?, ?)',
      );
      this.synced(() =>
        this.db.transaction(() => {
          for (const r of rows) moved += insert.run(r.guest_id, r.wrapped, r.master_key_id, r.created_at, r.erased_at).changes;
        })(),
      );
    } finally {
      old.close();
    }
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(oldFile + suffix, { force: true });
    this.options.logger?.info({ from: oldFile, rows: moved }, 'personal-data keys moved into the event store file');
  }

  /** Runs `work` with synchronous=FULL, so its commit is on disk when it returns (a shared connection may run at NORMAL). */
  private synced<T>(work: () => T): T {
    const before = this.db.pragma('synchronous', { simple: true }) as number;
    if (before >= 2) return work();
    this.db.pragma('synchronous = FULL');
    try {
      return work();
    } finally {
      this.db.pragma(`synchronous = ${before}`);
    }
  }

  private readonly insertKey: Database.Statement;
  private readonly wrappedOf: Database.Statement;
  private readonly selects = new Map<number, Database.Statement>();

  /** Prepared once per list length (a fold asks for one guest, an import for its batch). */
  private selectIn(count: number): Database.Statement {
    let statement = this.selects.get(count);
    if (!statement) {
      const sql = `SELECT guest_id, wrapped, master_key_id, created_at, erased_at FROM personal_data_keys WHERE guest_id IN (${Array(count).fill('?').join(',')})`;
      statement = this.db.prepare(sql);
      if (this.selects.size < 64) this.selects.set(count, statement);
    }
    return statement;
  }

  async get(guestIds: string[]): Promise<StoredDataKey[]> {
    const rows: StoredDataKey[] = [];
    for (let i = 0; i < guestIds.length; i += 500) {
      const part = guestIds.slice(i, i + 500);
      const found = this.selectIn(part.length).all(...part) as Row[];
      rows.push(...found.map(fromRow));
    }
    if (this.staged.size > 0 && rows.length < guestIds.length) {
      // A stored row wins over a staged key (the staged one loses at its append).
      const stored = new Set(rows.map((r) => r.guestId));
      for (const id of guestIds) {
        const staged = this.staged.get(id);
        if (staged && !stored.has(id)) rows.push(staged.row);
      }
    }
    return rows;
  }

  async insert(keys: StoredDataKey[]): Promise<Set<string>> {
    const inserted = new Set<string>();
    this.synced(() =>
      this.db.transaction(() => {
        for (const k of keys) {
          if (this.insertKey.run(k.guestId, k.wrapped ?? null, k.masterKeyId ?? null, k.createdAt).changes === 1) inserted.add(k.guestId);
        }
      })(),
    );
    return inserted;
  }

  /** KeyStore.stage: only in the event store's file (inEventStore), where the appends write what is staged. */
  stage?: (keys: StoredDataKey[]) => Set<string>;

  private stageKeys(keys: StoredDataKey[]): Set<string> {
    const now = performance.now();
    this.insertForgotten(now);
    const staged = new Set<string>();
    for (const row of keys) {
      if (this.staged.has(row.guestId)) continue;
      this.staged.set(row.guestId, { row, at: now });
      staged.add(row.guestId);
    }
    return staged;
  }

  /**
   * Inside an append's transaction: writes the staged key of every event it seals. A staged key
   * that lost to a stored row fails the append (DataKeyConflictError; its savepoint rolls back).
   * Once committed, the keys are no longer staged.
   */
  private writeStaged(appends: StreamAppend[]): (() => void) | undefined {
    if (this.staged.size === 0) return undefined;
    let written: Set<Staged> | undefined;
    let lost: string[] | undefined;
    for (const append of appends) {
      for (const event of append.events) {
        const keyId = (event.data as { personalData?: { keyId?: unknown } }).personalData?.keyId;
        const staged = typeof keyId === 'string' ? this.staged.get(keyId) : undefined;
        if (!staged || written?.has(staged)) continue;
        const { row } = staged;
        if (this.insertKey.run(row.guestId, row.wrapped ?? null, row.masterKeyId ?? null, row.createdAt).changes === 0 && this.wrappedOf.get(row.guestId) !== row.wrapped) {
          // Stored by another process first, or a tombstone: that row wins; this key goes.
          this.staged.delete(row.guestId);
          (lost ??= []).push(row.guestId);
        }
        (written ??= new Set()).add(staged);
      }
    }
    if (lost) throw new DataKeyConflictError(lost);
    return (
      written &&
      (() => {
        for (const staged of written) if (this.staged.get(staged.row.guestId) === staged) this.staged.delete(staged.row.guestId);
      })
    );
  }

  /** Staged keys older than STAGED_FOR_MS are inserted on their own: memory stays bounded, and a late append still finds its key. */
  private insertForgotten(now: number): void {
    const old: StoredDataKey[] = [];
    for (const [id, staged] of this.staged) {
      if (now - staged.at < STAGED_FOR_MS) break;
      old.push(staged.row);
      this.staged.delete(id);
    }
    if (old.length === 0) return;
    this.insert(old).catch((error: unknown) =>
      this.options.logger?.warn({ err: error, keys: old.length }, 'personal-data key store: keys staged a minute ago and taken by no append could not be inserted; an append still carrying one would store events that do not open: check the disk'),
    );
  }

  async erase(guestId: string, at: string): Promise<void> {
    // A staged key is never written now: an append still carrying it stores events that do not open.
    this.staged.delete(guestId);
    const tombstone = this.db.prepare(
      `INSERT INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at, erased_at) VALUES (?, NULL, NULL, ?, ?)
       ON CONFLICT(guest_id) DO UPDATE SET wrapped = NULL, master_key_id = NULL, erased_at = COALESCE(erased_at, excluded.erased_at)`,
    );
    this.synced(() => tombstone.run(guestId, at, at));
  }

  async wrappedUnder(notMasterKeyId: string, limit: number): Promise<StoredDataKey[]> {
    const rows = this.db
      .prepare('SELECT guest_id, wrapped, master_key_id, created_at, erased_at FROM personal_data_keys WHERE wrapped IS NOT NULL AND master_key_id <> ? LIMIT ?')
      .all(notMasterKeyId, limit) as Row[];
    return rows.map(fromRow);
  }

  async oneWrappedUnder(masterKeyId: string): Promise<StoredDataKey | undefined> {
    const row = this.db
      .prepare('SELECT guest_id, wrapped, master_key_id, created_at, erased_at FROM personal_data_keys WHERE wrapped IS NOT NULL AND master_key_id = ? LIMIT 1')
      .get(masterKeyId) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  async countWrappedOutside(masterKeyIds: string[]): Promise<{ masterKeyId: string; count: number }[]> {
    const rows = this.db
      .prepare(
        `SELECT master_key_id AS masterKeyId, COUNT(*) AS count FROM personal_data_keys
         WHERE wrapped IS NOT NULL AND master_key_id NOT IN (SELECT value FROM json_each(?)) GROUP BY master_key_id ORDER BY master_key_id`,
      )
      .all(JSON.stringify(masterKeyIds)) as { masterKeyId: string; count: number }[];
    return rows;
  }

  async rewrap(guestId: string, wrapped: string, masterKeyId: string): Promise<void> {
    this.synced(() =>
      this.db.prepare('UPDATE personal_data_keys SET wrapped = ?, master_key_id = ? WHERE guest_id = ? AND wrapped IS NOT NULL').run(wrapped, masterKeyId, guestId),
    );
  }

  /**
   * Checkpoints and truncates the WAL, so the erased key's old page is gone from it too. A
   * reader of the same file (an export streaming the event store) can hold the WAL for a
   * moment: the checkpoint is retried for up to about 5 s, then left to SQLite's next
   * automatic one with a warning.
   */
  async purgeDeleted(): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      if (!result || result.busy === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    this.options.logger?.warn(
      { file: this.db.name },
      'personal-data key store: the WAL could not be truncated after an erasure (a reader held it); the erased key leaves it at the next automatic checkpoint',
    );
  }

  async close(): Promise<void> {
    // A shared connection is the event store's (its last appends may still write staged keys).
    if (!this.shared && this.db.open) this.db.close();
  }
}

interface Row {
  guest_id: string;
  wrapped: string | null;
  master_key_id: string | null;
  created_at: string;
  erased_at: string | null;
}

const fromRow = (row: Row): StoredDataKey => ({
  guestId: row.guest_id,
  createdAt: row.created_at,
  ...(row.wrapped !== null ? { wrapped: row.wrapped } : {}),
  ...(row.master_key_id !== null ? { masterKeyId: row.master_key_id } : {}),
  ...(row.erased_at !== null ? { erasedAt: row.erased_at } : {}),
});
