import { z } from 'zod';
import { registry } from '../openapi.js';
import { Guid, PlainId } from './common.js';
import { EventBody } from './event.js';

/** Spec: query `type`, CSV or EXCEL; we accept any case. Absent: CSV, or what `Accept` names (docs/export.md). */
export const ExportQuery = z.object({
  type: z
    .preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(['CSV', 'EXCEL'], { message: 'must be CSV or EXCEL' }))
    .optional()
    .openapi({ description: 'CSV (default) or EXCEL, case-insensitive' }),
});

/** Spec: the body is an Event object; the event to export is the caller's event with this `id`. */
export const ExportBody = registry.register(
  'ExportRequest',
  EventBody.extend({
    id: PlainId.openapi({ description: 'The event to export (required: an event of the caller)' }),
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
    createdAt: z.string(),
    expiresAt: z.string(),
  }),
);

export const ExportIdParams = z.object({ exportId: Guid });
