import { z } from 'zod';
import { getOpenApiMetadata, getRefId } from '@asteasolutions/zod-to-openapi';
import { registry } from '../openapi.js';
import { normalizeId } from '../../shared/ids.js';
import { parseDateTime } from '../../shared/date-time.js';
import type { WallReading } from '../../shared/time-zones.js';
import { EMAIL_PATTERN, emailAddressProblem } from '../../domain/email-address.js';

/**
 * A branch of a body's `oneOf`/`anyOf` that requires one field, with the field's type: without the type, a generated
 * client types the branch (and with an `anyOf` the whole body) as `unknown` (openapi-typescript), so nothing is checked.
 */
export const named = (field: string, schema: Record<string, unknown> = { type: 'string' }) => ({ required: [field], properties: { [field]: schema } });

/** A non-empty list of texts (a `named` branch of a list that must not be empty). */
export const nonEmptyTexts = { type: 'array', items: { type: 'string' }, minItems: 1 };

/** Any RFC 4122 textual UUID, case-insensitive; stored lowercase. */
export const Guid = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a GUID')
  .transform((v) => v.toLowerCase())
  .openapi({ type: 'string', format: 'uuid', example: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f' });

/**
 * An optional field that takes JSON null as "not given": .NET and Java serializers write null for
 * every property left unset, and answers show unset fields as null. On an update (Event, User) a
 * null field keeps its value, as a field left out does, so no field is cleared by a client that
 * never set it (docs/api.md, Bodies).
 */
export const nullAsAbsent = <T extends z.ZodType>(schema: T) =>
  schema.nullish().transform((v) => (v === null ? undefined : v)) as unknown as z.ZodOptional<T>;

/**
 * `retentionDays` (an event's own, a client's default): whole days, `""` removes it (as `""`
 * empties a text) and `null` or leaving it out keeps it, so a client that writes every property
 * never switches off the erasure of guests' personal data by accident (docs/personal-data.md).
 */
export const retentionDays = (description: string) =>
  z
    .union([z.number().int().min(0).max(36_500), z.literal('')])
    .nullish()
    .transform((v) => (v === '' ? null : v === null ? undefined : v))
    .openapi({ description });

/**
 * The nil GUID (.NET's `Guid.Empty`) is what a client sends for a Guid property it never set. In
 * a request, an optional GUID that is nil is not given: the spec's "Empty or null means no send"
 * (commsTemplateId), and no guest or template is made with the id all zeros (docs/identifiers.md).
 */
export const NIL_GUID = '00000000-0000-0000-0000-000000000000';

/**
 * A GUID the caller chooses for a record it creates (guest `id`, template `id`): kept as sent, so
 * the command can store the caller's spelling beside the lowercase key and answer it (spec: "for
 * tracking"; docs/identifiers.md). Matched in any case like every GUID; nil is "not given".
 */
export const OptionalGuidAsSent = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a GUID')
  .transform((v) => (v === NIL_GUID ? undefined : v))
  .openapi({ type: 'string', format: 'uuid', example: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f' })
  .optional();

/**
 * Every id the spec does not mark GUID (Event.id, TeamMember.id, eventId, customId, user and client
 * ids): a plain string of 1-128 characters without control characters, other than `.` and `..`
 * (docs/identifiers.md).
 * Kept exactly as sent, a GUID-shaped value in upper case too: the spec marks these ids string, not
 * GUID, so `ABC…` and `abc…` are two ids (docs/identifiers.md, Case; ids stored lowercase before
 * this rule are still found: storedEventId, storedTeamMemberId).
 */
const plainIdText = () =>
  z
    .string()
    .min(1, 'must not be empty')
    // Characters are Unicode code points, as JSON Schema's maxLength counts them (an emoji is one).
    .refine((v) => [...v].length <= 128, { message: 'must be at most 128 characters' })
    .refine((v) => !/[\u0000-\u001f\u007f-\u009f]/.test(v), { message: 'must not contain control characters' })
    // URLs resolve `.` and `..` path segments (even percent-encoded) before they reach us: no route could name them.
    .refine((v) => v !== '.' && v !== '..', { message: 'must not be . or ..' });
const plainIdDocument = () => ({
  type: 'string' as const,
  minLength: 1,
  maxLength: 128,
  pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$',
  not: { enum: ['.', '..'] },
  example: 'gala-2026',
  description: 'Any string of 1-128 characters without control characters, except . and .. (docs/identifiers.md)',
});
export const PlainId = plainIdText().openapi(plainIdDocument());

/**
 * A plain-id field that names a GUID-keyed record instead: a guest by its id or customId, a client
 * by its id. A GUID there is matched in any case (lowercased: guest and client ids are GUIDs); any
 * other value is a customId, matched case-insensitively anyway (docs/identifiers.md).
 */
export const RefId = plainIdText().transform(normalizeId).openapi(plainIdDocument());

/**
 * A Guest's `customId` as written into a guest (spec: "Caller-chosen identifier", typed string,
 * not GUID): the rules of a plain id, kept exactly as sent, a GUID-shaped one too. It is matched
 * through its caseless key (`customIdLower`), so lowering it here gained nothing and answered the
 * caller's own key back as another string (docs/identifiers.md, Case).
 */
export const CustomIdText = plainIdText().openapi(plainIdDocument());

/**
 * Spec: timeZoneId (Event, User) is a string, so any string, stored and answered as given. Where a
 * zone is needed, an IANA name (`Europe/Berlin`) or a Windows name (`W. Europe Standard Time`) is
 * used and any other text is skipped for the next zone (docs/identifiers.md, "Time zones"). A new,
 * unregistered schema each call: a field that also takes null needs it inline, since the document
 * would write a nullable reference as allOf [TimeZoneId, string|null], which null fails.
 */
export const timeZoneName = () =>
  z.string().openapi({
    example: 'Europe/Berlin',
    description:
      'Any string (spec: string), kept as given. An IANA time zone or a Windows time zone name is the zone of offset-less date-times, exports, ' +
      'analytics and invitation emails; other text is skipped there for the next zone (the event’s, then the account’s, then UTC)',
  });

export const TimeZoneId = registry.register('TimeZoneId', timeZoneName());

let readingZone = 'UTC';

/**
 * Runs `parse` with date-times that carry no offset read on the clocks of `timeZone` (an IANA
 * name). zod parses synchronously, so the setting cannot leak into another request.
 */
export function readingTimesIn<T>(timeZone: string, parse: () => T): T {
  const previous = readingZone;
  readingZone = timeZone;
  try {
    return parse();
  } finally {
    readingZone = previous;
  }
}

/**
 * ISO 8601 date-time, normalised to UTC with milliseconds. With an offset (`Z`, `+01:00`,
 * `+0100`, `+01`) it is that instant; without one it is a wall time read in the zone of
 * `readingTimesIn` (the event's, else the client's, else UTC: docs/identifiers.md). A date
 * that does not exist (2026-02-30) is refused, not rolled over.
 */
const dateTime = (reading: WallReading) => z
  .string()
  .transform((v, ctx) => {
    const parsed = parseDateTime(v, readingZone, reading);
    if (parsed === undefined) {
      // An offset's + sent unencoded in a URL query arrives as a space: say so, or the example below misleads.
      const plusAsSpace = /T\d{2}:\d{2}(:\d{2}([.,]\d+)?)? \d{2}(:?\d{2})?$/i.test(v) && parseDateTime(v.replace(/ (?=\d{2}(:?\d{2})?$)/, '+'), 'UTC');
      ctx.addIssue({
        code: 'custom',
        message: plusAsSpace
          ? 'must be an ISO 8601 date-time: its offset has a space where a + belongs; in a URL query, write + as %2B (2026-11-21T11:00:00%2B01:00)'
          : 'must be an existing ISO 8601 date-time, e.g. 2026-11-21T10:00:00Z or 2026-11-21T11:00:00+01:00',
      });
      return z.NEVER;
    }
    return parsed;
  })
  .openapi({
    format: 'date-time',
    example: '2026-11-21T10:00:00.000Z',
    description: 'ISO 8601; without an offset, read in the event’s time zone (else the client’s, else UTC)',
  });

export const DateTime = dateTime('first');

/**
 * An instant the service answers, ISO 8601 in UTC (spec: "Timestamps are ISO 8601 date-time strings"). The
 * format tells a generated client that the field is a date-time (a date type, a date parser), not any text.
 */
export const Timestamp = z.string().openapi({ format: 'date-time' });

/**
 * The bounds of a guest's validity window (validFrom, validTo): the window holds every instant
 * at which the event's clocks show a time inside it, so a wall time the clocks show twice (set
 * back) is its first occurrence as a start and its last as an end, and one they skip (set
 * forward) is the moment they jump (docs/guests.md, "Validity windows").
 */
export const WindowStart = dateTime('from').openapi({
  description: 'ISO 8601; without an offset, read on the event’s clocks: a time they show twice is the first, one they skip is when they jump',
});
export const WindowEnd = dateTime('until').openapi({
  description: 'ISO 8601; without an offset, read on the event’s clocks: a time they show twice is the last, one they skip is when they jump',
});

/**
 * A text that must say something: white space around it is trimmed, and one of white space only
 * is refused. The document says so with `pattern: \S` (at least one other character), so a
 * client generated from it does not send a name of a lone tab. A field the spec types string
 * gets no `max` (any length; BODY_LIMIT bounds the request); our own fields may set one.
 */
export const VisibleText = (max?: number) => {
  const blank = 'must hold a character other than white space';
  // abort: an empty string gets that one message, not "Too small" next to it.
  const text = z.string().min(1, { error: blank, abort: true }).regex(/\S/, blank).trim();
  return max === undefined ? text : text.max(max);
};

/**
 * An email address as the service accepts it. The same pattern validates and is published,
 * so a client generated from /openapi.json sends only addresses that are accepted; an
 * internationalized domain (`ada@bücher.de`) must also convert to its ASCII form (UTS #46),
 * which a pattern cannot say (docs/api.md, Strings).
 */
export const Email = z
  .string()
  .max(320)
  .superRefine((value, ctx) => {
    const problem = emailAddressProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
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

/**
 * A whole number in a URL query, written in decimal digits (`limit=50`): `0x10`, `1e2`, ` 5`,
 * `5.0`, an empty value or the parameter given twice are 400, with one message that says what to send.
 */
export const QueryInt = (min: number, max: number) => {
  const message = `must be a whole number from ${min} to ${max}`;
  return z.preprocess(
    (v) => (typeof v === 'string' && /^\d{1,10}$/.test(v) ? Number(v) : v),
    z.number({ error: message }).int({ error: message }).min(min, { error: message }).max(max, { error: message }),
  );
};

export const PageQuery = z.object({
  limit: QueryInt(1, 1000).default(100).openapi({ description: 'Page size (1-1000, default 100)' }),
  cursor: Cursor.optional(),
});

const pageSchema = <T extends z.ZodType>(item: T) => {
  const itemExample = getOpenApiMetadata(item).example;
  return z
    .object({
      items: z.array(item),
      nextCursor: z.string().optional().openapi({ description: 'Absent on the last page; pass it as `cursor` for the next one' }),
    })
    .openapi(itemExample === undefined ? {} : { example: { items: [itemExample], nextCursor: 'WyJzdGFydFRpbWU6MSxfaWQ6MSIsIjIwMjYtMTItMTJUMTg6MDA6MDAuMDAwWiIsIm15LWV2ZW50LTEiXQ' } });
};
const pages = new Map<z.ZodType, ReturnType<typeof pageSchema>>();

/**
 * `{items, nextCursor?}`; its example wraps the item's example. The page of a named item is one
 * named component, `<Item>Page` (`EventResponsePage`), that every list of it refers to: a
 * generated client gets one page type per item, not one per operation.
 */
export const pageOf = <T extends z.ZodType>(item: T): ReturnType<typeof pageSchema<T>> => {
  const known = pages.get(item);
  if (known) return known as ReturnType<typeof pageSchema<T>>;
  const refId = getRefId(item);
  const page = refId === undefined ? pageSchema(item) : registry.register(`${refId}Page`, pageSchema(item));
  pages.set(item, page);
  return page;
};
