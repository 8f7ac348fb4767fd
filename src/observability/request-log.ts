/**
 * What the request log line says about a request's URL. Search text (`q`, `additionalInfo`,
 * `email`), cursors (they hold the sort values of the last row, e.g. a guest's name) and a
 * customId in a guest path are a guest's personal data, and a log line cannot be erased
 * (docs/personal-data.md): their values are logged as `[Redacted]`. Ids, times, limits and
 * filters by state stay, for debugging.
 */
import { isUuid } from '../shared/ids.js';

export const REDACTED = '[Redacted]';

/** Query parameters whose values name no person; any other parameter's value is redacted. */
const plainParams = new Set([
  'eventId',
  'templateId',
  'limit',
  'type',
  'bucket',
  'by',
  'from',
  'to',
  'status',
  'state',
  'removeObsoleteTags',
  'asOf',
  'since',
  'changedSince',
]);

/** Parameters that name a guest by id or customId: a GUID is shown, a customId (it may be an email address) is not. */
const guestParams = new Set(['attendeeId']);

const shownValue = (name: string, value: unknown): unknown =>
  plainParams.has(name) || (guestParams.has(name) && typeof value === 'string' && isUuid(value)) ? value : REDACTED;

/** `/checkin/v1/api/guest/<id or customId>[/...]`: a customId may be an email address. */
const guestPath = /^(\/checkin\/v1\/api\/guest\/)([^/?]+)/;
/**
 * `/checkin/v1/api/teammembers/user/<username>/events`: a user name, or the client's email, which
 * a team member's removal cannot take back out of a log line (docs/personal-data.md, "Team members
 * and account users"). Always redacted.
 */
const userNamePath = /^(\/checkin\/v1\/api\/teammembers\/user\/)([^/?]+)/;

/** The URL as logged: the path with a non-GUID guest id and a user name redacted, and personal query values redacted. */
export function loggedUrl(url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const shownPath = path
    .replace(guestPath, (whole, prefix: string, id: string) => (isUuid(decodeSafely(id)) ? whole : `${prefix}${REDACTED}`))
    .replace(userNamePath, (_whole, prefix: string) => `${prefix}${REDACTED}`);
  if (queryAt === -1) return shownPath;
  const params = new URLSearchParams(url.slice(queryAt + 1));
  const shown = [...params].map(([name, value]) => {
    const logged = shownValue(name, value);
    return `${encodeURIComponent(name)}=${logged === REDACTED ? REDACTED : encodeURIComponent(value)}`;
  });
  return `${shownPath}?${shown.join('&')}`;
}

/** The parsed query as logged: the same redaction as in the URL. */
export function loggedQuery(query: unknown): Record<string, unknown> {
  if (query === null || typeof query !== 'object') return {};
  return Object.fromEntries(Object.entries(query).map(([name, value]) => [name, shownValue(name, value)]));
}

function decodeSafely(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** pino-http's `serializers.req`: takes the standard serialized request, returns it with the URL and query redacted. */
export function redactRequestUrl<R extends { url?: string; query?: unknown }>(req: R): R {
  if (typeof req.url === 'string') req.url = loggedUrl(req.url);
  // A new object: the standard serializer's `query` is the request's own.
  if (req.query !== undefined) req.query = loggedQuery(req.query);
  return req;
}
