import { exactKey, scopedKey } from '../shared/ids.js';
import { caselessKey } from '../shared/text-key.js';
import { DomainError, type Decider } from './decider.js';
import { isEmailAddress } from './email-address.js';
import { personalGuestFields } from './personal-data.js';

/**
 * A guest of one event (spec: Guest). This file answers "when is a guest admitted or
 * rejected at the door?": see `decideCheckIn`.
 */
export interface GuestDetails {
  firstName?: string;
  otherNames?: string;
  lastName?: string;
  email?: string;
  plusOnes?: number;
  additionalInfo?: string;
  barcode?: string;
  createdBy?: string;
  validFrom?: string;
  validTo?: string;
  isGroup?: boolean;
  image?: string;
  customId?: string;
  commsTemplateId?: string;
  correlationId?: string;
}

/** What a merge (and its GuestDetailsChanged) changes: `null` in validFrom or validTo removes that bound. */
export type GuestDetailsChange = Omit<GuestDetails, 'validFrom' | 'validTo'> & { validFrom?: string | null; validTo?: string | null };

/** Spec: plusOnes, admittedPlusOnes and the team member statistics are integer (int32). */
export const INT32_MAX = 2_147_483_647;

export const detailFields = [
  'firstName',
  'otherNames',
  'lastName',
  'email',
  'plusOnes',
  'additionalInfo',
  'barcode',
  'createdBy',
  'validFrom',
  'validTo',
  'isGroup',
  'image',
  'customId',
  'commsTemplateId',
  'correlationId',
] as const satisfies readonly (keyof GuestDetails)[];

/**
 * Admission and block as a create gives them (spec: "Guest object (all fields optional)"): a
 * state brought from elsewhere, recorded as its own events. Upsert never changes them (rule 3).
 */
export interface ImportedState {
  /** When the record was received: the block time of a blockedReason given without blockedDate. */
  receivedAt?: string;
  admitted?: string;
  admittedPlusOnes?: number;
  discharged?: string;
  blockedDate?: string;
  blockedReason?: string;
}

/** Where a scan happened and who made it; kept with the scan. */
export interface ScanInfo {
  scanId: string;
  at: string;
  gate?: string;
  device?: string;
  nonce?: string;
  /** Team member (or client) who scanned, for team statistics. */
  scannedBy: { id: string; username: string };
}

export type RejectionReason =
  | 'not_found'
  | 'blocked'
  | 'not_yet_valid'
  | 'expired'
  | 'already_admitted'
  /** A check-out of a visit whose check-out is recorded already (a second exit scan). */
  | 'already_discharged'
  | 'ambiguous'
  /** A signed ticket whose signature does not verify: forged or altered (docs/tickets.md). */
  | 'invalid_signature'
  /** A genuine ticket that was reissued or revoked since. */
  | 'revoked';

/** Every rejection reason, for the places that list them (OpenAPI, stats, exports). */
export const rejectionReasons = [
  'not_found',
  'blocked',
  'not_yet_valid',
  'expired',
  'already_admitted',
  'already_discharged',
  'ambiguous',
  'invalid_signature',
  'revoked',
] as const satisfies readonly RejectionReason[];

/** A signed ticket code as the service issued it (src/tickets); computed by the caller, so the decider stays pure. */
export interface IssuedTicket {
  code: string;
  keyId: string;
  serial: number;
}

export type TicketToIssue = IssuedTicket & { at: string };

export type GuestEvent =
  | {
      type: 'GuestRegistered';
      /**
       * `guestIdAsSent`: the id as the caller sent it, when that spelling has upper-case letters
       * (`guestId` is the lowercase key): what answers and webhooks show (docs/identifiers.md).
       * Absent in guests registered before it was kept: they are answered in lowercase.
       */
      data: GuestDetails & { guestId: string; clientId: string; eventId: string; tags: string[]; guestIdAsSent?: string };
    }
  | { type: 'GuestDetailsChanged'; data: { guestId: string; eventId: string; changes: GuestDetailsChange } }
  | { type: 'GuestTagsChanged'; data: { guestId: string; eventId: string; tags: string[] } }
  | {
      type: 'GuestAdmitted';
      data: ScanInfo & {
        guestId: string;
        eventId: string;
        /** Whether the guest came in with this scan (false: only plus ones arriving later). */
        guestEntered: boolean;
        plusOnesAdmitted: number;
        admittedPlusOnes: number;
        /** People through the door with this scan. */
        people: number;
        /** `force` overrode a block or the validity window (false when the scan forced nothing). */
        forced: boolean;
        /** Server time the check-in was recorded: the undo window runs from it. */
        recordedAt: string;
        /**
         * The check-in of a visit whose check-out was recorded first (an offline device synced its
         * exit before another synced this entry): the guest stays as the check-out left them.
         */
        closesExit?: ClosedExit;
      };
    }
  | {
      type: 'GuestAdmissionAnnulled';
      data: {
        guestId: string;
        eventId: string;
        scanId: string;
        at: string;
        people: number;
        scannedBy: ScanInfo['scannedBy'];
        /** Gate and device of the annulled scan, so the event's counts by gate and device drop it too. */
        admittedVia?: { gate?: string; device?: string };
        annulledBy: string;
        admittedAt: string;
        /** The admission state the guest returns to. */
        restored: { admitted?: string; inside: boolean; admittedPlusOnes: number };
      };
    }
  | {
      type: 'GuestDischarged';
      data: ScanInfo & {
        guestId: string;
        eventId: string;
        people: number;
        /**
         * No check-in of this visit was known when the check-out was recorded (it is on a device
         * that has not synced yet): `inside` is not changed, and the check-in closes it when it comes.
         */
        entryUnknown?: true;
      };
    }
  | {
      type: 'GuestScanRejected';
      /** `direction: 'out'`: a rejected check-out (`already_discharged`); else a check-in. */
      data: ScanInfo & { guestId: string; eventId: string; reason: RejectionReason; blockedReason?: string; direction?: 'out' };
    }
  | {
      /**
       * Spec, check-in rule 1: a guest created (or upserted) with a commsTemplateId gets that
       * template sent. The send worker (workers/send-worker.ts) takes it from here.
       */
      type: 'InvitationRequested';
      data: {
        guestId: string;
        eventId: string;
        attendeeInvitationId: string;
        templateId: string;
        /** The guest's and the template's ids as their creators sent them (when not lowercase): the webhook's attendeeId and templateId. */
        guestIdAsSent?: string;
        templateIdAsSent?: string;
        correlationId?: string;
        /**
         * The guest had no email when the invitation was requested: it fails `no_email` whatever
         * email the guest has by the time it is sent, so that the record that brings the email,
         * which requests the invitation again, is the one that sends it (never both).
         */
        noEmail?: true;
        /**
         * The guest's email was not an email address when the invitation was requested: it fails
         * `invalid_email` whatever the email is by then, so that the record that corrects the
         * email, which requests the invitation again, is the one that sends it (never both).
         */
        invalidEmail?: true;
      };
    }
  | { type: 'GuestBlocked'; data: { guestId: string; eventId: string; reason: string; at: string } }
  | {
      /** A create brought an admission state (no scan: not in the scans list or team statistics). */
      type: 'GuestAdmissionImported';
      data: { guestId: string; eventId: string; admitted: string; admittedPlusOnes: number; discharged?: string; inside: boolean };
    }
  | { type: 'GuestUnblocked'; data: { guestId: string; eventId: string; at: string } }
  | {
      /**
       * Issue 14: the guest's personal data was erased (its data key deleted). Carries no
       * personal data itself: who erased whom, when and why, for the audit trail.
       */
      type: 'GuestErased';
      data: {
        guestId: string;
        eventId: string;
        erasedBy: string;
        reason: string;
        at: string;
        /** `erasedCustomIdKey` of the customId the guest had, so a retried erasure by it finds the guest. */
        customIdKey?: string;
      };
    }
  /** A signed ticket for a guest without a barcode (issue 16); `reissued`: it replaces a revoked one. */
  | { type: 'TicketIssued'; data: IssuedTicket & { guestId: string; eventId: string; at: string; reissued: boolean } }
  /** The ticket with this serial no longer admits (reason `revoked` at the door). */
  | { type: 'TicketRevoked'; data: { guestId: string; eventId: string; serial: number; keyId: string; at: string; by: string; reissue: boolean } };

/** A check-out recorded before the check-in of its visit (`entryUnknown`), waiting for it. */
export interface OpenExit {
  scanId: string;
  at: string;
  people: number;
  scannedBy: ScanInfo['scannedBy'];
  gate?: string;
  device?: string;
  /** The guest's check-out before this one: a check-in before it belongs to an earlier visit. */
  since?: string;
}

/** What a late check-in adds to the check-out it closes, so it counts as if synced in order. */
export interface ClosedExit extends Omit<OpenExit, 'since' | 'people'> {
  /** People the check-out gains (the plus ones that came in with the check-in). */
  people: number;
  /** This visit is the guest's latest: its admission is the guest's `admitted` and `admittedPlusOnes`. */
  latest: boolean;
}

export interface LastAdmission {
  scanId: string;
  nonce?: string;
  /** Server time the admission was recorded (the undo window runs from it). */
  recordedAt: string;
  at: string;
  guestEntered: boolean;
  plusOnesAdmitted: number;
  previousAdmitted?: string;
  /** admittedPlusOnes before this check-in: a re-admission after a check-out undone gives it back. */
  previousAdmittedPlusOnes: number;
  /** The check-in before this one since the guest came in: after this one is undone, it can be undone in turn. */
  previous?: LastAdmission;
  people: number;
  scannedBy: ScanInfo['scannedBy'];
  gate?: string;
  device?: string;
}

/** What a scan decided, kept per nonce so an offline scanner's repeat gets the first answer. */
export interface ScanOutcome {
  scanId: string;
  result: 'admitted' | 'rejected' | 'discharged';
  reason?: RejectionReason;
  plusOnesAdmitted: number;
  at: string;
}

export interface GuestState {
  exists: boolean;
  /** scanNonceKey -> outcome of the scan that carried the nonce. */
  nonces: Record<string, ScanOutcome>;
  guestId?: string;
  /** GuestRegistered.guestIdAsSent: the id's spelling the invitations carry to the webhook. */
  guestIdAsSent?: string;
  clientId?: string;
  eventId?: string;
  details: GuestDetails;
  tags: string[];
  admitted?: string;
  admittedPlusOnes: number;
  inside: boolean;
  discharged?: string;
  blockedDate?: string;
  blockedReason?: string;
  lastAdmission?: LastAdmission;
  /**
   * Check-outs recorded before their visits' check-ins were known (offline devices syncing out of
   * order), oldest first: an exit device that syncs a guest's two visits before the entry device
   * leaves two waiting, each for the check-in of its own visit.
   */
  openExits?: OpenExit[];
  /** Set once the guest's personal data is erased: nothing but another erase is accepted after. */
  erased?: { at: string; by: string; reason: string };
  /** The guest's valid signed ticket, if any. */
  ticket?: IssuedTicket & { issuedAt: string };
  /** Serial of the last ticket issued (valid or revoked); undefined: never had one. */
  ticketSerial?: number;
  /**
   * The last invitation requested for the guest was requested without a usable email (noEmail or
   * invalidEmail): `email` is the one it had then. A record naming the template again once the
   * email is another requests it again.
   */
  invitationLackedAddress?: { email: string | undefined };
}

export type GuestCommand =
  | {
      type: 'RegisterGuest';
      guestId: string;
      clientId: string;
      eventId: string;
      details: GuestDetails;
      tags: string[];
      /** Used when the guest names a template to send. */
      invitationId: string;
      /** The id as sent, when not lowercase (GuestRegistered.guestIdAsSent). */
      guestIdAsSent?: string;
      /** The named template's id as its creator sent it, when not lowercase (InvitationRequested). */
      templateIdAsSent?: string;
      imported?: ImportedState;
      /** Issued when the guest has no barcode. */
      ticket?: TicketToIssue;
    }
  | {
      /** Batch upsert and single update: merge the given fields; admission and block are never touched (spec rule 3). */
      type: 'MergeGuest';
      guestId: string;
      clientId: string;
      eventId: string;
      details: GuestDetailsChange;
      tags?: string[];
      replaceTags: boolean;
      /** Used when the record names a template to send. */
      invitationId: string;
      /** As RegisterGuest's: the id as sent (only where the record creates the guest) and the template's. */
      guestIdAsSent?: string;
      templateIdAsSent?: string;
      /** Applied only when the record creates the guest: upsert never changes admission and block. */
      imported?: ImportedState;
      /** Issued when the guest ends up without a barcode and never had a ticket: upsert never changes an issued one. */
      ticket?: TicketToIssue;
    }
  | {
      type: 'CheckIn';
      scan: ScanInfo;
      plusOnes?: number;
      force: boolean;
      recordedAt: string;
      /** Set when the scan was a signed ticket whose signature verified: its serial must be the guest's valid one. */
      ticketSerial?: number;
      /**
       * The guest's block reason as the door read it (the read model): a door scan folds the stream
       * without personal data, and the reason is sealed (docs/personal-data.md). A rejection repeats it.
       */
      blockedReason?: string;
    }
  | { type: 'CheckOut'; scan: ScanInfo }
  /** Names the check-in by scan id or nonce, or `latest`: the guest's last check-in (undo named by guest). */
  | { type: 'AnnulCheckIn'; scanId?: string; nonce?: string; latest?: boolean; now: string; undoWindowMs: number; annulledBy: string }
  /** An explicit send (POST /comms/v1/api/comms/send): always a new invitation, even of the same template. */
  | { type: 'RequestInvitation'; templateId: string; templateIdAsSent?: string; invitationId: string; correlationId?: string }
  | { type: 'Block'; reason: string; at: string }
  | { type: 'Unblock'; at: string }
  /** Issue 14: erase the guest's personal data (idempotent). */
  | {
      type: 'Erase';
      erasedBy: string;
      reason: string;
      at: string;
      customIdKey?: string;
      /**
       * The customIds (as reservation keys, `reservationKey`) whose reservations the erasure's
       * batch releases. A guest whose customId is not among them was changed after the erasure
       * read it (an update racing it): refused (`guest_changed`), so the eraser reads it again,
       * rather than erasing it and leaving its new customId reserved by no one who uses it.
       */
      releasing?: string[];
    }
  /** Revoke the valid ticket (if any) and issue `ticket`, whose serial follows the last one. */
  | { type: 'ReissueTicket'; ticket: IssuedTicket; at: string; by: string }
  | { type: 'RevokeTicket'; at: string; by: string };

/**
 * Guest ids are scoped per client (docs/identifiers.md): two clients may each have a guest with
 * the same GUID. A guest's storage key is `<client>:<guid>` (scopedKey), its stream
 * `guest-<key>`, and the same key names it in read models (the `guests` document's `_id`).
 * Streams written before the scoping are `guest-<guid>` (legacyGuestStream); their key is the
 * bare GUID, and they keep working for the client they belong to.
 */
export const guestKey = (clientId: string, guestId: string): string => scopedKey(clientId, guestId);
export const guestStream = (clientId: string, guestId: string): string => `guest-${guestKey(clientId, guestId)}`;
export const legacyGuestStream = (guestId: string): string => `guest-${guestId.toLowerCase()}`;
/** The stream of the guest stored under `key` (a guestKey, or a bare GUID for a legacy stream). */
export const guestStreamOfKey = (key: string): string => `guest-${key}`;
/** The storage key of a guest stream: what follows `guest-`. */
export const guestKeyOfStream = (streamName: string): string => streamName.slice('guest-'.length);

/**
 * Scans that match no single guest (unknown barcode, or one shared by several guests) are
 * still recorded, on the event's door stream, so the organizer sees them.
 */
export const doorStream = (clientId: string, eventId: string): string => `door-${exactKey(clientId, eventId)}`;

export type DoorEvent = {
  type: 'UnmatchedScanRejected';
  data: ScanInfo & {
    eventId: string;
    /** `revoked`: a genuine ticket of a guest that was erased since (the door finds no guest to record it on). */
    reason: 'not_found' | 'ambiguous' | 'invalid_signature' | 'revoked';
    lookup: { guestId?: string; barcode?: string; customId?: string };
    candidates?: string[];
  };
};

/** Tags are a comma-separated set: trimmed, empty ones dropped, first spelling kept (one tag in any case or Unicode form). */
export function parseTags(tags: string | undefined): string[] {
  if (!tags) return [];
  const seen = new Map<string, string>();
  for (const raw of tags.split(',')) {
    const tag = raw.trim();
    if (tag && !seen.has(caselessKey(tag))) seen.set(caselessKey(tag), tag);
  }
  return [...seen.values()];
}

const initialState = (): GuestState => ({
  exists: false,
  nonces: {},
  details: {},
  tags: [],
  admittedPlusOnes: 0,
  inside: false,
});

/**
 * A nonce is the retry key of one scan: of one direction (a check-out numbered like a check-in is
 * another scan), by one scanner (the team member or client) on one device (two apps at two gates
 * that number their scans alike make two scans, not a retry: the second of a copied ticket must
 * be `already_admitted`, never the first one's `admitted` again). A retry repeats all of these.
 */
export function scanNonceKey(direction: 'in' | 'out', scan: Pick<ScanInfo, 'nonce' | 'scannedBy' | 'device'>): string | undefined {
  return scan.nonce === undefined ? undefined : JSON.stringify([direction, scan.scannedBy?.id ?? null, scan.device ?? null, scan.nonce]);
}

function remember(state: GuestState, key: string | undefined, outcome: ScanOutcome): GuestState {
  return key ? { ...state, nonces: { ...state.nonces, [key]: outcome } } : state;
}

function evolve(state: GuestState, event: GuestEvent): GuestState {
  switch (event.type) {
    case 'GuestRegistered': {
      const { guestId, clientId, eventId, tags, guestIdAsSent, ...details } = event.data;
      return { ...initialState(), exists: true, guestId, clientId, eventId, details, tags, ...(guestIdAsSent ? { guestIdAsSent } : {}) };
    }
    case 'GuestDetailsChanged':
      return { ...state, details: withoutNulls({ ...state.details, ...event.data.changes }) };
    case 'GuestTagsChanged':
      return { ...state, tags: event.data.tags };
    case 'GuestAdmitted': {
      const d = event.data;
      const outcome: ScanOutcome = { scanId: d.scanId, result: 'admitted', plusOnesAdmitted: d.plusOnesAdmitted, at: d.at };
      if (d.closesExit) {
        // A visit that has ended: whether the guest is inside, and the undo chain, stay as they are.
        const admitted = d.closesExit.latest ? d.at : state.admitted;
        const openExits = (state.openExits ?? []).filter((exit) => exit.scanId !== d.closesExit!.scanId);
        return remember({ ...state, admitted, admittedPlusOnes: d.admittedPlusOnes, openExits }, scanNonceKey('in', d), outcome);
      }
      return remember({
        ...state,
        admitted: d.guestEntered ? d.at : state.admitted,
        inside: true,
        admittedPlusOnes: d.admittedPlusOnes,
        lastAdmission: {
          scanId: d.scanId,
          nonce: d.nonce,
          recordedAt: d.recordedAt,
          at: d.at,
          guestEntered: d.guestEntered,
          plusOnesAdmitted: d.plusOnesAdmitted,
          previousAdmitted: state.admitted,
          previousAdmittedPlusOnes: state.admittedPlusOnes,
          ...(!d.guestEntered && state.lastAdmission ? { previous: state.lastAdmission } : {}),
          people: d.people,
          scannedBy: d.scannedBy,
          ...(d.gate !== undefined ? { gate: d.gate } : {}),
          ...(d.device !== undefined ? { device: d.device } : {}),
        },
      }, scanNonceKey('in', d), outcome);
    }
    case 'GuestAdmissionAnnulled':
      return {
        ...state,
        admitted: event.data.restored.admitted,
        inside: event.data.restored.inside,
        admittedPlusOnes: event.data.restored.admittedPlusOnes,
        lastAdmission: state.lastAdmission?.scanId === event.data.scanId ? state.lastAdmission.previous : undefined,
      };
    case 'GuestDischarged': {
      const d = event.data;
      const outcome: ScanOutcome = { scanId: d.scanId, result: 'discharged', plusOnesAdmitted: 0, at: d.at };
      if (d.entryUnknown) {
        const { scanId, at, people, scannedBy, gate, device } = d;
        const openExit: OpenExit = { scanId, at, people, scannedBy, ...(gate !== undefined ? { gate } : {}), ...(device !== undefined ? { device } : {}), ...(state.discharged ? { since: state.discharged } : {}) };
        return remember({ ...state, discharged: d.at, openExits: [...(state.openExits ?? []), openExit] }, scanNonceKey('out', d), outcome);
      }
      return remember({ ...state, inside: false, discharged: d.at, lastAdmission: undefined }, scanNonceKey('out', d), outcome);
    }
    case 'GuestBlocked':
      return { ...state, blockedDate: event.data.at, blockedReason: event.data.reason };
    case 'GuestAdmissionImported': {
      const d = event.data;
      return { ...state, admitted: d.admitted, admittedPlusOnes: d.admittedPlusOnes, inside: d.inside, discharged: d.discharged, lastAdmission: undefined };
    }
    case 'GuestUnblocked':
      return { ...state, blockedDate: undefined, blockedReason: undefined };
    case 'GuestErased': {
      const details = { ...state.details } as Record<string, unknown>;
      for (const field of personalGuestFields) delete details[field];
      const { at, erasedBy: by, reason } = event.data;
      return { ...state, details: details as GuestDetails, erased: { at, by, reason } };
    }
    case 'TicketIssued': {
      const { code, keyId, serial, at } = event.data;
      return { ...state, ticket: { code, keyId, serial, issuedAt: at }, ticketSerial: serial };
    }
    case 'TicketRevoked':
      return state.ticket?.serial === event.data.serial ? { ...state, ticket: undefined } : state;
    case 'InvitationRequested':
      return {
        ...state,
        invitationLackedAddress: event.data.noEmail || event.data.invalidEmail ? { email: state.details.email ?? undefined } : undefined,
      };
    case 'GuestScanRejected': {
      const d = event.data;
      return remember(state, scanNonceKey(d.direction ?? 'in', d), { scanId: d.scanId, result: 'rejected', reason: d.reason, plusOnesAdmitted: 0, at: d.at });
    }
  }
}

function withoutNulls(details: GuestDetailsChange): GuestDetails {
  return Object.fromEntries(Object.entries(details).filter(([, v]) => v !== null && v !== undefined)) as GuestDetails;
}

/**
 * A send is requested when a guest is created naming a template, or when a record names a
 * template other than the guest's current one: a CRM sync that repeats the same record does
 * not send the invitation again (decideMerge: unless the guest's last invitation was requested
 * without a usable email and the guest now has another). `email` and `correlationId`: the
 * guest's after this decision (spec: Guest.correlationId is echoed in the webhook payload, so a
 * record that leaves it out keeps the guest's own).
 */
function invitationFor(
  command: { guestId: string; eventId: string; invitationId: string; details: GuestDetailsChange; guestIdAsSent?: string; templateIdAsSent?: string },
  previousTemplate: string | undefined,
  email: string | null | undefined,
  correlationId: string | null | undefined = command.details.correlationId,
  guestIdAsSent: string | undefined = command.guestIdAsSent,
): GuestEvent[] {
  const templateId = command.details.commsTemplateId;
  if (!templateId || templateId === previousTemplate) return [];
  return [
    {
      type: 'InvitationRequested',
      data: {
        guestId: command.guestId,
        eventId: command.eventId,
        attendeeInvitationId: command.invitationId,
        templateId,
        ...(guestIdAsSent ? { guestIdAsSent } : {}),
        ...(command.templateIdAsSent ? { templateIdAsSent: command.templateIdAsSent } : {}),
        ...(correlationId ? { correlationId } : {}),
        ...(!email ? { noEmail: true as const } : isEmailAddress(email) ? {} : { invalidEmail: true as const }),
      },
    },
  ];
}

/** The events that record an imported admission and block, after the guest's registration. */
function importEvents(ids: { guestId: string; eventId: string }, imported: ImportedState | undefined): GuestEvent[] {
  const events: GuestEvent[] = [];
  if (imported?.admitted) {
    const { admitted, discharged } = imported;
    events.push({
      type: 'GuestAdmissionImported',
      data: {
        ...ids,
        admitted,
        admittedPlusOnes: imported.admittedPlusOnes ?? 0,
        ...(discharged ? { discharged } : {}),
        // Checked out after the (last) admission means outside.
        inside: !discharged || Date.parse(discharged) < Date.parse(admitted),
      },
    });
  }
  // An empty reason (a spreadsheet's blank cell) is no reason: it blocks nobody without a blockedDate.
  const blockedAt = imported?.blockedDate ?? (imported?.blockedReason ? imported.receivedAt : undefined);
  if (blockedAt) events.push({ type: 'GuestBlocked', data: { ...ids, reason: imported?.blockedReason ?? '', at: blockedAt } });
  return events;
}

/**
 * A create retried with the id of a guest that exists: the same content (every detail and tag
 * as stored, and every admission or block field it gives) is answered with the stored guest.
 */
function sameRegistration(command: Extract<GuestCommand, { type: 'RegisterGuest' }>, state: GuestState): boolean {
  const sorted = (o: object) => JSON.stringify(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
  const tagKey = (tags: string[]) => tags.map(caselessKey).sort().join('\u0000');
  const imported = command.imported ?? {};
  const stored: ImportedState = {
    admitted: state.admitted,
    admittedPlusOnes: state.admittedPlusOnes,
    discharged: state.discharged,
    blockedDate: state.blockedDate,
    blockedReason: state.blockedReason,
  };
  return (
    state.clientId === command.clientId &&
    state.eventId === command.eventId &&
    sorted(withoutNulls(command.details)) === sorted(state.details) &&
    tagKey(command.tags) === tagKey(state.tags) &&
    (Object.keys(stored) as (keyof ImportedState)[]).every((key) => imported[key] === undefined || imported[key] === stored[key])
  );
}

/**
 * How far a scanning device's clock may be from the server's: an offline scan's `at` may run this
 * much ahead, and two devices' times closer than this are not told apart in order.
 */
export const deviceClockSkewMs = 5 * 60_000;

/**
 * An offline scan synced late is judged at its `at`, but never undoes what the door recorded after
 * it: a check-in made before the guest's last check-out (by more than the clock skew) belongs to a
 * visit that has ended, and a check-out made before the current visit began to a visit before it.
 */
const before = (at: number, recorded: string | undefined): boolean => recorded !== undefined && at < Date.parse(recorded) - deviceClockSkewMs;

/**
 * The check-out recorded before its check-in that a check-in made at `at` belongs to: the first
 * waiting check-out no earlier than the check-in (within the clock skew) and after the check-out
 * before it. The first: a visit ends at the first exit after its entry, so of two waiting
 * check-outs the earlier one is this check-in's, and the later one waits for the next check-in.
 */
function closesOpenExit(at: number, state: GuestState): OpenExit | undefined {
  // A scan no earlier than the current visit (within the skew) is a scan of that visit.
  if (state.inside && !before(at, state.admitted)) return undefined;
  return (state.openExits ?? []).find((exit) => at <= Date.parse(exit.at) + deviceClockSkewMs && !before(at, exit.since));
}

/** A time `a` later than `b` (either may be absent). */
const later = (a: string, b: string | undefined): boolean => b === undefined || Date.parse(a) > Date.parse(b);

/**
 * The check-in of a visit whose check-out came first: recorded and counted as if it had synced
 * before the check-out (it is the first scan of that visit: a group brings all its plus ones,
 * anyone else the count the scan names), and the check-out gains the plus ones that came in.
 */
function closingAdmission(command: Extract<GuestCommand, { type: 'CheckIn' }>, state: GuestState, exit: OpenExit, forced: boolean): GuestEvent[] {
  const { scan } = command;
  const allowed = state.details.plusOnes ?? 0;
  const plusOnesAdmitted = Math.max(0, Math.min(state.details.isGroup ? allowed : (command.plusOnes ?? 0), allowed));
  const people = 1 + plusOnesAdmitted;
  const latest = later(scan.at, state.admitted);
  const { since: _since, people: exitPeople, ...exitScan } = exit;
  return [
    {
      type: 'GuestAdmitted',
      data: {
        ...scan,
        guestId: state.guestId!,
        eventId: state.eventId!,
        guestEntered: true,
        plusOnesAdmitted,
        admittedPlusOnes: latest ? plusOnesAdmitted : state.admittedPlusOnes,
        people,
        forced,
        recordedAt: command.recordedAt,
        closesExit: { ...exitScan, people: Math.max(0, people - exitPeople), latest },
      },
    },
  ];
}

/**
 * A check-out. A guest inside leaves with the party. A check-out of a guest not inside (or made
 * before the current visit began) whose `at` is more than the clock skew after the guest's last
 * check-out is an exit whose check-in another device has not synced yet: it is recorded
 * (`entryUnknown`), and that check-in, when it comes, completes the visit. Otherwise (no later than
 * the last check-out plus the skew) it is a second exit scan of a visit that has ended: recorded,
 * rejected `already_discharged`, as a second entry scan is `already_admitted`.
 */
function decideCheckOut(command: Extract<GuestCommand, { type: 'CheckOut' }>, state: GuestState): GuestEvent[] {
  const ids = { guestId: state.guestId!, eventId: state.eventId! };
  const at = Date.parse(command.scan.at);
  if (state.inside && !before(at, state.admitted)) {
    return [{ type: 'GuestDischarged', data: { ...command.scan, ...ids, people: 1 + state.admittedPlusOnes } }];
  }
  if (state.discharged !== undefined && at <= Date.parse(state.discharged) + deviceClockSkewMs) {
    return [{ type: 'GuestScanRejected', data: { ...command.scan, ...ids, reason: 'already_discharged', direction: 'out' } }];
  }
  // The exit of a visit whose check-in is still on another device: the guest and whoever comes in with them.
  const people = 1 + (state.details.isGroup ? (state.details.plusOnes ?? 0) : 0);
  return [{ type: 'GuestDischarged', data: { ...command.scan, ...ids, people, entryUnknown: true } }];
}

const blockedReasonOf = (command: Extract<GuestCommand, { type: 'CheckIn' }>, state: GuestState): { blockedReason?: string } => {
  const reason = state.blockedReason ?? command.blockedReason;
  return reason !== undefined ? { blockedReason: reason } : {};
};

/** Spec: plus ones never exceed `plusOnes`; a group comes in whole. */
function decideCheckIn(command: Extract<GuestCommand, { type: 'CheckIn' }>, state: GuestState): GuestEvent[] {
  const { scan } = command;
  const base = { ...scan, guestId: state.guestId!, eventId: state.eventId! };
  const reject = (reason: RejectionReason): GuestEvent[] => [
    { type: 'GuestScanRejected', data: { ...base, reason, ...(reason === 'blocked' ? blockedReasonOf(command, state) : {}) } },
  ];
  // A genuine ticket that is no longer the guest's valid one: force cannot bring it back.
  if (command.ticketSerial !== undefined && state.ticket?.serial !== command.ticketSerial) return reject('revoked');
  const at = Date.parse(scan.at);
  const closes = closesOpenExit(at, state);
  // The guest came in and left since this scan was made: it admits no one now (force neither).
  if (!closes && !state.inside && before(at, state.discharged)) return reject('already_admitted');
  // What `force` overrides: a block and the validity window (both ends included). An admission is
  // `forced` only when it overrode one of them: a force flag left on where nothing bars the guest
  // is an ordinary admission, so the forced admissions analysts count are the real overrides.
  const barred = barredBy(at, state);
  if (barred && !command.force) return reject(barred);
  const forced = barred !== undefined;
  if (closes) return closingAdmission(command, state, closes, forced);
  const allowed = state.details.plusOnes ?? 0;
  const left = state.inside ? allowed - state.admittedPlusOnes : allowed;
  // A group comes in whole with the guest (spec, isGroup: "all plus ones are checked in together
  // with the guest"), whatever count an app's plus-one field sends. Anyone else brings the count
  // the scan names, else nobody. A guest who is inside brings late plus ones only when the scan
  // says how many (a group: the rest without a count), so an accidental double scan admits nobody.
  const wanted = state.details.isGroup && !state.inside ? left : (command.plusOnes ?? (state.details.isGroup ? left : 0));
  const plusOnesAdmitted = Math.max(0, Math.min(wanted, left));
  if (state.inside && plusOnesAdmitted === 0) return reject('already_admitted');
  const guestEntered = !state.inside;
  return [
    {
      type: 'GuestAdmitted',
      data: {
        ...base,
        guestEntered,
        plusOnesAdmitted,
        admittedPlusOnes: (guestEntered ? 0 : state.admittedPlusOnes) + plusOnesAdmitted,
        people: (guestEntered ? 1 : 0) + plusOnesAdmitted,
        forced,
        recordedAt: command.recordedAt,
      },
    },
  ];
}

/** Why a check-in at `at` is refused unless forced: a block, or the scan outside the guest's validFrom-validTo. */
function barredBy(at: number, state: GuestState): 'blocked' | 'not_yet_valid' | 'expired' | undefined {
  if (state.blockedDate) return 'blocked';
  if (state.details.validFrom && at < Date.parse(state.details.validFrom)) return 'not_yet_valid';
  if (state.details.validTo && at > Date.parse(state.details.validTo)) return 'expired';
  return undefined;
}

/**
 * A merge's GuestRegistered data, built in place with the keys in the order the spread
 * `{ guestId, eventId, clientId, ...withoutNulls(details), tags, guestIdAsSent? }` gives them (an
 * import decides 200 of these a batch; the spreads cost more than the rest of the decision).
 * A details key that names one of the first three replaces its value where it stands, as a spread does.
 */
function mergedRegistration(command: Extract<GuestCommand, { type: 'MergeGuest' }>): Extract<GuestEvent, { type: 'GuestRegistered' }>['data'] {
  const data: Record<string, unknown> = { guestId: command.guestId, eventId: command.eventId, clientId: command.clientId };
  const details = command.details as Record<string, unknown>;
  for (const key of Object.keys(details)) {
    const value = details[key];
    if (value === null || value === undefined) continue;
    // An own __proto__ key (no record makes one): a spread defines it, an assignment would not.
    if (key === '__proto__') Object.defineProperty(data, key, { value, enumerable: true, writable: true, configurable: true });
    else data[key] = value;
  }
  data.tags = command.tags ?? [];
  if (command.guestIdAsSent) data.guestIdAsSent = command.guestIdAsSent;
  return data as unknown as Extract<GuestEvent, { type: 'GuestRegistered' }>['data'];
}

function decideMerge(command: Extract<GuestCommand, { type: 'MergeGuest' }>, state: GuestState): GuestEvent[] {
  const ids = { guestId: command.guestId, eventId: command.eventId };
  if (!state.exists) {
    const events: GuestEvent[] = [{ type: 'GuestRegistered', data: mergedRegistration(command) }];
    for (const event of ticketFor(ids, command.ticket, command.details.barcode ?? undefined, undefined)) events.push(event);
    for (const event of importEvents(ids, command.imported)) events.push(event);
    for (const event of invitationFor(command, undefined, command.details.email)) events.push(event);
    return events;
  }
  if (state.clientId !== command.clientId || state.eventId !== command.eventId) {
    throw new DomainError('not_found', 'guest not found');
  }
  const changes = Object.fromEntries(
    Object.entries(command.details).filter(
      // null removes a bound: a change only when the guest has one. createdBy (spec: "User who
      // created the guest") is a fact of the create: a later record does not rewrite it.
      ([key, value]) => key !== 'createdBy' && value !== undefined && (state.details[key as keyof GuestDetails] ?? null) !== value,
    ),
  ) as GuestDetailsChange;
  const events: GuestEvent[] = [];
  if (Object.keys(changes).length > 0) events.push({ type: 'GuestDetailsChanged', data: { ...ids, changes } });
  if (command.tags) {
    const tags = command.replaceTags ? command.tags : parseTags([...state.tags, ...command.tags].join(','));
    if (tags.join('\u0000') !== state.tags.join('\u0000')) events.push({ type: 'GuestTagsChanged', data: { ...ids, tags } });
  }
  const barcode = command.details.barcode === undefined ? state.details.barcode : (command.details.barcode ?? undefined);
  events.push(...ticketFor(ids, command.ticket, barcode, state.ticketSerial));
  // An invitation requested without an email, or with one that is not an address, fails: a record
  // that names the template again once the guest has another email sends it, though the template
  // is the same (a repeated record with the same email does not).
  const email = changes.email ?? state.details.email;
  const lacked = state.invitationLackedAddress;
  const retry = lacked !== undefined && Boolean(email) && email !== lacked.email;
  const correlationId = command.details.correlationId !== undefined ? command.details.correlationId : state.details.correlationId;
  events.push(...invitationFor(command, retry ? undefined : state.details.commsTemplateId, email, correlationId, state.guestIdAsSent));
  return events;
}

/**
 * A guest without a barcode gets a signed ticket, once: a guest that ever had one keeps it (or
 * its revocation) whatever an upsert says.
 */
function ticketFor(
  ids: { guestId: string; eventId: string },
  ticket: TicketToIssue | undefined,
  barcode: string | undefined,
  lastSerial: number | undefined,
): GuestEvent[] {
  if (!ticket || barcode || lastSerial !== undefined) return [];
  return [{ type: 'TicketIssued', data: { ...ids, ...ticket, reissued: false } }];
}

function revoked(ids: { guestId: string; eventId: string }, ticket: IssuedTicket, command: { at: string; by: string }, reissue: boolean): GuestEvent {
  return { type: 'TicketRevoked', data: { ...ids, serial: ticket.serial, keyId: ticket.keyId, at: command.at, by: command.by, reissue } };
}

export const guestDecider: Decider<GuestState, GuestCommand, GuestEvent> = {
  initialState,
  evolve,
  decide(command, state) {
    if (command.type === 'RegisterGuest') {
      if (state.exists) {
        if (sameRegistration(command, state)) return [];
        throw new DomainError('conflict', 'a guest with this id already exists, with other content', { code: 'guest_exists' });
      }
      const { type: _t, details, invitationId: _i, imported, ticket, templateIdAsSent: _template, guestIdAsSent, ...rest } = command;
      const ids = { guestId: command.guestId, eventId: command.eventId };
      return [
        { type: 'GuestRegistered', data: { ...rest, ...withoutNulls(details), ...(guestIdAsSent ? { guestIdAsSent } : {}) } },
        ...ticketFor(ids, ticket, details.barcode ?? undefined, undefined),
        ...importEvents({ guestId: command.guestId, eventId: command.eventId }, imported),
        ...invitationFor(command, undefined, details.email),
      ];
    }
    if (state.erased) {
      if (command.type === 'Erase') return [];
      throw new DomainError('not_found', 'guest not found: its personal data was erased', { code: 'guest_erased' });
    }
    if (command.type === 'MergeGuest') return decideMerge(command, state);
    if (!state.exists) throw new DomainError('not_found', 'guest not found');
    const ids = { guestId: state.guestId!, eventId: state.eventId! };
    // A scan whose nonce was seen already changes nothing; the caller answers with the first outcome.
    if (command.type === 'CheckIn' || command.type === 'CheckOut') {
      const key = scanNonceKey(command.type === 'CheckIn' ? 'in' : 'out', command.scan);
      if (key && state.nonces[key]) return [];
    }
    switch (command.type) {
      case 'RequestInvitation':
        return [
          {
            type: 'InvitationRequested',
            data: {
              ...ids,
              attendeeInvitationId: command.invitationId,
              templateId: command.templateId,
              ...(state.guestIdAsSent ? { guestIdAsSent: state.guestIdAsSent } : {}),
              ...(command.templateIdAsSent ? { templateIdAsSent: command.templateIdAsSent } : {}),
              ...(command.correlationId ? { correlationId: command.correlationId } : {}),
            },
          },
        ];
      case 'CheckIn':
        return decideCheckIn(command, state);
      case 'CheckOut':
        return decideCheckOut(command, state);
      case 'AnnulCheckIn': {
        const last = state.lastAdmission;
        const matches =
          last &&
          (command.latest || (command.scanId && last.scanId === command.scanId) || (command.nonce && last.nonce === command.nonce));
        if (!last || !matches) {
          throw new DomainError('not_found', command.latest ? 'the guest has no check-in that can still be undone' : 'no check-in with this scan id or nonce that can still be undone', {
            code: 'check_in_not_found',
          });
        }
        if (Date.parse(command.now) - Date.parse(last.recordedAt) > command.undoWindowMs) {
          throw new DomainError('conflict', `a check-in can be undone only within ${command.undoWindowMs / 1000} s`, {
            code: 'undo_window_passed',
          });
        }
        return [
          {
            type: 'GuestAdmissionAnnulled',
            data: {
              ...ids,
              scanId: last.scanId,
              at: command.now,
              people: last.people,
              scannedBy: last.scannedBy,
              admittedVia: {
                ...(last.gate !== undefined ? { gate: last.gate } : {}),
                ...(last.device !== undefined ? { device: last.device } : {}),
              },
              annulledBy: command.annulledBy,
              admittedAt: last.at,
              restored: {
                ...(last.guestEntered ? (last.previousAdmitted ? { admitted: last.previousAdmitted } : {}) : { admitted: state.admitted }),
                inside: !last.guestEntered,
                admittedPlusOnes: last.guestEntered ? last.previousAdmittedPlusOnes : state.admittedPlusOnes - last.plusOnesAdmitted,
              },
            },
          },
        ];
      }
      case 'Block':
        // A guest already blocked stays blocked as it is unless the block gives another reason: a
        // bulk block without one (or with "", a form's blank field) does not wipe the reason door staff see.
        if (state.blockedDate && (!command.reason || state.blockedReason === command.reason)) return [];
        return [{ type: 'GuestBlocked', data: { ...ids, reason: command.reason, at: command.at } }];
      case 'Unblock':
        return state.blockedDate ? [{ type: 'GuestUnblocked', data: { ...ids, at: command.at } }] : [];
      case 'Erase': {
        const customId = state.details.customId;
        if (command.releasing && customId !== undefined && !command.releasing.includes(caselessKey(customId.trim()))) {
          throw new DomainError('conflict', 'the guest was changed while it was being erased; erase it again', { code: 'guest_changed' });
        }
        return [
          {
            type: 'GuestErased',
            data: { ...ids, erasedBy: command.erasedBy, reason: command.reason, at: command.at, ...(command.customIdKey ? { customIdKey: command.customIdKey } : {}) },
          },
        ];
      }
      case 'ReissueTicket': {
        const expected = (state.ticketSerial ?? 0) + 1;
        if (command.ticket.serial !== expected) {
          throw new DomainError('conflict', 'the ticket was reissued meanwhile; reissue again', { code: 'ticket_changed' });
        }
        return [
          ...(state.ticket ? [revoked(ids, state.ticket, command, true)] : []),
          { type: 'TicketIssued', data: { ...ids, ...command.ticket, at: command.at, reissued: state.ticketSerial !== undefined } },
        ];
      }
      case 'RevokeTicket':
        if (!state.ticket) throw new DomainError('not_found', 'the guest has no valid ticket to revoke', { code: 'no_ticket' });
        return [revoked(ids, state.ticket, command, false)];
    }
  },
};
