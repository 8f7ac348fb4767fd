import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import { guestKeyOfStream, guestStreamOfKey, type ClosedExit, type DoorEvent, type GuestDetails, type GuestEvent } from '../domain/guest.js';
import type { Projection } from './projection.js';
import { exactKey } from '../shared/ids.js';
import { personalGuestFields } from '../domain/personal-data.js';
import { caselessKey } from '../shared/text-key.js';
import { reservationKey } from '../domain/reservation.js';
import { withoutScannerPadding } from '../tickets/ticket-code.js';

/**
 * `guests`: one document per guest; every guest query reads it (docs/read-models.md). `_id` is
 * the guest's storage key (guestKey: `<client>:<guid>`; the bare GUID for a stream written
 * before guest ids were scoped), so it also names the guest's stream (guestStreamOf).
 */
export interface GuestDoc extends GuestDetails {
  _id: string;
  /** The guest's id as the API shows it; documents written before guest ids were scoped may lack it (guestIdOf). */
  guestId?: string;
  /** GuestRegistered.guestIdAsSent: the id as the caller first sent it, when not lowercase (shownGuestId). */
  guestIdAsSent?: string;
  clientId: string;
  eventId: string;
  tags?: string;
  /** Tags as the tag filter matches them (caselessKey: NFC, lower case). */
  tagList: string[];
  admittedPlusOnes: number;
  admitted?: string;
  discharged?: string;
  blockedDate?: string;
  blockedReason?: string;
  /** Checked in and not checked out since. */
  inside: boolean;
  /** caselessKey (NFC, lower case) of the field: what matching and the name order compare. */
  lastNameLower?: string;
  firstNameLower?: string;
  otherNamesLower?: string;
  emailLower?: string;
  customIdLower?: string;
  additionalInfoLower?: string;
  /**
   * The barcode without the white space and control characters around it, when it has any: the
   * door matches a scan against it when the barcode as sent matches nothing (docs/guests.md,
   * "Equivalent text"). Written from projection version 4 on: the first start after an upgrade rebuilds the guests read model, which writes it for older guests.
   */
  barcodeTrimmed?: string;
  /** The valid signed ticket (issue 16), for a guest without a barcode; see ticketCodeOf (src/tickets/event-keys.ts). */
  ticketCode?: string;
  ticketKeyId?: string;
  ticketSerial?: number;
  ticketIssuedAt?: string;
  created: string;
  updated: string;
  /** Issue 14: the guest's personal data was erased (docs/personal-data.md). */
  erased?: boolean;
  erasedAt?: string;
}

/** The guest id (GUID) a document is keyed and matched by: lowercase (guestIdAsSent is the spelling answers show). */
export const guestIdOf = (doc: Pick<GuestDoc, '_id' | 'guestId'>): string => doc.guestId ?? doc._id;

/**
 * The guest id as answers, exports, emails and webhooks show it: the spelling the caller first
 * sent (docs/identifiers.md); lowercase for a guest registered before that was kept, or with an id
 * of the service's making.
 */
export const shownGuestId = (doc: Pick<GuestDoc, '_id' | 'guestId' | 'guestIdAsSent'>): string => doc.guestIdAsSent ?? guestIdOf(doc);

/** The stream of the guest a document shows. */
export const guestStreamOf = (doc: Pick<GuestDoc, '_id'>): string => guestStreamOfKey(doc._id);

/** Every field of a guest document that holds (or is derived from) personal data. */
export const personalDocFields = [
  ...personalGuestFields,
  'lastNameLower',
  'firstNameLower',
  'otherNamesLower',
  'emailLower',
  'customIdLower',
  'additionalInfoLower',
  'barcodeTrimmed',
] as const;

/** `scans`: every scan at the door, admitted, discharged or rejected. */
export interface ScanDoc {
  _id: string;
  clientId: string;
  eventId: string;
  guestId?: string;
  result: 'admitted' | 'discharged' | 'rejected';
  reason?: string;
  blockedReason?: string;
  at: string;
  recordedAt: string;
  gate?: string;
  device?: string;
  nonce?: string;
  scannedBy: { id: string; username: string };
  people: number;
  plusOnesAdmitted?: number;
  annulled?: boolean;
  /** Admissions only: the scan was sent with `force: true` (docs/guests.md, "Who may force"). */
  forced?: true;
  lookup?: { guestId?: string; barcode?: string; customId?: string };
}

/** The keys caller text is matched on: Unicode-equivalent text in any case has one key (docs/guests.md, "Equivalent text"). */
const lowerFields = (details: GuestDetails) => addLowerFields({}, details);

/**
 * lowerFields' keys set on `target`, in lowerFields' order, without an object per key: a guest's
 * registration (each imported guest) builds its document in place.
 */
function addLowerFields<T extends Record<string, unknown>>(target: T, details: GuestDetails): T {
  const into = target as Record<string, unknown>;
  if (details.lastName !== undefined) into.lastNameLower = caselessKey(details.lastName);
  if (details.firstName !== undefined) into.firstNameLower = caselessKey(details.firstName);
  if (details.otherNames !== undefined) into.otherNamesLower = caselessKey(details.otherNames);
  if (details.email !== undefined) into.emailLower = caselessKey(details.email);
  // Keyed as its reservation keys it, without the white space around it (` C-1 ` and `C-1` are one customId).
  if (details.customId !== undefined) into.customIdLower = reservationKey(details.customId);
  if (details.additionalInfo !== undefined) into.additionalInfoLower = caselessKey(details.additionalInfo);
  if (typeof details.barcode === 'string') into.barcodeTrimmed = withoutScannerPadding(details.barcode);
  return target;
}

const guestUpdateOp = (id: string, at: string, set: Record<string, unknown>, extra: Record<string, unknown> = {}): WriteOp => ({
  kind: 'update',
  collection: 'guests',
  id,
  update: { $set: { ...set, updated: at }, ...extra },
});

function applyGuest(event: StoredEvent & GuestEvent): WriteOp[] {
  const at = event.metadata.occurredAt;
  // The stream names the document: a legacy stream keeps its document keyed by the bare GUID.
  const id = guestKeyOfStream(event.streamName);
  const guestId = event.data.guestId;
  const guestUpdate = (docId: string, updatedAt: string, set: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    guestUpdateOp(docId, updatedAt, { ...set, guestId }, extra);
  switch (event.type) {
    case 'GuestRegistered': {
      // An event read after its guest's erasure carries the codec's `personalDataErased` mark: not a guest field.
      const { tags, personalDataErased: _erased, ...fields } = event.data as typeof event.data & { personalDataErased?: boolean };
      // Built in place, in the order of `{...fields, ...lowerFields(fields), tags, tagList, ...}` (the stored JSON text's).
      const doc: Record<string, unknown> = addLowerFields(fields as Record<string, unknown>, fields);
      if (tags.length > 0) doc.tags = tags.join(',');
      doc.tagList = tags.map(caselessKey);
      doc.admittedPlusOnes = 0;
      doc.inside = false;
      doc.created = at;
      doc.updated = at;
      return [{ kind: 'replace', collection: 'guests', id, doc }];
    }
    case 'GuestDetailsChanged': {
      // null removes the field (a validity bound lifted): the document holds no null.
      const changes = event.data.changes as Record<string, unknown>;
      const removed = Object.keys(changes).filter((field) => changes[field] === null);
      if (removed.includes('barcode')) removed.push('barcodeTrimmed');
      const set = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== null)) as GuestDetails;
      return [guestUpdate(id, at, { ...set, ...lowerFields(set) }, removed.length > 0 ? { $unset: Object.fromEntries(removed.map((f) => [f, ''])) } : {})];
    }
    case 'GuestTagsChanged': {
      const tags = event.data.tags;
      return [
        guestUpdate(
          id,
          at,
          { tagList: tags.map(caselessKey), ...(tags.length > 0 ? { tags: tags.join(',') } : {}) },
          tags.length > 0 ? {} : { $unset: { tags: '' } },
        ),
      ];
    }
    case 'GuestAdmitted': {
      const d = event.data;
      const exit = d.closesExit;
      return [
        guestUpdate(
          id,
          at,
          // A late check-in of a visit whose check-out came first: the guest stays as the check-out left them.
          exit
            ? { admittedPlusOnes: d.admittedPlusOnes, ...(exit.latest ? { admitted: d.at } : {}) }
            : { inside: true, admittedPlusOnes: d.admittedPlusOnes, ...(d.guestEntered ? { admitted: d.at } : {}) },
        ),
        // Additive (analysts): an admission that overrode a block or the validity window says so.
        scanOp(event, { guestId, result: 'admitted', people: d.people, plusOnesAdmitted: d.plusOnesAdmitted, ...(d.forced ? { forced: true } : {}) }),
        ...teamStatsOps(event, d.scannedBy, { checkedIn: d.people }, d.at, d.people),
        eventStatsOp(event, admissionCounts(d, 1)),
        ...(exit ? exitGainOps(event, exit) : []),
      ];
    }
    case 'GuestAdmissionAnnulled': {
      const d = event.data;
      const { restored } = d;
      return [
        guestUpdate(
          id,
          at,
          { inside: restored.inside, admittedPlusOnes: restored.admittedPlusOnes, ...(restored.admitted ? { admitted: restored.admitted } : {}) },
          restored.admitted ? {} : { $unset: { admitted: '' } },
        ),
        { kind: 'update', collection: 'scans', id: d.scanId, update: { $set: { annulled: true, annulledAt: d.at } } },
        ...teamStatsOps(event, d.scannedBy, { checkedIn: -d.people }, d.admittedAt, -d.people, false),
        // Annulments recorded before gate and device were carried on them cannot be taken off those counts.
        eventStatsOp(event, { annulled: 1, ...(d.admittedVia ? admissionCounts({ ...d.admittedVia, people: d.people }, -1) : {}) }),
      ];
    }
    case 'GuestDischarged': {
      const d = event.data;
      return [
        // A check-out recorded before its visit's check-in leaves `inside` as it is (docs/guests.md).
        guestUpdate(id, at, d.entryUnknown ? { discharged: d.at } : { inside: false, discharged: d.at }),
        scanOp(event, { guestId, result: 'discharged', people: d.people }),
        ...teamStatsOps(event, d.scannedBy, { checkedOut: d.people }),
      ];
    }
    case 'GuestScanRejected': {
      const d = event.data;
      return [
        scanOp(event, {
          guestId,
          result: 'rejected',
          reason: d.reason,
          people: 0,
          ...(d.blockedReason ? { blockedReason: d.blockedReason } : {}),
        }),
        eventStatsOp(event, { [`rejected.${d.reason}`]: 1 }),
      ];
    }
    case 'GuestBlocked':
      // An erased guest's reason no longer opens (it is sealed with its key): the guest stays blocked, without it.
      return [guestUpdate(id, at, { blockedDate: event.data.at, ...(event.data.reason !== undefined ? { blockedReason: event.data.reason } : {}) })];
    case 'GuestUnblocked':
      return [guestUpdate(id, at, {}, { $unset: { blockedDate: '', blockedReason: '' } })];
    case 'GuestAdmissionImported': {
      const d = event.data;
      return [
        guestUpdate(id, at, {
          admitted: d.admitted,
          admittedPlusOnes: d.admittedPlusOnes,
          inside: d.inside,
          ...(d.discharged ? { discharged: d.discharged } : {}),
        }),
      ];
    }
    case 'TicketIssued': {
      const d = event.data;
      return [guestUpdate(id, at, { ticketCode: d.code, ticketKeyId: d.keyId, ticketSerial: d.serial, ticketIssuedAt: d.at })];
    }
    case 'TicketRevoked':
      return [guestUpdate(id, at, {}, { $unset: { ticketCode: '', ticketKeyId: '', ticketIssuedAt: '' } })];
    case 'InvitationRequested':
      // The send and its outcome are the invitation's own read models (comms work).
      return [];
    case 'GuestErased':
      return [
        guestUpdate(
          id,
          at,
          { erased: true, erasedAt: event.data.at },
          // The block reason goes too: it is sealed in the events, and a rebuild finds none.
          { $unset: Object.fromEntries([...personalDocFields, 'blockedReason'].map((field) => [field, ''])) },
        ),
        // A retried erasure by the customId the guest had finds it here (src/commands/guest-lookup.ts).
        ...(event.data.customIdKey
          ? [{ kind: 'replace' as const, collection: 'erased_custom_ids', id, doc: { clientId: event.metadata.tenantId, eventId: event.data.eventId, customIdKey: event.data.customIdKey } }]
          : []),
      ];
  }
}

/**
 * A check-out recorded before its visit's check-in gains the plus ones who came in with that
 * check-in (its scan's `people`, its scanner's `checkedOut`), so the counts are those of the scans in order.
 */
function exitGainOps(event: ScanEvent, exit: ClosedExit): WriteOp[] {
  if (exit.people === 0) return [];
  return [
    { kind: 'update', collection: 'scans', id: exit.scanId, update: { $inc: { people: exit.people } } },
    ...teamStatsOps(event, exit.scannedBy, { checkedOut: exit.people }, undefined, undefined, false),
  ];
}

type ScanEvent = StoredEvent & { data: { scanId: string; eventId: string; at: string; gate?: string; device?: string; nonce?: string; scannedBy: ScanDoc['scannedBy'] } };

function scanOp(event: ScanEvent, fields: Partial<ScanDoc>): WriteOp {
  const d = event.data;
  return {
    kind: 'replace',
    collection: 'scans',
    id: d.scanId,
    doc: {
      clientId: event.metadata.tenantId,
      eventId: d.eventId,
      at: d.at,
      recordedAt: event.metadata.occurredAt,
      scannedBy: d.scannedBy,
      ...(d.gate !== undefined ? { gate: d.gate } : {}),
      ...(d.device !== undefined ? { device: d.device } : {}),
      ...(d.nonce !== undefined ? { nonce: d.nonce } : {}),
      result: 'rejected',
      people: 0,
      ...fields,
    },
  };
}

/**
 * Gate and device names (any text a door device sends) become field names: keep them free of `.`
 * and `$`, and never a name every JavaScript object has already (`__proto__`, `constructor`,
 * `toString`, ...): such a name's first character is percent-encoded too (`%63onstructor`), so
 * no update path walks into an object's prototype. The empty name (a device sending `"gate": ""`)
 * is the key `%`, which no other name encodes to: MongoDB (and FerretDB) refuse an update path
 * with an empty part (`gates..admissions`, EmptyFieldName), and that refusal stopped the guests
 * and timeline projections for good on the MongoDB read store. `fieldName` gives every name
 * back; names that were never such keep the key they always had.
 */
export const fieldKey = (name: string): string => {
  if (name === '') return EMPTY_NAME_KEY;
  const key = encodeURIComponent(name).replace(/\./g, '%2E');
  return key in emptyObject ? `%${key.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}${key.slice(1)}` : key;
};
const emptyObject: object = {};
/** The empty name's key: encodeURIComponent never writes a `%` without two hex digits after it. */
const EMPTY_NAME_KEY = '%';

/** The name a `fieldKey` key stands for (the embedded store may also hold `''`, the empty name's key before `%`). */
export const fieldName = (key: string): string => (key === EMPTY_NAME_KEY ? '' : decodeURIComponent(key));

/**
 * Per-minute activity: `activity.m<epoch minute>` (the `m` keeps the key from reading as an
 * array index); the API groups minutes into buckets.
 */
function teamStatsOps(
  event: ScanEvent,
  scannedBy: ScanDoc['scannedBy'],
  inc: { checkedIn?: number; checkedOut?: number },
  activityAt?: string,
  activityPeople?: number,
  /**
   * false: a later event about an earlier scan (an annulment, a check-out's gain) names that scan's
   * scanner, who may have been removed since and its name taken out of the row
   * (src/commands/removed-scanners.ts): it counts without writing the name back.
   */
  ownScan = true,
): WriteOp[] {
  const minute = activityAt ? Math.floor(Date.parse(activityAt) / 60_000) : undefined;
  const ids = { eventId: event.data.eventId, clientId: event.metadata.tenantId, teamMemberId: scannedBy.id };
  return [
    {
      kind: 'update',
      collection: 'team_stats',
      id: `${exactKey(event.metadata.tenantId, event.data.eventId)}:${encodeURIComponent(scannedBy.id)}`,
      upsert: true,
      update: {
        ...(ownScan ? { $set: { ...ids, username: scannedBy.username } } : { $set: ids, $setOnInsert: { username: scannedBy.username } }),
        $inc: {
          checkedIn: inc.checkedIn ?? 0,
          checkedOut: inc.checkedOut ?? 0,
          ...(minute !== undefined ? { [`activity.m${minute}`]: activityPeople ?? 0 } : {}),
        },
      },
    },
  ];
}

/** An admission's share of the event's counts by gate and device (`sign` -1 takes an annulled one off). */
function admissionCounts(d: { gate?: string; device?: string; people: number }, sign: 1 | -1): Record<string, number> {
  const gate = fieldKey(d.gate ?? '(none)');
  const device = fieldKey(d.device ?? '(none)');
  return {
    [`gates.${gate}.admissions`]: sign,
    [`gates.${gate}.people`]: sign * d.people,
    [`devices.${device}.admissions`]: sign,
    [`devices.${device}.people`]: sign * d.people,
  };
}

function eventStatsOp(event: StoredEvent & { data: { eventId: string } }, inc: Record<string, number>): WriteOp {
  return {
    kind: 'update',
    collection: 'event_stats',
    id: exactKey(event.metadata.tenantId, event.data.eventId),
    upsert: true,
    update: { $set: { clientId: event.metadata.tenantId, eventId: event.data.eventId }, $inc: inc },
  };
}

function applyDoor(event: StoredEvent & DoorEvent): WriteOp[] {
  const d = event.data;
  return [
    // No lookup once the scan's key is erased (an erased guest held what was scanned: docs/personal-data.md).
    scanOp(event, { result: 'rejected', reason: d.reason, people: 0, ...(d.lookup ? { lookup: d.lookup } : {}) }),
    eventStatsOp(event, { [`rejected.${d.reason}`]: 1 }),
  ];
}

export const guestsProjection: Projection = {
  name: 'guests',
  /** 2: the …Lower keys and tagList are NFC (caselessKey), with otherNamesLower and additionalInfoLower; customIdLower without the white space around the customId.
   * 3: gate and device names every JavaScript object has (`constructor`, `toString`, `__proto__`) are
   * counted under their percent-encoded key (fieldKey); the release before left such admissions out
   * of admissionsByGate and admissionsByDevice.
   * 4: `barcodeTrimmed`, which the door matches a padded barcode by; the release before (b4fedaa) wrote
   * none, so its guests stored with white space around their barcode were not found by what it holds. */
  version: 4,
  filter: { streamPrefixes: ['guest-', 'door-'] },
  collections: [
    {
      name: 'guests',
      indexes: [
        { name: 'eventId_name', keys: { eventId: 1, lastNameLower: 1, firstNameLower: 1 } },
        // The selective field first: the embedded store narrows by an index's first key.
        { name: 'barcode_eventId', keys: { barcode: 1, eventId: 1 } },
        { name: 'barcodeTrimmed_eventId', keys: { barcodeTrimmed: 1, eventId: 1 } },
        { name: 'customId_eventId', keys: { customIdLower: 1, eventId: 1 } },
        { name: 'eventId_updated', keys: { eventId: 1, updated: 1 } },
        // byinfo: "contains, any case" on additionalInfo's key (a trigram index on the embedded store).
        { name: 'additionalInfoLower_substring', keys: { additionalInfoLower: 1 }, substring: true },
      ],
    },
    {
      name: 'scans',
      indexes: [
        { name: 'eventId_result_at', keys: { eventId: 1, result: 1, at: 1 } },
        // Undo by nonce: a nonce's scan id also hashes the guest (src/commands/door.ts), so it is found by the nonce.
        { name: 'nonce_eventId', keys: { nonce: 1, eventId: 1 } },
      ],
    },
    { name: 'team_stats', indexes: [{ name: 'eventId', keys: { eventId: 1 } }] },
    // Erased guests by the keyed hash of the customId they had (GuestErased.customIdKey); the _id is the guest's document's.
    { name: 'erased_custom_ids', indexes: [{ name: 'customIdKey', keys: { customIdKey: 1 } }] },
    { name: 'event_stats', indexes: [] },
  ],
  apply(stored) {
    if (stored.streamName.startsWith('door-')) return applyDoor(stored as StoredEvent & DoorEvent);
    return applyGuest(stored as StoredEvent & GuestEvent) ?? [];
  },
};
