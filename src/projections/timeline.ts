import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import type { DoorEvent, GuestEvent } from '../domain/guest.js';
import { fieldKey } from './guests.js';
import type { Projection } from './projection.js';
import { exactKey } from '../shared/ids.js';

/**
 * `timeline_minutes`: the door's activity per event and UTC minute (docs/analytics.md). A scan
 * adds to small per-minute documents, so the arrivals curve of any bucket size and time zone
 * is a fold over the event's minutes (a few hundred documents), never over its scans. Each
 * minute has a `total` document and, apart, a `gate` and a `device` one, so the plain curve
 * never reads the splits. `timeline_heads` holds, per event, the position of the last event
 * applied to its minutes, so the route can keep answers until the event has a new scan
 * (src/commands/timeline-cache.ts).
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

export type TimelineSplit = 'total' | 'gate' | 'device';

export interface TimelineMinuteDoc extends DoorCounts {
  _id: string;
  clientId: string;
  eventId: string;
  split: TimelineSplit;
  /** Minutes since the Unix epoch (UTC). */
  minute: number;
  /** Totals only: check-ins undone (their people are taken off `admitted` of the minute they were admitted). */
  annulled?: number;
  /** Totals only: people whose admission a create imported (GuestAdmissionImported), at its `admitted`. */
  importedAdmitted?: number;
  /** Totals only: the same people at the imported `discharged`, when the import says they left. */
  importedExits?: number;
  /** Gate and device documents: the counts per name (keys encoded with `fieldKey`). */
  groups?: Record<string, DoorCounts>;
}

export const TIMELINE_COLLECTION = 'timeline_minutes';
export const TIMELINE_HEADS_COLLECTION = 'timeline_heads';

export interface TimelineHeadDoc {
  _id: string;
  clientId: string;
  eventId: string;
  /** Position of the last event applied to this event's minutes. */
  position: number;
}

const minuteOf = (at: string): number => Math.floor(Date.parse(at) / 60_000);

function minuteOp(event: StoredEvent & { data: { eventId: string } }, at: string, split: TimelineSplit, inc: Record<string, number>): WriteOp {
  const minute = minuteOf(at);
  const eventId = event.data.eventId;
  return {
    kind: 'update',
    collection: TIMELINE_COLLECTION,
    // Event ids are scoped per client (docs/identifiers.md): the key names the client too.
    id: split === 'total' ? `${exactKey(event.metadata.tenantId, eventId)}:${minute}` : `${exactKey(event.metadata.tenantId, eventId)}:${minute}:${split}`,
    upsert: true,
    update: { $set: { clientId: event.metadata.tenantId, eventId, split, minute }, $inc: inc },
  };
}

/** The same increments at the scan's gate and at its device. */
function splitOps(event: StoredEvent & { data: { eventId: string } }, at: string, via: { gate?: string; device?: string }, counts: Record<string, number>): WriteOp[] {
  const prefixed = (prefix: string) => Object.fromEntries(Object.entries(counts).map(([field, value]) => [`${prefix}.${field}`, value]));
  return [
    minuteOp(event, at, 'gate', prefixed(`groups.${fieldKey(via.gate ?? '(none)')}`)),
    minuteOp(event, at, 'device', prefixed(`groups.${fieldKey(via.device ?? '(none)')}`)),
  ];
}

/** The same increments at the minute's total, at the scan's gate and at its device. */
function everywhere(event: StoredEvent & { data: { eventId: string } }, scan: { at: string; gate?: string; device?: string }, counts: Record<string, number>): WriteOp[] {
  return [minuteOp(event, scan.at, 'total', counts), ...splitOps(event, scan.at, scan, counts)];
}

/** Moves the event's head to this event's position (last, after its minutes). */
function headOp(event: StoredEvent & { data: { eventId: string } }): WriteOp {
  const eventId = event.data.eventId;
  return {
    kind: 'update',
    collection: TIMELINE_HEADS_COLLECTION,
    id: exactKey(event.metadata.tenantId, eventId),
    upsert: true,
    update: { $set: { clientId: event.metadata.tenantId, eventId }, $max: { position: event.position } },
  };
}

function applyTimeline(stored: StoredEvent): WriteOp[] {
  const ops = minuteOps(stored);
  return ops.length > 0 ? [...ops, headOp(stored as StoredEvent & { data: { eventId: string } })] : [];
}

function minuteOps(stored: StoredEvent): WriteOp[] {
  if (stored.streamName.startsWith('door-')) {
    const event = stored as StoredEvent & DoorEvent;
    return everywhere(event, event.data, { [`rejected.${event.data.reason}`]: 1 });
  }
  const event = stored as StoredEvent & GuestEvent;
  switch (event.type) {
    case 'GuestAdmitted': {
      const admission = everywhere(event, event.data, { admissions: 1, admitted: event.data.people });
      // A late check-in of a visit whose check-out came first: that check-out gains its plus ones.
      const exit = event.data.closesExit;
      return exit && exit.people > 0 ? [...admission, ...everywhere(event, exit, { exits: exit.people })] : admission;
    }
    case 'GuestDischarged':
      return everywhere(event, event.data, { exits: event.data.people });
    case 'GuestScanRejected':
      return everywhere(event, event.data, { [`rejected.${event.data.reason}`]: 1 });
    case 'GuestAdmissionImported': {
      // No scan (no gate, device or admission), but people who came in: they are inside until
      // they leave, as the event stats count them, so a check-out at the door has them to leave.
      const d = event.data;
      const people = 1 + d.admittedPlusOnes;
      const left = !d.inside && d.discharged !== undefined;
      return [minuteOp(event, d.admitted, 'total', { importedAdmitted: people }), ...(left ? [minuteOp(event, d.discharged!, 'total', { importedExits: people })] : [])];
    }
    case 'GuestAdmissionAnnulled': {
      const d = event.data;
      const total = minuteOp(event, d.admittedAt, 'total', { admissions: -1, admitted: -d.people, annulled: 1 });
      // Annulments recorded before they named the scan's gate and device correct the totals only.
      return d.admittedVia ? [total, ...splitOps(event, d.admittedAt, d.admittedVia, { admissions: -1, admitted: -d.people })] : [total];
    }
    default:
      return [];
  }
}

export const timelineProjection: Projection = {
  name: 'timeline',
  /** 2: admissions imported with a guest create count (importedAdmitted, importedExits).
   * 3: gate and device groups named like an object's own properties (`constructor`, `toString`) are
   * counted (fieldKey); the release before left them out. */
  version: 3,
  filter: { streamPrefixes: ['guest-', 'door-'] },
  collections: [
    { name: TIMELINE_COLLECTION, indexes: [{ name: 'eventId_split_minute', keys: { eventId: 1, split: 1, minute: 1 } }] },
    { name: TIMELINE_HEADS_COLLECTION, indexes: [] },
  ],
  apply: applyTimeline,
};
