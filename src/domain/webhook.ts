import { createHash } from 'node:crypto';
import { DomainError, type Decider } from './decider.js';

/** About 10 attempts over about 8 hours: 5 s, 30 s, 2 min, 5 min, 15 min, 30 min, 1 h, 2 h, 4 h. */
export const defaultRetryDelaysMs = [5_000, 30_000, 120_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000];

/*
 * Webhooks (spec: Webhook configuration, Comms rules 2-4, Events).
 *
 * - `webhook-<clientId>`: the account's one webhook (URL and encrypted secret), and the
 *   test events it asks for. Its decider answers "which secret signs, and where to".
 * - `webhookdelivery-<webhookId>`: one comms event on its way to that URL: every attempt
 *   and the verdict on it. Its decider answers "is this retried, given up, delivered?".
 * - `commsEventOf`: which stored events are comms events, and the body a receiver gets.
 */

// ---------------------------------------------------------------------------------------
// The webhook configuration

/** The signing secret as stored: AES-256-GCM ciphertext and the id of the key it used. */
export interface StoredSecret {
  encryptedSecret: string;
  keyId: string;
}

export type WebhookEvent =
  | { type: 'WebhookConfigured'; data: { clientId: string; url: string } & StoredSecret }
  | { type: 'WebhookUrlChanged'; data: { clientId: string; url: string; previousUrl: string } }
  | { type: 'WebhookSecretRotated'; data: { clientId: string } & StoredSecret }
  /** The same secret encrypted again under another keyring key (an operator's key rotation); not a new secret. */
  | { type: 'WebhookSecretReencrypted'; data: { clientId: string } & StoredSecret }
  | { type: 'WebhookDeleted'; data: { clientId: string; url: string } }
  | { type: 'WebhookTestRequested'; data: { clientId: string; correlationId?: string } };

export type WebhookCommand =
  /** `secret` is a freshly generated one; it is used only when no webhook exists (rules 2 and 4). */
  | { type: 'ConfigureWebhook'; clientId: string; url: string; secret: StoredSecret }
  | { type: 'RotateWebhookSecret'; clientId: string; secret: StoredSecret }
  /**
   * `from` is the ciphertext that was decrypted to make `secret`: a rotation in between makes
   * it stale, and then nothing is written (the new secret is already under the current key).
   */
  | { type: 'ReencryptWebhookSecret'; clientId: string; from: string; secret: StoredSecret }
  | { type: 'DeleteWebhook'; clientId: string }
  | { type: 'RequestWebhookTest'; clientId: string; correlationId?: string };

export type WebhookState = { status: 'none' } | ({ status: 'configured'; url: string } & StoredSecret);

export const webhookStream = (clientId: string): string => `webhook-${clientId}`;

const noWebhook = () => new DomainError('not_found', 'no webhook is configured');

export const webhookDecider: Decider<WebhookState, WebhookCommand, WebhookEvent> = {
  initialState: () => ({ status: 'none' }),

  evolve(state, event) {
    switch (event.type) {
      case 'WebhookConfigured':
        return { status: 'configured', url: event.data.url, encryptedSecret: event.data.encryptedSecret, keyId: event.data.keyId };
      case 'WebhookUrlChanged':
        return state.status === 'configured' ? { ...state, url: event.data.url } : state;
      case 'WebhookSecretRotated':
      case 'WebhookSecretReencrypted':
        return state.status === 'configured'
          ? { ...state, encryptedSecret: event.data.encryptedSecret, keyId: event.data.keyId }
          : state;
      case 'WebhookDeleted':
        return { status: 'none' };
      default:
        return state;
    }
  },

  decide(command, state) {
    const { clientId } = command;
    if (command.type === 'ConfigureWebhook') {
      if (state.status === 'none') return [{ type: 'WebhookConfigured', data: { clientId, url: command.url, ...command.secret } }];
      if (state.url === command.url) return [];
      return [{ type: 'WebhookUrlChanged', data: { clientId, url: command.url, previousUrl: state.url } }];
    }
    if (command.type === 'ReencryptWebhookSecret') {
      if (state.status !== 'configured' || state.encryptedSecret !== command.from) return [];
      return [{ type: 'WebhookSecretReencrypted', data: { clientId, ...command.secret } }];
    }
    if (state.status !== 'configured') throw noWebhook();
    switch (command.type) {
      case 'RotateWebhookSecret':
        return [{ type: 'WebhookSecretRotated', data: { clientId, ...command.secret } }];
      case 'DeleteWebhook':
        return [{ type: 'WebhookDeleted', data: { clientId, url: state.url } }];
      case 'RequestWebhookTest':
        return [
          {
            type: 'WebhookTestRequested',
            data: { clientId, ...(command.correlationId !== undefined ? { correlationId: command.correlationId } : {}) },
          },
        ];
    }
  },
};

// ---------------------------------------------------------------------------------------
// Comms events: what a receiver gets

export const commsEventTypes = [
  'comms.sent',
  'comms.failed',
  'comms.skipped',
  'comms.delivered',
  'comms.opened',
  'comms.bounced',
  'comms.dropped',
  'comms.spam_reported',
  'comms.unsubscribed',
  'comms.test',
] as const;
export type CommsEventType = (typeof commsEventTypes)[number];

/** Spec: Events, Body shape, `data`. */
export interface CommsEventData {
  attendeeId: string;
  templateId: string;
  attendeeInvitationId: string;
  status: string;
  error: string | null;
  correlationId?: string;
}

export interface CommsEvent {
  /** The webhook id: the same for every attempt and redelivery of this event. */
  id: string;
  type: CommsEventType;
  createdAt: string;
  clientId: string;
  /** `attendeeId` and `templateId` are the lowercase keys (what stores and erasure look up): shownCommsData shows the spellings below. */
  data: CommsEventData;
  /** The guest's and template's ids as the caller first sent them, when not lowercase (docs/identifiers.md). */
  attendeeIdAsSent?: string;
  templateIdAsSent?: string;
}

/**
 * `data` as a receiver gets it: data.attendeeId and data.templateId spelled as the caller sent the
 * guest's and the template's ids (spec: "the guest GUID supplied by the caller", "the template
 * GUID that was sent"); lowercase for guests and templates created before that was kept.
 */
export function shownCommsData(event: Pick<CommsEvent, 'data' | 'attendeeIdAsSent' | 'templateIdAsSent'>): CommsEventData {
  if (!event.attendeeIdAsSent && !event.templateIdAsSent) return event.data;
  return {
    ...event.data,
    attendeeId: event.attendeeIdAsSent ?? event.data.attendeeId,
    templateId: event.templateIdAsSent ?? event.data.templateId,
  };
}

/**
 * Stored events that are comms events. `WebhookTestRequested` is ours; the others are the
 * invitation stream's (docs/webhooks.md) and must carry `attendeeId`, `templateId`,
 * `attendeeInvitationId`, optional `correlationId` and `error`, and for
 * `ProviderEventReceived` the provider's `event` (delivered, opened, bounced, ...).
 */
export const commsSourceEventTypes = [
  'WebhookTestRequested',
  'SendSucceeded',
  'SendFailed',
  'SendSkipped',
  'ProviderEventReceived',
] as const;
export const commsSourceStreamPrefixes = ['webhook-', 'invitation-'];

const providerEvents = ['delivered', 'opened', 'bounced', 'dropped', 'spam_reported', 'unsubscribed'];
export const nilGuid = '00000000-0000-0000-0000-000000000000';

/** The parts of a stored event the mapping reads. */
export interface SourceEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: { tenantId: string; occurredAt: string };
}

/** The comms event a stored event stands for, or undefined when it is none. */
export function commsEventOf(source: SourceEvent): CommsEvent | undefined {
  const d = source.data;
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  let type: CommsEventType;
  let status: string;
  switch (source.type) {
    case 'WebhookTestRequested':
      type = 'comms.test';
      status = 'test';
      break;
    case 'SendSucceeded':
      type = 'comms.sent';
      status = 'sent';
      break;
    case 'SendFailed':
      type = 'comms.failed';
      status = 'failed';
      break;
    case 'SendSkipped':
      type = 'comms.skipped';
      status = 'skipped';
      break;
    case 'ProviderEventReceived': {
      const event = text(d.event) ?? text(d.status);
      if (!event || !providerEvents.includes(event)) return undefined;
      // Spec: comms.opened is "the recipient opened the email"; a privacy proxy's fetch is not that.
      if (d.machineOpen === true) return undefined;
      type = `comms.${event}` as CommsEventType;
      status = event;
      break;
    }
    default:
      return undefined;
  }
  const correlationId = text(d.correlationId);
  const attendeeIdAsSent = text(d.attendeeIdAsSent);
  const templateIdAsSent = text(d.templateIdAsSent);
  return {
    id: webhookIdFor(source.id),
    type,
    createdAt: source.metadata.occurredAt,
    clientId: text(d.clientId) ?? source.metadata.tenantId,
    ...(attendeeIdAsSent ? { attendeeIdAsSent } : {}),
    ...(templateIdAsSent ? { templateIdAsSent } : {}),
    data: {
      attendeeId: text(d.attendeeId) ?? nilGuid,
      templateId: text(d.templateId) ?? nilGuid,
      attendeeInvitationId: text(d.attendeeInvitationId) ?? nilGuid,
      status,
      // Spec: set only when the status is failed or dropped.
      // An erased guest's error and reason no longer open (they may quote the address); a failure keeps its code.
      error: status === 'failed' || status === 'dropped' ? (text(d.error) ?? text(d.reason) ?? text(d.code) ?? 'unknown error') : null,
      ...(correlationId ? { correlationId } : {}),
    },
  };
}

/** The exact JSON a receiver gets, fields in the spec's order. These bytes are signed and sent. */
export function webhookBody(event: CommsEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, createdAt: event.createdAt, data: shownCommsData(event) });
}

// ---------------------------------------------------------------------------------------
// Deliveries: one comms event to one URL, attempt by attempt

export type DeliveryStatus = 'pending' | 'retrying' | 'delivered' | 'failed' | 'dead';

/** What one attempt came to: the receiver's status code, or an error before one arrived. */
export type AttemptOutcome =
  /**
   * `secretRotated`: the secret this attempt was signed with was rotated before the answer came
   * (spec, Comms rule 3: the old one stops working at once), so a 401 is the receiver rejecting
   * the old secret, not the event: it is retried, signed with the new one. `urlChanged`: the
   * webhook's URL changed before the answer came, so a failure is the old URL's: it is retried at
   * the new one.
   */
  | {
      kind: 'response';
      statusCode: number;
      secretRotated?: boolean;
      urlChanged?: boolean;
      /** A 429's or 503's `Retry-After`, in ms (at most an hour): the next attempt waits at least this long. */
      retryAfterMs?: number;
    }
  /** `retryable`: a timeout or connection error is; a refused URL or a deleted webhook is not. */
  | { kind: 'error'; error: string; retryable: boolean };

export interface DeliverySource {
  clientId: string;
  eventType: CommsEventType;
  /** The exact body every attempt sends (absent once `attendeeId`'s guest is erased: it was sealed with its key). */
  body: string;
  /**
   * Set when the body carries an error (comms.failed, comms.dropped), which may quote the
   * recipient: the guest whose data key seals `body` (docs/personal-data.md). Deliveries
   * scheduled before it hold their body as written.
   */
  attendeeId?: string;
  sourceEventId: string;
  sourceStream: string;
  sourceRevision: number;
  /**
   * The webhook configuration this delivery is for (the id of its `WebhookConfigured` event). A
   * webhook deleted and configured again is another one: the delivery is not sent to it.
   * Absent on deliveries scheduled before this was recorded (they go to the current webhook).
   */
  webhookConfigurationId?: string;
}

export type DeliveryEvent =
  | { type: 'WebhookDeliveryScheduled'; data: { deliveryId: string } & DeliverySource }
  | {
      type: 'WebhookDeliveryAttempted';
      data: {
        deliveryId: string;
        attempt: number;
        attemptedAt: string;
        url: string;
        durationMs: number;
        statusCode?: number;
        error?: string;
      };
    }
  | { type: 'WebhookDelivered'; data: { deliveryId: string; deliveredAt: string } }
  | { type: 'WebhookDeliveryRetryScheduled'; data: { deliveryId: string; nextAttemptAt: string } }
  | { type: 'WebhookDeliveryFailed'; data: { deliveryId: string; reason: string } }
  | { type: 'WebhookDeliveryExhausted'; data: { deliveryId: string; attempts: number; reason: string } }
  | { type: 'WebhookDeliveryDeadLettered'; data: { deliveryId: string; topic: string } }
  /** `webhookConfigurationId`: the webhook configured when it was asked for; the redelivery goes to that one only. */
  | { type: 'WebhookRedeliveryRequested'; data: { deliveryId: string; clientId: string; webhookConfigurationId?: string } }
  /**
   * A worker took the next attempt (issue 12, item 4): no other worker makes it before
   * `leaseUntil`; the worker's heartbeat extends it (WebhookDeliveryLeaseRenewed).
   */
  | { type: 'WebhookDeliveryAttemptStarted'; data: { deliveryId: string; attempt: number; leaseUntil: string } }
  | { type: 'WebhookDeliveryLeaseRenewed'; data: { deliveryId: string; attempt: number; leaseUntil: string } }
  /** The worker stopped before the attempt's outcome (a shutdown): any worker may make it now. */
  | { type: 'WebhookDeliveryLeaseReleased'; data: { deliveryId: string; attempt: number } };

export type DeliveryCommand =
  | { type: 'ScheduleDelivery'; deliveryId: string; source: DeliverySource }
  | {
      type: 'RecordAttempt';
      deliveryId: string;
      /** Must be the next attempt number; a stale or repeated report decides nothing. */
      attempt: number;
      at: string;
      url: string;
      durationMs: number;
      outcome: AttemptOutcome;
      /** The backoff schedule: delay before retry n is `retryDelaysMs[n-1]`; attempts = length + 1. */
      retryDelaysMs: number[];
      /** A random number in [0, 1): spreads retries by up to +20 % (jitter). */
      jitter: number;
    }
  | { type: 'MarkDeadLettered'; deliveryId: string; topic: string }
  | { type: 'RequestRedelivery'; deliveryId: string; clientId: string; webhookConfigurationId?: string }
  /** Take the next attempt: refused (no event) while another worker's lease runs or before it is due. */
  | { type: 'StartAttempt'; deliveryId: string; at: string; leaseMs: number }
  | { type: 'RenewAttemptLease'; deliveryId: string; attempt: number; at: string; leaseMs: number }
  | { type: 'ReleaseAttemptLease'; deliveryId: string; attempt: number };

export type DeliveryState =
  | { status: 'none' }
  | ({
      status: DeliveryStatus;
      deliveryId: string;
      attempts: number;
      /** Attempts made before the last redelivery request; the budget counts from here. */
      budgetStart: number;
      nextAttemptAt?: string;
      deadLettered: boolean;
      /** The attempt a worker holds, until when (absent: none is held). */
      lease?: { attempt: number; until: string };
    } & DeliverySource);

export const deliveryStream = (deliveryId: string): string => `webhookdelivery-${deliveryId}`;

/**
 * 2xx delivers; 408, 429 and 5xx retry, and so does any failure from a URL changed meanwhile or a
 * 401 to a secret rotated meanwhile; any other answer is final (redirects are not followed).
 */
export function verdictOf(outcome: AttemptOutcome): 'delivered' | 'retry' | 'final' {
  if (outcome.kind === 'error') return outcome.retryable ? 'retry' : 'final';
  const code = outcome.statusCode;
  if (code >= 200 && code < 300) return 'delivered';
  if (code === 408 || code === 429 || code >= 500) return 'retry';
  if ((code === 401 && outcome.secretRotated) || outcome.urlChanged) return 'retry';
  return 'final';
}

const reasonOf = (outcome: AttemptOutcome): string =>
  outcome.kind === 'error' ? outcome.error : `the receiver answered ${outcome.statusCode}`;

export const isActive = (state: DeliveryState): state is Exclude<DeliveryState, { status: 'none' }> =>
  state.status === 'pending' || state.status === 'retrying';

export const deliveryDecider: Decider<DeliveryState, DeliveryCommand, DeliveryEvent> = {
  initialState: () => ({ status: 'none' }),

  evolve(state, event) {
    if (event.type === 'WebhookDeliveryScheduled') {
      const { deliveryId, ...source } = event.data;
      return { status: 'pending', deliveryId, ...source, attempts: 0, budgetStart: 0, deadLettered: false };
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'WebhookDeliveryAttemptStarted':
      case 'WebhookDeliveryLeaseRenewed':
        return { ...state, lease: { attempt: event.data.attempt, until: event.data.leaseUntil } };
      case 'WebhookDeliveryLeaseReleased':
        return state.lease?.attempt === event.data.attempt ? { ...state, lease: undefined } : state;
      case 'WebhookDeliveryAttempted':
        return { ...state, attempts: event.data.attempt, lease: undefined };
      case 'WebhookDelivered':
        return { ...state, status: 'delivered', nextAttemptAt: undefined };
      case 'WebhookDeliveryRetryScheduled':
        return { ...state, status: 'retrying', nextAttemptAt: event.data.nextAttemptAt };
      case 'WebhookDeliveryFailed':
        return { ...state, status: 'failed', nextAttemptAt: undefined };
      case 'WebhookDeliveryExhausted':
        return { ...state, status: 'dead', nextAttemptAt: undefined };
      case 'WebhookDeliveryDeadLettered':
        return { ...state, deadLettered: true };
      case 'WebhookRedeliveryRequested':
        return {
          ...state,
          status: 'pending',
          budgetStart: state.attempts,
          nextAttemptAt: undefined,
          deadLettered: false,
          webhookConfigurationId: event.data.webhookConfigurationId,
        };
      default:
        return state;
    }
  },

  decide(command, state) {
    const { deliveryId } = command;
    if (command.type === 'ScheduleDelivery') {
      if (state.status !== 'none') return [];
      return [{ type: 'WebhookDeliveryScheduled', data: { deliveryId, ...command.source } }];
    }
    // Another client's delivery is reported as missing, never as forbidden.
    if (state.status === 'none' || (command.type === 'RequestRedelivery' && state.clientId !== command.clientId)) {
      throw new DomainError('not_found', 'delivery not found');
    }
    switch (command.type) {
      case 'RequestRedelivery':
        return [
          {
            type: 'WebhookRedeliveryRequested',
            data: {
              deliveryId,
              clientId: command.clientId,
              ...(command.webhookConfigurationId !== undefined ? { webhookConfigurationId: command.webhookConfigurationId } : {}),
            },
          },
        ];
      case 'MarkDeadLettered':
        return state.status === 'dead' && !state.deadLettered
          ? [{ type: 'WebhookDeliveryDeadLettered', data: { deliveryId, topic: command.topic } }]
          : [];
      case 'RecordAttempt':
        return recordAttempt(command, state);
      case 'StartAttempt': {
        if (!isActive(state)) return [];
        if (state.lease && Date.parse(state.lease.until) > Date.parse(command.at)) return [];
        if (state.nextAttemptAt && Date.parse(state.nextAttemptAt) > Date.parse(command.at)) return [];
        const leaseUntil = new Date(Date.parse(command.at) + command.leaseMs).toISOString();
        return [{ type: 'WebhookDeliveryAttemptStarted', data: { deliveryId, attempt: state.attempts + 1, leaseUntil } }];
      }
      case 'RenewAttemptLease': {
        if (!isActive(state) || state.lease?.attempt !== command.attempt) return [];
        const leaseUntil = new Date(Date.parse(command.at) + command.leaseMs).toISOString();
        return [{ type: 'WebhookDeliveryLeaseRenewed', data: { deliveryId, attempt: command.attempt, leaseUntil } }];
      }
      case 'ReleaseAttemptLease':
        return isActive(state) && state.lease?.attempt === command.attempt
          ? [{ type: 'WebhookDeliveryLeaseReleased', data: { deliveryId, attempt: command.attempt } }]
          : [];
    }
  },
};

function recordAttempt(
  command: Extract<DeliveryCommand, { type: 'RecordAttempt' }>,
  state: Exclude<DeliveryState, { status: 'none' }>,
): DeliveryEvent[] {
  if (!isActive(state) || command.attempt !== state.attempts + 1) return [];
  const { deliveryId, outcome } = command;
  const attempted: DeliveryEvent = {
    type: 'WebhookDeliveryAttempted',
    data: {
      deliveryId,
      attempt: command.attempt,
      attemptedAt: command.at,
      url: command.url,
      durationMs: command.durationMs,
      ...(outcome.kind === 'response' ? { statusCode: outcome.statusCode } : { error: outcome.error }),
    },
  };
  const verdict = verdictOf(outcome);
  if (verdict === 'delivered') return [attempted, { type: 'WebhookDelivered', data: { deliveryId, deliveredAt: command.at } }];
  if (verdict === 'final') return [attempted, { type: 'WebhookDeliveryFailed', data: { deliveryId, reason: reasonOf(outcome) } }];
  const used = command.attempt - state.budgetStart;
  const delay = command.retryDelaysMs[used - 1];
  if (delay === undefined) {
    return [attempted, { type: 'WebhookDeliveryExhausted', data: { deliveryId, attempts: used, reason: reasonOf(outcome) } }];
  }
  // The receiver's own Retry-After (429, 503) is honoured when it asks for longer than the schedule.
  const asked = outcome.kind === 'response' ? (outcome.retryAfterMs ?? 0) : 0;
  const nextAttemptAt = new Date(Date.parse(command.at) + Math.max(Math.round(delay * (1 + 0.2 * command.jitter)), asked)).toISOString();
  return [attempted, { type: 'WebhookDeliveryRetryScheduled', data: { deliveryId, nextAttemptAt } }];
}

// ---------------------------------------------------------------------------------------
// Ids derived from other ids, so a repeated message decides the same thing

/** A name-based UUID (SHA-256, RFC 4122 layout with version 5 bits) of the given parts. */
export function derivedId(...parts: string[]): string {
  const hash = createHash('sha256').update(parts.join('\0')).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The webhook id (X-Service-Webhook-Id, body `id`) of the comms event stored as `sourceEventId`; also its delivery's id. */
export const webhookIdFor = (sourceEventId: string): string => derivedId('webhook', sourceEventId);
