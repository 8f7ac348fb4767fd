import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import {
  commsEventOf,
  commsSourceEventTypes,
  commsSourceStreamPrefixes,
  type CommsEventData,
  type DeliveryEvent,
  type DeliveryStatus,
  type WebhookEvent,
} from '../domain/webhook.js';
import type { Projection } from './projection.js';

/**
 * `webhooks`: the account's webhook, one document per client. It holds the secret only as
 * ciphertext (for the dispatcher, which decrypts it at each attempt); no response maps it.
 */
export interface WebhookDoc {
  _id: string;
  url: string;
  encryptedSecret: string;
  keyId: string;
  /** The id of the `WebhookConfigured` event: a webhook deleted and configured again gets another. */
  configurationId?: string;
  /** Its global position: comms events before it happened while this webhook did not exist. */
  configuredPosition?: number;
  createdAt: string;
  updatedAt: string;
  secretRotatedAt?: string;
}

/** One attempt in the delivery log: the recorded event's data. */
export type DeliveryAttemptDoc = Omit<Extract<DeliveryEvent, { type: 'WebhookDeliveryAttempted' }>['data'], 'deliveryId'>;

/** `webhook_deliveries`: the delivery log, one document per comms event sent to a webhook. */
export interface DeliveryDoc {
  _id: string;
  clientId: string;
  type: string;
  status: DeliveryStatus;
  attempts: number;
  attemptLog: DeliveryAttemptDoc[];
  sourceEventId: string;
  createdAt: string;
  updatedAt: string;
  nextAttemptAt?: string;
  /** Until when a worker holds the attempt in progress (issue 12, item 4). */
  leaseUntil?: string;
  lastAttemptAt?: string;
  lastStatusCode?: number;
  lastError?: string;
  deliveredAt?: string;
  failureReason?: string;
  deadLetteredAt?: string;
  redeliveries?: number;
}

/** `comms_events`: every comms event of every account, for reconciliation (spec: delivery rule 2). */
export interface CommsEventDoc {
  _id: string;
  clientId: string;
  type: string;
  createdAt: string;
  data: CommsEventData;
  /** CommsEvent.attendeeIdAsSent and templateIdAsSent: answered in data by shownCommsData. */
  attendeeIdAsSent?: string;
  templateIdAsSent?: string;
  position: number;
}

export const webhooksProjection: Projection = {
  name: 'webhooks',
  /**
   * 2: configurationId and configuredPosition. A webhook configured under version 1 had neither,
   * so its deliveries carried no configuration and went to a webhook configured after a delete.
   */
  version: 2,
  filter: { streamPrefixes: ['webhook-'] },
  collections: [{ name: 'webhooks', indexes: [] }],
  apply(stored: StoredEvent): WriteOp[] {
    const event = stored as unknown as StoredEvent & WebhookEvent;
    const at = stored.metadata.occurredAt;
    const id = event.data.clientId;
    const update = (fields: Record<string, unknown>): WriteOp[] => [
      { kind: 'update', collection: 'webhooks', id, update: { $set: { ...fields, updatedAt: at } } },
    ];
    switch (event.type) {
      case 'WebhookConfigured': {
        const { url, encryptedSecret, keyId } = event.data;
        return [{ kind: 'replace', collection: 'webhooks', id, doc: { url, encryptedSecret, keyId, configurationId: stored.id, configuredPosition: stored.position, createdAt: at, updatedAt: at } }];
      }
      case 'WebhookUrlChanged':
        return update({ url: event.data.url });
      case 'WebhookSecretRotated':
        return update({ encryptedSecret: event.data.encryptedSecret, keyId: event.data.keyId, secretRotatedAt: at });
      case 'WebhookSecretReencrypted':
        // The client's secret is unchanged: neither updatedAt nor secretRotatedAt moves.
        return [{ kind: 'update', collection: 'webhooks', id, update: { $set: { encryptedSecret: event.data.encryptedSecret, keyId: event.data.keyId } } }];
      case 'WebhookDeleted':
        return [{ kind: 'delete', collection: 'webhooks', id }];
      default:
        return [];
    }
  },
};

/**
 * A bound on `attemptLog`: every redelivery brings a new budget of attempts, so the log has no
 * natural end, and a document past MongoDB's 16 MB limit would stop the projection for good.
 * The latest ATTEMPT_LOG_LIMIT attempts are kept (`attempts` counts them all), each error cut
 * to ERROR_LIMIT characters; the event store keeps every attempt whole.
 */
export const ATTEMPT_LOG_LIMIT = 200;
export const ERROR_LIMIT = 1000;

const clippedError = (text: string): string => (text.length > ERROR_LIMIT ? `${text.slice(0, ERROR_LIMIT - 1)}…` : text);

export const webhookDeliveriesProjection: Projection = {
  name: 'webhook_deliveries',
  filter: { streamPrefixes: ['webhookdelivery-'] },
  collections: [
    {
      name: 'webhook_deliveries',
      indexes: [
        { name: 'clientId_createdAt', keys: { clientId: 1, createdAt: -1 } },
        { name: 'status', keys: { status: 1 } },
      ],
    },
  ],
  apply(stored: StoredEvent): WriteOp[] {
    const event = stored as unknown as StoredEvent & DeliveryEvent;
    const at = stored.metadata.occurredAt;
    const id = event.data.deliveryId;
    const op = (update: Record<string, unknown>): WriteOp[] => [
      {
        kind: 'update',
        collection: 'webhook_deliveries',
        id,
        update: { ...update, $set: { ...(update.$set as object), updatedAt: at } },
      },
    ];
    switch (event.type) {
      case 'WebhookDeliveryScheduled': {
        const { clientId, eventType, sourceEventId } = event.data;
        return [
          {
            kind: 'replace',
            collection: 'webhook_deliveries',
            id,
            doc: { clientId, type: eventType, status: 'pending', attempts: 0, attemptLog: [], sourceEventId, createdAt: at, updatedAt: at },
          },
        ];
      }
      case 'WebhookDeliveryAttempted': {
        const { deliveryId: _d, ...attempt } = event.data;
        return op({
          $set: {
            attempts: attempt.attempt,
            lastAttemptAt: attempt.attemptedAt,
            ...(attempt.statusCode !== undefined ? { lastStatusCode: attempt.statusCode } : { lastError: attempt.error }),
          },
          $unset: attempt.statusCode !== undefined ? { lastError: '' } : { lastStatusCode: '' },
          $push: { attemptLog: { $each: [attempt.error === undefined ? attempt : { ...attempt, error: clippedError(attempt.error) }], $slice: -ATTEMPT_LOG_LIMIT } },
        });
      }
      case 'WebhookDeliveryAttemptStarted':
      case 'WebhookDeliveryLeaseRenewed':
        // For the dispatcher's sweep: a delivery no live worker holds is one not heard of for a lease.
        return op({ $set: { leaseUntil: event.data.leaseUntil } });
      case 'WebhookDeliveryLeaseReleased':
        return op({ $unset: { leaseUntil: '' } });
      case 'WebhookDelivered':
        // A finished delivery holds no lease (the log would show a stale one otherwise).
        return op({ $set: { status: 'delivered', deliveredAt: event.data.deliveredAt }, $unset: { nextAttemptAt: '', leaseUntil: '' } });
      case 'WebhookDeliveryRetryScheduled':
        return op({ $set: { status: 'retrying', nextAttemptAt: event.data.nextAttemptAt } });
      case 'WebhookDeliveryFailed':
        return op({ $set: { status: 'failed', failureReason: event.data.reason }, $unset: { nextAttemptAt: '', leaseUntil: '' } });
      case 'WebhookDeliveryExhausted':
        return op({ $set: { status: 'dead', failureReason: event.data.reason }, $unset: { nextAttemptAt: '', leaseUntil: '' } });
      case 'WebhookDeliveryDeadLettered':
        return op({ $set: { deadLetteredAt: at } });
      case 'WebhookRedeliveryRequested':
        return op({
          $set: { status: 'pending' },
          $unset: { nextAttemptAt: '', failureReason: '', deadLetteredAt: '' },
          $inc: { redeliveries: 1 },
        });
      default:
        return [];
    }
  },
};

export const commsEventsProjection: Projection = {
  name: 'comms_events',
  filter: { streamPrefixes: commsSourceStreamPrefixes, eventTypes: [...commsSourceEventTypes] },
  collections: [{ name: 'comms_events', indexes: [{ name: 'clientId_position', keys: { clientId: 1, position: 1 } }] }],
  apply(stored: StoredEvent): WriteOp[] {
    const event = commsEventOf(stored);
    if (!event) return [];
    const { id, ...doc } = event;
    return [{ kind: 'replace', collection: 'comms_events', id, doc: { ...doc, position: stored.position } }];
  },
};
