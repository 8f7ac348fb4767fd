import { DomainError } from '../domain/decider.js';
import { guestKey } from '../domain/guest.js';
import { erasedCustomIdKey, reservationKey } from '../domain/reservation.js';
import type { GuestDoc } from '../projections/guests.js';
import { isUuid } from '../shared/ids.js';
import { guests } from './guests.js';
import type { Services } from './services.js';

/**
 * The caller's guest with this id, or null. Guest ids are scoped per client (docs/identifiers.md):
 * the document is found under the client's key, or, for a guest stored before the scoping, under
 * the bare GUID when it belongs to the caller. Another client's guest with the same GUID is never
 * found.
 */
export async function findOwnGuest(services: Services, clientId: string, guestId: string): Promise<GuestDoc | null> {
  if (!isUuid(guestId)) return null;
  const doc = await guests(services).get(guestKey(clientId, guestId));
  if (doc) return doc;
  const legacy = await guests(services).get(guestId.toLowerCase());
  return legacy && legacy.clientId === clientId ? legacy : null;
}

/**
 * The `customIdLower` a customId sent names, on the guest routes and at the door alike: the
 * customId without the white space around it, Unicode NFC, lower-cased, as its reservation keys
 * it and the guests read model stores it (` C-1 ` and `c-1` are one customId of an event).
 */
export function customIdMatch(value: string): string {
  return reservationKey(value);
}

/**
 * Spec, Guest.customId: "usable instead of id". A route that names one guest takes either
 * (docs/identifiers.md):
 * 1. a GUID that is the id of one of the caller's guests: that guest;
 * 2. otherwise a customId, matched case-insensitively among the caller's guests, within
 *    `eventId` when given. customIds are unique per event, not per client: when several of the
 *    caller's events have a guest with this customId and no `eventId` says which, the answer
 *    is 409 `ambiguous_custom_id` (nothing is guessed).
 */
export async function findGuestByIdOrCustomId(
  services: Services,
  clientId: string,
  value: string,
  eventId?: string,
): Promise<GuestDoc> {
  if (isUuid(value)) {
    const doc = await findOwnGuest(services, clientId, value);
    if (doc && (eventId === undefined || doc.eventId === eventId)) return doc;
  }
  const filter = { customIdLower: customIdMatch(value), clientId, ...(eventId !== undefined ? { eventId } : {}) };
  const { items } = await guests(services).find(filter, { limit: 2 });
  if (items.length === 0) throw new DomainError('not_found', 'guest not found: no guest of yours has this id or customId');
  if (items.length > 1) {
    throw new DomainError('conflict', 'this customId names guests of several of your events; add ?eventId=<event id> to say which', {
      code: 'ambiguous_custom_id',
      errors: [{ path: 'eventId', message: 'required: the customId is used in more than one event' }],
    });
  }
  return items[0]!;
}

/**
 * The guest an erasure names: as `findGuestByIdOrCustomId`, and when no guest has the customId,
 * the guest erased while it had it (GuestErased.customIdKey), so an erasure retried by customId
 * (after a lost answer, or a batch cut short) finds what it erased and answers as erasing again
 * does, instead of 404. Only erasures look here: an erased guest's customId names it nowhere else.
 */
export async function findGuestToErase(services: Services, clientId: string, value: string, eventId?: string): Promise<GuestDoc> {
  try {
    return await findGuestByIdOrCustomId(services, clientId, value, eventId);
  } catch (error) {
    if (!(error instanceof DomainError) || error.code !== 'not_found') throw error;
    const nameKey = await services.dataKeys?.streamNameKey();
    const filter = { customIdKey: erasedCustomIdKey(clientId, value, nameKey), clientId, ...(eventId !== undefined ? { eventId } : {}) };
    const { items } = await services.readStore.collection<{ _id: string; clientId: string; eventId: string }>('erased_custom_ids').find(filter, { limit: 2 });
    // Several erased guests of several events had it: as for live ones, eventId must say which.
    if (items.length !== 1) throw error;
    const doc = await guests(services).get(items[0]!._id);
    if (!doc || doc.clientId !== clientId) throw error;
    return doc;
  }
}
