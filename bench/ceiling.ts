/**
 * Same-run ceilings every suite measures beside its own figures. Machines here differ 5x from
 * day to day, so a row of docs/benchmarks.md is read as a ratio to the ceiling measured in the
 * same run, on the same cores, with the same load generator.
 *
 * - bareRoute: an express app answering from memory (no auth, no store): what HTTP costs.
 * - rawImportServer: an express + better-sqlite3 handler taking the same PUT upsert batches and
 *   inserting the same rows with the same durability (one transaction per batch, WAL,
 *   synchronous as the service): what writing guests can cost at least.
 * - rawEventSourcedImportServer: the same batches written as the service writes them (two events
 *   per guest into an event table, the guest document into a read-model table), nothing else.
 * - rawCsv: the same rows written as CSV to a file by a plain stream: what an export costs at least.
 * - rawExcel: the same rows as one sheet through the export's own xlsx writer (XML text and
 *   yazl's deflate), from memory: what an Excel export costs at least. rawExceljs: the same
 *   through exceljs's streaming writer, the library the export used before (a reference).
 */
import fs from 'node:fs';
import crypto, { createHmac, randomBytes } from 'node:crypto';
import ExcelJS from 'exceljs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import Database from 'better-sqlite3';
import express, { type Express } from 'express';
import { stringify } from 'csv-stringify';
import { newSortableId } from '../src/shared/ids.js';
import { XlsxWorkbook, type XlsxValue } from '../src/exports/xlsx-stream.js';
import { fmt, load, tempDir, type LoadResult, type LoadSpec } from './support.js';

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export async function listen(app: Express): Promise<Listening> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A bare express route's figures under the given load. `body` is what it answers (default a
 * small JSON object); answering pre-serialised bytes is the ceiling for a route that sends the same bytes.
 */
export async function bareRoute(spec: Omit<LoadSpec, 'url'>, body: unknown = { ok: true }): Promise<LoadResult> {
  const app = express();
  const bytes = typeof body === 'string' ? body : JSON.stringify(body);
  app.all('/ceiling', (_req, res) => void res.type('application/json').send(bytes));
  const server = await listen(app);
  try {
    return await load({ ...spec, url: `${server.url}/ceiling` });
  } finally {
    await server.close();
  }
}

/**
 * The event rows an import writes for one guest, as the service writes them: its registration on
 * its own stream and its customId reservation on another, into a table shaped like the embedded
 * event store's (created here, with the data-key table). `sealed` gives the rows the shapes
 * personal-data encryption gives them: a data-key row, the personal fields as a `personalData`
 * object of their sealed size (random bytes: no cipher runs), the reservation stream named by an
 * HMAC of the customId. Without it: the fields in clear, the customId in the stream name, no key
 * row. `SealedParts` picks some of them (ids.ts takes the cost apart). Returns the position of the
 * last event written.
 */
function importEventRows(db: Database.Database, options: { sealed: boolean | SealedParts; newId: () => string }) {
  db.exec(
    'CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL, revision INTEGER NOT NULL, ' +
      'type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, recorded_at TEXT NOT NULL, UNIQUE (stream, revision));' +
      'CREATE TABLE personal_data_keys (guest_id TEXT NOT NULL UNIQUE, wrapped TEXT, master_key_id TEXT, created_at TEXT NOT NULL, erased_at TEXT)',
  );
  const insertEvent = db.prepare('INSERT INTO events (id, stream, revision, type, data, metadata, recorded_at) VALUES (?, ?, 0, ?, ?, ?, ?)');
  const insertKey = db.prepare('INSERT INTO personal_data_keys (guest_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)');
  const nameKey = randomBytes(32);
  // The wrapped keys and sealed texts are cut from one draw of random text, so that drawing them
  // (the cipher's work in the service) is not counted as storage.
  const randomText = randomBytes(48 * 1024).toString('base64url');
  let at = 0;
  const randomOf = (length: number) => {
    if (at + length > randomText.length) at = 0;
    return randomText.slice(at, (at += length));
  };
  const { newId } = options;
  const all = options.sealed === true;
  const parts: SealedParts = typeof options.sealed === 'object' ? options.sealed : { keyRow: all, sealedData: all, hashedName: all };
  return (client: string, eventId: string, guestId: string, guest: Record<string, unknown>, metadata: string, now: string): number => {
    const customId = String(guest.customId);
    if (parts.keyRow) insertKey.run(`${client}:${guestId}`, randomOf(96), 'm1', now);
    let data: Record<string, unknown> = { guestId, eventId, ...guest };
    if (parts.sealedData) {
      const { firstName, lastName, email, barcode, additionalInfo, customId: _customId, ...rest } = guest;
      const sealedSize = 28 + Buffer.byteLength(JSON.stringify({ firstName, lastName, email, barcode, customId, additionalInfo }));
      data = { guestId, eventId, ...rest, personalData: { keyId: `${client}:${guestId}`, alg: 'A256GCM', ciphertext: randomOf(Math.ceil((sealedSize * 4) / 3)) } };
    }
    insertEvent.run(newId(), `guest-${client}:${guestId}`, 'GuestRegistered', JSON.stringify(data), metadata, now);
    const name = parts.hashedName ? `#n1.${createHmac('sha256', nameKey).update(`${client}:${eventId}\n${customId.toLowerCase()}`).digest('base64url')}` : customId;
    return Number(insertEvent.run(newId(), `guestcustomid-${client}:${eventId}:${name}`, 'GuestCustomIdReserved', JSON.stringify({ guestId }), metadata, now).lastInsertRowid);
  };
}

/**
 * `PUT /ceiling/:eventId` with a JSON array of guests, each batch handed to `write`; `rows` counts
 * what was stored, and `close` stops the server, closes `stores` and removes `dir`.
 */
async function ceilingServer(
  write: (eventId: string, guests: Record<string, unknown>[]) => void,
  rows: () => number,
  stores: Database.Database[],
  dir: string,
): Promise<Listening & { rows(): number }> {
  const app = express();
  app.use(express.json({ limit: '10mb' }));
  app.put('/ceiling/:eventId', (req, res) => {
    write(req.params.eventId, req.body as Record<string, unknown>[]);
    res.status(204).end();
  });
  const server = await listen(app);
  return {
    ...server,
    rows,
    close: async () => {
      await server.close();
      for (const db of stores) db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `PUT /ceiling` taking a JSON array of guests, inserting each row in one transaction per batch. */
export async function rawImportServer(synchronous: 'FULL' | 'NORMAL'): Promise<Listening & { rows(): number }> {
  const dir = tempDir('bench-raw-import-');
  const db = new Database(path.join(dir, 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec(
    'CREATE TABLE guests (id TEXT PRIMARY KEY, event_id TEXT, barcode TEXT, custom_id TEXT, doc TEXT);' +
      'CREATE UNIQUE INDEX guests_barcode ON guests(event_id, barcode);' +
      'CREATE UNIQUE INDEX guests_custom ON guests(event_id, custom_id)',
  );
  const insert = db.prepare('INSERT INTO guests (id, event_id, barcode, custom_id, doc) VALUES (?, ?, ?, ?, ?)');
  const insertAll = db.transaction((eventId: string, guests: Record<string, unknown>[]) => {
    for (const guest of guests) insert.run(newSortableId(), eventId, guest.barcode ?? null, guest.customId ?? null, JSON.stringify(guest));
  });
  return ceilingServer(insertAll, () => (db.prepare('SELECT count(*) AS n FROM guests').get() as { n: number }).n, [db], dir);
}

/**
 * `PUT /ceiling/:eventId` doing the writes the service's import does, with nothing else: per
 * guest two events (its registration on its own stream and its customId reservation, each with
 * metadata as the service writes it) into an events table shaped like the embedded event
 * store's, in one transaction per batch at `synchronous`; then the guest's document into a
 * second file shaped like the embedded read store's (synchronous=NORMAL), with the batch's
 * checkpoint, in one transaction. No reads, no validation: what an event-sourced import costs at
 * least on this machine, beside `rawImportServer`'s one row per guest.
 *
 * The rows have the shapes the service writes with personal-data encryption on (its default):
 * the ids are the service's (`newSortableId`), the personal fields are a `personalData` object
 * of the sealed size (random bytes in place of the AES-GCM output: no cipher runs here), the
 * customId reservation's stream is named by an HMAC of the customId, and a data-key row goes
 * into the same transaction. `plain` writes them as with encryption off (fields in clear, the
 * customId in the stream name, no key row).
 */
export async function rawEventSourcedImportServer(synchronous: 'FULL' | 'NORMAL', options: { plain?: boolean } = {}): Promise<Listening & { rows(): number }> {
  const dir = tempDir('bench-raw-es-import-');
  const events = new Database(path.join(dir, 'events.sqlite'));
  events.pragma('journal_mode = WAL');
  events.pragma(`synchronous = ${synchronous}`);
  const writeGuest = importEventRows(events, { sealed: !options.plain, newId: newSortableId });
  const docs = new Database(path.join(dir, 'read-models.sqlite'));
  docs.pragma('journal_mode = WAL');
  docs.pragma('synchronous = NORMAL');
  docs.exec(
    'CREATE TABLE readstore_docs (collection TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (collection, id)) WITHOUT ROWID;' +
      'CREATE TABLE readstore_checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)',
  );
  const upsertDoc = docs.prepare('INSERT INTO readstore_docs (collection, id, body) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET body = excluded.body');
  const checkpoint = docs.prepare('INSERT INTO readstore_checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position');
  const appendBatch = events.transaction((eventId: string, guests: Record<string, unknown>[]) => {
    const now = new Date().toISOString();
    const metadata = JSON.stringify({ tenantId: 'ceiling-client', actor: { type: 'client', id: 'ceiling-client' }, correlationId: crypto.randomUUID(), occurredAt: now, requestId: crypto.randomUUID() });
    let position = 0;
    const ids: string[] = [];
    for (const guest of guests) {
      const id = newSortableId();
      ids.push(id);
      position = writeGuest('ceiling-client', eventId, id, guest, metadata, now);
    }
    return { ids, position };
  });
  const projectBatch = docs.transaction((eventId: string, guests: Record<string, unknown>[], ids: string[], position: number) => {
    guests.forEach((guest, i) => upsertDoc.run('guests', ids[i]!, JSON.stringify({ _id: ids[i], eventId, ...guest, admitted: null, checkins: 0 })));
    checkpoint.run('guests', position);
  });
  return ceilingServer(
    (eventId, guests) => {
      const { ids, position } = appendBatch(eventId, guests);
      projectBatch(eventId, guests, ids, position);
    },
    () => (docs.prepare("SELECT count(*) AS n FROM readstore_docs WHERE collection = 'guests'").get() as { n: number }).n,
    [events, docs],
    dir,
  );
}

/** Seconds to write `rows` as CSV to a file through csv-stringify (the library the export uses). */
export async function rawCsv(rows: Iterable<unknown[]>): Promise<number> {
  const dir = tempDir('bench-raw-csv-');
  const started = process.hrtime.bigint();
  const out = fs.createWriteStream(path.join(dir, 'raw.csv'));
  const csv = stringify();
  csv.pipe(out);
  for (const row of rows) {
    if (!csv.write(row)) await once(csv, 'drain');
  }
  csv.end();
  await once(out, 'finish');
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  fs.rmSync(dir, { recursive: true, force: true });
  return seconds;
}

/**
 * Ceiling for the Excel export: the same rows' values, already in memory, as one sheet through
 * the export's xlsx writer to a file with nothing else (no header, no styles, no dates typed, no
 * summary sheet, no store, no thread, no HTTP). Returns the seconds it took.
 */
export async function rawExcel(rows: Iterable<unknown[]>): Promise<number> {
  const dir = tempDir('bench-raw-xlsx-');
  const started = process.hrtime.bigint();
  const workbook = new XlsxWorkbook(fs.createWriteStream(path.join(dir, 'raw.xlsx')), 'bench');
  let sheet: ReturnType<XlsxWorkbook['addSheet']> | undefined;
  for (const row of rows) {
    sheet ??= workbook.addSheet('Guests', { columns: row.map(() => ({ width: 10 })) });
    const behind = sheet.addRow(row as XlsxValue[]);
    if (behind) await behind;
  }
  await sheet?.end();
  await workbook.finish();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  fs.rmSync(dir, { recursive: true, force: true });
  return seconds;
}

/** The same rows through exceljs's streaming writer (no styles, inline strings): the library the Excel export used before. */
export async function rawExceljs(rows: Iterable<unknown[]>): Promise<number> {
  const dir = tempDir('bench-raw-exceljs-');
  const started = process.hrtime.bigint();
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path.join(dir, 'raw.xlsx'), useStyles: false, useSharedStrings: false });
  const sheet = workbook.addWorksheet('Guests');
  let count = 0;
  for (const row of rows) {
    sheet.addRow(row.map((value) => (value === undefined ? null : value)) as ExcelJS.CellValue[]).commit();
    // Let the deflater run now and then, as the export did.
    if (++count % 200 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  sheet.commit();
  await workbook.commit();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  fs.rmSync(dir, { recursive: true, force: true });
  return seconds;
}

/** "0.42 of the ceiling" for a row's figure column. */
export const ratio = (ours: number, ceiling: number): string => `${fmt(ours / ceiling, 2)} of the ceiling`;

const BATCH = 200;

/** What personal-data encryption adds to an import's rows, part by part (`true`: written as encryption writes it). */
export interface SealedParts {
  /** A data-key row per guest. */
  keyRow: boolean;
  /** The personal fields as a sealed object of their size instead of in clear. */
  sealedData: boolean;
  /** The reservation stream named by an HMAC of the customId instead of the customId. */
  hashedName: boolean;
}

export interface EventRowsVariant {
  ids: 'v4' | 'v7';
  /** The data-key row, the HMAC-named reservation stream and sealed-size data (encryption on), or some of them. */
  sealed: boolean | SealedParts;
  /**
   * The guests' customIds: `crm-0`, `crm-1`, ... as the import benches send them (default), or
   * random UUIDs as a CRM that makes UUIDs sends them. Sequential ones name reservation streams
   * that sort next to each other when written in clear; an HMAC of them, or a random id, does not.
   */
  customIds?: 'sequential' | 'random';
}

/**
 * What the shape of an import's event rows costs the event store, with raw better-sqlite3 and
 * nothing else (no service code): per guest its registration on its own stream and its customId
 * reservation on another, transactions of 200 at synchronous=FULL, into a table shaped like the
 * embedded event store's. `sealed` adds what personal-data encryption writes (a data-key row, the
 * reservation stream named by an HMAC of the customId, the personal fields as a sealed object of
 * their size: random bytes, no cipher runs); `ids` chooses random (v4) or time-ordered (v7) ids.
 * Wall time, CPU of this process per guest, and the bytes left in the file and its WAL.
 */
export function rawEventRows({ ids, sealed, guests, customIds = 'sequential' }: EventRowsVariant & { guests: number }): { seconds: number; cpuPerGuest: number; megabytes: number } {
  const newId = ids === 'v7' ? newSortableId : () => crypto.randomUUID();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-event-rows-'));
  const db = new Database(path.join(dir, 'events.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const writeGuest = importEventRows(db, { sealed, newId });
  const batch = db.transaction((start: number) => {
    const now = new Date().toISOString();
    const metadata = JSON.stringify({ tenantId: 'client', actor: { type: 'client', id: 'client' }, correlationId: crypto.randomUUID(), occurredAt: now });
    for (let i = start; i < start + BATCH; i++) {
      const customId = customIds === 'random' ? crypto.randomUUID() : `crm-${i}`;
      const guest = { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, customId };
      writeGuest('client', 'stadium', newId(), guest, metadata, now);
    }
  });
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (let start = 0; start < guests; start += BATCH) batch(start);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  db.close();
  const megabytes = fs.readdirSync(dir).reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0) / 1e6;
  fs.rmSync(dir, { recursive: true, force: true });
  return { seconds, cpuPerGuest: (used.user + used.system) / guests, megabytes };
}
