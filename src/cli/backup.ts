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

export interface RestoreSummary {
  from: string;
  dataDir: string;
  /** The backup's figures, checked against its files. */
  backup: { startedAt: string; finishedAt: string; serviceVersion: string; lastPosition: number; events: number };
  files: string[];
  keyFiles: string[];
}

/** The ids of the master keys this configuration will use (PII_MASTER_KEYS, else the development key file), or undefined when there are none yet. */
function configuredMasterKeyIds(config: Config, backupDir: string): { ids: string[]; where: string } | undefined {
  if (config.personalData.masterKeys) return { ids: config.personalData.masterKeys.map((k) => k.id), where: 'PII_MASTER_KEYS' };
  for (const file of [path.join(config.dataDir, keyFiles[0]!.file), path.join(backupDir, 'keys', keyFiles[0]!.file)]) {
    if (!fs.existsSync(file)) continue;
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { keys?: Record<string, unknown> };
    return { ids: Object.keys(parsed.keys ?? {}), where: file };
  }
  return undefined;
}

/**
 * `npm run admin -- restore <backup>`: puts a backup's files into an empty DATA_DIR
 * (docs/operations.md, Restore). Refuses, changing nothing, a folder without a finished
 * manifest, a file whose SHA-256 differs from it, a DATA_DIR that holds data (a running
 * service's files, or newer data the backup would overwrite), and a backup whose data keys the
 * configured master keys cannot open. Each file is written under a temporary name and linked
 * into place, which fails if a service created that file meanwhile.
 */
export async function restoreDataDir(config: Config, backupDir: string, logger: Logger): Promise<RestoreSummary> {
  const advice = serverBackupAdvice(config);
  if (advice) throw new Error(`${advice.replace('this command cannot copy', 'this command cannot restore')}. Nothing was changed`);
  const source = path.resolve(backupDir);
  const manifestFile = path.join(source, manifestName);
  if (!fs.existsSync(manifestFile)) {
    throw new Error(`${source} holds no ${manifestName}: not a backup admin backup finished (it writes the manifest last). Nothing was changed`);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as BackupManifest;
  if (manifest.format !== manifestFormat) throw new Error(`${manifestFile} is of format "${String(manifest.format)}", not ${manifestFormat}. Nothing was changed`);
  if (isInside(config.dataDir, source) || isInside(source, config.dataDir)) {
    throw new Error(`the backup ${source} and DATA_DIR (${config.dataDir}) overlap: restore into another folder. Nothing was changed`);
  }

  // Never over data: a running service's files (SQLite would mix its -wal into the copy), or newer data the backup would overwrite.
  const held = fs.existsSync(config.dataDir)
    ? fs.readdirSync(config.dataDir).filter((name) => backupFiles.some((f) => name === f.name || name === `${f.name}-wal` || name === `${f.name}-shm` || name === `${f.name}-journal`))
    : [];
  if (held.length > 0) {
    throw new Error(
      `DATA_DIR (${config.dataDir}) holds data (${held.join(', ')}): a restore goes into an empty DATA_DIR, never over a running service's files or newer data. ` +
        'Stop every role of the service, move this DATA_DIR aside (keep it until the restore is checked), and run restore again. Nothing was changed',
    );
  }

  for (const file of manifest.files) {
    const copy = path.join(source, file.name);
    if (!fs.existsSync(copy)) throw new Error(`the backup lacks ${file.name}, which its manifest lists. Nothing was changed`);
    const sha256 = await sha256Of(copy);
    if (sha256 !== file.sha256) throw new Error(`${copy} does not match the manifest (sha256 ${sha256}, manifest ${file.sha256}): damaged, or from another backup. Nothing was changed`);
  }
  if (!manifest.files.some((f) => f.name === 'events.sqlite')) throw new Error(`the backup's manifest lists no events.sqlite. Nothing was changed`);

  // A backup without its master key is unreadable for good: say so before anything is written.
  const needed = manifest.eventStore.dataKeys.masterKeyIds;
  if (config.personalData.encryption && needed.length > 0) {
    const configured = configuredMasterKeyIds(config, source);
    const lacking = needed.filter((id) => !configured?.ids.includes(id));
    if (lacking.length > 0) {
      throw new Error(
        `the backup's personal data is sealed under master key ${lacking.map((id) => `"${id}"`).join(', ')}, which ` +
          (configured ? `${configured.where} does not hold` : `neither PII_MASTER_KEYS nor a key file (${path.join(config.dataDir, keyFiles[0]!.file)}, or the backup's keys/) holds`) +
          ': without it the restored guests\' personal data is unreadable for good (and the service would make a new key). ' +
          `Put the master key file you kept apart at ${path.join(config.dataDir, keyFiles[0]!.file)}, or set PII_MASTER_KEYS as when the backup was taken, then run restore again. Nothing was changed`,
      );
    }
  }

  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const place = (from: string, to: string) => {
    fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
    const temp = `${to}.restoring-${process.pid}`;
    fs.copyFileSync(from, temp);
    fs.chmodSync(temp, 0o600);
    try {
      // link() refuses an existing file: a service started on this DATA_DIR meanwhile is not written over.
      fs.linkSync(temp, to);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${to} appeared during the restore: is a service starting on DATA_DIR? Stop it, empty DATA_DIR and run restore again`);
      throw error;
    } finally {
      fs.rmSync(temp, { force: true });
    }
  };
  const files: string[] = [];
  // The event store last, as the backup took it: a DATA_DIR with events.sqlite and without the read models would start and rebuild.
  for (const file of manifest.files) {
    place(path.join(source, file.name), path.join(config.dataDir, file.name));
    files.push(file.name);
    logger.info({ file: file.name, bytes: file.bytes }, 'restore: file restored');
  }
  const restoredKeys: string[] = [];
  for (const key of manifest.keyFiles ?? []) {
    const to = path.join(config.dataDir, key);
    if (fs.existsSync(to)) continue;
    place(path.join(source, 'keys', key), to);
    restoredKeys.push(key);
  }
  logger.info({ dataDir: config.dataDir, files: files.length, lastPosition: manifest.eventStore.lastPosition }, 'restore: files restored');
  return {
    from: source,
    dataDir: config.dataDir,
    backup: {
      startedAt: manifest.startedAt,
      finishedAt: manifest.finishedAt,
      serviceVersion: manifest.service.version,
      lastPosition: manifest.eventStore.lastPosition,
      events: manifest.eventStore.events,
    },
    files,
    keyFiles: restoredKeys,
  };
}
