import type Database from 'better-sqlite3';
import { openSqliteFile } from '../sqlite-file.js';
import type { KeyStore, StoredDataKey } from './port.js';

/**
 * Embedded key store: a table in its own SQLite file (DATA_DIR/personal-data-keys.sqlite).
 * `secure_delete` overwrites deleted rows with zeros, and `purgeDeleted` checkpoints the WAL,
 * so an erased guest's key cannot be read back from the file.
 */
export class EmbeddedKeyStore implements KeyStore {
  readonly kind = 'embedded';
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = openSqliteFile(file, 'personal-data key store', 'FULL');
    this.db.pragma('secure_delete = ON');
    this.db.exec(`CREATE TABLE IF NOT EXISTS personal_data_keys (
      guest_id TEXT PRIMARY KEY,
      wrapped TEXT,
      master_key_id TEXT,
      created_at TEXT NOT NULL,
      erased_at TEXT
    ) WITHOUT ROWID`);
    this.insertKey = this.db.prepare('INSERT OR IGNORE INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)');
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
    this.db
      .prepare(
        `INSERT INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at, erased_at) VALUES (?, NULL, NULL, ?, ?)
         ON CONFLICT(guest_id) DO UPDATE SET wrapped = NULL, master_key_id = NULL, erased_at = COALESCE(erased_at, excluded.erased_at)`,
      )
      .run(guestId, at, at);
  }

  async wrappedUnder(notMasterKeyId: string, limit: number): Promise<StoredDataKey[]> {
    const rows = this.db
      .prepare('SELECT guest_id, wrapped, master_key_id, created_at, erased_at FROM personal_data_keys WHERE wrapped IS NOT NULL AND master_key_id <> ? LIMIT ?')
      .all(notMasterKeyId, limit) as Row[];
    return rows.map(fromRow);
  }

  async rewrap(guestId: string, wrapped: string, masterKeyId: string): Promise<void> {
    this.db.prepare('UPDATE personal_data_keys SET wrapped = ?, master_key_id = ? WHERE guest_id = ? AND wrapped IS NOT NULL').run(wrapped, masterKeyId, guestId);
  }

  async purgeDeleted(): Promise<void> {
    this.db.pragma('wal_checkpoint(TRUNCATE)');
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
