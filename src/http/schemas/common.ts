import { z } from 'zod';
import { getOpenApiMetadata } from '@asteasolutions/zod-to-openapi';
import '../openapi.js';

/** Any RFC 4122 textual UUID, case-insensitive; stored lowercase. */
export const Guid = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a GUID')
  .transform((v) => v.toLowerCase())
  .openapi({ type: 'string', format: 'uuid', example: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f' });

/** ISO 8601 date-time with an offset; normalised to UTC with milliseconds. */
export const DateTime = z
  .string()
  .refine((v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(v) && !Number.isNaN(Date.parse(v)), {
    message: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-21T10:00:00Z',
  })
  .transform((v) => new Date(v).toISOString())
  .openapi({ format: 'date-time' });

/**
 * An email address as the service accepts it. The same pattern validates and is published,
 * so a client generated from /openapi.json sends only addresses that are accepted.
 */
export const EMAIL_PATTERN = /^([A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;
export const Email = z
  .string()
  .max(320)
  .regex(EMAIL_PATTERN, 'must be an email address')
  // The pattern is the rule (no `format: email`, whose checkers accept other addresses).
  .openapi({ pattern: EMAIL_PATTERN.source, example: 'ada@example.com' });

/** Opaque page cursors are base64url text; only a `nextCursor` the same query returned is accepted. */
export const CURSOR_PATTERN = /^[A-Za-z0-9_-]+$/;
export const Cursor = z
  .string()
  .max(2000)
  .regex(CURSOR_PATTERN, 'must be a nextCursor returned by this query')
  .openapi({
    description:
      'The `nextCursor` of the previous page of the same query (opaque base64url text, at most 2000 characters). ' +
      'A cursor this query did not return is 400 `validation_error` on `cursor`.',
  });

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100).openapi({ description: 'Page size (1-1000, default 100)' }),
  cursor: Cursor.optional(),
});

/** `{items, nextCursor?}`; its example wraps the item's example (src/http/examples.ts). */
export const pageOf = <T extends z.ZodType>(item: T) => {
  const itemExample = getOpenApiMetadata(item).example;
  return z
    .object({
      items: z.array(item),
      nextCursor: z.string().optional().openapi({ description: 'Absent on the last page; pass it as `cursor` for the next one' }),
    })
    .openapi(itemExample === undefined ? {} : { example: { items: [itemExample], nextCursor: 'WyJzdGFydFRpbWU6MSxfaWQ6MSIsIjIwMjYtMTItMTJUMTg6MDA6MDAuMDAwWiIsIm15LWV2ZW50LTEiXQ' } });
};
