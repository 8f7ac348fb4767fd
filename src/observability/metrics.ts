/**
 * The service's Prometheus metrics (GET /metrics, docs/operations.md "Metrics"). One instance
 * per process, built by the composition root and handed to what records into it; each
 * instance has its own registry, so tests and several services in one process never mix.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from '../shared/logger.js';

/** Figures read from the stores and the bus at scrape time (src/observability/pipeline-lag.ts). */
export interface PipelineProbe {
  projections(): Promise<{ projection: string; events: number; seconds: number }[]>;
  relay(): Promise<{ events: number; seconds: number }>;
  consumers(): Promise<{ group: string; topic: string; messages: number }[]>;
  webhookDeliveries(): Promise<{ pending: number; deadLettered: number }>;
  /** Per source topic: messages held in `<topic>.dlq`, and replay marks in `<topic>.dlq.replayed` (src/commands/dead-letters.ts). */
  deadLetters(): Promise<{ topic: string; held: number; replayed: number }[]>;
}

export type SendOutcome = 'sent' | 'failed' | 'skipped' | 'attempt_failed';
const webhookAttemptOutcomes = ['delivered', 'failed', 'error'] as const;
export type WebhookAttemptOutcome = (typeof webhookAttemptOutcomes)[number];
/** The scrape-time reads, as `metrics_probe_failures_total` names them. */
const pipelineProbes = ['projections', 'relay', 'consumers', 'webhook_deliveries', 'dead_letters'] as const;

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly httpDuration: Histogram<'route' | 'method' | 'status'>;
  private readonly appendDuration: Histogram<'operation' | 'outcome'>;
  private readonly sends: Counter<'outcome' | 'code'>;
  private readonly webhookAttempts: Counter<'outcome'>;
  private readonly rateLimitRefusals: Counter;
  private readonly overloadRefusals: Counter;
  private readonly projectionLagEvents: Gauge<'projection'>;
  private readonly projectionLagSeconds: Gauge<'projection'>;
  private readonly relayLagEvents: Gauge;
  private readonly relayLagSeconds: Gauge;
  private readonly consumerLag: Gauge<'group' | 'topic'>;
  private readonly webhookPending: Gauge;
  private readonly sendsBlockedOnCredentials: Gauge;
  private readonly webhookDeadLettered: Gauge;
  private readonly busDeadLetters: Gauge<'topic'>;
  private readonly busDeadLettersReplayed: Gauge<'topic'>;
  private readonly probeFailures: Counter<'probe'>;
  private probe?: PipelineProbe;

  constructor(private readonly logger?: Logger) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route template, method and status',
      labelNames: ['route', 'method', 'status'],
      buckets: latencyBuckets,
      registers,
    });
    this.appendDuration = new Histogram({
      name: 'eventstore_append_duration_seconds',
      help: 'Event store append latency (append: one stream; appendMany: a batch) by outcome',
      labelNames: ['operation', 'outcome'],
      buckets: latencyBuckets,
      registers,
    });
    this.sends = new Counter({
      name: 'invitation_sends_total',
      help: 'Invitation email outcomes: sent, failed (final, by failure code), skipped (by reason), attempt_failed (retried, by code)',
      labelNames: ['outcome', 'code'],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts: delivered (2xx), failed (other status), error (no answer, refused URL)',
      labelNames: ['outcome'],
      registers,
    });
    this.rateLimitRefusals = new Counter({ name: 'rate_limit_refusals_total', help: 'Requests refused with 429 rate_limit', registers });
    this.overloadRefusals = new Counter({ name: 'overload_refusals_total', help: 'Requests refused with 503 overloaded (event-loop delay above the threshold)', registers });
    this.projectionLagEvents = new Gauge({ name: 'projection_lag_events', help: 'Events in the store a projection has not applied yet', labelNames: ['projection'], registers });
    this.projectionLagSeconds = new Gauge({ name: 'projection_lag_seconds', help: 'Age of the oldest event a projection has not applied yet (0 when caught up)', labelNames: ['projection'], registers });
    this.relayLagEvents = new Gauge({ name: 'relay_lag_events', help: 'Events in the store past the relay checkpoint (not all of them are published)', registers });
    this.relayLagSeconds = new Gauge({ name: 'relay_lag_seconds', help: 'Age of the oldest event past the relay checkpoint (0 when caught up)', registers });
    this.consumerLag = new Gauge({ name: 'bus_consumer_lag_messages', help: 'Messages published and not yet committed by a consumer group, per topic', labelNames: ['group', 'topic'], registers });
    this.sendsBlockedOnCredentials = new Gauge({
      name: 'invitation_sends_blocked_on_credentials',
      help: 'The email provider refused our credentials (SENDGRID_API_KEY, SMTP_URL) at its last answer: invitation sends are held (1) or not (0)',
      registers,
    });
    this.webhookPending = new Gauge({ name: 'webhook_deliveries_pending', help: 'Webhook deliveries waiting for an attempt (pending or retrying)', registers });
    this.webhookDeadLettered = new Gauge({ name: 'webhook_deliveries_dead_lettered', help: 'Webhook deliveries whose attempts ran out (dead letters)', registers });
    this.busDeadLetters = new Gauge({ name: 'bus_dead_letters', help: 'Messages held in <topic>.dlq (a consumer gave up on them), per source topic', labelNames: ['topic'], registers });
    this.busDeadLettersReplayed = new Gauge({ name: 'bus_dead_letters_replayed', help: 'Dead letters of the topic replayed by npm run admin -- dead-letters replay (marks held in <topic>.dlq.replayed)', labelNames: ['topic'], registers });
    this.probeFailures = new Counter({ name: 'metrics_probe_failures_total', help: 'Scrape-time reads of a store or the bus that failed (its gauges are left out)', labelNames: ['probe'], registers });
  }

  /** Reads pipeline lag and backlogs from the stores at each scrape. */
  watchPipeline(probe: PipelineProbe): void {
    this.probe = probe;
    for (const name of pipelineProbes) this.probeFailures.inc({ probe: name }, 0);
  }

  /**
   * This process runs the workers: their counters' known series start at 0, so `rate()` and
   * `increase()` see the first send or attempt (a series born at 1 shows no increase).
   */
  countsWorkers(): void {
    for (const outcome of webhookAttemptOutcomes) this.webhookAttempts.inc({ outcome }, 0);
    this.sends.inc({ outcome: 'sent', code: '' }, 0);
    this.sendsBlockedOnCredentials.set(0);
  }

  observeHttp(route: string, method: string, status: number, seconds: number): void {
    this.httpDuration.observe({ route, method, status: String(status) }, seconds);
    if (status === 429) this.rateLimitRefusals.inc();
  }

  observeAppend(operation: 'append' | 'appendMany', outcome: 'ok' | 'conflict' | 'error', seconds: number): void {
    this.appendDuration.observe({ operation, outcome }, seconds);
  }

  countSend(outcome: SendOutcome, code = ''): void {
    this.sends.inc({ outcome, code });
  }

  /** The send worker's hold on refused provider credentials began (true) or ended (false). */
  setSendsBlockedOnCredentials(blocked: boolean): void {
    this.sendsBlockedOnCredentials.set(blocked ? 1 : 0);
  }

  countWebhookAttempt(outcome: WebhookAttemptOutcome): void {
    this.webhookAttempts.inc({ outcome });
  }

  countOverloadRefusal(): void {
    this.overloadRefusals.inc();
  }

  /** The Prometheus text exposition, pipeline gauges refreshed first. */
  async render(): Promise<string> {
    await this.refreshPipeline();
    return this.registry.metrics();
  }

  private async refreshPipeline(): Promise<void> {
    const probe = this.probe;
    if (!probe) return;
    await Promise.all([
      this.read('projections', () => probe.projections(), (rows) => {
        this.projectionLagEvents.reset();
        this.projectionLagSeconds.reset();
        for (const row of rows) {
          this.projectionLagEvents.set({ projection: row.projection }, row.events);
          this.projectionLagSeconds.set({ projection: row.projection }, row.seconds);
        }
      }, () => {
        this.projectionLagEvents.reset();
        this.projectionLagSeconds.reset();
      }),
      this.read('relay', () => probe.relay(), (lag) => {
        this.relayLagEvents.set(lag.events);
        this.relayLagSeconds.set(lag.seconds);
      }, () => {
        this.relayLagEvents.set(Number.NaN);
        this.relayLagSeconds.set(Number.NaN);
      }),
      this.read('consumers', () => probe.consumers(), (rows) => {
        this.consumerLag.reset();
        for (const row of rows) this.consumerLag.set({ group: row.group, topic: row.topic }, row.messages);
      }, () => this.consumerLag.reset()),
      this.read('dead_letters', () => probe.deadLetters(), (rows) => {
        this.busDeadLetters.reset();
        this.busDeadLettersReplayed.reset();
        for (const row of rows) {
          this.busDeadLetters.set({ topic: row.topic }, row.held);
          this.busDeadLettersReplayed.set({ topic: row.topic }, row.replayed);
        }
      }, () => {
        this.busDeadLetters.reset();
        this.busDeadLettersReplayed.reset();
      }),
      this.read('webhook_deliveries', () => probe.webhookDeliveries(), (counts) => {
        this.webhookPending.set(counts.pending);
        this.webhookDeadLettered.set(counts.deadLettered);
      }, () => {
        this.webhookPending.set(Number.NaN);
        this.webhookDeadLettered.set(Number.NaN);
      }),
    ]);
  }

  /** One probe: its gauges are set, or cleared for this scrape (NaN, or no series): a stale or zero figure would mislead. */
  private async read<T>(name: (typeof pipelineProbes)[number], get: () => Promise<T>, set: (value: T) => void, clear: () => void): Promise<void> {
    try {
      set(await get());
    } catch (error) {
      clear();
      this.probeFailures.inc({ probe: name });
      this.logger?.warn({ err: error, probe: name }, 'metrics: a pipeline probe failed; its gauges read NaN or are left out of this scrape');
    }
  }
}
