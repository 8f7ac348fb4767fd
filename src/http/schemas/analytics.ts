import { z } from 'zod';
import { rejectionReasons } from '../../domain/guest.js';
import { registry } from '../openapi.js';
import { DateTime, Guid, PlainId, QueryInt } from './common.js';
import { ExportQuery } from './export.js';
import { ex } from './example-values.js';
import { MAX_BUCKETS } from '../../commands/timeline.js';

/** An event id as the events routes take it (IdParams). */
const EventId = PlainId;

const TimelineFields = z.object({
    bucket: QueryInt(1, 1440).default(5).openapi({ description: `Bucket size in minutes of the event’s local clock (1-1440, default 5). An answer holds at most ${MAX_BUCKETS.toLocaleString('en')} buckets. A window given by both \`from\` and \`to\` that holds more is 400 on \`bucket\`; an end left open (defaulting to the first or last activity) is pulled in instead, and the answer says \`clipped: true\`` }),
    by: z.enum(['gate', 'device']).optional().openapi({ description: 'Also split every bucket by gate or by device' }),
    from: DateTime.optional().openapi({ description: 'First instant to show (default: the first activity); without an offset, a wall time of the event’s clocks' }),
    to: DateTime.optional().openapi({ description: `Instant to show up to (default: the last activity; without an offset, a wall time of the event’s clocks); after \`from\`, and at most ${MAX_BUCKETS.toLocaleString('en')} buckets after it` }),
});
const fromBeforeTo: [(q: { from?: string; to?: string }) => boolean, { message: string; path: string[] }] = [
  (q) => !q.from || !q.to || q.from < q.to,
  { message: 'from must be before to', path: ['to'] },
];

export const TimelineQuery = TimelineFields.refine(...fromBeforeTo);

const Counts = z.object({
  admissions: z.number().int().openapi({ description: 'Scans that let someone in' }),
  admitted: z.number().int().openapi({ description: 'People admitted (guests and plus ones)' }),
  exits: z.number().int().openapi({ description: 'People checked out' }),
  rejected: z.record(z.string(), z.number().int()).openapi({ description: `Rejected scans by reason (${rejectionReasons.join(', ')})` }),
  rejectedTotal: z.number().int(),
});

export const TimelineResponse = registry.register(
  'Timeline',
  z.object({
    eventId: z.string(),
    timeZone: z.string(),
    bucketMinutes: z.number().int(),
    by: z.enum(['gate', 'device']).optional(),
    clipped: z.literal(true).optional().openapi({ description: `Present when an open end of the window was pulled in so the answer holds at most ${MAX_BUCKETS.toLocaleString('en')} buckets (the newest ones when both ends are open); ask with \`from\`/\`to\` or a larger bucket for the rest` }),
    totals: Counts.extend({ annulled: z.number().int(), importedAdmitted: z.number().int(), importedExits: z.number().int(), insideNow: z.number().int() }),
    buckets: z.array(
      Counts.extend({
        start: z.string(),
        end: z.string(),
        localStart: z.string().openapi({ description: 'Bucket start on the event’s clocks, YYYY-MM-DDTHH:mm' }),
        annulled: z.number().int(),
        importedAdmitted: z.number().int().openapi({ description: 'People whose admission a guest create imported (no scan), at their `admitted` time' }),
        importedExits: z.number().int().openapi({ description: 'The same people at their imported `discharged` time, when the import says they left' }),
        insideNow: z.number().int().openapi({ description: 'People inside at the bucket’s end, imported admissions included' }),
        groups: z.record(z.string(), Counts).optional().openapi({ description: 'Per gate or device name, when `by` is given' }),
      }),
    ),
  }).openapi({
    example: {
      eventId: ex.eventId,
      timeZone: 'Europe/Amsterdam',
      bucketMinutes: 5,
      totals: { admissions: 12, admitted: 16, exits: 1, rejected: { already_admitted: 1 }, rejectedTotal: 1, annulled: 0, importedAdmitted: 0, importedExits: 0, insideNow: 15 },
      buckets: [
        {
          start: '2026-12-12T18:40:00.000Z',
          end: '2026-12-12T18:45:00.000Z',
          localStart: '2026-12-12T19:40',
          admissions: 12, admitted: 16, exits: 1, rejected: { already_admitted: 1 }, rejectedTotal: 1,
          annulled: 0,
          importedAdmitted: 0,
          importedExits: 0,
          insideNow: 15,
        },
      ],
    },
  }),
);

export const TimelineExportQuery = ExportQuery.extend({
  ...TimelineFields.shape,
  bucket: QueryInt(1, 1440).default(5).openapi({ description: `Bucket size in minutes of the event’s local clock (1-1440, default 5). A file holds at most ${MAX_BUCKETS.toLocaleString('en')} buckets and is never clipped: a window (from \`from\`, else the first activity, to \`to\`, else the last) that holds more is 400 on \`bucket\`` }),
}).refine(...fromBeforeTo);

const FunnelFields = z.object({
  eventId: EventId.optional().openapi({ description: 'The event whose invitations to count. At least one of eventId and templateId is required (neither is 400 on `eventId`)' }),
  templateId: Guid.optional().openapi({ description: 'Only the invitations of this template (its event when eventId is absent; with eventId, a template of another event is 404). At least one of eventId and templateId is required' }),
});
const eventOrTemplate: [(q: { eventId?: string; templateId?: string }) => boolean, { message: string; path: string[] }] = [
  (q) => q.eventId !== undefined || q.templateId !== undefined,
  { message: 'name an eventId, a templateId, or both', path: ['eventId'] },
];

export const FunnelQuery = FunnelFields.refine(...eventOrTemplate);
export const FunnelExportQuery = ExportQuery.extend(FunnelFields.shape).refine(...eventOrTemplate);

const Rate = z.number().nullable();
const FunnelFigures = z.object({
  invited: z.number().int(),
  sent: z.number().int(),
  failed: z.number().int(),
  delivered: z.number().int(),
  opened: z.number().int(),
  bounced: z.number().int(),
  dropped: z.number().int(),
  spamReported: z.number().int(),
  unsubscribed: z.number().int(),
  checkedIn: z.number().int(),
  rates: z.object({ sent: Rate, delivered: Rate, opened: Rate, bounced: Rate, checkedIn: Rate, checkedInAfterOpen: Rate }),
  medianSendToArrivalSeconds: z.number().nullable(),
});

export const FunnelResponse = registry.register(
  'Funnel',
  z.object({
    eventId: z.string(),
    templateId: z.string().optional(),
    totals: FunnelFigures,
    byTemplate: z.array(FunnelFigures.extend({ templateId: z.string(), templateName: z.string().optional() })),
  }).openapi({
    example: {
      eventId: ex.eventId,
      totals: { invited: 250, sent: 240, failed: 2, delivered: 236, opened: 180, bounced: 3, dropped: 1, spamReported: 0, unsubscribed: 1, checkedIn: 170,
      rates: { sent: 0.96, delivered: 0.983, opened: 0.763, bounced: 0.013, checkedIn: 0.68, checkedInAfterOpen: 0.85 },
      medianSendToArrivalSeconds: 86400 },
      byTemplate: [{ templateId: ex.templateId, templateName: 'Gala invitation', invited: 250, sent: 240, failed: 2, delivered: 236, opened: 180, bounced: 3, dropped: 1, spamReported: 0, unsubscribed: 1, checkedIn: 170,
      rates: { sent: 0.96, delivered: 0.983, opened: 0.763, bounced: 0.013, checkedIn: 0.68, checkedInAfterOpen: 0.85 },
      medianSendToArrivalSeconds: 86400 }],
    },
  }),
);
