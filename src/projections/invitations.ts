import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import { suppressingEvents, type InvitationEvent, type InvitationStatus, type ProviderEventType } from '../domain/invitation.js';
import type { Projection } from './projection.js';
import { addressKeyText } from '../domain/email-address.js';

/** `invitations`: one document per invitation email (attendeeInvitationId), its state and history. */
export interface InvitationDoc {
  _id: string;
  clientId: string;
  eventId: string;
  attendeeId: string;
  templateId: string;
  /** InvitationIds.attendeeIdAsSent and templateIdAsSent: the spellings answers show (toInvitationView). */
  attendeeIdAsSent?: string;
  templateIdAsSent?: string;
  correlationId?: string;
  status: InvitationStatus;
  attempts: number;
  to?: string;
  provider?: string;
  providerMessageId?: string;
  /** Set when the status is failed: the code, then what went wrong. */
  error?: string;
  /**
   * The provider's report furthest along after it accepted the email: delivered, then opened, then
   * bounced, dropped, spam_reported or unsubscribed (the latest of those), whatever order they arrived in.
   */
  providerStatus?: ProviderEventType;
  opens: number;
  /** Times an at-least-once retry found it already sent (comms.skipped). */
  skips: number;
  requestedAt: string;
  sentAt?: string;
  updatedAt: string;
  /**
   * The steps, oldest first: what happened and when. The latest HISTORY_LIMIT only, each detail
   * cut to DETAIL_LIMIT characters (the event store keeps every step whole).
   */
  history: { type: string; at: string; attempt?: number; detail?: string }[];
}

/**
 * A bound on `history`. One step per provider report, and a report per open (a mail client or a
 * link scanner can load the pixel thousands of times), so without it the document grows past
 * MongoDB's 16 MB limit, the update fails, and the projection stops on it for good. 500 steps of
 * at most ~1 kB stay far below; `opens` still counts every open.
 */
export const HISTORY_LIMIT = 500;
/** A step's `detail` (provider reasons, send errors) is cut to this many characters. */
export const DETAIL_LIMIT = 1000;

const clipped = (text: string): string => (text.length > DETAIL_LIMIT ? `${text.slice(0, DETAIL_LIMIT - 1)}…` : text);

/**
 * The recipient, when the event still opens it: an erased guest's events open without `to`
 * (docs/personal-data.md), so the field stays absent, as the erasure left it, also on a rebuild.
 */
const recipient = (to: string | undefined): { to?: string } => (to !== undefined ? { to } : {});

/**
 * `comms_suppressions`: recipients a provider reported as unreachable, per client (spec:
 * previous_send_permanently_failed). An entry is about the address, whichever guest's invitation
 * it came from: it is named by the address's keyed hash (`emailKey`, hashedSuppressionId) and
 * holds no address, so it outlives the erasure of one guest who had it. Entries of reports
 * recorded before the hash (legacy) are named by the address itself (suppressionId) and hold it.
 */
export interface SuppressionDoc {
  _id: string;
  clientId: string;
  /** Legacy entries only. */
  email?: string;
  emailKey?: string;
  reason: ProviderEventType;
  at: string;
  attendeeInvitationId: string;
}

/** A legacy entry's id: the address itself. */
export const suppressionId = (clientId: string, email: string): string => `${clientId}:${addressKeyText(email)}`;
/** An entry's id by the address's keyed hash (suppressionAddressKey); `#` keeps it apart from every legacy id. */
export const hashedSuppressionId = (clientId: string, emailKey: string): string => `${clientId}#${emailKey}`;

export const invitationsProjection: Projection = {
  name: 'invitations',
  filter: { streamPrefixes: ['invitation-'] },
  collections: [
    {
      name: 'invitations',
      indexes: [
        { name: 'clientId_requestedAt', keys: { clientId: 1, requestedAt: -1 } },
        { name: 'attendeeId', keys: { attendeeId: 1 } },
        { name: 'clientId_eventId', keys: { clientId: 1, eventId: 1 } },
        // The send worker's resume at start-up looks up the unfinished ones.
        { name: 'status', keys: { status: 1 } },
      ],
    },
    { name: 'comms_suppressions', indexes: [] },
  ],
  apply(stored: StoredEvent): WriteOp[] {
    const event = stored as unknown as StoredEvent & InvitationEvent;
    const at = stored.metadata.occurredAt;
    const id = event.data.attendeeInvitationId;
    type Entry = InvitationDoc['history'][number];
    const step = (status: InvitationStatus | undefined, set: Record<string, unknown>, entry: Entry, more: { inc?: Record<string, number>; unset?: string[] } = {}): WriteOp => ({
      kind: 'update',
      collection: 'invitations',
      id,
      update: {
        $set: { ...(status ? { status } : {}), ...set, updatedAt: at },
        $push: { history: { $each: [entry.detail === undefined ? entry : { ...entry, detail: clipped(entry.detail) }], $slice: -HISTORY_LIMIT } },
        ...(more.inc ? { $inc: more.inc } : {}),
        ...(more.unset ? { $unset: Object.fromEntries(more.unset.map((field) => [field, ''])) } : {}),
      },
    });
    switch (event.type) {
      case 'SendRequested': {
        // noEmail and invalidEmail are the send worker's (it refuses the send); the failure shows as no_email or invalid_email.
        const { attendeeInvitationId: _id, requestedAt, noEmail: _noEmail, invalidEmail: _invalidEmail, ...ids } = event.data;
        const doc: Omit<InvitationDoc, '_id'> = {
          ...ids,
          status: 'requested',
          attempts: 0,
          opens: 0,
          skips: 0,
          requestedAt,
          updatedAt: at,
          history: [{ type: 'requested', at }],
        };
        return [{ kind: 'replace', collection: 'invitations', id, doc }];
      }
      case 'SendLeaseRenewed':
        // Not history (a heartbeat): only when the attempt was last heard of, for the send worker's sweep.
        return [{ kind: 'update', collection: 'invitations', id, update: { $set: { updatedAt: at } } }];
      case 'SendStarted':
        return [step('sending', { attempts: event.data.attempt, ...recipient(event.data.to) }, { type: 'attempt_started', at, attempt: event.data.attempt })];
      case 'SendAttemptFailed':
        return [
          // An erased guest's error opens no more (it may quote the address: docs/personal-data.md); its code stays.
          step('retrying', { error: event.data.error ?? event.data.code }, {
            type: 'attempt_failed',
            at,
            attempt: event.data.attempt,
            detail: `${event.data.code}: ${event.data.error ?? '[erased]'}; retry at ${event.data.retryAt}`,
          }),
        ];
      case 'SendSucceeded': {
        const d = event.data;
        const set = { provider: d.provider, providerMessageId: d.providerMessageId, sentAt: d.sentAt, ...recipient(d.to) };
        return [step('sent', set, { type: 'sent', at, attempt: d.attempt }, { unset: ['error'] })];
      }
      case 'SendFailed':
        return [step('failed', { error: event.data.error ?? event.data.code }, { type: 'failed', at, detail: event.data.error ?? event.data.code })];
      case 'SendSkipped':
        return [step(undefined, {}, { type: 'skipped', at, detail: event.data.reason }, { inc: { skips: 1 } })];
      case 'ProviderEventReceived': {
        const d = event.data;
        const ops: WriteOp[] = [
          d.machineOpen
            ? step(undefined, {}, { type: d.event, at: d.at, detail: 'machine open: a mail privacy proxy fetched the images, not the recipient' })
            : step(
                undefined,
                // A report that arrived after one further along (out of order) leaves providerStatus as it is.
                d.updatesStatus === false ? {} : { providerStatus: d.event },
                { type: d.event, at: d.at, ...(d.reason ? { detail: d.reason } : {}) },
                d.event === 'opened' ? { inc: { opens: 1 } } : {},
              ),
        ];
        if (suppressingEvents.includes(d.event) && d.suppresses !== false) {
          const entry = { clientId: d.clientId, reason: d.event, at: d.at, attendeeInvitationId: id };
          if (d.emailKey !== undefined) {
            // Unsealed: an erased guest's report still suppresses the address (for another guest of the client who has it), without holding it.
            const doc: Omit<SuppressionDoc, '_id'> = { ...entry, emailKey: d.emailKey };
            ops.push({ kind: 'replace', collection: 'comms_suppressions', id: hashedSuppressionId(d.clientId, d.emailKey), doc });
          } else if (d.email !== undefined) {
            // A report recorded before the hash: named by its address; an erased guest's opens without it (its key is gone).
            const doc: Omit<SuppressionDoc, '_id'> = { ...entry, email: d.email };
            ops.push({ kind: 'replace', collection: 'comms_suppressions', id: suppressionId(d.clientId, d.email), doc });
          }
        }
        return ops;
      }
      default:
        return [];
    }
  },
};
