/**
 * Guest exports (docs/export.md): an event's guests written to a CSV or xlsx file under the
 * export folder, streamed from the read store, and fetched by the same client until it expires.
 *
 * What an export is (owner, event, file, expiry) is operational metadata, not history: it lives
 * in the read-store collection `exports`, written here directly (like `idempotency_keys`), and
 * the files and records are removed once expired.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { DomainError } from '../domain/decider.js';
import { CSV_MEDIA_TYPE, writeGuestsCsv } from '../exports/csv.js';
import { XLSX_MEDIA_TYPE, writeGuestsExcel, type SummaryValue } from '../exports/excel.js';
import { parseDateTime } from '../shared/date-time.js';
import { chooseZone, ianaZone, type ZoneChoice } from '../shared/time-zones.js';
import { newId } from '../shared/ids.js';
import { eventsTitled, getEvent, type EventView } from './events.js';
import { eventStats } from './guest-queries.js';
import { guests } from './guests.js';
import type { CommandContext } from './handle-command.js';
import type { Services } from './services.js';

export type ExportType = 'CSV' | 'EXCEL';

export interface ExportSettings {
  /** Folder of the export files. */
  dir: string;
  /** How long an export can be fetched. */
  ttlMs: number;
}

export const exportSettings = (config: Config): ExportSettings => ({
  dir: config.exportDir,
  ttlMs: config.exportTtlMinutes * 60_000,
});

const formats = {
  CSV: { extension: 'csv', contentType: CSV_MEDIA_TYPE },
  EXCEL: { extension: 'xlsx', contentType: XLSX_MEDIA_TYPE },
} as const;

export const contentTypeOf = (type: ExportType): string => formats[type].contentType;

/** The guests' order in every export: last name, first name (case-insensitive), then id. */
const GUEST_ORDER = { lastNameLower: 1, firstNameLower: 1 } as const;

interface ExportDoc {
  _id: string;
  clientId: string;
  eventId: string;
  type: ExportType;
  fileName: string;
  contentType: string;
  /** File name inside the export folder. */
  file: string;
  rowCount: number;
  sizeBytes: number;
  timeZone: string;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
}

export interface ExportView {
  exportId: string;
  eventId: string;
  type: ExportType;
  fileName: string;
  contentType: string;
  rowCount: number;
  sizeBytes: number;
  /** Where the file is fetched (GET, same client, until `expiresAt`). */
  url: string;
  createdAt: string;
  expiresAt: string;
}

/** A stored export file, ready to be sent. */
export interface ExportFile {
  export: ExportView;
  path: string;
}

const exportsCollection = (services: Services) => services.readStore.collection<ExportDoc>('exports');

export const exportUrl = (exportId: string): string => `/checkin/v1/api/event/export/${exportId}`;

function toView(doc: ExportDoc): ExportView {
  return {
    exportId: doc._id,
    eventId: doc.eventId,
    type: doc.type,
    fileName: doc.fileName,
    contentType: doc.contentType,
    rowCount: doc.rowCount,
    sizeBytes: doc.sizeBytes,
    url: exportUrl(doc._id),
    createdAt: doc.createdAt,
    expiresAt: doc.expiresAt,
  };
}

/**
 * The event an export names (spec: the body is an Event object, its `id` optional): the caller's
 * event with `id`, or without one the caller's one event with this title, start and end.
 * `startTime` and `endTime` are instants; `wall` has them as sent when one has no offset and the
 * body names no zone: they are then read on each candidate event's own clocks, as its create did.
 */
export interface ExportTarget {
  id?: string;
  title: string;
  startTime: string;
  endTime: string;
  wall?: { startTime: string; endTime: string };
}

/** The caller's one event with the target's title and times: none is 404, several 409 `ambiguous_event` asking for the `id`. */
async function eventMatching(services: Services, clientId: string, target: ExportTarget): Promise<EventView> {
  const matching: EventView[] = [];
  for (const event of await eventsTitled(services, clientId, target.title)) {
    const { wall } = target;
    const zone = wall ? (await timeZoneOf(services, clientId, event)).name : undefined;
    const startTime = wall ? parseDateTime(wall.startTime, zone!) : target.startTime;
    const endTime = wall ? parseDateTime(wall.endTime, zone!) : target.endTime;
    if (event.startTime === startTime && event.endTime === endTime) matching.push(event);
  }
  if (matching.length === 0) throw new DomainError('not_found', 'event not found: no event of yours has this title, startTime and endTime');
  if (matching.length > 1) {
    throw new DomainError('conflict', "several of your events have this title, startTime and endTime; add the event's id to say which", {
      code: 'ambiguous_event',
      errors: [{ path: 'id', message: 'required: more than one of your events has this title, startTime and endTime' }],
    });
  }
  return matching[0]!;
}

/** Writes the event's guests to a new export file and records it for its client. */
export async function createExport(
  services: Services,
  settings: ExportSettings,
  context: CommandContext,
  target: ExportTarget,
  type: ExportType,
): Promise<ExportFile> {
  const event =
    target.id !== undefined ? await getEvent(services, context.tenantId, target.id) : await eventMatching(services, context.tenantId, target);
  const zone = await timeZoneOf(services, context.tenantId, event);
  return storeExport(services, settings, context, type, {
    event,
    zone,
    kind: 'guests',
    auditType: 'GuestsExported',
    write: async (file) => {
      const rows = guests(services).stream({ clientId: context.tenantId, eventId: event.id }, { sort: GUEST_ORDER, readOnly: true });
      if (type === 'CSV') return writeGuestsCsv(rows, file, { timeZone: zone.name });
      const stats = await eventStats(services, context.tenantId, event.id);
      return writeGuestsExcel(rows, file, {
        timeZone: zone.name,
        summary: (count) => summaryRows(event, stats, zone, context.now, count),
      });
    },
  });
}

/** What one export writes: the event it belongs to, a word for its file name, and the writer. */
export interface ExportJob {
  event: EventView;
  zone: ZoneChoice;
  /** `guests`, `timeline`, `funnel`: the file name says what it holds. */
  kind: string;
  /** The audit event's type. */
  auditType: string;
  /** Writes the file in the requested format; returns its number of data rows. */
  write(file: string): Promise<number>;
}

/**
 * Every export's file handling: written to a partial file then renamed, recorded for its
 * client with an expiry, and its taking audited as an event (guests, timeline, funnel alike).
 */
export async function storeExport(
  services: Services,
  settings: ExportSettings,
  context: CommandContext,
  type: ExportType,
  job: ExportJob,
): Promise<ExportFile> {
  const { event, zone } = job;
  const exportId = newId();
  const file = `${exportId}.${formats[type].extension}`;
  const target = path.join(settings.dir, file);
  const partial = `${target}.part`;
  await fs.promises.mkdir(settings.dir, { recursive: true });
  let rowCount: number;
  try {
    rowCount = await job.write(partial);
    await fs.promises.rename(partial, target);
  } catch (error) {
    await fs.promises.rm(partial, { force: true });
    throw error;
  }
  const doc: ExportDoc = {
    _id: exportId,
    clientId: context.tenantId,
    eventId: event.id,
    type,
    fileName: fileNameOf(event.title, context.now, formats[type].extension, job.kind),
    contentType: formats[type].contentType,
    file,
    rowCount,
    sizeBytes: (await fs.promises.stat(target)).size,
    timeZone: zone.name,
    createdBy: context.actor.id,
    createdAt: context.now.toISOString(),
    expiresAt: new Date(context.now.getTime() + settings.ttlMs).toISOString(),
  };
  await exportsCollection(services).replaceOne(exportId, doc);
  // Who took personal data out, and when, is part of the audit trail: an event of its own.
  await services.eventStore.append(
    `export-${exportId}`,
    [
      {
        id: exportId,
        type: job.auditType,
        data: { exportId, eventId: doc.eventId, type, rowCount, fileName: doc.fileName },
        metadata: {
          tenantId: context.tenantId,
          actor: context.actor,
          correlationId: context.correlationId,
          occurredAt: context.now.toISOString(),
          ...(context.requestId ? { requestId: context.requestId } : {}),
        },
      },
    ],
    'no_stream',
  );
  services.logger.info(
    { exportId, clientId: doc.clientId, eventId: doc.eventId, type, kind: job.kind, rowCount, actor: context.actor },
    `${job.kind} export written`,
  );
  return { export: toView(doc), path: target };
}

/** An export of this client that has not expired; anything else is not found. */
export async function openExport(services: Services, settings: ExportSettings, clientId: string, exportId: string, now: Date): Promise<ExportFile> {
  const doc = await exportsCollection(services).get(exportId.toLowerCase());
  if (!doc || doc.clientId !== clientId) throw new DomainError('not_found', 'export not found');
  if (doc.expiresAt <= now.toISOString()) {
    await removeExport(services, settings, doc);
    throw new DomainError('not_found', 'export not found (it has expired)');
  }
  const file = path.join(settings.dir, doc.file);
  // With several API instances the folder must be shared; a file this instance cannot see is gone.
  if (!fs.existsSync(file)) throw new DomainError('not_found', 'export file not found');
  return { export: toView(doc), path: file };
}

/**
 * Deletes expired exports (record and file) and files without a record that are older than
 * the time to live (an interrupted write, a lost record). Returns how many exports it removed.
 */
export async function sweepExpiredExports(services: Services, settings: ExportSettings, now: Date = services.clock.now()): Promise<number> {
  const collection = exportsCollection(services);
  const expired: ExportDoc[] = [];
  for await (const doc of collection.stream({ expiresAt: { $lte: now.toISOString() } })) expired.push(doc);
  for (const doc of expired) await removeExport(services, settings, doc);
  const entries = await fs.promises.readdir(settings.dir).catch(() => [] as string[]);
  for (const entry of entries) {
    const file = path.join(settings.dir, entry);
    const stat = await fs.promises.stat(file).catch(() => null);
    if (!stat?.isFile() || stat.mtimeMs > now.getTime() - settings.ttlMs) continue;
    const exportId = entry.split('.')[0] ?? '';
    if (!(await collection.get(exportId))) await fs.promises.rm(file, { force: true });
  }
  return expired.length;
}

async function removeExport(services: Services, settings: ExportSettings, doc: ExportDoc): Promise<void> {
  await fs.promises.rm(path.join(settings.dir, doc.file), { force: true });
  await exportsCollection(services).deleteOne(doc._id);
}

export type { ZoneChoice };

/**
 * The event's zone, else the account's, else UTC. IANA and Windows names are both taken (a
 * Windows name is shown as the IANA zone it maps to); names that are neither are skipped.
 */
export async function timeZoneOf(services: Services, clientId: string, event: EventView): Promise<ZoneChoice> {
  if (event.timeZoneId && ianaZone(event.timeZoneId)) return chooseZone(event.timeZoneId, undefined);
  const account = await services.readStore.collection<{ _id: string; timeZoneId?: string }>('accounts').get(clientId);
  return chooseZone(event.timeZoneId, account?.timeZoneId);
}

type Stats = Awaited<ReturnType<typeof eventStats>>;

function summaryRows(event: EventView, stats: Stats, zone: ZoneChoice, now: Date, rowCount: number): [string, SummaryValue][] {
  const rows: [string, SummaryValue][] = [
    ['Event', event.title],
    ['Event id', event.id],
    ['Starts', new Date(event.startTime)],
    ['Ends', new Date(event.endTime)],
    ['Times shown in', `${zone.name}, from ${zone.source}`],
    ['Exported at', now],
    ['Guests in this file', rowCount],
    ['Invited', stats.invited],
    ['Admitted', stats.admitted],
    ['Inside now: guests', stats.insideNow.guests],
    ['Inside now: people', stats.insideNow.people],
    ['Plus ones invited', stats.plusOnes.invited],
    ['Plus ones inside now', stats.plusOnes.insideNow],
    ['Blocked', stats.blocked],
    ['Annulled check-ins', stats.annulledCheckIns],
  ];
  for (const [reason, count] of Object.entries(stats.rejectedScans)) rows.push([`Rejected scans: ${reason}`, count]);
  for (const [gate, counts] of Object.entries(stats.admissionsByGate)) {
    rows.push([`Gate ${gate}: admissions`, counts.admissions], [`Gate ${gate}: people`, counts.people]);
  }
  for (const [device, counts] of Object.entries(stats.admissionsByDevice)) {
    rows.push([`Device ${device}: admissions`, counts.admissions], [`Device ${device}: people`, counts.people]);
  }
  return rows;
}

/**
 * `<title> <kind> <UTC time>.<ext>`, with what file systems refuse replaced and leading dots left
 * out. A lone surrogate (a title may hold one, or the cut at 100 may split an emoji) has no UTF-8 form: the download's
 * `filename*` could not be written, so it is replaced too, and the cut never splits a pair.
 */
function fileNameOf(title: string, at: Date, extension: string, kind: string): string {
  const safe =
    title
      .replace(/[\u0000-\u001f\u007f<>:"/\\|?*]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '_')
      .replace(/\s+/g, ' ')
      // A leading dot hides the saved file on macOS and Linux (".Gala guests ….csv").
      .replace(/^[.\s]+/, '')
      .trim()
      .slice(0, 100)
      .replace(/[\uD800-\uDBFF]$/, '') || 'event';
  const stamp = at.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${safe} ${kind} ${stamp}.${extension}`;
}
