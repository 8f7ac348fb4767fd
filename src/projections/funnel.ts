import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import { guestKeyOfStream, type GuestEvent } from '../domain/guest.js';
import type { InvitationEvent, ProviderEventType } from '../domain/invitation.js';
import { fieldKey } from './guests.js';
import type { Projection } from './projection.js';

/**
 * The invitation-to-arrival funnel's two read models (docs/analytics.md). Both are written
 * with `$set`/`$min`/`$unset` only, so a replayed event changes nothing; the funnel query
 * joins them per guest.
 */

/** `funnel_invitations`: per invitation email, when each step first happened. */
export interface FunnelInvitationDoc {
  _id: string;
  clientId: string;
  eventId: string;
  templateId: string;
  guestId: string;
  requestedAt: string;
  sentAt?: string;
  failedAt?: string;
  /** First time the provider reported each event (`opened`: the first open). */
  provider?: Partial<Record<ProviderEventType, string>>;
}

/**
 * `funnel_arrivals`: per guest, the check-ins that let the guest in and still stand (by scan),
 * and the admission a create imported.
 * `_id` is the guest's storage key (as the `guests` document's); `guestId` the GUID (absent in
 * documents written before guest ids were scoped, whose `_id` is the GUID).
 */
export interface FunnelArrivalDoc {
  _id: string;
  guestId?: string;
  clientId: string;
  eventId: string;
  entries?: Record<string, string>;
  /** The `admitted` of an admission a create imported (GuestAdmissionImported): no scan, but the guest came. */
  importedAt?: string;
}

export const FUNNEL_INVITATIONS = 'funnel_invitations';
export const FUNNEL_ARRIVALS = 'funnel_arrivals';

function invitationOp(id: string, update: Record<string, unknown>): WriteOp {
  return { kind: 'update', collection: FUNNEL_INVITATIONS, id, update };
}

function applyInvitation(event: StoredEvent & InvitationEvent): WriteOp[] {
  switch (event.type) {
    case 'SendRequested': {
      const d = event.data;
      return [
        {
          kind: 'update',
          collection: FUNNEL_INVITATIONS,
          id: d.attendeeInvitationId,
          upsert: true,
          update: {
            $set: { clientId: d.clientId, eventId: d.eventId, templateId: d.templateId, guestId: d.attendeeId, requestedAt: d.requestedAt },
          },
        },
      ];
    }
    case 'SendSucceeded':
      return [invitationOp(event.data.attendeeInvitationId, { $min: { sentAt: event.data.sentAt } })];
    case 'SendFailed':
      return [invitationOp(event.data.attendeeInvitationId, { $min: { failedAt: event.data.at } })];
    case 'ProviderEventReceived':
      // A machine open (a privacy proxy) is no sign the guest saw the invitation.
      if (event.data.machineOpen) return [];
      return [invitationOp(event.data.attendeeInvitationId, { $min: { [`provider.${event.data.event}`]: event.data.at } })];
    default:
      return [];
  }
}

function applyGuest(event: StoredEvent & GuestEvent): WriteOp[] {
  const arrival = (update: Record<string, unknown>, upsert = false): WriteOp => ({
    kind: 'update',
    collection: FUNNEL_ARRIVALS,
    id: guestKeyOfStream(event.streamName),
    ...(upsert ? { upsert } : {}),
    update,
  });
  switch (event.type) {
    case 'GuestAdmitted':
      if (!event.data.guestEntered) return [];
      return [
        arrival(
          { $set: { clientId: event.metadata.tenantId, eventId: event.data.eventId, guestId: event.data.guestId, [`entries.${fieldKey(event.data.scanId)}`]: event.data.at } },
          true,
        ),
      ];
    case 'GuestAdmissionAnnulled':
      return [arrival({ $unset: { [`entries.${fieldKey(event.data.scanId)}`]: '' } })];
    case 'GuestAdmissionImported':
      // The guest came in (the event stats count it as admitted); no undo can take it back.
      return [arrival({ $set: { clientId: event.metadata.tenantId, eventId: event.data.eventId, guestId: event.data.guestId, importedAt: event.data.admitted } }, true)];
    default:
      return [];
  }
}

export const funnelProjection: Projection = {
  name: 'funnel',
  /** 2: admissions imported with a guest create count in checkedIn; a row per template of the event. */
  version: 2,
  filter: { streamPrefixes: ['invitation-', 'guest-'] },
  collections: [
    { name: FUNNEL_INVITATIONS, indexes: [{ name: 'eventId_templateId', keys: { eventId: 1, templateId: 1 } }, { name: 'templateId', keys: { templateId: 1 } }] },
    { name: FUNNEL_ARRIVALS, indexes: [{ name: 'eventId', keys: { eventId: 1 } }] },
  ],
  apply(stored) {
    if (stored.streamName.startsWith('invitation-')) return applyInvitation(stored as StoredEvent & InvitationEvent);
    return applyGuest(stored as StoredEvent & GuestEvent);
  },
};
