import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

/**
 * Opens (or creates) a SQLite file for an embedded adapter and checks it is usable,
 * so a corrupt or unreadable file fails at start with its path in the message. `check: false`
 * skips the integrity check for a second connection to a file another adapter has checked.
 */
export function openSqliteFile(file: string, what: string, synchronous: 'FULL' | 'NORMAL', options: { check?: boolean } = {}): Database.Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  try {
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma('busy_timeout = 5000');
    const check = options.check === false ? 'ok' : db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`integrity check said: ${String(check)}`);
    return db;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `cannot open the ${what} at ${path.resolve(file)}: ${reason}. ` +
        `Restore it from a backup or move it away to start with an empty one.`,
    );
  }
}
