import type { Response } from 'express';
import type { ZodType } from 'zod';
import { findEvent, storedEventId } from '../commands/events.js';
import { findGuestByIdOrCustomId } from '../commands/guest-lookup.js';
import type { Services } from '../commands/services.js';
import { normalizeId } from '../shared/ids.js';
import { principalOf } from './context.js';
import type { RouteSpec } from './route.js';

type Raw = Parameters<NonNullable<RouteSpec<ZodType, ZodType, ZodType>['timeZone']>>[0];

/**
 * A route's `timeZone`: the zone the request names itself (`timeZoneId` of an event body), else
 * the stored zone of the event it names (path or body `eventId`). docs/identifiers.md.
 */
export function eventTimeZone(services: Services, pick: (raw: Raw) => { eventId?: unknown; timeZoneId?: unknown }) {
  return async (raw: Raw, res: Response): Promise<string | undefined> => {
    const { eventId, timeZoneId } = pick(raw);
    if (typeof timeZoneId === 'string' && timeZoneId) return timeZoneId;
    if (typeof eventId !== 'string' || eventId === '' || eventId.length > 128) return undefined;
    const { tenantId } = principalOf(res);
    return (await findEvent(services, tenantId, await storedEventId(services, tenantId, eventId)))?.timeZoneId;
  };
}

/** The body as a record (or an empty one). */
export const fields = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/**
 * The guest history's zone for an offset-less `asOf`: the event `?eventId=` names, else the guest's
 * own event (the path names the guest; an auditor need not repeat its event). Only `asOf` reads a
 * wall time there, so nothing is looked up without it. A guest not found is left to the route's 404.
 */
export function guestHistoryTimeZone(services: Services) {
  const named = eventTimeZone(services, ({ query }) => ({ eventId: fields(query).eventId }));
  return async (raw: Raw, res: Response): Promise<string | undefined> => {
    const query = fields(raw.query);
    if (typeof query.eventId === 'string' && query.eventId !== '') return named(raw, res);
    if (typeof query.asOf !== 'string' || typeof raw.params.id !== 'string') return undefined;
    const { tenantId } = principalOf(res);
    const guest = await findGuestByIdOrCustomId(services, tenantId, normalizeId(raw.params.id)).catch(() => undefined);
    return guest ? (await findEvent(services, tenantId, guest.eventId))?.timeZoneId : undefined;
  };
}
