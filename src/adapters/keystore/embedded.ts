import fs from 'node:fs';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { openSqliteFile } from '../sqlite-file.js';
import type { KeyStore, StoredDataKey } from './port.js';

export interface EmbeddedKeyStoreOptions {
  /**
   * The file is the embedded event store's own (DATA_DIR/events.sqlite): new keys are then
   * committed without an fsync of their own, because the append that uses them commits after
   * them in the same WAL with synchronous=FULL, and that fsync makes every earlier frame of the
   * WAL durable too. A crash between the two loses only keys no acknowledged event uses yet.
   * (With the event store at synchronous=NORMAL the same holds: WAL recovery keeps a prefix of
   * the frames, so an event that survives a crash implies the keys written before it.)
   * Erasure and rotation still sync at once. Without it (a file of its own) every commit syncs.
   */
  ridesOnEventStoreCommits?: boolean;
  /** A key store file of an earlier version whose rows are moved into this one on open. */
  migrateFrom?: string;
  logger?: Logger;
}

/**
 * Embedded key store: the table `personal_data_keys` in a SQLite file (the event store's file
 * in the embedded default, see `ridesOnEventStoreCommits`). `secure_delete` overwrites deleted
 * rows with zeros, and `purgeDeleted` checkpoints the WAL, so an erased guest's key cannot be
 * read back from the file.
 */
export class EmbeddedKeyStore implements KeyStore {
  readonly kind = 'embedded';
  private readonly db: Database.Database;
  /** What a commit that must be on disk at once (erasure, rotation) runs under. */
  private readonly insertSynchronous: 'FULL' | 'NORMAL';

  constructor(file: string, private readonly options: EmbeddedKeyStoreOptions = {}) {
    this.insertSynchronous = options.ridesOnEventStoreCommits ? 'NORMAL' : 'FULL';
    this.db = openSqliteFile(file, 'personal-data key store', this.insertSynchronous, { check: !options.ridesOnEventStoreCommits });
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

  /** Runs `work` with synchronous=FULL, so its commit is on disk when it returns. */
  private synced<T>(work: () => T): T {
    if (this.insertSynchronous === 'FULL') return work();
    this.db.pragma('synchronous = FULL');
    try {
      return work();
    } finally {
      this.db.pragma(`synchronous = ${this.insertSynchronous}`);
    }
  }

  private readonly insertKey: Database.Statement;
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
    return rows;
  }

  async insert(keys: StoredDataKey[]): Promise<Set<string>> {
    const inserted = new Set<string>();
    this.db.transaction(() => {
      for (const k of keys) {
        if (this.insertKey.run(k.guestId, k.wrapped ?? null, k.masterKeyId ?? null, k.createdAt).changes === 1) inserted.add(k.guestId);
      }
    })();
    return inserted;
  }

  async erase(guestId: string, at: string): Promise<void> {
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
    if (this.db.open) this.db.close();
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
