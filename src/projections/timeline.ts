import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import type { DoorEvent, GuestEvent } from '../domain/guest.js';
import { fieldKey } from './guests.js';
import type { Projection } from './projection.js';

/**
 * `timeline_minutes`: the door's activity per event and UTC minute (docs/analytics.md). A scan
 * adds to one small document, so the arrivals curve of any bucket size and time zone is a
 * fold over the event's minutes (a few hundred documents), never over its scans.
 */
export interface DoorCounts {
  /** Scans that let someone in. */
  admissions?: number;
  /** People through the door (guests and plus ones). */
  admitted?: number;
  /** People checked out. */
  exits?: number;
  /** Rejected scans, by reason. */
  rejected?: Record<string, number>;
}

export interface TimelineMinuteDoc extends DoorCounts {
  _id: string;
  clientId: string;
  eventId: string;
  /** Minutes since the Unix epoch (UTC). */
  minute: number;
  /** Check-ins undone (their people are taken off `admitted` of the minute they were admitted). */
  annulled?: number;
  /** The same counts per gate and per device (keys encoded with `fieldKey`). */
  gates?: Record<string, DoorCounts>;
  devices?: Record<string, DoorCounts>;
}

export const TIMELINE_COLLECTION = 'timeline_minutes';

const minuteOf = (at: string): number => Math.floor(Date.parse(at) / 60_000);

function minuteOp(event: StoredEvent & { data: { eventId: string } }, at: string, inc: Record<string, number>): WriteOp {
  const minute = minuteOf(at);
  const eventId = event.data.eventId;
  return {
    kind: 'update',
    collection: TIMELINE_COLLECTION,
    id: `${eventId}:${minute}`,
    upsert: true,
    update: { $set: { clientId: event.metadata.tenantId, eventId, minute }, $inc: inc },
  };
}

/** The same increments at the total, at the scan's gate and at its device. */
function everywhere(scan: { gate?: string; device?: string }, counts: Record<string, number>): Record<string, number> {
  const gate = `gates.${fieldKey(scan.gate ?? '(none)')}`;
  const device = `devices.${fieldKey(scan.device ?? '(none)')}`;
  const inc: Record<string, number> = {};
  for (const [field, value] of Object.entries(counts)) {
    inc[field] = value;
    inc[`${gate}.${field}`] = value;
    inc[`${device}.${field}`] = value;
  }
  return inc;
}

function applyTimeline(stored: StoredEvent): WriteOp[] {
  if (stored.streamName.startsWith('door-')) {
    const event = stored as StoredEvent & DoorEvent;
    return [minuteOp(event, event.data.at, everywhere(event.data, { [`rejected.${event.data.reason}`]: 1 }))];
  }
  const event = stored as StoredEvent & GuestEvent;
  switch (event.type) {
    case 'GuestAdmitted':
      return [minuteOp(event, event.data.at, everywhere(event.data, { admissions: 1, admitted: event.data.people }))];
    case 'GuestDischarged':
      return [minuteOp(event, event.data.at, everywhere(event.data, { exits: event.data.people }))];
    case 'GuestScanRejected':
      return [minuteOp(event, event.data.at, everywhere(event.data, { [`rejected.${event.data.reason}`]: 1 }))];
    case 'GuestAdmissionAnnulled':
      // The annulment does not name the gate or device: only the totals are corrected.
      return [minuteOp(event, event.data.admittedAt, { admissions: -1, admitted: -event.data.people, annulled: 1 })];
    default:
      return [];
  }
}

export const timelineProjection: Projection = {
  name: 'timeline',
  filter: { streamPrefixes: ['guest-', 'door-'] },
  collections: [{ name: TIMELINE_COLLECTION, indexes: [{ name: 'eventId_minute', keys: { eventId: 1, minute: 1 } }] }],
  apply: applyTimeline,
};
