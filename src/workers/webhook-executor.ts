import { setMaxListeners } from 'node:events';
import { deadLetterTopic, fitMessage, type Bus } from '../adapters/bus/port.js';
import { handleCommand, type CommandContext } from '../commands/handle-command.js';
import type { Services } from '../commands/services.js';
import { secretContext, type WebhookSettings } from '../commands/webhooks.js';
import {
  deliveryDecider,
  deliveryStream,
  derivedId,
  isActive,
  verdictOf,
  type AttemptOutcome,
  type DeliveryCommand,
  type DeliveryState,
} from '../domain/webhook.js';
import { webhookDeliveriesProjection, type DeliveryDoc, type WebhookDoc } from '../projections/webhooks.js';
import { decrypt } from '../shared/encryption.js';
import type { Logger } from '../shared/logger.js';
import { toMessage } from './event-message.js';
import { topics } from './topics.js';
import { FairQueue } from './fair-queue.js';
import { readModelCatchesUp } from './read-model-wait.js';
import type { WebhookSender } from './webhook-sender.js';
import type { Metrics } from '../observability/metrics.js';
import { runInCarriedTrace } from '../observability/trace.js';

/**
 * Makes delivery attempts, off the bus consumer's path: the consumer only records that a
 * delivery exists and hands it here, so a slow or dead receiver never holds a partition.
 *
 * - Attempts run concurrently, at most `concurrency` in all and `perAccountConcurrency` per
 *   account; accounts take turns (round robin), so one account's backlog or hanging receiver
 *   delays only that account.
 * - Every attempt is recorded in the delivery's stream; the decider says retry (with its
 *   backoff), stop, or done. The queue is memory only: after a restart `resume()` rebuilds it
 *   from the `webhook_deliveries` read model (pending and retrying deliveries).
 * - A delivery whose attempts ran out is published to `comms.events.v1.dlq` (the source comms
 *   event, as the relay published it, plus `x-dlq-*` and `x-webhook-id` headers), then marked
 *   dead-lettered; one that died but was not yet published is published on resume.
 */
export class DeliveryExecutor {
  private readonly queue: FairQueue;
  private readonly abort = new AbortController();
  private sweeper?: NodeJS.Timeout;
  private sweeping = false;

  constructor(
    private readonly services: Services,
    private readonly bus: Bus,
    private readonly settings: WebhookSettings,
    private readonly sender: WebhookSender,
    private readonly logger: Logger,
    private readonly metrics?: Pick<Metrics, 'countWebhookAttempt'>,
  ) {
    // Every attempt in flight listens on this one signal.
    setMaxListeners(0, this.abort.signal);
    this.queue = new FairQueue({
      concurrency: settings.concurrency,
      perAccountConcurrency: settings.perAccountConcurrency,
      run: (deliveryId) => this.attemptInTrace(deliveryId),
      logger,
      what: 'webhook attempt (recording it)',
    });
  }

  /** Re-queues what a previous run left: pending and retrying deliveries, and unpublished dead letters. */
  async resume(): Promise<void> {
    const { readStore } = this.services;
    await readModelCatchesUp(this.services, webhookDeliveriesProjection, { logger: this.logger, isStopped: () => this.queue.isStopped });
    const deliveries = readStore.collection<DeliveryDoc>('webhook_deliveries');
    let resumed = 0;
    for await (const doc of deliveries.stream({ status: { $in: ['pending', 'retrying'] } })) {
      this.enqueue(doc._id, doc.clientId, doc.nextAttemptAt ? Date.parse(doc.nextAttemptAt) : Date.now());
      resumed += 1;
    }
    for await (const doc of deliveries.stream({ status: 'dead', deadLetteredAt: { $exists: false } })) {
      await this.deadLetter(doc._id, doc.clientId, doc.failureReason ?? 'attempts exhausted');
    }
    if (resumed > 0) this.logger.info({ resumed }, 'webhook deliveries resumed');
    if (this.settings.sweepMs && !this.sweeper) {
      this.sweeper = setInterval(() => void this.sweep(), this.settings.sweepMs);
      this.sweeper.unref();
    }
  }

  /**
   * Takes over deliveries no live worker holds (another worker process was killed with them
   * queued or mid-attempt): pending or retrying ones not heard of for a lease. The delivery's
   * stream decides who makes the attempt (StartAttempt, a lease), so two dispatchers that both
   * queue it make it once.
   */
  private async sweep(): Promise<void> {
    if (this.queue.isStopped || this.sweeping) return;
    this.sweeping = true;
    try {
      const now = Date.now();
      const staleBefore = new Date(now - (this.settings.leaseMs ?? 10_000)).toISOString();
      const deliveries = this.services.readStore.collection<DeliveryDoc>('webhook_deliveries');
      for await (const doc of deliveries.stream({ status: { $in: ['pending', 'retrying'] } })) {
        if (this.queue.isStopped) return;
        if (doc.updatedAt > staleBefore) continue;
        if (doc.leaseUntil && Date.parse(doc.leaseUntil) > now) continue;
        this.enqueue(doc._id, doc.clientId, doc.nextAttemptAt ? Math.max(now, Date.parse(doc.nextAttemptAt)) : now);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'sweep for orphaned webhook deliveries failed; it runs again');
    } finally {
      this.sweeping = false;
    }
  }

  /** Attempt this delivery at `dueAt` (epoch ms), unless an earlier attempt is already queued. */
  enqueue(deliveryId: string, clientId: string, dueAt: number): void {
    this.queue.enqueue(deliveryId, clientId, dueAt);
  }

  /** Stops at once: attempts in flight are abandoned unrecorded and resumed by the next run. */
  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    this.abort.abort();
    await this.queue.stop();
  }

  /** Deliveries queued or in flight (for tests and the benchmark). */
  get backlog(): number {
    return this.queue.backlog;
  }

  /** An attempt takes up the trace of what caused the delivery (kept in the delivery's first event). */
  private async attemptInTrace(deliveryId: string): Promise<void> {
    const [first] = await this.services.eventStore.readStream(deliveryStream(deliveryId), { maxCount: 1 });
    await runInCarriedTrace(first?.metadata, () => this.attempt(deliveryId));
  }

  /** One attempt: the current URL and secret, one signed POST, the verdict recorded. */
  private async attempt(deliveryId: string): Promise<void> {
    const { eventStore, readStore, clock } = this.services;
    const stream = deliveryStream(deliveryId);
    let state: DeliveryState = deliveryDecider.initialState();
    for (const event of await eventStore.readStream(stream)) state = deliveryDecider.evolve(state, event as never);
    if (!isActive(state)) return;
    const leaseMs = this.settings.leaseMs ?? 10_000;
    // Due later, or held by another worker: come back then (the queue may hold an early copy).
    const heldUntil = state.lease ? Date.parse(state.lease.until) : 0;
    const dueAt = Math.max(state.nextAttemptAt ? Date.parse(state.nextAttemptAt) : 0, heldUntil);
    if (dueAt > clock.now().getTime()) {
      this.enqueue(deliveryId, state.clientId, dueAt + 1);
      return;
    }
    // Take the attempt: of two workers, the stream lets one (optimistic concurrency).
    const taken = await this.decide(state.clientId, deliveryId, { type: 'StartAttempt', deliveryId, at: clock.now().toISOString(), leaseMs });
    const started = taken.events.find((e) => e.type === 'WebhookDeliveryAttemptStarted');
    if (!started || started.type !== 'WebhookDeliveryAttemptStarted') return;
    const heartbeat = setInterval(() => {
      void this.decide(state.clientId, deliveryId, { type: 'RenewAttemptLease', deliveryId, attempt: started.data.attempt, at: clock.now().toISOString(), leaseMs }).catch(
        (error: unknown) => this.logger.warn({ err: error, deliveryId }, 'webhook lease not renewed; retrying at the next beat'),
      );
    }, Math.max(100, Math.floor(leaseMs / 3)));
    heartbeat.unref();
    try {
      await this.attemptHeld(deliveryId, state);
    } finally {
      clearInterval(heartbeat);
    }
    // Stopped mid-attempt (a shutdown): hand the lease back, so the next worker need not wait it out.
    if (this.queue.isStopped) {
      await this.decide(state.clientId, deliveryId, { type: 'ReleaseAttemptLease', deliveryId, attempt: started.data.attempt }).catch(
        (error: unknown) => this.logger.warn({ err: error, deliveryId }, 'webhook lease not handed back; it runs out by itself'),
      );
    }
  }

  private async attemptHeld(deliveryId: string, state: Exclude<DeliveryState, { status: 'none' }>): Promise<void> {
    const { readStore, clock } = this.services;

    // Read at each attempt: a rotation or URL change applies to the very next attempt.
    const webhook = await readStore.collection<WebhookDoc>('webhooks').get(state.clientId);
    const at = clock.now();
    const started = performance.now();
    let outcome: AttemptOutcome;
    // Deleted, or deleted and configured again (maybe for another receiver): deliveries for the old one stop.
    const replaced = state.webhookConfigurationId !== undefined && webhook?.configurationId !== state.webhookConfigurationId;
    if (!webhook || replaced) {
      outcome = { kind: 'error', error: 'the webhook was deleted', retryable: false };
    } else if (typeof state.body !== 'string') {
      // A body that quoted the recipient is sealed with the guest's key; the guest was erased since (docs/personal-data.md).
      outcome = { kind: 'error', error: "the guest's personal data was erased: this comms event is not sent again", retryable: false };
    } else {
      let secret: string | undefined;
      try {
        secret = decrypt(this.settings.keyring, { ciphertext: webhook.encryptedSecret, keyId: webhook.keyId }, secretContext(state.clientId));
      } catch (error) {
        // A missing or wrong key is an operator's fix away: keep retrying.
        outcome = { kind: 'error', error: `cannot decrypt the webhook secret: ${(error as Error).message}`, retryable: true };
      }
      if (secret !== undefined) {
        outcome = await this.sender.send(
          {
            url: webhook.url,
            body: state.body,
            secret,
            webhookId: deliveryId,
            eventType: state.eventType,
            unixTime: Math.floor(at.getTime() / 1000),
          },
          this.abort.signal,
        );
        if (verdictOf(outcome) === 'final') {
          // A final failure from a configuration the integrator changed while the request was on its way
          // (the old URL, or a receiver already holding the new secret) is the old one's: try the new one.
          const now = await readStore.collection<WebhookDoc>('webhooks').get(state.clientId);
          if (now && now.configurationId === webhook.configurationId) {
            if (now.url !== webhook.url) {
              outcome = outcome.kind === 'response' ? { ...outcome, urlChanged: true } : { ...outcome, retryable: true };
            } else if (outcome.kind === 'response' && outcome.statusCode === 401 && now.secretRotatedAt !== webhook.secretRotatedAt) {
              outcome = { ...outcome, secretRotated: true };
            }
          }
        }
      }
    }
    if (this.queue.isStopped) return;

    const attempt = state.attempts + 1;
    const verdict = outcome!.kind === 'error' ? 'error' : outcome!.statusCode >= 200 && outcome!.statusCode < 300 ? 'delivered' : 'failed';
    this.metrics?.countWebhookAttempt(verdict);
    this.logger.info(
      {
        deliveryId,
        eventType: state.eventType,
        attempt,
        outcome: verdict,
        ...(outcome!.kind === 'response' ? { statusCode: outcome!.statusCode } : { error: outcome!.error }),
        durationMs: Math.round(performance.now() - started),
      },
      'webhook attempt',
    );
    const result = await this.decide(state.clientId, deliveryId, {
      type: 'RecordAttempt',
      deliveryId,
      attempt,
      at: at.toISOString(),
      url: webhook?.url ?? '',
      durationMs: Math.round(performance.now() - started),
      outcome: outcome!,
      retryDelaysMs: this.settings.retryDelaysMs,
      jitter: Math.random(),
    }, `attempt-${attempt}`);
    const next = result.state;
    if (next.status === 'retrying' && next.nextAttemptAt) {
      this.enqueue(deliveryId, next.clientId, Date.parse(next.nextAttemptAt));
    } else if (next.status === 'dead') {
      const exhausted = result.events.find((e) => e.type === 'WebhookDeliveryExhausted');
      await this.deadLetter(deliveryId, next.clientId, exhausted?.type === 'WebhookDeliveryExhausted' ? exhausted.data.reason : 'attempts exhausted');
    }
  }

  /** Publishes a dead delivery's source comms event to the dead-letter topic, then records that it did. */
  private async deadLetter(deliveryId: string, clientId: string, reason: string): Promise<void> {
    const { eventStore } = this.services;
    let state: DeliveryState = deliveryDecider.initialState();
    for (const event of await eventStore.readStream(deliveryStream(deliveryId))) state = deliveryDecider.evolve(state, event as never);
    if (state.status !== 'dead' || state.deadLettered) return;
    const topic = deadLetterTopic(topics.commsEvents);
    // As the relay published it: personal fields sealed (a dead-letter topic is read by operators, and kept by the broker).
    const stored = this.services.storedEvents ?? eventStore;
    const [source] = await stored.readStream(state.sourceStream, { fromRevision: state.sourceRevision, maxCount: 1 });
    const dlqHeaders = {
      'x-dlq-error': reason,
      'x-dlq-attempts': String(state.attempts - state.budgetStart),
      'x-dlq-source-topic': topics.commsEvents,
      'x-webhook-id': deliveryId,
    };
    // Within the bus's size limit (the event without its data, or an empty value), so a dead letter never stalls.
    const maxBytes = this.bus.maxMessageBytes;
    // Without its source event, the delivery's own WebhookDeliveryScheduled as stored: a body that
    // may quote the recipient (comms.failed, comms.dropped) is sealed there, and `state.body` is
    // opened; only a body that was never sealed (it holds no personal data) goes as it is.
    const [scheduled] = source ? [] : await stored.readStream(deliveryStream(deliveryId), { maxCount: 1 });
    const sealed = scheduled !== undefined && typeof (scheduled.data as { body?: unknown }).body !== 'string';
    const message = source
      ? toMessage(source, { maxBytes, headers: dlqHeaders })
      : sealed
        ? toMessage(scheduled, { maxBytes, headers: dlqHeaders })
        : fitMessage({ key: state.sourceStream, value: typeof state.body === 'string' ? state.body : '', headers: dlqHeaders }, maxBytes);
    await this.bus.publish(topic, [message]);
    await this.decide(clientId, deliveryId, { type: 'MarkDeadLettered', deliveryId, topic }, `dead-lettered-${state.attempts}`);
    this.logger.warn({ deliveryId, clientId, reason }, 'webhook delivery dead-lettered');
  }

  /**
   * Runs a delivery command; its event ids come from the delivery and `step`, so a repeat appends
   * nothing. Without `step` (taking and renewing a lease) they are random: two workers racing for
   * one attempt must not write the same id, or both would think they took it.
   */
  private decide(clientId: string, deliveryId: string, command: DeliveryCommand, step?: string) {
    const context: CommandContext = {
      tenantId: clientId,
      actor: { type: 'system', id: 'webhook-dispatcher' },
      correlationId: deliveryId,
      now: this.services.clock.now(),
    };
    return handleCommand(
      this.services.eventStore,
      deliveryDecider,
      deliveryStream(deliveryId),
      command,
      context,
      step === undefined ? {} : { eventIds: (index) => derivedId('webhookdelivery', deliveryId, step, String(index)) },
    );
  }
}
