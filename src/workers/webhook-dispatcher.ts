import type { Bus, BusMessage, Consumer } from '../adapters/bus/port.js';
import type { EventStore, StoredEvent } from '../adapters/eventstore/port.js';
import { handleCommand } from '../commands/handle-command.js';
import type { Services } from '../commands/services.js';
import type { WebhookSettings } from '../commands/webhooks.js';
import { commsEventOf, deliveryDecider, deliveryStream, derivedId, nilGuid, webhookBody } from '../domain/webhook.js';
import type { WebhookDoc } from '../projections/webhooks.js';
import { eventOfMessage } from './event-message.js';
import { topics } from './topics.js';
import { workerConsumerRetry } from './consumer-retry.js';
import { DeliveryExecutor } from './webhook-executor.js';
import { WebhookSender } from './webhook-sender.js';
import type { Worker } from './worker.js';
import type { Metrics } from '../observability/metrics.js';

export const dispatcherGroup = 'webhook-dispatcher';

/**
 * The webhook dispatcher (spec: Events, Delivery behaviour): a consumer group on
 * `comms.events.v1` and `comms.webhook-redeliveries.v1`.
 *
 * For a comms event of an account with a webhook it records a delivery
 * (`webhookdelivery-<webhookId>`, ids derived from the source event, so a redelivered bus
 * message records nothing new) and hands it to the executor, which sends it off the
 * consumer's path. Accounts without a webhook are skipped; their events stay readable
 * through GET /comms/v1/api/comms/events.
 */
export class WebhookDispatcher implements Worker {
  readonly name = 'webhook-dispatcher';
  private consumer?: Consumer;
  private executor?: DeliveryExecutor;
  private sender?: WebhookSender;

  constructor(
    private readonly bus: Bus,
    private readonly services: Services,
    private readonly settings: WebhookSettings,
    private readonly metrics?: Pick<Metrics, 'countWebhookAttempt'>,
  ) {}

  async start(): Promise<void> {
    const logger = this.services.logger.child({ worker: this.name });
    if (!this.executor) {
      this.sender = new WebhookSender({ policy: this.settings.urlPolicy, resolver: this.settings.resolver, timeoutMs: this.settings.timeoutMs });
      this.executor = new DeliveryExecutor(this.services, this.bus, this.settings, this.sender, logger, this.metrics);
      await this.executor.resume();
    }
    this.consumer ??= await this.bus.consume(
      { groupId: dispatcherGroup, topics: [topics.commsEvents, topics.webhookRedeliveries], ...workerConsumerRetry },
      (message) => this.handle(message),
    );
  }

  async stop(): Promise<void> {
    await this.consumer?.close();
    await this.executor?.stop();
    this.sender?.close();
  }

  /** Deliveries queued or in flight in this process. */
  get backlog(): number {
    return this.executor?.backlog ?? 0;
  }

  private async handle(message: BusMessage): Promise<void> {
    const executor = this.executor!;
    // An event published without its data (too large for the bus) is read from the event store.
    const stored = await eventOfMessage(message, this.services.eventStore);
    if (message.topic === topics.webhookRedeliveries) {
      if (stored.type !== 'WebhookRedeliveryRequested') return;
      const { deliveryId, clientId } = stored.data as { deliveryId: string; clientId: string };
      executor.enqueue(deliveryId, clientId, Date.now());
      return;
    }
    const event = commsEventOf(await withErrorOpened(stored, this.services.eventStore));
    if (!event) return;
    // The webhook as of this event: the read models have caught up with it.
    await this.services.readYourWrites(stored.position);
    const webhook = await this.services.readStore.collection<WebhookDoc>('webhooks').get(event.clientId);
    if (!webhook) return;
    // Configured after the event (reached late: a lagging bus): the event happened with no webhook, or under one since deleted.
    if (webhook.configuredPosition !== undefined && webhook.configuredPosition > stored.position) return;
    const result = await handleCommand(
      this.services.eventStore,
      deliveryDecider,
      deliveryStream(event.id),
      {
        type: 'ScheduleDelivery',
        deliveryId: event.id,
        source: {
          clientId: event.clientId,
          eventType: event.type,
          body: webhookBody(event),
          // An error may quote the recipient: such a body is sealed with the guest's key.
          ...(event.data.error !== null && event.data.attendeeId !== nilGuid ? { attendeeId: event.data.attendeeId } : {}),
          sourceEventId: stored.id,
          sourceStream: stored.streamName,
          sourceRevision: stored.revision,
          ...(webhook.configurationId ? { webhookConfigurationId: webhook.configurationId } : {}),
        },
      },
      {
        tenantId: event.clientId,
        actor: { type: 'system', id: this.name },
        correlationId: stored.metadata.correlationId,
        causationId: stored.id,
        now: this.services.clock.now(),
      },
      { eventIds: (index) => derivedId('webhookdelivery', event.id, 'scheduled', String(index)) },
    );
    if (result.events.length > 0) {
      this.services.logger.info({ worker: this.name, deliveryId: event.id, eventType: event.type }, 'webhook delivery scheduled');
      executor.enqueue(event.id, event.clientId, Date.now());
    }
  }
}

export const createWebhookDispatcher = (
  bus: Bus,
  services: Services,
  settings: WebhookSettings,
  metrics?: Pick<Metrics, 'countWebhookAttempt'>,
): WebhookDispatcher => new WebhookDispatcher(bus, services, settings, metrics);

/**
 * The bus carries events sealed (docs/personal-data.md): a failure's `error` and a bounce's
 * `reason`, which may quote the recipient, are sealed with the guest's key. The comms events that
 * carry an error (comms.failed, comms.dropped: spec, data.error) take it from the event read back
 * from the event store, which opens it; the others need nothing sealed.
 */
async function withErrorOpened(stored: StoredEvent, eventStore: EventStore): Promise<StoredEvent> {
  const data = stored.data as Record<string, unknown> | undefined;
  const carriesError = stored.type === 'SendFailed' || (stored.type === 'ProviderEventReceived' && data?.event === 'dropped');
  if (!carriesError || data?.personalData === undefined) return stored;
  const [opened] = await eventStore.readStream(stored.streamName, { fromRevision: stored.revision, maxCount: 1 });
  return opened && opened.id === stored.id ? opened : stored;
}
