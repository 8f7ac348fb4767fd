import { z } from 'zod';
import { registry } from '../openapi.js';
import { CustomIdText, DateTime, Guid, WindowEnd, WindowStart, NIL_GUID, nullAsAbsent, OptionalGuidAsSent, PageQuery, pageOf, PlainId, RefId, QueryInt, Timestamp, named, nonEmptyTexts } from './common.js';
import { ex } from './example-values.js';
import { guestStream, INT32_MAX, rejectionReasons } from '../../domain/guest.js';
import { HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT } from '../../commands/guest-history.js';
import { GUEST_TEXT_LIMIT, guestFields } from '../../commands/guests.js';
import { withEveryField } from '../../shared/every-field.js';

/** Optional in the spec; CRMs often send null for "no value": null is treated as absent. */
const optional = nullAsAbsent;

/** Spec: a Guest field typed string is any string: no length or pattern of ours (BODY_LIMIT bounds a request). */
const text = () => z.string();
/** Spec: integer (int32). A count, so not negative. */
const countMessage = `must be a whole number from 0 to ${INT32_MAX}`;
export const Int32Count = z
  .number({ error: (issue) => (issue.input === undefined ? undefined : countMessage) })
  .int(countMessage)
  .min(0, countMessage)
  .max(INT32_MAX, countMessage)
  .openapi({ format: 'int32' });
/** A count the spec types integer (int32) in an answer. */
const Int32 = z.number().int().openapi({ format: 'int32' });
/** An optional GUID that may be null or nil (read as absent), stated so in the document. */
const optionalGuid = () =>
  optional(OptionalGuidAsSent).openapi({ type: ['string', 'null'], format: 'uuid', description: 'Guest id; generated when absent, null or the nil GUID. Matched in any case, answered as first sent' });
/**
 * Spec: "image | string | Optional base64-encoded image; should be under 50 kB": typed string, so
 * any string is kept as sent (a data URI, base64url, a line-wrapped MIME body); the size is a
 * recommendation, so no limit of ours.
 */
const image = z
  .string()
  .openapi({ description: 'Base64-encoded image, kept as sent; under 50 kB and portrait 600 by 400 px recommended (not enforced)' });

/**
 * validFrom, validTo: `""` (a spreadsheet's blank cell) is no bound. Where the record creates the
 * guest that is as if not given; on an existing guest it removes the bound (`null` from here on),
 * since `null` keeps a value (docs/api.md, Bodies) and a window once set could otherwise never
 * be lifted.
 */
const clearableTime = <T extends z.ZodType<string, string>>(time: T) =>
  z
    .union([time, z.literal('')], { error: 'must be an existing ISO 8601 date-time, e.g. 2026-11-21T10:00:00Z or 2026-11-21T11:00:00+01:00, or "" for none' })
    .nullish()
    .transform((v): string | null | undefined => (v === '' ? null : v === null ? undefined : v));

/**
 * `admitted`, `blockedDate`, `discharged`: a date-time, or `""` or null for "not set", as a
 * record read back from a spreadsheet or a database writes an unset time (spec: these record
 * progress, and an upsert never changes them): absent, so the guest is not admitted, blocked or
 * checked out by it (docs/guests.md).
 */
const unsetTime = () =>
  z
    .union([DateTime, z.literal('')], { error: 'must be an existing ISO 8601 date-time, e.g. 2026-11-21T10:00:00Z or 2026-11-21T11:00:00+01:00, or "" for none' })
    .nullish()
    .transform((v): string | undefined => (v === '' || v === null ? undefined : v));

export const GuestBody = registry.register(
  'Guest',
  z.object({
    id: optionalGuid(),
    firstName: optional(text()),
    otherNames: optional(text()),
    lastName: optional(text()),
    // "" is kept: on an existing guest it empties the email (saveGuests), where a record creates one it is no email.
    email: optional(text()).openapi({
      description:
        'Any string (spec: string); null means not given. "" is no email where the record creates the guest, and empties the email of an existing one. An invitation to one that is not an email address fails (comms.failed, `invalid_email`)',
    }),
    plusOnes: optional(Int32Count),
    admittedPlusOnes: optional(Int32Count).openapi({
      description: 'Taken when the record creates the guest (needs admitted; at most plusOnes, which counts as 0 when absent: more is 400); upsert never changes it',
    }),
    additionalInfo: optional(text()),
    barcode: optional(text()),
    tags: optional(text()),
    createdBy: optional(text()).openapi({
      description: 'Taken when the record creates the guest (absent: the caller’s User id); a later upsert does not change it',
    }),
    admitted: unsetTime().openapi({ description: 'Taken when the record creates the guest (an imported admission); upsert never changes it; "" or null: not admitted' }),
    blockedDate: unsetTime().openapi({ description: 'Taken when the record creates the guest; upsert never changes it; "" or null: not given' }),
    blockedReason: optional(text()).openapi({
      description: 'Taken when the record creates the guest (a non-empty one without blockedDate: blocked from now); upsert never changes it',
    }),
    eventId: optional(PlainId),
    validFrom: clearableTime(WindowStart).openapi({ description: 'null: not given (kept); "": none (removes the bound from an existing guest)' }),
    validTo: clearableTime(WindowEnd).openapi({ description: 'null: not given (kept); "": none (removes the bound from an existing guest)' }),
    isGroup: optional(z.boolean()),
    discharged: unsetTime().openapi({ description: 'Taken when the record creates the guest (needs admitted); upsert never changes it; "" or null: not checked out' }),
    image: optional(image),
    // Empty (a spreadsheet's blank cell) or null means none; any other value is an id (docs/identifiers.md).
    customId: z
      .preprocess((v) => (v === '' || v === null ? undefined : v), CustomIdText.optional())
      .openapi({ type: ['string', 'null'], minLength: 0, description: 'Usable instead of id (docs/identifiers.md); empty or null means none' }),
    commsTemplateId: z
      // Without its own message a union that no option matches says only "Invalid input".
      // null through nullable(), not as a union member: the document would list `{type: null}` twice (a lint warning).
      .union([Guid, z.literal('')], { error: 'must be a GUID (empty, null or the nil GUID: no send)' })
      .nullable()
      .optional()
      .transform((v) => (v && v !== NIL_GUID ? v : undefined))
      .openapi({ description: 'Template to send after creation; empty, null or the nil GUID (Guid.Empty) means no send' }),
    correlationId: optional(text()),
  }).openapi({
    description:
      'validFrom, when given with validTo, must be before it. A commsTemplateId starts an asynchronous send: a guest without an email (or with one that is not an address) is still created, and its invitation fails as comms.failed (`no_email`, `invalid_email`).',
    example: guestExample(),
  }),
);

function guestExample() {
  return {
    id: ex.guestId,
    eventId: ex.eventId,
    firstName: 'Ada',
    lastName: 'Lovelace',
    email: 'ada@example.com',
    plusOnes: 1,
    additionalInfo: 'Table 4; vegetarian',
    barcode: 'GALA-0001',
    tags: 'vip,speaker',
    customId: 'CRM-1001',
    isGroup: false,
  };
}

/** A single create names its event in the body (the batch routes take it from the path). */
export const GuestCreateBody = registry.register(
  'GuestCreate',
  GuestBody.extend({ eventId: PlainId.openapi({ description: 'The event of the guest (one of the caller’s)' }) }).openapi({
    example: guestExample(),
  }),
);

/** Every field of the spec's Guest is answered (docs/api.md, Answers): a text or time not set is null. */
const unsetIsNull = () => z.string().nullable().openapi({ description: 'null when not set' });
/** A field the spec types date-time (or GUID) is published with that format, so a generated client reads it as one. */
const unsetTimeIsNull = () => unsetIsNull().openapi({ format: 'date-time' });
/** Erased guests (docs/personal-data.md) answer these as null; the others stay as they were. */
const erasable = () =>
  z.string().nullable().openapi({ description: 'null when not set, and once the guest’s personal data is erased (`erased: true`)' });

export const GuestResponse = registry.register(
  'GuestResponse',
  z.object({
    id: z.string().openapi({ format: 'uuid' }),
    firstName: erasable(),
    otherNames: erasable(),
    lastName: erasable(),
    email: erasable(),
    plusOnes: Int32.openapi({ description: '0 when not set' }),
    admittedPlusOnes: Int32,
    additionalInfo: erasable(),
    barcode: erasable(),
    tags: unsetIsNull(),
    createdBy: z.string().nullable().openapi({ description: 'As given; when a create does not give it, the id of the User (client) that created the guest' }),
    admitted: unsetTimeIsNull(),
    blockedDate: unsetTimeIsNull(),
    blockedReason: unsetIsNull(),
    eventId: z.string(),
    validFrom: unsetTimeIsNull(),
    validTo: unsetTimeIsNull(),
    isGroup: z.boolean().openapi({ description: 'false when not set' }),
    discharged: unsetTimeIsNull(),
    image: erasable(),
    customId: erasable(),
    commsTemplateId: unsetIsNull().openapi({ format: 'uuid' }),
    correlationId: unsetIsNull(),
    updated: Timestamp.optional().openapi({
      description: 'The guest’s last change (details, tags, ticket, block, check-in or out): a sync’s next `changedSince` is the newest `updated` it read',
    }),
    erased: z.literal(true).optional().openapi({ description: 'Present once the guest’s personal data is erased (POST …/guest/{id}/erase, retention); its personal fields are then null' }),
    erasedAt: Timestamp.optional().openapi({ description: 'When the personal data was erased' }),
  }).openapi({
    description: 'The spec’s Guest: every field is present; a text or time not set is null, plusOnes 0 and isGroup false.',
    example: guestResponseExample(),
  }),
);

/** A guest as answered: every field of the spec's Guest, in its order. */
function guestResponseExample(changes: Record<string, unknown> = {}) {
  const given: Record<string, unknown> = { ...guestExample(), createdBy: ex.clientId, admittedPlusOnes: 0, ...changes };
  return { ...withEveryField(given, guestFields), updated: changes.admitted ?? ex.created };
}
const admittedGuestExample = guestResponseExample({ admitted: ex.scannedAt, admittedPlusOnes: 1 });

/** Spec Limits: at most 200 records per call. */
export const GuestBatch = z
  .array(GuestBody)
  .max(200, 'at most 200 records per call')
  .openapi({
    maxItems: 200,
    description: 'At most 200 records; all or nothing. A record’s eventId, when given, is the path’s event.',
    example: [{ ...guestExample(), eventId: undefined }, { firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.com', customId: 'CRM-1002' }],
  });

export const EventIdParams = z.object({ eventId: PlainId });
export const GuestIdParams = z.object({
  id: RefId.openapi({ description: 'The guest id (GUID) or its customId (docs/identifiers.md)' }),
});

/** With a customId used in several of the caller's events, `eventId` says which (else 409 ambiguous_custom_id). */
export const GuestLookupQuery = z.object({
  eventId: PlainId.optional().openapi({ description: 'The event of the guest; needed when a customId is used in several events' }),
});

/**
 * Spec: removeObsoleteTags is a boolean. In a query it is text: `true`/`false` in any case (as
 * .NET and Java clients write them: `True`, `TRUE`) or `1`/`0`. Anything else, an empty value
 * or the parameter given twice, is 400: nothing is guessed (docs/guests.md, Small rules).
 */
const booleanText = /^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$/;
const booleanQuery = z
  .string()
  .regex(booleanText, 'must be true or false (any case), 1 or 0')
  .transform((v) => v.toLowerCase() === 'true' || v === '1')
  // Published as the spec types it (a boolean: a generated client's parameter is a bool); the
  // other spellings a client may write are taken as well, as the description says.
  .openapi({ type: 'boolean', example: true, description: 'true or false (also taken: any case, 1 or 0)' });

export const UpsertQuery = z.object({ removeObsoleteTags: booleanQuery.optional() });

/** byinfo: every match unless the caller pages (then `limit` defaults to 100). */
export const ByInfoQuery = z.object({
  additionalInfo: z.string().min(1).openapi({ description: 'Text the guest’s `additionalInfo` contains' }),
  limit: QueryInt(1, 1000).optional().openapi({ description: 'Page size (1-1000); without limit and cursor, every match' }),
  cursor: PageQuery.shape.cursor.openapi({ description: 'The X-Next-Cursor of the previous page' }),
});

export const GuestListQuery = PageQuery.extend({
  tag: z.string().max(200).optional().openapi({ description: 'Only guests with this tag (compared without case)' }),
  state: z
    .enum(['admitted', 'not_admitted', 'inside', 'blocked', 'not_blocked', 'discharged'])
    .optional()
    .openapi({ description: 'Only guests checked in (`admitted`) or not, inside now, blocked or not, or checked out (`discharged`)' }),
  q: z.string().min(1).max(200).optional().openapi({ description: 'Text in names, email, barcode or customId' }),
  changedSince: DateTime.optional().openapi({ description: 'Offline sync: guests changed after this time, oldest first' }),
});

/** The history a page at a time (docs/guests.md, History for auditors): a caller who pages nothing gets the first page. */
export const HistoryQuery = GuestLookupQuery.extend({
  asOf: DateTime.optional().openapi({ description: 'The events recorded at or before this instant, and `state`, the guest as it was then; the same on every page' }),
  limit: QueryInt(1, HISTORY_MAX_LIMIT)
    .default(HISTORY_DEFAULT_LIMIT)
    .openapi({ description: `Events per page (1-${HISTORY_MAX_LIMIT}, default ${HISTORY_DEFAULT_LIMIT}; more is 400). With asOf a page may hold fewer, even none: only a missing nextCursor ends the history` }),
  cursor: PageQuery.shape.cursor.openapi({ description: 'The `nextCursor` of the previous page of the same guest and asOf; absent: the first page' }),
});

/** The most a scan can hold: a QR code of version 40 holds at most 7,089 characters (digits only). */
const maxScannedCode = 7089;

export const ScanBody = registry.register(
  'Scan',
  z
    .object({
      guestId: RefId.optional().openapi({ description: 'The guest id, or its customId instead (usable instead of id): a value that is no guest id of the event is tried as a customId' }),
      barcode: z
        .string()
        .min(1)
        .max(maxScannedCode, `must be at most ${maxScannedCode} characters: no QR code or barcode holds more`)
        .optional()
        .openapi({ description: 'What the scanner read: a barcode or a signed ticket (`T1.…`); CR, LF, Tab or spaces around a signed ticket are ignored' }),
      customId: RefId.optional(),
      plusOnes: Int32Count.optional().openapi({ description: 'Plus ones entering with this scan' }),
      force: z.boolean().optional().openapi({ description: 'Override of block and validity on a check-in: the client, or a team member with canForce (else 403); ignored on a check-out' }),
      nonce: z.string().min(1).max(200).optional().openapi({ description: 'A repeat with the same nonce returns the first result' }),
      at: DateTime.optional().openapi({ description: 'Scan time of an offline scanner (default: now)' }),
      gate: z.string().max(100).optional(),
      device: z.string().max(100).optional(),
    })
    .refine((b) => [b.guestId, b.barcode, b.customId].filter((v) => v !== undefined).length === 1, {
      message: 'name the guest by exactly one of guestId, barcode or customId',
      path: ['guestId'],
    })
    .openapi({
      description: 'Names the guest by exactly one of guestId, barcode or customId.',
      // Each branch repeats its field's type: a generator makes a branch without one `unknown` (openapi-typescript).
      oneOf: [named('guestId'), named('barcode'), named('customId')],
      example: { barcode: 'GALA-0001', plusOnes: 1, nonce: 'door3-000123', gate: 'North', device: 'scanner-7' },
    }),
);

export const ScanResponse = registry.register(
  'ScanResult',
  z.object({
    result: z.enum(['admitted', 'rejected', 'discharged']),
    reason: z.enum(rejectionReasons).optional(),
    blockedReason: z.string().optional(),
    scanId: z.string(),
    at: Timestamp,
    guest: GuestResponse.optional(),
    plusOnesAdmitted: z.number().int(),
    plusOnesLeft: z.number().int(),
    replayed: z.boolean(),
  }).openapi({
    example: {
      result: 'admitted',
      scanId: ex.scanId,
      at: ex.scannedAt,
      guest: admittedGuestExample,
      plusOnesAdmitted: 1,
      plusOnesLeft: 0,
      replayed: false,
    },
  }),
);

export const UndoBody = registry.register(
  'CheckInUndo',
  z
    .object({
      scanId: Guid.optional(),
      nonce: z.string().min(1).max(200).optional(),
      guestId: RefId.optional().openapi({ description: 'Undo this guest’s last check-in: its id, or its customId instead (usable instead of id)' }),
      customId: RefId.optional().openapi({ description: 'Undo the last check-in of the guest with this customId' }),
    })
    .refine((b) => [b.scanId, b.nonce, b.guestId, b.customId].filter((v) => v !== undefined).length === 1, {
      message: 'give exactly one of scanId, nonce, guestId or customId',
      path: ['scanId'],
    })
    .openapi({
      description: 'Exactly one of scanId, nonce, guestId or customId.',
      oneOf: [named('scanId', { type: 'string', format: 'uuid' }), named('nonce'), named('guestId'), named('customId')],
      example: { nonce: 'door3-000123' },
    }),
);

export const UndoResponse = registry.register(
  'UndoResult',
  z
    .object({
      annulled: z.string().openapi({ description: 'The scan id of the annulled check-in' }),
      guest: GuestResponse,
    })
    .openapi({ example: { annulled: ex.scanId, guest: guestResponseExample() } }),
);

export const BlockBody = registry.register(
  'BulkBlock',
  z
    .object({
      ids: z.array(RefId).optional().openapi({ description: 'Guests named by id, or by customId instead (usable instead of id): a GUID that is one of the event’s guest ids is that guest, any other value a customId' }),
      customIds: z.array(RefId).optional().openapi({ description: 'Guests named by customId only' }),
      barcodes: z.array(z.string().min(1)).optional(),
      reason: z.string().optional().openapi({ description: 'Recorded as the guests’ blockedReason (block only); at most 4 MiB (UTF-8)' }),
    })
    .superRefine((b, ctx) => {
      // A guest's document holds the reason next to up to twice the guest's 4 MiB of text: it stays under MongoDB's 16 MiB (docs/guests.md, "Size of a guest").
      if (b.reason !== undefined && Buffer.byteLength(b.reason, 'utf8') > GUEST_TEXT_LIMIT) {
        ctx.addIssue({ code: 'custom', message: `must be at most ${GUEST_TEXT_LIMIT} bytes (4 MiB, UTF-8)`, path: ['reason'] });
      }
      const counts = { ids: b.ids?.length ?? 0, customIds: b.customIds?.length ?? 0, barcodes: b.barcodes?.length ?? 0 };
      const total = counts.ids + counts.customIds + counts.barcodes;
      // The error names the list the caller sent (the longest one when all are too many together).
      const path = [(Object.keys(counts) as (keyof typeof counts)[]).reduce((a, k) => (counts[k] > counts[a] ? k : a), 'ids')];
      if (total === 0) ctx.addIssue({ code: 'custom', message: 'name at least one guest in ids, customIds or barcodes', path });
      if (total > 200) ctx.addIssue({ code: 'custom', message: 'at most 200 ids, customIds and barcodes per call', path });
    })
    .openapi({
      description: 'At least one and at most 200 ids, customIds and barcodes in all; an unknown one (or another client’s guest) is 404, each named in errors, and nothing changes.',
      anyOf: [
        named('ids', nonEmptyTexts),
        named('customIds', nonEmptyTexts),
        named('barcodes', nonEmptyTexts),
      ],
      example: { barcodes: ['GALA-0001'], reason: 'Ticket refunded' },
    }),
);

export const ScanRecord = registry.register(
  'ScanRecord',
  z
    .object({
      scanId: z.string(),
      eventId: z.string(),
      guestId: z.string().optional().openapi({ description: 'Absent when no guest matched (reason not_found)' }),
      result: z.enum(['admitted', 'rejected', 'discharged']),
      reason: z.string().optional().openapi({ description: `Why a scan was rejected: ${rejectionReasons.join(', ')}` }),
      blockedReason: z.string().optional(),
      at: Timestamp.openapi({ description: 'Scan time (an offline scanner’s `at`, else when it was recorded)' }),
      recordedAt: Timestamp,
      gate: z.string().optional(),
      device: z.string().optional(),
      nonce: z.string().optional(),
      scannedBy: z.object({ id: z.string(), username: z.string() }),
      people: z.number().int().openapi({ description: 'People who passed: the guest and plus ones (0 when rejected)' }),
      plusOnesAdmitted: z.number().int().optional(),
      annulled: z.boolean().optional().openapi({ description: 'True when the check-in was undone' }),
      annulledAt: Timestamp.optional().openapi({ description: 'When the check-in was undone' }),
      forced: z.literal(true).optional().openapi({ description: 'An admission whose force overrode a block or the validity window; absent otherwise (also when force was sent and nothing barred the guest)' }),
      lookup: z
        .object({ guestId: z.string().optional(), barcode: z.string().optional(), customId: z.string().optional() })
        .optional()
        .openapi({ description: 'What the scanner sent to name the guest' }),
    })
    .openapi({
      example: {
        scanId: ex.scanId,
        eventId: ex.eventId,
        guestId: ex.guestId,
        result: 'admitted',
        at: ex.scannedAt,
        recordedAt: ex.scannedAt,
        gate: 'North',
        device: 'scanner-7',
        nonce: 'door3-000123',
        scannedBy: { id: ex.teamMemberId, username: 'door-three' },
        people: 2,
        plusOnesAdmitted: 1,
        lookup: { barcode: 'GALA-0001' },
      },
    }),
);
export const ScanPage = pageOf(ScanRecord);

const counts = z.object({ admissions: z.number().int(), people: z.number().int() });
export const EventStatsResponse = registry.register(
  'EventStats',
  z
    .object({
      eventId: z.string(),
      invited: z.number().int().openapi({ description: 'Guests of the event' }),
      admitted: z.number().int().openapi({ description: 'Guests admitted at least once' }),
      insideNow: z.object({ guests: z.number().int(), people: z.number().int() }),
      plusOnes: z.object({ invited: z.number().int(), insideNow: z.number().int() }),
      blocked: z.number().int(),
      rejectedScans: z.record(z.string(), z.number().int()).openapi({ description: `Rejected scans by reason (${rejectionReasons.join(', ')})` }),
      annulledCheckIns: z.number().int(),
      admissionsByGate: z.record(z.string(), counts),
      admissionsByDevice: z.record(z.string(), counts),
    })
    .openapi({
      example: {
        eventId: ex.eventId,
        invited: 250,
        admitted: 180,
        insideNow: { guests: 171, people: 230 },
        plusOnes: { invited: 90, insideNow: 59 },
        blocked: 2,
        rejectedScans: { already_admitted: 4, not_found: 3, blocked: 1 },
        annulledCheckIns: 1,
        admissionsByGate: { North: { admissions: 120, people: 160 }, South: { admissions: 60, people: 79 } },
        admissionsByDevice: { 'scanner-7': { admissions: 120, people: 160 }, 'scanner-9': { admissions: 60, people: 79 } },
      },
    }),
);

export const TeamStatsResponse = registry.register(
  'TeamMemberEventStats',
  z
    .array(
      z.object({
        id: z.string(),
        eventId: z.string(),
        teamMemberId: z.string(),
        username: z.string(),
        checkedIn: Int32.openapi({ description: `People checked in (guests and plus ones), annulled ones subtracted; at most ${INT32_MAX} (int32), where a larger count stops` }),
        checkedOut: Int32.openapi({ description: `People checked out; at most ${INT32_MAX} (int32), where a larger count stops` }),
        checkedInActivity: z.array(
          z.object({
            admitted: z.string().openapi({ description: "Start of the bucket (a UTC instant); buckets follow the event's clock, as the timeline's do" }),
            admittedCount: Int32.openapi({ description: `People checked in during the bucket; at most ${INT32_MAX} (int32)` }),
          }),
        ),
      }),
    )
    .openapi({
      example: [
        {
          id: `${ex.eventId}:${ex.teamMemberId}`,
          eventId: ex.eventId,
          teamMemberId: ex.teamMemberId,
          username: 'door-three',
          checkedIn: 42,
          checkedOut: 3,
          checkedInActivity: [
            { admitted: '2026-12-12T18:00:00.000Z', admittedCount: 30 },
            { admitted: '2026-12-12T18:15:00.000Z', admittedCount: 12 },
          ],
        },
      ],
    }),
);

/** One recorded event of a guest's history (also each `history` entry of its personal data). */
export const GuestHistoryEntry = registry.register('GuestHistoryEntry', z.object({
  type: z.string().openapi({ description: 'Event type, e.g. GuestRegistered, GuestDetailsChanged, GuestAdmitted, GuestAdmissionAnnulled, InvitationRequested (docs/guests.md, History for auditors)' }),
  stream: z.string().openapi({ description: 'Whose history: the guest’s stream or one of its invitation emails’' }),
  at: Timestamp,
  recordedAt: Timestamp,
  revision: z.number().int(),
  actor: z.object({ type: z.string(), id: z.string() }),
  correlationId: z.string(),
  requestId: z.string().optional(),
  data: z.record(z.string(), z.unknown()).openapi({ description: 'The event’s own fields, decrypted (their names depend on `type`)' }),
}));

export const GuestHistoryResponse = registry.register(
  'GuestHistory',
  z
    .object({
      guestId: z.string(),
      asOf: z.string().optional(),
      events: z.array(GuestHistoryEntry),
      state: z
        .record(z.string(), z.unknown())
        .nullable()
        .optional()
        .openapi({ description: 'With asOf: the guest as it was then (null when it did not exist yet); the same on every page' }),
      nextCursor: z
        .string()
        .optional()
        .openapi({ description: 'Absent on the last page; pass it as `cursor` (with the same asOf) for the next events. Events recorded after this page was read come on later pages' }),
    })
    .openapi({
      example: {
        guestId: ex.guestId,
        events: [
          {
            type: 'GuestRegistered',
            stream: guestStream(ex.clientId, ex.guestId),
            at: ex.created,
            recordedAt: ex.created,
            revision: 0,
            actor: { type: 'client', id: ex.clientId },
            correlationId: '5b0c7f2e-1d3a-4e5b-8c6d-7e8f9a0b1c2d',
            data: { guestId: ex.guestId, clientId: ex.clientId, eventId: ex.eventId, firstName: 'Ada', lastName: 'Lovelace', barcode: 'GALA-0001', tags: [] },
          },
          {
            type: 'GuestAdmitted',
            stream: guestStream(ex.clientId, ex.guestId),
            at: ex.scannedAt,
            recordedAt: ex.scannedAt,
            revision: 1,
            actor: { type: 'team_member', id: ex.teamMemberId },
            correlationId: '6c1d8a3f-2e4b-4f6c-9d7e-8f9a0b1c2d3e',
            data: {
              scanId: ex.scanId,
              at: ex.scannedAt,
              gate: 'North',
              scannedBy: { id: ex.teamMemberId, username: 'door-three' },
              guestId: ex.guestId,
              eventId: ex.eventId,
              guestEntered: true,
              plusOnesAdmitted: 1,
              admittedPlusOnes: 1,
              people: 2,
              forced: false,
              recordedAt: ex.scannedAt,
            },
          },
        ],
      },
    }),
);

export const ScanListQuery = PageQuery.extend({
  result: z.enum(['admitted', 'rejected', 'discharged']).optional().openapi({ description: 'Only the scans with this result' }),
});
export const TeamStatsQuery = z.object({
  bucket: QueryInt(1, 1440).default(15).openapi({ description: 'Bucket size in minutes (default 15)' }),
});
