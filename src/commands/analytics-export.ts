/**
 * The timeline and the funnel as CSV or Excel files, through the guest export's machinery
 * (storeExport: same files, expiry, download URL, audit event; same formula neutralising).
 */
import type { Column } from '../exports/columns.js';
import { DomainError } from '../domain/decider.js';
import { rejectionReasons } from '../domain/guest.js';
import { writeCsv } from '../exports/csv.js';
import { writeExcel, type SummaryValue } from '../exports/excel.js';
import { getEvent } from './events.js';
import { storeExport, timeZoneOf, type ExportFile, type ExportSettings, type ExportType } from './export.js';
import { invitationFunnel, type FunnelFigures, type FunnelQuery } from './funnel.js';
import type { CommandContext } from './handle-command.js';
import type { Services } from './services.js';
import { eventTimeline, MAX_BUCKETS, type Counts, type TimelineQuery } from './timeline.js';

/** Every rejection reason a scan can have, so the columns are the same in every file. */
const REJECTION_REASONS: readonly string[] = rejectionReasons;

interface TimelineRow {
  start: string;
  end: string;
  localStart: string;
  /** Gate or device name; `(all)` on the totals row of a bucket. */
  group?: string;
  counts: Counts;
  annulled?: number;
  importedAdmitted?: number;
  importedExits?: number;
  insideNow?: number;
}

function timelineColumns(by: string | undefined, reasons: string[]): Column<TimelineRow>[] {
  const count = (name: string, value: (row: TimelineRow) => number | undefined): Column<TimelineRow> => ({ name, kind: 'integer', width: 12, value });
  return [
    { name: 'start', kind: 'timestamp', width: 20, value: (row) => row.start },
    { name: 'end', kind: 'timestamp', width: 20, value: (row) => row.end },
    { name: 'localStart', kind: 'text', width: 18, value: (row) => row.localStart },
    ...(by ? [{ name: by, kind: 'text', width: 20, value: (row: TimelineRow) => row.group } satisfies Column<TimelineRow>] : []),
    count('admissions', (row) => row.counts.admissions),
    count('admitted', (row) => row.counts.admitted),
    count('exits', (row) => row.counts.exits),
    count('annulled', (row) => row.annulled),
    count('importedAdmitted', (row) => row.importedAdmitted),
    count('importedExits', (row) => row.importedExits),
    count('insideNow', (row) => row.insideNow),
    count('rejected', (row) => row.counts.rejectedTotal),
    ...reasons.map((reason) => count(`rejected_${reason}`, (row) => row.counts.rejected[reason] ?? 0)),
  ];
}

export async function exportTimeline(
  services: Services,
  settings: ExportSettings,
  context: CommandContext,
  eventId: string,
  query: TimelineQuery,
  type: ExportType,
): Promise<ExportFile> {
  const event = await getEvent(services, context.tenantId, eventId);
  const zone = await timeZoneOf(services, context.tenantId, event);
  const timeline = await eventTimeline(services, context.tenantId, event.id, query);
  // The answer on screen may pull an open end in (clipped); a file may not: its rows would no
  // longer add up to the totals of its Summary, and neither CSV nor the rows would say so.
  if (timeline.clipped) {
    throw new DomainError('validation_error', `the event's door activity spans more than ${MAX_BUCKETS} buckets of ${query.bucket} min: ask for a larger bucket, or a window with from and to`, {
      errors: [{ path: 'bucket', message: `at most ${MAX_BUCKETS} buckets per export` }],
    });
  }
  const rows: TimelineRow[] = [];
  const reasons = new Set(REJECTION_REASONS);
  for (const bucket of timeline.buckets) {
    const { start, end, localStart, annulled, importedAdmitted, importedExits, insideNow, groups } = bucket;
    Object.keys(bucket.rejected).forEach((reason) => reasons.add(reason));
    rows.push({ start, end, localStart, ...(query.by ? { group: '(all)' } : {}), counts: bucket, annulled, importedAdmitted, importedExits, insideNow });
    for (const [group, counts] of Object.entries(groups ?? {})) rows.push({ start, end, localStart, group, counts });
  }
  const columns = timelineColumns(query.by, [...reasons]);
  return storeExport(services, settings, context, type, {
    event,
    zone,
    kind: 'timeline',
    auditType: 'TimelineExported',
    write: (file) =>
      type === 'CSV'
        ? writeCsv(rows, file, columns, { timeZone: zone.name })
        : writeExcel(rows, file, {
            sheetName: 'Timeline',
            columns,
            timeZone: zone.name,
            summary: () => [
              ['Event', event.title],
              ['Event id', event.id],
              ['Times shown in', `${zone.name}, from ${zone.source}`],
              ['Bucket (minutes)', timeline.bucketMinutes],
              ['Split by', query.by ?? 'none'],
              ['Exported at', context.now],
              ['Admitted (people)', timeline.totals.admitted],
              ['Exits (people)', timeline.totals.exits],
              ['Imported admissions (people)', timeline.totals.importedAdmitted],
              ['Imported exits (people)', timeline.totals.importedExits],
              ['Inside now', timeline.totals.insideNow],
              ['Rejected scans', timeline.totals.rejectedTotal],
            ],
          }),
  });
}

type FunnelRow = FunnelFigures & { templateId: string; templateName?: string };

const FUNNEL_COUNTS = ['invited', 'sent', 'failed', 'delivered', 'opened', 'bounced', 'dropped', 'spamReported', 'unsubscribed', 'checkedIn'] as const;
const FUNNEL_RATES = ['sent', 'delivered', 'opened', 'bounced', 'checkedIn', 'checkedInAfterOpen'] as const;

const funnelColumns: Column<FunnelRow>[] = [
  { name: 'templateId', kind: 'text', width: 38, value: (row) => row.templateId },
  { name: 'templateName', kind: 'text', width: 30, value: (row) => row.templateName },
  ...FUNNEL_COUNTS.map((name): Column<FunnelRow> => ({ name, kind: 'integer', width: 12, value: (row) => row[name] })),
  ...FUNNEL_RATES.map((name): Column<FunnelRow> => ({ name: `${name}Rate`, kind: 'text', width: 12, value: (row) => row.rates[name] ?? undefined })),
  { name: 'medianSendToArrivalSeconds', kind: 'text', width: 16, value: (row) => row.medianSendToArrivalSeconds ?? undefined },
];

export async function exportFunnel(
  services: Services,
  settings: ExportSettings,
  context: CommandContext,
  query: FunnelQuery,
  type: ExportType,
): Promise<ExportFile> {
  const funnel = await invitationFunnel(services, context.tenantId, query);
  const event = await getEvent(services, context.tenantId, funnel.eventId);
  const zone = await timeZoneOf(services, context.tenantId, event);
  const rows: FunnelRow[] = [...funnel.byTemplate, { templateId: '(all)', ...funnel.totals }];
  const summary: [string, SummaryValue][] = [
    ['Event', event.title],
    ['Event id', event.id],
    ['Exported at', context.now],
    ['Counts are of', 'distinct guests (docs/analytics.md)'],
  ];
  return storeExport(services, settings, context, type, {
    event,
    zone,
    kind: 'funnel',
    auditType: 'FunnelExported',
    write: (file) =>
      type === 'CSV'
        ? writeCsv(rows, file, funnelColumns, { timeZone: zone.name })
        : writeExcel(rows, file, { sheetName: 'Funnel', columns: funnelColumns, timeZone: zone.name, summary: () => summary }),
  });
}
