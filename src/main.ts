/**
 * Composition root: the only place that reads configuration and knows which adapter runs.
 * `npm start` runs every role in one process; `node dist/src/main.js <role>` runs one.
 */
import { answerClientErrors } from './http/client-errors.js';
import path from 'node:path';
import type { Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import type { Bus } from './adapters/bus/port.js';
import type { EventStore } from './adapters/eventstore/port.js';
import type { ReadStore } from './adapters/readstore/port.js';
import { SqliteEventStore } from './adapters/eventstore/sqlite.js';
import { EsdbEventStore } from './adapters/eventstore/esdb.js';
import { EmbeddedReadStore } from './adapters/readstore/embedded.js';
import { MongoReadStore } from './adapters/readstore/mongo.js';
import { EmbeddedBus } from './adapters/bus/embedded.js';
import { KafkaBus } from './adapters/bus/kafka.js';
import type { Services } from './commands/services.js';
import { loadConfig, roles, type Config, type Role } from './config.js';
import { createApp, type Readiness } from './http/app.js';
import { authenticate } from './http/auth.js';
import { createRateLimits, type RateLimitStore } from './http/middleware/rate-limit.js';
import { purgeExpiredIdempotencyKeys } from './http/middleware/idempotency.js';
import { openSqliteFile } from './adapters/sqlite-file.js';
import { MongoClient } from 'mongodb';
import { accountCredentials } from './commands/credentials.js';
import { createDevIdentityProvider } from './identity/dev-provider.js';
import { createTokenVerifier } from './identity/token-verifier.js';
import { accountsProjection, teamMembersProjection } from './projections/accounts.js';
import { eventsProjection } from './projections/events.js';
import { guestsProjection } from './projections/guests.js';
import { commsEventsProjection, webhookDeliveriesProjection, webhooksProjection } from './projections/webhooks.js';
import { templatesProjection } from './projections/templates.js';
import { invitationsProjection } from './projections/invitations.js';
import type { Mailer } from './adapters/mailer/port.js';
import { OutboxMailer } from './adapters/mailer/outbox.js';
import { SendGridMailer } from './adapters/mailer/sendgrid.js';
import { SmtpMailer } from './adapters/mailer/smtp.js';
import { SendWorker } from './workers/send-worker.js';
import { createPdfRenderer } from './comms/pdf-pool.js';
import { availableParallelism } from 'node:os';
import type { DomainAuthenticator } from './adapters/domains/port.js';
import { SendGridDomainAuthenticator } from './adapters/domains/sendgrid.js';
import { EmbeddedDomainAuthenticator } from './adapters/domains/embedded.js';
import { sendingDomainsProjection } from './projections/sending-domains.js';
import { timelineProjection } from './projections/timeline.js';
import { funnelProjection } from './projections/funnel.js';
import { webhookSettings } from './commands/webhooks.js';
import { exportSettings, sweepExpiredExports } from './commands/export.js';
import { createWebhookDispatcher } from './workers/webhook-dispatcher.js';
import { ProjectionRunner } from './projections/runner.js';
import type { Projection } from './projections/projection.js';
import { systemClock, type Clock } from './shared/clock.js';
import { createLogger, type Logger } from './shared/logger.js';
import { Relay } from './workers/relay.js';
import { relayRoutes } from './workers/topics.js';
import type { Worker } from './workers/worker.js';
import { backoffMs, sleep } from './shared/backoff.js';
import { Metrics } from './observability/metrics.js';
import { observedEventStore } from './observability/observed-event-store.js';
import { pipelineProbe } from './observability/pipeline-lag.js';
import { OverloadGuard } from './http/middleware/overload.js';
import { startMetricsServer } from './observability/metrics-server.js';
import { relayCheckpoint } from './workers/relay.js';
import { sendWorkerGroup } from './workers/send-worker.js';
import { dispatcherGroup } from './workers/webhook-dispatcher.js';
import { topics } from './workers/topics.js';

export const projections: Projection[] = [
  eventsProjection,
  accountsProjection,
  teamMembersProjection,
  guestsProjection,
  webhooksProjection,
  webhookDeliveriesProjection,
  commsEventsProjection,
  templatesProjection,
  invitationsProjection,
  sendingDomainsProjection,
  timelineProjection,
  funnelProjection,
];

export interface Platform {
  config: Config;
  logger: Logger;
  eventStore: EventStore;
  readStore: ReadStore;
  bus: Bus;
  close(): Promise<void>;
}

/** Picks each port's adapter: a configured URL means the real server, else the embedded default. */
export function createPlatform(config: Config, logger: Logger = createLogger(config.logLevel), metrics?: Metrics): Platform {
  const file = (name: string) => path.join(config.dataDir, name);
  // Appends are timed, stamped with the current trace and logged (src/observability/observed-event-store.ts).
  const eventStore = observedEventStore(
    config.eventStoreUrl
      ? new EsdbEventStore(config.eventStoreUrl)
      : new SqliteEventStore(file('events.sqlite'), { synchronous: config.sqliteSynchronous }),
    { logger, ...(metrics ? { metrics } : {}) },
  );
  const readStore = config.mongoUrl
    ? new MongoReadStore({ url: config.mongoUrl, dbName: config.mongoDb })
    : new EmbeddedReadStore(file('read-models.sqlite'));
  const bus = config.kafkaBrokers
    ? new KafkaBus({ brokers: config.kafkaBrokers, clientId: 'checkin-service', logger: logger.child({ adapter: 'kafka' }) })
    : new EmbeddedBus(file('bus.sqlite'), { logger: logger.child({ adapter: 'embedded-bus' }) });
  logger.info(
    { eventStore: eventStore.kind, readStore: readStore.kind, bus: bus.kind, dataDir: config.dataDir },
    'adapters chosen',
  );
  return {
    config,
    logger,
    eventStore,
    readStore,
    bus,
    close: async () => {
      await Promise.allSettled([bus.close(), readStore.close(), eventStore.close()]);
    },
  };
}

export interface RunningService {
  platform: Platform;
  runner?: ProjectionRunner;
  relay?: Relay;
  workers: Worker[];
  server?: Server;
  services: Services;
  /** This process's metrics (served at GET /metrics by the api role). */
  metrics: Metrics;
  /** Base URL of the HTTP server when the api role runs. */
  url?: string;
  stop(): Promise<void>;
}

export async function startService(
  config: Config,
  role: Role = 'all',
  options: { clock?: Clock; logger?: Logger } = {},
): Promise<RunningService> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = new Metrics(logger);
  const platform = createPlatform(config, logger, metrics);
  metrics.watchPipeline(
    pipelineProbe({
      eventStore: platform.eventStore,
      readStore: platform.readStore,
      bus: platform.bus,
      projections: projections.map((p) => p.name),
      relayCheckpoint,
      consumers: [
        { group: sendWorkerGroup, topics: [topics.invitations] },
        { group: dispatcherGroup, topics: [topics.commsEvents, topics.webhookRedeliveries] },
      ],
      webhookDeliveries: 'webhook_deliveries',
    }),
  );
  const runs = (r: Role) => role === 'all' || role === r;

  const runner = runs('projections')
    ? new ProjectionRunner(platform.eventStore, platform.readStore, projections, logger.child({ role: 'projections' }))
    : undefined;
  const relay = runs('relay')
    ? new Relay(platform.eventStore, platform.bus, platform.readStore, relayRoutes, logger.child({ role: 'relay' }))
    : undefined;

  const services: Services = {
    eventStore: platform.eventStore,
    readStore: platform.readStore,
    clock: options.clock ?? systemClock,
    logger,
    readYourWrites: async (position) => {
      if (position < 0) return;
      if (runner) await runner.waitFor(position, config.readYourWritesTimeoutMs);
      else await pollCheckpoints(platform.readStore, position, config.readYourWritesTimeoutMs);
    },
  };

  const workers: Worker[] = runs('workers') ? createWorkers(platform, services, config, metrics) : [];

  // A real server that is down at start must not stop the process: retry in the background.
  if (runner) void retryForever('projections', () => runner.start(), logger);
  if (relay) void retryForever('relay', () => relay.start(), logger);
  for (const worker of workers) void retryForever(worker.name, () => worker.start(), logger);

  const closers: (() => Promise<void>)[] = [];
  const api = runs('api') ? await startApi(config, platform, services, runner, closers, metrics) : undefined;
  const server = api?.server;
  const url = api?.url;
  if (url) logger.info({ url, role }, 'listening');
  const { metricsPort, metricsToken } = config.observability;
  if (!api && metricsPort !== undefined) {
    const scrape = await startMetricsServer({ metrics, port: metricsPort, host: config.host, ...(metricsToken ? { token: metricsToken } : {}) });
    closers.push(() => new Promise<void>((resolve) => scrape.server.close(() => resolve())));
    logger.info({ url: `${scrape.url}/metrics`, role }, 'metrics listening');
  }

  return {
    platform,
    runner,
    relay,
    workers,
    server,
    services,
    metrics,
    url,
    stop: async () => {
      const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server?.closeAllConnections();
      await closed;
      await Promise.allSettled(workers.map((w) => w.stop()));
      await relay?.stop();
      await runner?.stop();
      await Promise.allSettled(closers.map((close) => close()));
      await platform.close();
    },
  };
}

/** The `workers` role: bus consumers and schedulers. */
function createWorkers(platform: Platform, services: Services, config: Config, metrics: Metrics): Worker[] {
  const { comms } = config;
  const mailer = createMailer(config, services.logger);
  const sends = new SendWorker(platform.bus, services, {
    mailer,
    pdf: createPdfRenderer({ threads: Math.max(1, availableParallelism() - 1) }),
    linkPolicy: { blockedDomains: comms.blockedLinkDomains },
    sender: { address: comms.sendingAddress, ...(comms.senderName ? { name: comms.senderName } : {}) },
    retryDelaysMs: comms.sendRetryDelaysMs,
    concurrency: comms.sendConcurrency,
    attemptLeaseMs: 120_000,
    metrics,
  });
  return [createWebhookDispatcher(platform.bus, services, webhookSettings(config), metrics), sends];
}

/** The domain-authentication port's adapter: SendGrid when its key is set, else records checked by DNS lookups. */
function createDomainAuthenticator(config: Config): DomainAuthenticator {
  const { sendgridApiKey, sendgridBaseUrl } = config.comms;
  return sendgridApiKey
    ? new SendGridDomainAuthenticator({ apiKey: sendgridApiKey, ...(sendgridBaseUrl ? { baseUrl: sendgridBaseUrl } : {}) })
    : new EmbeddedDomainAuthenticator();
}

/** The mailer port's adapter: SendGrid when its key is set, else SMTP when its URL is, else the outbox folder. */
export function createMailer(config: Config, logger: Logger): Mailer {
  const { comms } = config;
  const mailer: Mailer = comms.sendgridApiKey
    ? new SendGridMailer({ apiKey: comms.sendgridApiKey, ...(comms.sendgridBaseUrl ? { baseUrl: comms.sendgridBaseUrl } : {}) })
    : comms.smtpUrl
      ? new SmtpMailer(comms.smtpUrl)
      : new OutboxMailer(comms.outboxDir);
  logger.info({ mailer: mailer.kind, ...(mailer.kind === 'outbox' ? { outboxDir: comms.outboxDir } : {}) }, 'mailer chosen');
  return mailer;
}

/** The HTTP side: identity (dev provider or external issuer), the app, periodic clean-ups, the listener. */
async function startApi(
  config: Config,
  platform: Platform,
  services: Services,
  runner: ProjectionRunner | undefined,
  closers: (() => Promise<void>)[],
  metrics: Metrics,
): Promise<{ server: Server; url: string }> {
  // The issuer URL of the dev provider depends on the port actually bound (0 = ephemeral).
  let devIssuer = '';
  const issuer = () => config.oidcIssuer ?? devIssuer;
  const verifier = createTokenVerifier({
    issuer,
    ...(config.oidcAudience ? { audience: config.oidcAudience } : {}),
    allowInsecureIssuer: !config.oidcIssuer,
  });
  const overload = new OverloadGuard({
    maxEventLoopDelayMs: config.observability.overloadMaxEventLoopDelayMs,
    retryAfterSeconds: config.observability.overloadRetryAfterSeconds,
    minInFlight: config.observability.overloadMinInFlight,
    metrics,
    logger: services.logger,
  });
  closers.push(async () => overload.close());
  const app = createApp({
    services,
    metrics: { registry: metrics, ...(config.observability.metricsToken ? { token: config.observability.metricsToken } : {}) },
    overload: overload.middleware(),
    readiness: () => readiness(platform, runner),
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    authenticate: authenticate(verifier, services),
    identityProvider: config.oidcIssuer
      ? undefined
      : createDevIdentityProvider({
          issuer,
          keyFile: path.join(config.dataDir, 'identity', 'signing-key.json'),
          credentials: accountCredentials(services),
          tokenTtlSeconds: config.tokenTtlSeconds,
          ...(config.oidcAudience ? { audience: config.oidcAudience } : {}),
        }),
    adminApiKey: config.adminApiKey,
    webhooks: webhookSettings(config),
    exports: exportSettings(config),
    comms: {
      linkPolicy: { blockedDomains: config.comms.blockedLinkDomains },
      domains: createDomainAuthenticator(config),
      ...(config.comms.sendgridEventPublicKey ? { sendgridEventPublicKey: config.comms.sendgridEventPublicKey } : {}),
    },
    rateLimits: createRateLimits({
      perMinute: config.rateLimitPerMinute,
      sendPerMinute: config.sendRateLimitPerMinute,
      store: rateLimitStore(config, closers),
      logger: services.logger,
    }),
  });
  // The read-store port has no TTL index: expired Idempotency-Key records are purged hourly,
  // expired guest exports (files and records) every minute.
  every(3_600_000, 'idempotency key purge', () => purgeExpiredIdempotencyKeys(platform.readStore), closers, services.logger);
  every(60_000, 'export sweep', () => sweepExpiredExports(services, exportSettings(config)), closers, services.logger);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    answerClientErrors(s);
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host}:${port}`;
  devIssuer = `${config.publicUrl ?? url}/core`;
  return { server, url };
}

/** A periodic clean-up that never keeps the process alive and stops with the service. */
function every(
  ms: number,
  name: string,
  job: () => Promise<unknown>,
  closers: (() => Promise<void>)[],
  logger: Logger,
): void {
  const timer = setInterval(() => void job().catch((error: unknown) => logger.warn({ err: error, job: name }, 'periodic job failed; it runs again later')), ms);
  timer.unref();
  closers.push(async () => clearInterval(timer));
}

/**
 * Rate-limit counters shared by every instance: MongoDB when configured, else a SQLite file
 * of their own (a short busy timeout: better-sqlite3 waits synchronously, and on timeout the
 * limiter's in-memory insurance takes over).
 */
function rateLimitStore(config: Config, closers: (() => Promise<void>)[]): RateLimitStore {
  if (config.rateLimitPerMinute === 0 && config.sendRateLimitPerMinute === 0) return { kind: 'memory' };
  if (config.mongoUrl) {
    const client = new MongoClient(config.mongoUrl);
    closers.push(() => client.close());
    return { kind: 'mongo', client, dbName: config.mongoDb };
  }
  const db = openSqliteFile(path.join(config.dataDir, 'rate-limits.sqlite'), 'rate limit store', 'NORMAL');
  db.pragma('busy_timeout = 100');
  closers.push(async () => void db.close());
  return { kind: 'sqlite', db };
}

async function retryForever(what: string, start: () => Promise<void>, logger: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      if (attempt > 1) logger.info({ what, attempt }, 'started after retries');
      return;
    } catch (error) {
      const delay = backoffMs(attempt, 500);
      logger.error({ err: error, what, attempt, retryInMs: delay }, 'could not start; is its server up? retrying');
      await sleep(delay);
    }
  }
}

/** Read-your-writes when the projections run in another process: poll their checkpoints. */
async function pollCheckpoints(readStore: ReadStore, position: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const positions = await Promise.all(projections.map((p) => readStore.getCheckpoint(`projection:${p.name}`)));
    if (positions.every((p) => (p ?? -1) >= position)) return;
    await sleep(20);
  }
}

async function readiness(platform: Platform, runner?: ProjectionRunner): Promise<Readiness> {
  const check = async (probe: () => Promise<void>) => {
    try {
      await withTimeout(probe(), 2000);
      return { ok: true };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
  };
  const [eventStore, readStore, bus] = await Promise.all([
    check(() => platform.eventStore.ping()),
    check(() => platform.readStore.ping()),
    check(() => platform.bus.ping()),
  ]);
  const checks: Readiness['checks'] = { eventStore, readStore, bus };
  if (runner && eventStore.ok) {
    const head = await platform.eventStore.headPosition();
    checks.projections = { ok: true, position: runner.position(), head, lag: Math.max(0, head - runner.position()) };
  }
  return { ready: Object.values(checks).every((c) => c.ok), checks };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
  ]);
}

async function main(): Promise<void> {
  const role = (process.argv[2] ?? process.env.ROLE ?? 'all') as Role;
  if (!roles.includes(role)) {
    console.error(`unknown role "${role}"; use one of: ${roles.join(', ')}`);
    process.exit(2);
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const logger = createLogger(config.logLevel);
  let service: RunningService;
  try {
    service = await startService(config, role, { logger });
  } catch (error) {
    logger.fatal({ err: error }, (error as Error).message);
    process.exit(1);
  }
  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'stopping');
    await service.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) void main();
