import { z } from 'zod';
import { registry } from '../openapi.js';
import { DateTime, Guid, PageQuery } from './common.js';

/** Optional in the spec; CRMs often send null for "no value": null is treated as absent. */
const optional = <T extends z.ZodType>(schema: T) =>
  schema.nullish().transform((v) => (v === null ? undefined : v)) as unknown as z.ZodOptional<T>;

const text = (max: number) => z.string().max(max);
/** The spec recommends images under 50 kB; 100 kB of base64 is the hard limit. */
const image = z
  .string()
  .max(100_000, 'must be at most 100,000 base64 characters (the spec recommends under 50 kB)')
  .regex(/^[A-Za-z0-9+/=\s]*$/, 'must be base64');

export const GuestBody = registry.register(
  'Guest',
  z.object({
    id: optional(Guid),
    firstName: optional(text(200)),
    otherNames: optional(text(200)),
    lastName: optional(text(200)),
    email: z
      .union([z.literal(''), z.null(), z.string().trim().email('must be an email address').max(320)])
      .optional()
      .transform((v) => (v ? v : undefined))
      .openapi({ type: 'string', format: 'email', description: 'Checked when given; empty or null means not given' }),
    plusOnes: optional(z.number().int().min(0).max(10_000)),
    admittedPlusOnes: optional(z.number().int().min(0).max(10_000)).openapi({
      description: 'Taken when the record creates the guest (needs admitted; at most plusOnes); upsert never changes it',
    }),
    additionalInfo: optional(text(10_000)),
    barcode: optional(text(500)),
    tags: optional(text(4_000)),
    createdBy: optional(text(200)),
    admitted: optional(DateTime).openapi({ description: 'Taken when the record creates the guest (an imported admission); upsert never changes it' }),
    blockedDate: optional(DateTime).openapi({ description: 'Taken when the record creates the guest; upsert never changes it' }),
    blockedReason: optional(text(1000)).openapi({
      description: 'Taken when the record creates the guest (without blockedDate: blocked from now); upsert never changes it',
    }),
    eventId: optional(Guid),
    validFrom: optional(DateTime),
    validTo: optional(DateTime),
    isGroup: optional(z.boolean()),
    discharged: optional(DateTime).openapi({ description: 'Taken when the record creates the guest (needs admitted); upsert never changes it' }),
    image: optional(image),
    customId: optional(text(200).min(1)),
    commsTemplateId: z
      .union([Guid, z.literal(''), z.null()])
      .optional()
      .transform((v) => (v ? v : undefined))
      .openapi({ description: 'Template to send after creation; empty or null means no send' }),
    correlationId: optional(text(200)),
  }),
);

export const GuestResponse = registry.register(
  'GuestResponse',
  z.object({
    id: z.string(),
    eventId: z.string(),
    firstName: z.string().optional(),
    otherNames: z.string().optional(),
    lastName: z.string().optional(),
    email: z.string().optional(),
    plusOnes: z.number().int().optional(),
    admittedPlusOnes: z.number().int(),
    additionalInfo: z.string().optional(),
    barcode: z.string().optional(),
    tags: z.string().optional(),
    createdBy: z.string().optional(),
    admitted: z.string().optional(),
    blockedDate: z.string().optional(),
    blockedReason: z.string().optional(),
    validFrom: z.string().optional(),
    validTo: z.string().optional(),
    isGroup: z.boolean().optional(),
    discharged: z.string().optional(),
    image: z.string().optional(),
    customId: z.string().optional(),
    commsTemplateId: z.string().optional(),
    correlationId: z.string().optional(),
  }),
);

/** Spec Limits: at most 200 records per call. */
export const GuestBatch = z.array(GuestBody).max(200, 'at most 200 records per call').openapi({ maxItems: 200 });

export const EventIdParams = z.object({ eventId: Guid });
export const GuestIdParams = z.object({ id: Guid });

const booleanQuery = z
  .enum(['true', 'false', 'True', 'False', '1', '0'])
  .transform((v) => v.toLowerCase() === 'true' || v === '1');

export const UpsertQuery = z.object({ removeObsoleteTags: booleanQuery.optional() });

/** byinfo: every match unless the caller pages (then `limit` defaults to 100). */
export const ByInfoQuery = z.object({
  additionalInfo: z.string().min(1).max(1000),
  limit: z.coerce.number().int().min(1).max(1000).optional().openapi({ description: 'Page size (1-1000); without limit and cursor, every match' }),
  cursor: PageQuery.shape.cursor.openapi({ description: 'The X-Next-Cursor of the previous page' }),
});

export const GuestListQuery = PageQuery.extend({
  tag: z.string().max(200).optional(),
  state: z.enum(['admitted', 'not_admitted', 'inside', 'blocked', 'not_blocked', 'discharged']).optional(),
  q: z.string().min(1).max(200).optional().openapi({ description: 'Text in names, email, barcode or customId' }),
  changedSince: DateTime.optional().openapi({ description: 'Offline sync: guests changed after this time, oldest first' }),
});

export const HistoryQuery = z.object({ asOf: DateTime.optional() });

export const ScanBody = registry.register(
  'Scan',
  z
    .object({
      guestId: Guid.optional(),
      barcode: z.string().min(1).max(500).optional(),
      customId: z.string().min(1).max(200).optional(),
      plusOnes: z.number().int().min(0).max(10_000).optional().openapi({ description: 'Plus ones entering with this scan' }),
      force: z.boolean().optional().openapi({ description: 'Override of block and validity: the client, or a team member with canForce (else 403)' }),
      nonce: z.string().min(1).max(200).optional().openapi({ description: 'A repeat with the same nonce returns the first result' }),
      at: DateTime.optional().openapi({ description: 'Scan time of an offline scanner (default: now)' }),
      gate: z.string().max(100).optional(),
      device: z.string().max(100).optional(),
    })
    .refine((b) => [b.guestId, b.barcode, b.customId].filter((v) => v !== undefined).length === 1, {
      message: 'name the guest by exactly one of guestId, barcode or customId',
      path: ['guestId'],
    }),
);

export const ScanResponse = registry.register(
  'ScanResult',
  z.object({
    result: z.enum(['admitted', 'rejected', 'discharged']),
    reason: z.enum(['not_found', 'blocked', 'not_yet_valid', 'expired', 'already_admitted', 'ambiguous']).optional(),
    blockedReason: z.string().optional(),
    scanId: z.string(),
    at: z.string(),
    guest: GuestResponse.optional(),
    plusOnesAdmitted: z.number().int(),
    plusOnesLeft: z.number().int(),
    replayed: z.boolean(),
  }),
);

export const UndoBody = z
  .object({ scanId: Guid.optional(), nonce: z.string().min(1).max(200).optional() })
  .refine((b) => (b.scanId === undefined) !== (b.nonce === undefined), {
    message: 'give exactly one of scanId or nonce',
    path: ['scanId'],
  });

export const BlockBody = registry.register(
  'BulkBlock',
  z
    .object({
      ids: z.array(Guid).optional(),
      barcodes: z.array(z.string().min(1).max(500)).optional(),
      reason: z.string().max(1000).optional(),
    })
    .superRefine((b, ctx) => {
      const ids = b.ids?.length ?? 0;
      const barcodes = b.barcodes?.length ?? 0;
      // The error names the list the caller sent (the longer one when both are too many together).
      const path = [barcodes > ids ? 'barcodes' : 'ids'];
      if (ids + barcodes === 0) ctx.addIssue({ code: 'custom', message: 'name at least one guest in ids or barcodes', path });
      if (ids + barcodes > 200) ctx.addIssue({ code: 'custom', message: 'at most 200 ids and barcodes per call', path });
    }),
);

export const ScanListQuery = PageQuery.extend({ result: z.enum(['admitted', 'rejected', 'discharged']).optional() });
export const TeamStatsQuery = z.object({
  bucket: z.coerce.number().int().min(1).max(1440).default(15).openapi({ description: 'Bucket size in minutes (default 15)' }),
});
