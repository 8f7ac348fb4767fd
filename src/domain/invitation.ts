import { createHash, createHmac } from 'node:crypto';
import { DomainError, type Decider } from './decider.js';
import type { StreamNameKey } from './reservation.js';
import { addressKeyText } from './email-address.js';

/*
 * One invitation email to one guest (spec: check-in rule 1, Events): `invitation-<attendeeInvitationId>`.
 * Its decider answers "is this email sent, being sent, failed, and may it be sent now?".
 * SendSucceeded, SendFailed, SendSkipped and ProviderEventReceived become the webhook's
 * comms.sent, comms.failed, comms.skipped and comms.<provider event> (domain/webhook.ts).
 */

/** What every invitation event carries: the webhook body's `data` comes from these. */
export interface InvitationIds {
  attendeeInvitationId: string;
  clientId: string;
  /** The guest's id (spec: data.attendeeId). */
  attendeeId: string;
  eventId: string;
  templateId: string;
  /**
   * The guest's and the template's ids as the caller first sent them, when not lowercase
   * (InvitationRequested): what the webhook's data.attendeeId and data.templateId and the
   * invitation answers show; attendeeId and templateId stay the lowercase keys (docs/identifiers.md).
   */
  attendeeIdAsSent?: string;
  templateIdAsSent?: string;
  correlationId?: string;
  /** Requested for a guest without an email (InvitationRequested.noEmail): it fails no_email. */
  noEmail?: true;
  /** Requested while the guest's email was not an address (InvitationRequested.invalidEmail): it fails invalid_email. */
  invalidEmail?: true;
}

/** Why a send failed; the webhook's `data.error` starts with it. */
export type SendFailureCode =
  | 'no_email'
  /** The guest's email (any string, spec: Guest.email) is not an address a message can go to. */
  | 'invalid_email'
  /** The template's fromAddress is at a domain another account has verified as its sending domain. */
  | 'from_address_not_allowed'
  | 'previous_send_permanently_failed'
  | 'spam_check_failed'
  | 'template_not_found'
  | 'guest_not_found'
  | 'comms_api_not_enabled'
  /** Sender verification is not completed (or was revoked) for the account (spec: 403 trust_required). */
  | 'trust_required'
  | 'provider_rejected'
  /**
   * The provider refused our credentials (SendGrid 401 or a key-scope 403, SMTP authentication): the
   * send was held and retried, and this is its final failure once the hold ran out (SendFailed only).
   */
  | 'provider_credentials_refused'
  | 'provider_unavailable'
  /** The email could not be built (the PDF, for one): a retry would fail the same way. */
  | 'render_failed'
  | 'outcome_unknown';

/** The provider's reports after it accepted the email (spec: Event types). */
export const providerEventTypes = ['delivered', 'opened', 'bounced', 'dropped', 'spam_reported', 'unsubscribed'] as const;
export type ProviderEventType = (typeof providerEventTypes)[number];

/** A recipient reported so cannot be emailed again (spec: 422 previous_send_permanently_failed). */
/**
 * The suppression list's key for an address of a client (docs/personal-data.md, Erasure): an
 * HMAC-SHA256 under the stream-name key (a plain SHA-256 with PII_ENCRYPTION=off, when every
 * field is plaintext anyway) of the client and the address, trimmed and lower-cased, its domain in ASCII form (addressKeyText: `ada@bücher.de` and
 * `ada@xn--bcher-kva.de`, the form SendGrid reports, are one address). It names the
 * entry instead of the address, so an entry can outlive the erasure of a guest who had the address
 * without keeping the address.
 */
export const suppressionAddressKey = (clientId: string, email: string, nameKey: StreamNameKey | undefined): string => {
  const text = `suppressed-address\n${clientId}\n${addressKeyText(email)}`;
  return nameKey ? `#${nameKey.id}.${createHmac('sha256', nameKey.key).update(text, 'utf8').digest('base64url')}` : createHash('sha256').update(text, 'utf8').digest('base64url');
};

export const suppressingEvents: readonly ProviderEventType[] = ['bounced', 'dropped', 'spam_reported', 'unsubscribed'];

/**
 * How far along an email a report says it got: delivered, then opened, then the reports that end
 * its story (bounced, dropped, spam_reported, unsubscribed). The provider posts its reports out of
 * order (SendGrid: an open, or an asynchronous bounce, can arrive before the delivered it follows),
 * so a report behind one already recorded does not become the invitation's providerStatus.
 */
const stageOf = (event: ProviderEventType): number => (event === 'delivered' ? 1 : event === 'opened' ? 2 : 3);

/** One report of a provider's event webhook, in our terms. */
export interface ProviderReport {
  attendeeInvitationId: string;
  event: ProviderEventType;
  /** The provider's id of this report: a report seen twice is recorded once. */
  providerEventId: string;
  email: string;
  /**
   * A keyed hash of the client and the address (`suppressionAddressKey`): the suppression list's
   * entry for the address, kept unsealed so that it outlives the guest's erasure (another guest
   * of the client with the same address stays suppressed). Reports recorded before it lack it.
   */
  emailKey?: string;
  at: string;
  reason?: string;
  /**
   * False when the provider says a bounce or drop was not about the address (a block because of
   * the sending IP's reputation, content flagged as spam): the address is not suppressed.
   */
  suppresses?: false;
  /**
   * An open reported for a machine, not the recipient: a mail privacy proxy (Apple Mail Privacy
   * Protection) fetched the images. Kept in the invitation's history, but not a comms.opened, not
   * counted as an open, and not the funnel's first open.
   */
  machineOpen?: true;
}

export type InvitationEvent =
  | { type: 'SendRequested'; data: InvitationIds & { requestedAt: string } }
  | {
      type: 'SendStarted';
      /** `leaseUntil`: until then the attempt is taken to be in progress, and no other worker starts one. */
      /** `attendeeId` names the guest whose data key seals `to` (issue 14); events before it lack it. */
      data: { attendeeInvitationId: string; attendeeId?: string; attempt: number; to: string; at: string; leaseUntil: string };
    }
  /** The worker still holds the attempt (a heartbeat): no other worker takes it before `leaseUntil`. */
  | { type: 'SendLeaseRenewed'; data: { attendeeInvitationId: string; attempt: number; leaseUntil: string } }
  | {
      type: 'SendAttemptFailed';
      /** `attendeeId` names the guest whose data key seals `error` (it may quote the address); events before it lack it. */
      /** `heldSince`: code provider_credentials_refused, when this run of credential refusals began (the hold's start). */
      data: { attendeeInvitationId: string; attendeeId?: string; attempt: number; code: SendFailureCode; error: string; retryAt: string; heldSince?: string };
    }
  | {
      type: 'SendSucceeded';
      data: InvitationIds & { attempt: number; to: string; provider: string; providerMessageId: string; sentAt: string; attachedPdf: boolean };
    }
  | { type: 'SendFailed'; data: InvitationIds & { code: SendFailureCode; error: string; permanent: boolean; attempts: number; at: string } }
  | { type: 'SendSkipped'; data: InvitationIds & { reason: string; at: string } }
  | {
      type: 'ProviderEventReceived';
      /**
       * `updatesStatus: false`: the report arrived after one further along (stageOf), so it is
       * recorded and reported but leaves providerStatus as it is. Events before it lack the flag.
       */
      data: InvitationIds & Omit<ProviderReport, 'attendeeInvitationId'> & { updatesStatus?: false };
    };

export type InvitationCommand =
  | { type: 'RequestSend'; ids: InvitationIds; at: string }
  /**
   * The worker is about to hand the email to the provider. `idempotentProvider`: handing
   * the same message over twice still makes one email (the outbox), so an attempt cut
   * short by a crash may be repeated; with any other provider it may not (see decide).
   * `credentialsRetry`: an invitation held on the provider's refusal of our credentials may start
   * before its retryAt (the worker has no refusal outstanding: the key may work now).
   */
  | { type: 'StartAttempt'; to: string; at: string; leaseMs: number; idempotentProvider: boolean; credentialsRetry?: boolean }
  /** The heartbeat of an attempt in progress: extends its lease (issue 12, item 4). */
  | { type: 'RenewLease'; attempt: number; at: string; leaseMs: number }
  | { type: 'RecordSent'; attempt: number; provider: string; providerMessageId: string; at: string; attachedPdf: boolean }
  /** `retryAt` absent: no retry is left (or the failure is permanent). */
  | { type: 'RecordAttemptFailed'; attempt: number; code: SendFailureCode; error: string; permanent: boolean; retryAt?: string; at: string }
  /** A check before any attempt refused the send (no email, suppressed recipient, ...). */
  | { type: 'Refuse'; code: SendFailureCode; error: string; at: string }
  | ({ type: 'RecordProviderEvent' } & Omit<ProviderReport, 'attendeeInvitationId'>)
  /**
   * After a restore, before the service starts (`admin hold-pending-sends`): a send the copy
   * shows unsettled may have gone out after the copy was taken, and the copy cannot know. It
   * fails as `outcome_unknown` instead of being sent again. `ids`: the invitation as its guest's
   * InvitationRequested names it, for a request the copy holds no SendRequested of yet.
   */
  | { type: 'HoldAfterRestore'; at: string; ids?: InvitationIds };

/** The error of a send held after a restore (after the `outcome_unknown: ` its SendFailed puts first). */
export const heldAfterRestoreError =
  'the send was pending when the backup was taken and may or may not have gone out after it; not sent again after the restore so the guest never gets it twice. ' +
  'Check the provider activity, then send again with POST /comms/v1/api/comms/send';

export type InvitationStatus = 'requested' | 'sending' | 'retrying' | 'sent' | 'failed';

export type InvitationState =
  | { status: 'none' }
  | {
      status: InvitationStatus;
      ids: InvitationIds;
      attempts: number;
      to?: string;
      leaseUntil?: string;
      retryAt?: string;
      /** Held on the provider's refusal of our credentials since then (cleared by another outcome). */
      credentialsHeldSince?: string;
      /** Attempts that failed on our credentials: not counted against the retry schedule (SEND_RETRY_DELAYS_MS). */
      credentialHolds?: number;
      seenProviderEvents: string[];
      /** The stage (stageOf) of the report providerStatus shows; 0: none yet. */
      providerStage: number;
    };

export const invitationStream = (attendeeInvitationId: string): string => `invitation-${attendeeInvitationId}`;

type Existing = Exclude<InvitationState, { status: 'none' }>;

export const invitationDecider: Decider<InvitationState, InvitationCommand, InvitationEvent> = {
  initialState: () => ({ status: 'none' }),

  evolve(state, event) {
    if (event.type === 'SendRequested') {
      const { requestedAt: _r, ...ids } = event.data;
      return { status: 'requested', ids, attempts: 0, seenProviderEvents: [], providerStage: 0 };
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'SendStarted':
        return { ...state, status: 'sending', attempts: event.data.attempt, to: event.data.to, leaseUntil: event.data.leaseUntil };
      case 'SendLeaseRenewed':
        return state.status === 'sending' && state.attempts === event.data.attempt ? { ...state, leaseUntil: event.data.leaseUntil } : state;
      case 'SendAttemptFailed': {
        const { credentialsHeldSince: _h, ...rest } = state;
        if (event.data.code !== 'provider_credentials_refused') return { ...rest, status: 'retrying', retryAt: event.data.retryAt };
        const credentialsHeldSince = event.data.heldSince ?? state.credentialsHeldSince ?? event.data.retryAt;
        return { ...rest, status: 'retrying', retryAt: event.data.retryAt, credentialsHeldSince, credentialHolds: (state.credentialHolds ?? 0) + 1 };
      }
      case 'SendSucceeded':
        return { ...state, status: 'sent' };
      case 'SendFailed':
        return { ...state, status: 'failed' };
      case 'ProviderEventReceived': {
        const shown = event.data.machineOpen !== true && event.data.updatesStatus !== false;
        const providerStage = shown ? Math.max(state.providerStage, stageOf(event.data.event)) : state.providerStage;
        return { ...state, seenProviderEvents: [...state.seenProviderEvents, event.data.providerEventId], providerStage };
      }
      default:
        return state;
    }
  },

  decide(command, state) {
    if (command.type === 'RequestSend') {
      return state.status === 'none' ? [{ type: 'SendRequested', data: { ...command.ids, requestedAt: command.at } }] : [];
    }
    if (command.type === 'HoldAfterRestore' && state.status === 'none' && command.ids) {
      // Requested on the guest, not yet recorded here: recorded and settled at once, so a redelivered request finds it failed.
      const requested: InvitationEvent = { type: 'SendRequested', data: { ...command.ids, requestedAt: command.at } };
      return [requested, failed(invitationDecider.evolve(state, requested) as Existing, 'outcome_unknown', heldAfterRestoreError, false, command.at)];
    }
    if (state.status === 'none') throw new DomainError('not_found', 'invitation not found');
    switch (command.type) {
      case 'StartAttempt':
        return startAttempt(command, state);
      case 'RenewLease': {
        // Only the attempt still in progress: one that was taken over or finished stays so.
        if (state.status !== 'sending' || command.attempt !== state.attempts) return [];
        const leaseUntil = new Date(Date.parse(command.at) + command.leaseMs).toISOString();
        return [{ type: 'SendLeaseRenewed', data: { attendeeInvitationId: state.ids.attendeeInvitationId, attempt: command.attempt, leaseUntil } }];
      }
      case 'RecordSent':
        if (state.status !== 'sending' || command.attempt !== state.attempts) return [];
        return [
          {
            type: 'SendSucceeded',
            data: {
              ...state.ids,
              attempt: command.attempt,
              to: state.to!,
              provider: command.provider,
              providerMessageId: command.providerMessageId,
              sentAt: command.at,
              attachedPdf: command.attachedPdf,
            },
          },
        ];
      case 'RecordAttemptFailed': {
        if (state.status !== 'sending' || command.attempt !== state.attempts) return [];
        const { attendeeInvitationId, attendeeId } = state.ids;
        if (!command.permanent && command.retryAt) {
          const data = { attendeeInvitationId, attendeeId, attempt: command.attempt, code: command.code, error: boundedErrorText(command.error), retryAt: command.retryAt };
          const held = command.code === 'provider_credentials_refused' ? { heldSince: state.credentialsHeldSince ?? command.at } : {};
          return [{ type: 'SendAttemptFailed', data: { ...data, ...held } }];
        }
        return [failed(state, command.code, command.error, command.permanent, command.at)];
      }
      case 'Refuse': {
        // Also an attempt whose lease ran out: otherwise it would stay `sending` for ever.
        const open = state.status === 'requested' || state.status === 'retrying' || leaseOver(state, command.at);
        return open ? [failed(state, command.code, command.error, true, command.at)] : [];
      }
      case 'HoldAfterRestore': {
        // Whatever its lease says: the attempt (or a retry) may have run on after the copy was taken.
        const unsettled = state.status === 'requested' || state.status === 'retrying' || state.status === 'sending';
        return unsettled ? [failed(state, 'outcome_unknown', heldAfterRestoreError, false, command.at)] : [];
      }
      case 'RecordProviderEvent': {
        if (state.seenProviderEvents.includes(command.providerEventId)) return [];
        const { type: _t, ...report } = command;
        const behind = command.machineOpen !== true && stageOf(command.event) < state.providerStage;
        return [{ type: 'ProviderEventReceived', data: { ...state.ids, ...report, ...(behind ? { updatesStatus: false as const } : {}) } }];
      }
    }
  },
};

const leaseOver = (state: Existing, at: string): boolean =>
  state.status === 'sending' && Date.parse(at) >= Date.parse(state.leaseUntil!);

function failed(state: Existing, code: SendFailureCode, error: string, permanent: boolean, at: string): InvitationEvent {
  return { type: 'SendFailed', data: { ...state.ids, code, error: `${code}: ${boundedErrorText(error)}`, permanent, attempts: state.attempts, at } };
}

/**
 * Longest failure text an invitation's events keep (UTF-16 code units, before the code's prefix).
 * The text comes from outside (a provider's answer lists every error it found, an SMTP server's
 * reply, a template engine's message) and travels into the event, the read model, every history
 * answer and each webhook delivery, so it is bounded where it enters (docs/invitations.md).
 */
export const SEND_ERROR_TEXT_MAX = 2_000;

/** `text` cut to SEND_ERROR_TEXT_MAX at a code point boundary, saying how much was left out. */
export function boundedErrorText(text: string): string {
  if (text.length <= SEND_ERROR_TEXT_MAX) return text;
  let end = SEND_ERROR_TEXT_MAX;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}… (${text.length - end} more characters left out)`;
}

/**
 * The idempotency check (spec: comms.skipped): an invitation already sent is never sent
 * again. An attempt that started and never reported by the end of its lease (the worker
 * stopped mid-send) is
 * repeated only when the provider dedupes; otherwise it fails as `outcome_unknown`, because
 * the provider may have accepted it and a second email is worse than a reported failure.
 */
function startAttempt(command: Extract<InvitationCommand, { type: 'StartAttempt' }>, state: Existing): InvitationEvent[] {
  const leaseUntil = new Date(Date.parse(command.at) + command.leaseMs).toISOString();
  const start: InvitationEvent = {
    type: 'SendStarted',
    data: { attendeeInvitationId: state.ids.attendeeInvitationId, attendeeId: state.ids.attendeeId, attempt: state.attempts + 1, to: command.to, at: command.at, leaseUntil },
  };
  switch (state.status) {
    case 'requested':
      return [start];
    case 'retrying':
      // Held on our credentials, the worker may try before retryAt (a restart with a new key, or the key working again).
      if (command.credentialsRetry && state.credentialsHeldSince) return [start];
      return Date.parse(command.at) >= Date.parse(state.retryAt!) ? [start] : [];
    case 'sending':
      // Another worker's attempt still holds its lease: leave it alone.
      if (!leaseOver(state, command.at)) return [];
      return command.idempotentProvider
        ? [start]
        : [failed(state, 'outcome_unknown', 'the send was interrupted and the provider may have accepted it; not repeated so the guest never gets it twice. Check the provider activity, then send again with POST /comms/v1/api/comms/send', false, command.at)];
    case 'sent':
      return [{ type: 'SendSkipped', data: { ...state.ids, reason: 'already_sent', at: command.at } }];
    case 'failed':
      return [];
  }
}
