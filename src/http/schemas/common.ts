import { z } from 'zod';
import '../openapi.js';
import { normalizeId } from '../../shared/ids.js';

/** Any RFC 4122 textual UUID, case-insensitive; stored lowercase. */
export const Guid = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a GUID')
  .transform((v) => v.toLowerCase())
  .openapi({ type: 'string', format: 'uuid', example: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f' });

/**
 * Every id the spec does not mark GUID (Event.id, TeamMember.id, eventId, customId, user and client
 * ids): a plain string of 1-128 characters without control characters, other than `.` and `..`
 * (docs/identifiers.md).
 * A GUID-shaped value is stored lowercase, like a GUID field.
 */
export const PlainId = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .refine((v) => !/[\u0000-\u001f\u007f-\u009f]/.test(v), { message: 'must not contain control characters' })
  // URLs resolve `.` and `..` path segments (even percent-encoded) before they reach us: no route could name them.
  .refine((v) => v !== '.' && v !== '..', { message: 'must not be . or ..' })
  .transform(normalizeId)
  .openapi({ type: 'string', minLength: 1, maxLength: 128, example: 'gala-2026' });

/** ISO 8601 date-time with an offset; normalised to UTC with milliseconds. */
export const DateTime = z
  .string()
  .refine((v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(v) && !Number.isNaN(Date.parse(v)), {
    message: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-21T10:00:00Z',
  })
  .transform((v) => new Date(v).toISOString())
  .openapi({ type: 'string', format: 'date-time', example: '2026-11-21T10:00:00.000Z' });

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100).openapi({ description: 'Page size (1-1000, default 100)' }),
  cursor: z.string().max(2000).optional().openapi({ description: 'The `nextCursor` of the previous page' }),
});

export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().optional() });
