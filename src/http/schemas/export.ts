import { z } from 'zod';
import { registry } from '../openapi.js';
import { Guid, nullAsAbsent, PlainId, Timestamp } from './common.js';
import { ex } from './example-values.js';
import { EventBody } from './event.js';

/** Spec: query `type`, CSV or EXCEL; we accept any case. Absent: CSV, or what `Accept` names (docs/export.md). */
export const ExportQuery = z.object({
  type: z
    .preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(['CSV', 'EXCEL'], { message: 'must be CSV or EXCEL' }))
    .optional()
    .openapi({ description: 'CSV (default) or EXCEL, case-insensitive' }),
});

/**
 * Spec: the body is an Event object (title, startTime, endTime required; id optional). The event
 * exported is the caller's event with this `id`, or without one the caller's one event with the
 * body's title, startTime and endTime (docs/export.md).
 */
export const ExportBody = registry.register(
  'ExportRequest',
  // A copy of the Event's fields, not `EventBody.extend`: the document would publish an extension
  // as allOf [Event, these], and an allOf takes null only where both do.
  z.object({
    ...EventBody.shape,
    // Optional as in the spec's Event; null is "not given", as in the body's other optional fields.
    id: nullAsAbsent(PlainId).openapi({
      type: ['string', 'null'],
      description:
        'The event to export (an event of the caller). Absent: the caller’s one event with this title, startTime and endTime (the same instants); none is 404, several are 409 `ambiguous_event` (send the id)',
    }),
  }).openapi({
    description:
      'An Event object (spec). The event exported is the caller’s event with this `id`, or without `id` the caller’s one event with the same title (exactly), startTime and endTime (the same instants): none is 404, more than one 409 `ambiguous_event` naming `id`. The other Event fields are checked as on event create and not used.',
    example: { id: ex.eventId, title: 'Winter gala', startTime: ex.start, endTime: ex.end },
  }),
);

export const ExportResponse = registry.register(
  'Export',
  z.object({
    exportId: z.string(),
    eventId: z.string(),
    type: z.enum(['CSV', 'EXCEL']),
    fileName: z.string(),
    contentType: z.string(),
    rowCount: z.number().int(),
    sizeBytes: z.number().int(),
    url: z.string().openapi({ description: 'GET it (same client, same headers) until expiresAt' }),
    createdAt: Timestamp,
    expiresAt: Timestamp,
  }).openapi({
    example: {
      exportId: ex.exportId,
      eventId: ex.eventId,
      type: 'CSV',
      fileName: 'Winter gala guests 2026-11-21.csv',
      contentType: 'text/csv; charset=utf-8',
      rowCount: 250,
      sizeBytes: 48210,
      url: `/checkin/v1/api/event/export/${ex.exportId}`,
      createdAt: ex.created,
      expiresAt: '2026-11-21T11:00:00.000Z',
    },
  }),
);

export const ExportIdParams = z.object({ exportId: Guid.openapi({ description: 'The `exportId` the export request answered' }) });
