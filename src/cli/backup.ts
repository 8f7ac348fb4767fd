/**
 * `npm run admin -- backup <dir>`: an online, consistent copy of the embedded deployment's
 * SQLite files while the service runs (docs/operations.md, Backups and restores).
 *
 * Each file is copied with SQLite's online backup API (better-sqlite3 `db.backup`), never as a
 * file copy: a live WAL database copied file by file can be torn (the main file and its WAL from
 * different moments). A copy is a snapshot of its file at one moment: the backup API restarts
 * when another connection writes between two of its steps, so a copy that finished saw no write
 * in between. Here a restart makes the steps larger (x8), and the third copies what is left in
 * one step (one read transaction: in WAL mode writers are not blocked meanwhile).
 *
 * Order: the files derived from the events first (read models with the projections' and the
 * relay's checkpoints, the bus, the rate-limit counters), the event store (with the data-key
 * table) last. Every checkpoint and bus message in the copy was written after the event it
 * stems from was committed, so each is at or behind the copied event store's head, and on
 * restore the projections and the relay catch up from their checkpoints.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Config } from '../config.js';
import type { Logger } from '../shared/logger.js';
import { holderCollection } from '../projections/holder.js';
import { requireStore } from './common.js';

export const manifestName = 'manifest.json';
export const manifestFormat = 'checkin-service-backup/1';

/** The SQLite files of DATA_DIR, in backup order: derived ones first, the event store last. */
export const backupFiles: { name: string; holds: string }[] = [
  { name: 'read-models.sqlite', holds: 'read models, the projections\' and the relay\'s checkpoints (derived from the events)' },
  { name: 'bus.sqlite', holds: 'the embedded bus: messages the relay published, consumer offsets (derived from the events)' },
  { name: 'rate-limits.sqlite', holds: 'rate-limit counters (transient)' },
  { name: 'personal-data-keys.sqlite', holds: "an earlier version's data-key file, moved into events.sqlite on the next start" },
  { name: 'events.sqlite', holds: 'the event store and the personal-data key table (the source of truth; copied last)' },
];

/** Development key files: the production keys come from the environment (a secret manager). */
export const keyFiles: { file: string; env: string; holds: string }[] = [
  { file: 'personal-data/master-keys.json', env: 'PII_MASTER_KEYS', holds: "the master key that wraps guests' data keys" },
  { file: 'webhooks/encryption-keys.json', env: 'WEBHOOK_ENCRYPTION_KEYS', holds: 'the key that encrypts webhook secrets' },
  { file: 'identity/signing-key.json', env: 'OIDC_ISSUER', holds: "the development identity provider's token signing key" },
];

export interface CopiedFile {
  name: string;
  bytes: number;
  pages: number;
  sha256: string;
  /** How often the copy started over because the service wrote meanwhile. */
  restarts: number;
  startedAt: string;
  finishedAt: string;
}

export interface BackupManifest {
  format: string;
  service: { name: string; version: string };
  dataDir: string;
  startedAt: string;
  finishedAt: string;
  /** In the order they were copied. */
  files: CopiedFile[];
  eventStore: {
    /** The last event's global position in the copy (-1: none). */
    lastPosition: number;
    events: number;
    dataKeys: { keys: number; tombstones: number; masterKeyIds: string[] };
  };
  /** Key files copied (with --include-key-files), under `keys/`. */
  keyFiles: string[];
  /** What the backup leaves out, and why. */
  notCopied: { path: string; why: string }[];
}

export interface BackupOptions {
  /** Also copy the development key files (see keyFiles). */
  includeKeyFiles?: boolean;
  /** Pages per backup step at first (default 1,000: 4 MB). */
  pagesPerStep?: number;
  /**
   * Sleep between steps (default 0), to leave the disk to the service on a busy host, as
   * SQLite's own backup example does. The command's thread sleeps (no CPU); writes that land
   * meanwhile restart the copy with larger steps, so it still ends.
   */
  pauseMs?: number;
  /** Progress lines at most this often (default 1 s). */
  progressEveryMs?: number;
}

/** The production servers are backed up with their own tools: this command does not pretend to. */
export function serverBackupAdvice(config: Config): string | undefined {
  const servers: string[] = [];
  if (config.eventStoreUrl) {
    servers.push(
      'EventStoreDB (EVENTSTORE_URL): back it up with its own procedure (a file-copy backup of the database folder: the *.chk checkpoint files first, then the chunk files; ' +
        'or a disk snapshot, or Event Store Cloud backups)',
    );
  }
  if (config.mongoUrl) {
    servers.push(
      'MongoDB (MONGO_URL: read models and the personal-data key store): mongodump/mongorestore, a filesystem snapshot, or your provider\'s backups (Atlas, Ops Manager)',
    );
  }
  if (servers.length === 0) return undefined;
  return (
    `this deployment uses servers this command cannot copy: ${servers.join('; ')}. ` +
    'Back up the event store after the read store, so no checkpoint is ahead of the events. Kafka needs no backup (the relay re-publishes from its checkpoint; ' +
    'consumers dedupe on the event id). After any restore run `npm run admin -- reapply-erasures` before opening the service to users. See docs/operations.md, Backups and restores.'
  );
}

/** Is `inner` the folder `outer` or inside it (symbolic links resolved as far as they exist)? */
function isInside(inner: string, outer: string): boolean {
  const real = (p: string): string => {
    let existing = path.resolve(p);
    const rest: string[] = [];
    while (!fs.existsSync(existing)) {
      rest.unshift(path.basename(existing));
      const parent = path.dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
    return path.join(fs.realpathSync(existing), ...rest);
  };
  const relative = path.relative(real(outer), real(inner));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function serviceVersion(): { name: string; version: string } {
  const manifest = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  return { name: manifest.name, version: manifest.version };
}

async function sha256Of(file: string): Promise<string> {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Copies one live SQLite file with the online backup API, logging pages copied. */
const pause = new Int32Array(new SharedArrayBuffer(4));

async function copyDatabase(source: string, destination: string, logger: Logger, options: BackupOptions): Promise<Omit<CopiedFile, 'sha256' | 'bytes'>> {
  const name = path.basename(source);
  const startedAt = new Date().toISOString();
  const db = new Database(source, { fileMustExist: true });
  let restarts = 0;
  let pages = 0;
  try {
    db.pragma('busy_timeout = 5000');
    let rate = Math.max(1, options.pagesPerStep ?? 1000);
    let lastRemaining = Number.POSITIVE_INFINITY;
    let loggedAt = 0;
    const every = options.progressEveryMs ?? 1000;
    const result = await db.backup(destination, {
      progress: ({ totalPages, remainingPages }) => {
        // Each step copies `rate` pages: no fewer left means the copy started over (a write by the service).
        if (remainingPages >= lastRemaining) {
          restarts++;
          rate = restarts >= 3 ? 0x7fffffff : rate * 8;
          logger.info({ file: name, restarts, pagesPerStep: rate === 0x7fffffff ? 'all' : rate }, 'backup: the service wrote meanwhile; the copy of this file starts over with larger steps');
        }
        lastRemaining = remainingPages;
        const now = Date.now();
        if (now - loggedAt >= every) {
          loggedAt = now;
          logger.info({ file: name, pagesCopied: totalPages - remainingPages, totalPages }, 'backup: copying');
        }
        if (options.pauseMs && rate !== 0x7fffffff) Atomics.wait(pause, 0, 0, options.pauseMs);
        return rate;
      },
    });
    pages = result.totalPages;
  } finally {
    db.close();
  }
  // The copy is checked as the service checks a file it opens.
  const copy = new Database(destination, { fileMustExist: true });
  try {
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`the copy of ${name} failed SQLite's quick_check (${String(check)}); run the backup again`);
  } finally {
    copy.close();
  }
  logger.info({ file: name, pagesCopied: pages, totalPages: pages, restarts }, 'backup: file copied');
  return { name, pages, restarts, startedAt, finishedAt: new Date().toISOString() };
}

/**
 * The live service's projections holder (its pid, host and heartbeat) is not state: in the copy
 * it would make a restore within 20 s of the backup, or beside the still running service on the
 * same host, look as if a service ran on the restored files (`hold-pending-sends` refused, the
 * restored service's projections waited). The copy holds no holder.
 */
function withoutProjectionsHolder(file: string): void {
  const db = new Database(file, { fileMustExist: true });
  try {
    const hasDocs = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'readstore_docs'").get() !== undefined;
    if (hasDocs) db.prepare('DELETE FROM readstore_docs WHERE collection = ?').run(holderCollection);
  } finally {
    db.close();
  }
}

function eventStoreFigures(file: string): BackupManifest['eventStore'] {
  // Read-write, so closing the last connection removes the -wal and -shm files the open made.
  const db = new Database(file, { fileMustExist: true });
  try {
    const events = db.prepare('SELECT COUNT(*) AS n, MAX(position) AS last FROM events').get() as { n: number; last: number | null };
    const hasKeys = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'personal_data_keys'").get() !== undefined;
    const keys = hasKeys
      ? (db.prepare('SELECT SUM(wrapped IS NOT NULL) AS keys, SUM(wrapped IS NULL) AS tombstones FROM personal_data_keys').get() as { keys: number | null; tombstones: number | null })
      : { keys: 0, tombstones: 0 };
    const masterKeyIds = hasKeys
      ? (db.prepare('SELECT DISTINCT master_key_id FROM personal_data_keys WHERE master_key_id IS NOT NULL ORDER BY 1').pluck().all() as string[])
      : [];
    return { lastPosition: events.last ?? -1, events: events.n, dataKeys: { keys: keys.keys ?? 0, tombstones: keys.tombstones ?? 0, masterKeyIds } };
  } finally {
    db.close();
  }
}

/**
 * Copies DATA_DIR's SQLite files into `destination` (a new or empty folder outside DATA_DIR) and
 * writes manifest.json last: a folder without it is an unfinished backup.
 */
export async function backupDataDir(config: Config, destination: string, logger: Logger, options: BackupOptions = {}): Promise<BackupManifest> {
  const advice = serverBackupAdvice(config);
  if (advice) throw new Error(advice);
  requireStore(config, false, { command: 'admin backup', initApplies: false });
  const target = path.resolve(destination);
  if (isInside(target, config.dataDir)) {
    throw new Error(`the backup folder ${target} is inside DATA_DIR (${config.dataDir}): choose a folder elsewhere (ideally another disk)`);
  }
  if (fs.existsSync(target)) {
    if (!fs.statSync(target).isDirectory()) throw new Error(`${target} is a file: give a new or empty folder for the backup`);
    const present = fs.readdirSync(target);
    if (present.length > 0) throw new Error(`the backup folder ${target} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', ...' : ''}): give a new or empty folder`);
  }
  fs.mkdirSync(target, { recursive: true, mode: 0o700 });

  const startedAt = new Date().toISOString();
  const present = backupFiles.filter((f) => fs.existsSync(path.join(config.dataDir, f.name)));
  logger.info({ dataDir: config.dataDir, destination: target, files: present.map((f) => f.name) }, 'backup: started');
  const files: CopiedFile[] = [];
  for (const { name } of present) {
    const destinationFile = path.join(target, name);
    const copied = await copyDatabase(path.join(config.dataDir, name), destinationFile, logger, options);
    if (name === 'read-models.sqlite') withoutProjectionsHolder(destinationFile);
    // The read models hold personal data in clear: the copy is for the operator's account only.
    fs.chmodSync(destinationFile, 0o600);
    files.push({ ...copied, bytes: fs.statSync(destinationFile).size, sha256: await sha256Of(destinationFile) });
  }
  const eventStore = eventStoreFigures(path.join(target, 'events.sqlite'));

  const notCopied: BackupManifest['notCopied'] = [];
  const copiedKeys: string[] = [];
  for (const key of keyFiles) {
    const source = path.join(config.dataDir, key.file);
    if (!fs.existsSync(source)) continue;
    if (options.includeKeyFiles) {
      const destinationFile = path.join(target, 'keys', key.file);
      fs.mkdirSync(path.dirname(destinationFile), { recursive: true, mode: 0o700 });
      fs.copyFileSync(source, destinationFile);
      fs.chmodSync(destinationFile, 0o600);
      copiedKeys.push(key.file);
    } else {
      notCopied.push({
        path: key.file,
        why: `${key.holds}: a development key file, kept out of the backup (a key beside the data it protects protects nothing); copy it to another place, or pass --include-key-files in development. Production sets ${key.env}`,
      });
    }
  }
  const shown = (folder: string) => (isInside(folder, config.dataDir) ? path.relative(config.dataDir, folder) : folder);
  notCopied.push(
    { path: shown(config.comms.outboxDir), why: "the embedded mailer's sent emails (development): delivered mail, not state; it would bring erased guests' emails back" },
    { path: shown(config.exportDir), why: 'guest export files expire within EXPORT_TTL_MINUTES; clients export again' },
  );
  if (copiedKeys.length > 0) {
    logger.warn({ keyFiles: copiedKeys }, 'backup: development key files copied into the backup (--include-key-files): whoever has this backup can read its personal data');
  }
  for (const skipped of notCopied.filter((n) => keyFiles.some((k) => k.file === n.path))) {
    logger.warn({ keyFile: skipped.path }, `backup: ${skipped.why}`);
  }

  const manifest: BackupManifest = {
    format: manifestFormat,
    service: serviceVersion(),
    dataDir: config.dataDir,
    startedAt,
    finishedAt: new Date().toISOString(),
    files,
    eventStore,
    keyFiles: copiedKeys,
    notCopied,
  };
  const manifestFile = path.join(target, manifestName);
  fs.writeFileSync(`${manifestFile}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(`${manifestFile}.tmp`, manifestFile);
  logger.info({ destination: target, files: files.length, lastPosition: eventStore.lastPosition }, 'backup: finished');
  return manifest;
}
