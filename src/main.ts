/**
 * Composition root: the only place that reads configuration and knows which adapter runs.
 * `npm start` runs every role in one process; `node dist/src/main.js <role>` runs one.
 */
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import { isIP } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { Bus } from './adapters/bus/port.js';
import type { EventStore } from './adapters/eventstore/port.js';
import type { ReadStore } from './adapters/readstore/port.js';
import { SqliteEventStore } from './adapters/eventstore/sqlite.js';
import { withoutCredentials } from './shared/without-credentials.js';
import { BatchCompleter } from './workers/batch-completer.js';
import { EsdbEventStore } from './adapters/eventstore/esdb.js';
import { EmbeddedReadStore, type CollectionLoaded } from './adapters/readstore/embedded.js';
import { MongoReadStore } from './adapters/readstore/mongo.js';
import { EmbeddedBus } from './adapters/bus/embedded.js';
import { KafkaBus } from './adapters/bus/kafka.js';
import type { Services } from './commands/services.js';
import { loadConfig, roles, type Config, type Role } from './config.js';
import { createApp, type Readiness } from './http/app.js';
import { issuerEndpoints } from './identity/token-endpoint.js';
import type { DashboardOptions } from './dashboard/page.js';
import { answerClientErrors } from './http/client-errors.js';
import { continueOnRead } from './http/expect-continue.js';
import { authenticate } from './http/auth.js';
import { createRateLimits, type RateLimitStore } from './http/middleware/rate-limit.js';
import { chooseCounterStore } from './http/middleware/rate-limit-store.js';
import { purgeExpiredIdempotencyKeys } from './http/middleware/idempotency.js';
import { openSqliteFile } from './adapters/sqlite-file.js';
import { MongoClient } from 'mongodb';
import { accountCredentials } from './commands/credentials.js';
import { createDevIdentityProvider } from './identity/dev-provider.js';
import { RefreshTokens, type RefreshFamilyDoc } from './identity/refresh-tokens.js';
import { loadOrCreateSigningKey } from './identity/signing-key.js';
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
import { pruneCommsHistory } from './commands/comms-history-retention.js';
import { createWebhookDispatcher } from './workers/webhook-dispatcher.js';
import { ProjectionRunner } from './projections/runner.js';
import { loggedRebuild } from './projections/rebuild-log.js';
import { checkpointName, type Projection } from './projections/projection.js';
import { systemClock, type Clock } from './shared/clock.js';
import { createLogger, type Logger } from './shared/logger.js';
import { exitOnCrash } from './shared/exit-on-crash.js';
import { Relay } from './workers/relay.js';
import { relayRoutes } from './workers/topics.js';
import { workersThread, workersThreadPossible } from './workers/thread.js';
import type { Worker } from './workers/worker.js';
import { backoffMs, sleep } from './shared/backoff.js';
import { trackForDrain, type HttpDrain } from './http/drain.js';
import { keepAliveFor } from './http/keep-alive.js';
import { withCors } from './http/cors.js';
import { claimProjections, describeHolder, type Holding } from './projections/holder.js';
import { checkStoreIdentity, StoreMismatchError, type IdentityCheck } from './projections/store-identity.js';
import { Metrics } from './observability/metrics.js';
import { deadLetterSources } from './commands/dead-letters.js';
import { observedEventStore } from './observability/observed-event-store.js';
import { pipelineProbe } from './observability/pipeline-lag.js';
import { OverloadGuard } from './http/middleware/overload.js';
import { startMetricsServer } from './observability/metrics-server.js';
import { relayCheckpoint } from './workers/relay.js';
import { sendWorkerGroup } from './workers/send-worker.js';
import { dispatcherGroup } from './workers/webhook-dispatcher.js';
import { topics } from './workers/topics.js';
import type { KeyStore } from './adapters/keystore/port.js';
import { EmbeddedKeyStore } from './adapters/keystore/embedded.js';
import { MongoKeyStore } from './adapters/keystore/mongo.js';
import { DataKeys } from './personal-data/data-keys.js';
import { sealedEventStore } from './personal-data/sealed-event-store.js';
import { keyringOf, loadOrCreateKeyFile, type Keyring } from './shared/encryption.js';
import type { WebhookDoc } from './projections/webhooks.js';
import { RetentionWorker } from './workers/retention.js';
import type { PersonalDataSettings } from './commands/personal-data.js';

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
  /** Guests' personal fields are sealed and opened here (src/personal-data/sealed-event-store.ts). */
  eventStore: EventStore;
  /** The same store without opening: what the relay copies to the bus (ciphertext only). */
  sealedEventStore: EventStore;
  /** The guests' data keys; absent with PII_ENCRYPTION=off. */
  dataKeys?: DataKeys;
  readStore: ReadStore;
  bus: Bus;
  /** The embedded event store under the decorators, when it is the one in use (the workers' thread wakes its subscribers). */
  embeddedEventStore?: SqliteEventStore;
  close(): Promise<void>;
}

/** The embedded read store's collection loads: at info when one held a start up (a quarter second or more), else at debug. */
function logCollectionLoaded(logger: Logger): (loaded: CollectionLoaded) => void {
  return (loaded) => logger[loaded.ms >= 250 ? 'info' : 'debug'](loaded, 'read store collection loaded into memory');
}

/** The key store (a MongoDB collection when MONGO_URL is set, else a SQLite file) and the master keyring. */
function createDataKeys(config: Config, logger: Logger, embeddedEvents?: SqliteEventStore): DataKeys | undefined {
  const { personalData } = config;
  if (!personalData.encryption) return undefined;
  const master = personalData.masterKeys
    ? keyringOf(personalData.masterKeys, personalData.masterKeyId)
    : loadOrCreateKeyFile(path.join(config.dataDir, 'personal-data', 'master-keys.json'));
  const store: KeyStore = config.mongoUrl
    ? new MongoKeyStore({ url: config.mongoUrl, dbName: config.mongoDb, logger: logger.child({ adapter: 'mongodb-keys' }) })
    : !embeddedEvents
      ? new EmbeddedKeyStore(path.join(config.dataDir, 'personal-data-keys.sqlite'))
      : // In the event store's file and transactions: a new key commits with the first events sealed with it.
        EmbeddedKeyStore.inEventStore(embeddedEvents, {
          migrateFrom: path.join(config.dataDir, 'personal-data-keys.sqlite'),
          logger: logger.child({ adapter: 'key-store' }),
        });
  return new DataKeys(store, master);
}

/** The bus: Kafka with KAFKA_BROKERS, else the embedded one in DATA_DIR/bus.sqlite (the dead-letter commands open it alone). */
export function createBus(config: Config, logger: Logger): EmbeddedBus | KafkaBus {
  if (config.kafkaBrokers && config.kafkaSasl?.mechanism === 'plain' && !config.kafkaSsl) {
    logger.warn(
      { kafkaSaslMechanism: 'plain' },
      'KAFKA_SASL_MECHANISM=plain without KAFKA_SSL=true sends the Kafka password over the network in clear: set KAFKA_SSL=true (or use scram-sha-512) unless the network is private',
    );
  }
  return config.kafkaBrokers
    ? new KafkaBus({
        brokers: config.kafkaBrokers,
        clientId: 'checkin-service',
        maxBatchBytes: config.kafkaMaxBatchBytes,
        namespace: config.kafkaNamespace,
        ssl: config.kafkaSsl,
        sasl: config.kafkaSasl,
        replicationFactor: config.kafkaReplicationFactor,
        logger: logger.child({ adapter: 'kafka' }),
      })
    : new EmbeddedBus(path.join(config.dataDir, 'bus.sqlite'), { logger: logger.child({ adapter: 'embedded-bus' }) });
}

/** Picks each port's adapter: a configured URL means the real server, else the embedded default. */
export function createPlatform(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
  metrics?: Pick<Metrics, 'observeAppend'>,
  wrapEventStore: (store: EventStore) => EventStore = (store) => store,
  /** A read store to use instead of the configured one (the workers' thread: the main thread's, over a port). */
  givenReadStore?: ReadStore,
): Platform {
  const file = (name: string) => path.join(config.dataDir, name);
  // Appends are timed, stamped with the current trace and logged (src/observability/observed-event-store.ts).
  const embeddedEvents = config.eventStoreUrl ? undefined : new SqliteEventStore(file('events.sqlite'), { synchronous: config.sqliteSynchronous });
  const observed = observedEventStore(wrapEventStore(embeddedEvents ?? new EsdbEventStore(config.eventStoreUrl!, { maxAppendBytes: config.eventStoreMaxAppendBytes })), { logger, ...(metrics ? { metrics } : {}) });
  const dataKeys = createDataKeys(config, logger, embeddedEvents);
  const eventStore = dataKeys ? sealedEventStore(observed, dataKeys, { logger: logger.child({ adapter: 'personal-data' }) }) : observed;
  const readStore = givenReadStore ?? (config.mongoUrl
    ? new MongoReadStore({ url: config.mongoUrl, dbName: config.mongoDb, logger: logger.child({ adapter: 'mongodb' }) })
    : new EmbeddedReadStore(file('read-models.sqlite'), { onCollectionLoaded: logCollectionLoaded(logger) }));
  const bus = createBus(config, logger);
  const readPreference = config.mongoUrl ? secondaryReadPreference(config.mongoUrl) : undefined;
  if (readPreference) {
    logger.warn(
      { readPreference },
      `MONGO_URL asks for readPreference=${readPreference}: the api's answers after a write (read-your-writes) may then be read from a secondary that has not caught up (503 read_models_behind, or an older copy); use primary or primaryPreferred, and give analysts a connection of their own`,
    );
  }
  logger.info(
    { eventStore: eventStore.kind, readStore: readStore.kind, bus: bus.kind, dataDir: config.dataDir },
    'adapters chosen',
  );
  return {
    config,
    logger,
    eventStore,
    sealedEventStore: observed,
    ...(dataKeys ? { dataKeys } : {}),
    readStore,
    bus,
    ...(embeddedEvents ? { embeddedEventStore: embeddedEvents } : {}),
    close: async () => {
      await Promise.allSettled([bus.close(), readStore.close(), eventStore.close(), dataKeys?.store.close()]);
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
  /**
   * Stops in order (docs/operations.md, Shutdown): drain HTTP, stop the workers (leases handed
   * back), the relay and the projections (offsets and checkpoints committed), then the stores.
   * `onStep` hears each step as it starts, so a caller with a deadline can name the one that hung.
   */
  stop(onStep?: (step: string) => void): Promise<void>;
}

/**
 * A master key removed from PII_MASTER_KEYS while data keys are still wrapped under it (before
 * `rewrap-personal-data-keys` moved them) left the service up and ready, its guests' personal data
 * unreadable and customId writes failing 500. The start is refused instead, naming each missing
 * key id. A key store that does not answer within 5 s is not waited for (as the stream-name key below).
 */
async function masterKeysChecked(platform: Platform, logger: Logger): Promise<void> {
  const problem = await masterKeyProblem(platform, logger);
  if (!problem) return;
  await platform.close();
  throw new Error(problem);
}

/**
 * Why the configured master keyring cannot open the stored data keys, or undefined: the start's
 * check, and that of the admin commands a restore runs (`reapply-erasures`, `hold-pending-sends`),
 * which would otherwise go on with a master key file they had just made anew.
 */
export async function masterKeyProblem(platform: Platform, logger: Logger): Promise<string | undefined> {
  const dataKeys = platform.dataKeys;
  if (!dataKeys) return undefined;
  const keySource = platform.config.personalData.masterKeys
    ? 'PII_MASTER_KEYS'
    : `the development master key file ${path.join(platform.config.dataDir, 'personal-data', 'master-keys.json')}`;
  const check = Promise.all([dataKeys.missingMasterKeys(), dataKeys.unopenedMasterKeys()]);
  let found: [{ masterKeyId: string; count: number }[], string[]] | undefined;
  try {
    found = await Promise.race([check, new Promise<undefined>((resolve) => void setTimeout(() => resolve(undefined), 5_000).unref())]);
  } catch (error) {
    logger.warn({ err: error }, 'could not check on start that PII_MASTER_KEYS holds every master key the stored data keys are wrapped under');
    return undefined;
  }
  check.catch(() => {});
  if (!found) return undefined;
  const [missing, unopened] = found;
  if (unopened.length > 0) {
    // A restore without its master key: the development key file made anew has a date-based id, the same as the copy's key made that day.
    return (
      `stored data keys do not open with master key ${unopened.map((id) => `"${id}"`).join(', ')} of ${keySource}: it holds another key under that id ` +
      "(a restored copy without its own master key file, which was then made anew; another deployment's key; a changed value). " +
      "Without the key they were wrapped with, those guests' personal data does not open. Put back the master key of this data (docs/operations.md, Backups and restores)"
    );
  }
  if (missing.length === 0) return undefined;
  const which = missing.map((m) => `"${m.masterKeyId}" (${m.count} data keys)`).join(', ');
  return (
    `${keySource} lacks master keys that stored data keys are wrapped under: ${which}. Without them those guests' personal data does not open. ` +
    'Add them back (next to the current key), then run npm run admin -- rewrap-personal-data-keys before removing them (docs/personal-data.md, Rotation); ' +
    'after a restore, put back the master key of the copy (docs/operations.md, Backups and restores)'
  );
}

/**
 * A key removed from WEBHOOK_ENCRYPTION_KEYS while webhook secrets are still encrypted under it:
 * each delivery of those accounts failed, and nothing said so before the first one. Logged at
 * error on start, naming the key ids (not refused: a key lost for good is recovered by the
 * accounts rotating their secrets, docs/webhooks.md). Read from the webhooks read model, in the background.
 */
async function webhookKeysChecked(services: Services, keyring: Keyring, logger: Logger): Promise<void> {
  const missing = new Map<string, number>();
  try {
    const outside = { keyId: { $nin: [...keyring.keys.keys()] } };
    for await (const doc of services.readStore.collection<WebhookDoc>('webhooks').stream(outside, { readOnly: true })) {
      missing.set(doc.keyId, (missing.get(doc.keyId) ?? 0) + 1);
    }
  } catch (error) {
    // A read store that is down (or closing) is reported by /readyz and the projections; this check is a hint only.
    logger.debug({ err: error }, 'could not check on start that WEBHOOK_ENCRYPTION_KEYS holds every key the stored webhook secrets are encrypted under');
    return;
  }
  if (missing.size === 0) return;
  const which = [...missing].map(([keyId, count]) => `"${keyId}" (${count} webhooks)`).join(', ');
  logger.error(
    { missingKeyIds: Object.fromEntries(missing) },
    `WEBHOOK_ENCRYPTION_KEYS lacks keys that stored webhook secrets are encrypted under: ${which}. Their deliveries fail until the key is added back ` +
      '(then npm run admin -- reencrypt-secrets moves them to the current key) or each such account rotates its secret (docs/webhooks.md)',
  );
}

export async function startService(
  config: Config,
  role: Role = 'all',
  options: { clock?: Clock; logger?: Logger; wrapEventStore?: (store: EventStore) => EventStore } = {},
): Promise<RunningService> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = new Metrics(logger);
  const platform = createPlatform(config, logger, metrics, options.wrapEventStore);
  await masterKeysChecked(platform, logger);
  // Made on the first start of a version that hashes customId stream names: events created
  // after it cannot hold a reservation under the legacy name (src/commands/guests.ts). Not
  // awaited: a key store that is down at start must not stop the process (it is made on first
  // use then, and events created meanwhile are checked for legacy names too: slower, not wrong).
  platform.dataKeys?.streamNameKey().catch((error: unknown) =>
    logger.warn({ err: error }, 'the customId stream-name key could not be read on start; it is read again on first use'),
  );
  metrics.watchPipeline(
    pipelineProbe({
      eventStore: platform.eventStore,
      readStore: platform.readStore,
      bus: platform.bus,
      projections: projections.map((p) => ({ name: p.name, filter: p.filter })),
      relayCheckpoint,
      relayFilter: { streamPrefixes: relayRoutes.flatMap((r) => r.filter.streamPrefixes ?? ['']) },
      consumers: [
        { group: sendWorkerGroup, topics: [topics.invitations] },
        { group: dispatcherGroup, topics: [topics.commsEvents, topics.webhookRedeliveries] },
      ],
      deadLetterTopics: deadLetterSources,
      webhookDeliveries: 'webhook_deliveries',
    }),
  );
  const runs = (r: Role) => role === 'all' || role === r;

  const runner = runs('projections')
    ? new ProjectionRunner(platform.eventStore, platform.readStore, projections, logger.child({ role: 'projections' }))
    : undefined;
  const relay = runs('relay')
    ? new Relay(platform.sealedEventStore, platform.bus, platform.readStore, relayRoutes, logger.child({ role: 'relay' }))
    : undefined;

  const services: Services = {
    eventStore: platform.eventStore,
    readStore: platform.readStore,
    clock: options.clock ?? systemClock,
    logger,
    ...(platform.dataKeys ? { dataKeys: platform.dataKeys, storedEvents: platform.sealedEventStore } : {}),
    readYourWrites: async (position) => {
      if (position < 0) return;
      if (runner) await runner.waitFor(position, config.readYourWritesTimeoutMs);
      else await pollCheckpoints(platform.eventStore, platform.readStore, position, config.readYourWritesTimeoutMs);
    },
    secretsKeyring: webhookSettings(config).keyring,
  };
  if (runs('workers')) void webhookKeysChecked(services, webhookSettings(config).keyring, logger);

  if (config.trustProxy === true) {
    // express then takes the leftmost X-Forwarded-For address: behind a proxy that appends to the header, the client writes it.
    logger.warn(
      'TRUST_PROXY=true takes the first X-Forwarded-For address as the source IP: unless the proxy replaces that header, a client picks its own IP per request and escapes the rate limit; set TRUST_PROXY to the number of proxy hops or their addresses',
    );
  }
  const wantsThread = role === 'all' && config.workersThread;
  const onThread = wantsThread && workersThreadPossible(config) && !options.clock;
  if (wantsThread && !onThread && !config.workersThreadAuto) logger.warn('WORKERS_THREAD=on is for the embedded event store and bus (and the system clock); the workers run on the main thread');
  if (runs('workers') && role === 'all') {
    const setting = config.workersThreadAuto ? `auto, ${availableParallelism()} cores` : config.workersThread ? 'on' : 'off';
    logger.info({ workersThread: onThread, setting }, onThread ? `the send worker and webhook dispatcher run on a thread of their own (WORKERS_THREAD=${setting})` : `the send worker and webhook dispatcher run on the main thread (WORKERS_THREAD=${setting})`);
  }
  const workers: Worker[] = !runs('workers')
    ? []
    : onThread
      ? // The bus consumers on a thread of their own; retention (a sweep every few minutes) stays here.
        [workersThread(platform, services, config, metrics), retentionWorker(services, config)]
      : createWorkers(platform, services, config, metrics);
  if (runs('workers')) metrics.countsWorkers();
  // Multi-stream batches on EventStoreDB: finish those a crashed writer left (src/commands/batch-intents.ts).
  const completer =
    runs('api') && !platform.eventStore.atomicBatches
      ? new BatchCompleter(platform.eventStore, platform.readStore, logger.child({ role: 'batch-completer' }))
      : undefined;

  // The read store must belong to this event store before anything reads its checkpoints.
  const startWaits = { waiting: true };
  const identityReady = storeIdentityChecked(config, platform, runs('projections'), logger, startWaits);
  await Promise.race([identityReady, new Promise((resolve) => setTimeout(resolve, 5_000).unref())])
    .catch(async (error: unknown) => {
      // Refused: nothing started; the stores close before the caller hears why.
      await Promise.allSettled(workers.map((w) => w.stop()));
      await platform.close();
      throw error;
    })
    .finally(() => (startWaits.waiting = false));

  // Two processes projecting into one read store would write the same documents and checkpoints
  // (the embedded one holds them in each process's memory): take the store's projections
  // (one compare-and-swap, src/projections/holder.ts), or refuse to be the second. A store that
  // does not answer within 5 s is not waited for (a real server down at start is retried below):
  // the projections start once it answers and this process holds them.
  const holderLogger = logger.child({ role: 'projections' });
  let stopping = false;
  /** Another process took the read store's projections over (this one's heartbeat went stale). */
  let projectionsLost = false;
  const claimed = runner
    ? (async () => {
        for (let attempt = 1; ; attempt++) {
          try {
            const answer = await claimProjections(platform.readStore, holderLogger, {
              role: 'projections',
              onLost: () => {
                projectionsLost = true;
                void runner.stop();
              },
            });
            // Taken while the service stopped (its store answered late): given back at once.
            if (stopping && 'holding' in answer) await answer.holding.stop();
            return answer;
          } catch (error) {
            if (stopping) throw error;
            const delay = backoffMs(attempt, 500);
            holderLogger.error({ err: error, attempt, retryInMs: delay }, 'could not take the projections of the read store; is its server up? retrying');
            await sleep(delay);
          }
        }
      })()
    : undefined;
  let holding: Holding | undefined;
  if (claimed) {
    claimed.catch(() => {}); // rejects only once the service stops
    const answer = await Promise.race([claimed, new Promise<undefined>((resolve) => void setTimeout(() => resolve(undefined), 5_000).unref())]);
    if (answer && 'other' in answer) {
      await Promise.allSettled(workers.map((w) => w.stop()));
      await platform.close();
      throw new Error(
        `another process runs the projections on this read store: ${describeHolder(answer.other)}. Two would write the same read models. ` +
          (config.mongoUrl
            ? 'Stop it first, or start this one in a role without projections (ROLE=api or workers; README, Roles). '
            : // The embedded read store is the memory of the process that opened it: an api or workers process
              // beside the projecting one would read its own copy, never updated (README, Roles).
              'Stop it first. The embedded read store (no MONGO_URL) keeps the read models in the memory of that one process, ' +
              'so no other role can run beside it on this DATA_DIR; to run roles as separate processes, set MONGO_URL (README, Roles). ') +
          'A process of another host that was killed counts as gone once its heartbeat is 20 s old.',
      );
    }
  }
  if (runner && claimed) {
    void retryForever(
      'projections',
      async () => {
        await identityReady;
        const answer = await claimed;
        if (stopping) return;
        if ('other' in answer) {
          holderLogger.error({ holder: answer.other }, `another process runs the projections on this read store: ${describeHolder(answer.other)}; this one does not project`);
          return;
        }
        // Taken over while an upgrade rebuild ran (which then stopped): the other process projects now.
        if (projectionsLost) return;
        holding = answer.holding;
        // Read models another version of their projection's code built are rebuilt before it
        // projects again (src/projections/versions.ts); /readyz answers 503 meanwhile.
        const outdated = await runner.outdated();
        if (outdated.length > 0) {
          holderLogger.warn({ outdated }, 'projections: read models built by another version of their code; rebuilding them before projecting');
          await loggedRebuild(runner, platform.eventStore, outdated.map((o) => o.name), holderLogger, 'projections upgrade rebuild', () => {
            if (stopping) throw new Error('the service stops: the upgrade rebuild is cut short (the next start rebuilds again)');
            if (projectionsLost) throw new Error('another process took the read store\'s projections over during the upgrade rebuild; this one stops projecting');
          });
        }
        // Taken over meanwhile (onLost stopped a runner that was not running yet): do not start it.
        if (projectionsLost || stopping) return;
        await runner.start();
        if (projectionsLost) await runner.stop();
      },
      logger,
    );
  }
  if (relay) void retryForever('relay', async () => (await identityReady, await relay.start()), logger);
  for (const worker of workers) void retryForever(worker.name, async () => (await identityReady, await worker.start()), logger);
  if (completer) void retryForever('batch completer', async () => (await identityReady, await completer.start()), logger);

  const closers: (() => Promise<void>)[] = [];
  const api = runs('api') ? await startApi(config, platform, services, runner, closers, metrics) : undefined;
  const server = api?.server;
  const url = api?.url;
  if (url) logger.info({ url, role }, 'listening');
  const { metricsPort, metricsToken } = config.observability;
  if (!api && metricsPort !== undefined) {
    const scrape = await startMetricsServer({ metrics, port: metricsPort, host: config.host, readiness: () => readiness(platform, runner), ...(metricsToken ? { token: metricsToken } : {}) });
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
    stop: async (onStep) => {
      const step = async (name: string, run: () => Promise<unknown>) => {
        onStep?.(name);
        const started = Date.now();
        const result = await run();
        logger.info({ step: name, ms: Date.now() - started, ...(result && typeof result === 'object' && !Array.isArray(result) ? result : {}) }, 'shutdown step done');
      };
      if (api) {
        await step('http drain', () => api.drain.drain({ idleGraceMs: config.shutdown.idleGraceMs, deadlineMs: config.shutdown.drainTimeoutMs }));
      }
      await step('workers', () => Promise.allSettled(workers.map((w) => w.stop())));
      if (completer) await step('batch completer', () => completer.stop());
      if (relay) await step('relay', () => relay.stop());
      stopping = true;
      if (runner) await step('projections', async () => {
        await runner.stop();
        await holding?.stop();
      });
      await step('periodic jobs and rate-limit store', () => Promise.allSettled(closers.map((close) => close())));
      await step('event store identity', () => Promise.allSettled([...pendingRecords].map((record) => record())));
      await step('stores and bus', () => platform.close());
    },
  };
}

/**
 * Checks (src/projections/store-identity.ts) that the read store belongs to this event store.
 * A refusal rejects (at start: startService rejects; later: the process exits 1); a server
 * that does not answer is retried in the background. While the store is empty its identity
 * is recorded once it has a first event.
 */
function storeIdentityChecked(
  config: Config,
  platform: Platform,
  mayRebuild: boolean,
  logger: Logger,
  start: { waiting: boolean },
): Promise<void> {
  const check: IdentityCheck = {
    eventStore: platform.eventStore,
    readStore: platform.readStore,
    eventStoreDescription: config.eventStoreUrl ? `EventStoreDB at ${withoutCredentials(config.eventStoreUrl)}` : `SQLite file ${path.join(config.dataDir, 'events.sqlite')}`,
    readStoreDescription: config.mongoUrl ? `${withoutCredentials(config.mongoUrl)} database ${config.mongoDb}` : `SQLite file ${path.join(config.dataDir, 'read-models.sqlite')}`,
    projections,
    otherCheckpoints: [relayCheckpoint],
    rebuildOnMismatch: mayRebuild && config.readStoreMismatch === 'rebuild',
    logger,
  };
  const checked = (async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        const { recorded } = await checkStoreIdentity(check);
        if (!recorded) recordLater(check, logger);
        return;
      } catch (error) {
        if (error instanceof StoreMismatchError) {
          // The start has moved on (the first check outlasted its wait): nothing else can stop it.
          if (!start.waiting) {
            logger.fatal({ err: error }, error.message);
            process.exit(1);
          }
          throw error;
        }
        const delay = backoffMs(attempt, 500);
        logger.error({ err: error, attempt, retryInMs: delay }, 'could not check which event store the read store belongs to; is its server up? retrying');
        await sleep(delay);
      }
    }
  })();
  checked.catch(() => {});
  return checked;
}

/** While the store is empty at start: record its identity once its first event exists (and at the latest on stop). */
const pendingRecords = new Set<() => Promise<void>>();
function recordLater(check: IdentityCheck, logger: Logger): void {
  let busy = false;
  const attempt = async () => {
    if (busy) return;
    busy = true;
    try {
      const { recorded } = await checkStoreIdentity({ ...check, rebuildOnMismatch: false });
      if (recorded) done();
    } catch (error) {
      logger.error({ err: error }, 'event store identity not recorded yet; trying again');
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void attempt(), 1_000);
  timer.unref();
  const done = () => {
    clearInterval(timer);
    pendingRecords.delete(attempt);
  };
  pendingRecords.add(attempt);
}

/**
 * The `workers` role: bus consumers and schedulers. `retention: false` leaves out the retention
 * worker (the workers' thread runs the bus consumers; retention stays with the main thread).
 */
export function createWorkers(
  platform: Platform,
  services: Services,
  config: Config,
  metrics: Pick<Metrics, 'countSend' | 'countWebhookAttempt' | 'setSendsBlockedOnCredentials'>,
  options: { retention?: boolean } = {},
): Worker[] {
  const { comms } = config;
  const mailer = createMailer(config, services.logger);
  // Temporary files of a write a kill cut short (the finished files are whole: written, synced, linked).
  if (mailer instanceof OutboxMailer) {
    void mailer.removeLeftovers().then(
      (removed) => removed > 0 && services.logger.info({ removed, outboxDir: config.comms.outboxDir }, 'outbox temporary files of an interrupted run removed'),
      (error: unknown) => services.logger.warn({ err: error }, 'outbox temporary files not cleaned up'),
    );
  }
  const sends = new SendWorker(platform.bus, services, {
    mailer,
    pdf: createPdfRenderer({ threads: Math.max(1, availableParallelism() - 1) }),
    linkPolicy: { blockedDomains: comms.blockedLinkDomains },
    sender: { address: comms.sendingAddress, ...(comms.senderName ? { name: comms.senderName } : {}) },
    retryDelaysMs: comms.sendRetryDelaysMs,
    concurrency: comms.sendConcurrency,
    attemptLeaseMs: comms.sendLeaseMs,
    credentialsRetryDelaysMs: comms.sendCredentialsRetryDelaysMs,
    credentialsHoldMs: comms.sendCredentialsHoldMs,
    sweepMs: comms.sweepMs,
    metrics,
  });
  const consumers = [createWebhookDispatcher(platform.bus, services, webhookSettings(config), metrics), sends];
  return options.retention === false ? consumers : [...consumers, retentionWorker(services, config)];
}

/** Erases the guests of events past their retention (issue 14, item 3) and removes outbox emails past OUTBOX_RETENTION_DAYS. */
function retentionWorker(services: Services, config: Config): Worker {
  const settings = personalDataSettings(config);
  const outbox = settings.outboxDir ? { dir: settings.outboxDir, days: config.comms.outboxRetentionDays } : undefined;
  return new RetentionWorker(services, settings, config.personalData.retentionSweepMs, outbox);
}

/** Where erasure looks for files with personal data (the outbox only when the embedded mailer sends). */
export function personalDataSettings(config: Config): PersonalDataSettings {
  const { comms } = config;
  const outbox = !comms.sendgridApiKey && !comms.smtpUrl;
  return { exportDir: config.exportDir, ...(outbox ? { outboxDir: comms.outboxDir } : {}) };
}

/** The domain-authentication port's adapter: SendGrid when its key is set, else records checked by DNS lookups. */
/**
 * Where /dashboard asks for tokens and revokes the refresh token at sign-out: the dev provider's
 * endpoints; an external issuer's, by discovery; DASHBOARD_TOKEN_URL alone names no revocation.
 */
function dashboardEndpoints(config: Config): DashboardOptions {
  if (config.dashboardTokenUrl) return { tokenUrl: config.dashboardTokenUrl };
  if (!config.oidcIssuer) return { tokenUrl: '/core/connect/token', revocationUrl: '/core/connect/revocation' };
  const endpoints = issuerEndpoints(config.oidcIssuer);
  return { tokenUrl: async () => (await endpoints()).token, revocationUrl: async () => (await endpoints()).revocation };
}

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
): Promise<{ server: Server; url: string; drain: HttpDrain }> {
  // The issuer URL of the dev provider depends on the port actually bound (0 = ephemeral).
  let devIssuer = '';
  const issuer = () => config.oidcIssuer ?? devIssuer;
  const devKeyFile = path.join(config.dataDir, 'identity', 'signing-key.json');
  // The dev provider's tokens are checked against its key in this process, not fetched through PUBLIC_URL.
  const devKey = config.oidcIssuer ? undefined : loadOrCreateSigningKey(devKeyFile);
  const verifier = createTokenVerifier({
    issuer,
    ...(config.oidcAudience ? { audience: config.oidcAudience } : {}),
    claimNames: { tenant: config.oidcTenantClaim, role: config.oidcRoleClaim },
    ...(devKey ? { localKeys: { keys: [devKey.publicJwk] } } : {}),
  });
  const overload = new OverloadGuard({
    maxEventLoopDelayMs: config.observability.overloadMaxEventLoopDelayMs,
    retryAfterSeconds: config.observability.overloadRetryAfterSeconds,
    minInFlight: config.observability.overloadMinInFlight,
    maxInFlight: config.observability.overloadMaxInFlight,
    metrics,
    logger: services.logger,
  });
  closers.push(async () => overload.close());
  // Rate limits and the sign-in throttle count in one store that every api process shares.
  const counters = await rateLimitStore(config, closers, services.logger);
  // The dev provider's refresh tokens live in the read store, which every api process shares.
  const refreshTokens = config.oidcIssuer
    ? undefined
    : new RefreshTokens({
        collection: platform.readStore.collection<RefreshFamilyDoc>('refresh_token_families'),
        lifetimeSeconds: config.refreshTokenTtlSeconds,
        idleSeconds: config.refreshTokenIdleSeconds,
        reuseGraceSeconds: config.refreshTokenReuseGraceSeconds,
        now: () => services.clock.now(),
      });
  const app = createApp({
    services,
    metrics: { registry: metrics, ...(config.observability.metricsToken ? { token: config.observability.metricsToken } : {}) },
    compression: config.http.compression,
    readiness: () => readiness(platform, runner),
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    authenticate: authenticate(verifier, services),
    identityProvider: config.oidcIssuer
      ? undefined
      : createDevIdentityProvider({
          issuer,
          keyFile: devKeyFile,
          ...(devKey ? { signingKey: devKey } : {}),
          credentials: accountCredentials(services),
          tokenTtlSeconds: config.tokenTtlSeconds,
          ...(config.oidcAudience ? { audience: config.oidcAudience } : {}),
          failedSignInStore: counters,
          logger: services.logger,
          ...(refreshTokens ? { refreshTokens } : {}),
        }),
    adminApiKey: config.adminApiKey,
    dashboard: dashboardEndpoints(config),
    webhooks: webhookSettings(config),
    exports: exportSettings(config),
    personalData: personalDataSettings(config),
    comms: {
      linkPolicy: { blockedDomains: config.comms.blockedLinkDomains },
      domains: createDomainAuthenticator(config),
      ...(config.comms.sendgridEventPublicKey ? { sendgridEventPublicKey: config.comms.sendgridEventPublicKey } : {}),
    },
    rateLimits: createRateLimits({
      perMinute: config.rateLimitPerMinute,
      sendPerMinute: config.sendRateLimitPerMinute,
      store: counters,
      logger: services.logger,
    }),
  });
  // The read-store port has no TTL index: expired Idempotency-Key records are purged hourly,
  // expired guest exports (files and records) every minute.
  every(3_600_000, 'idempotency key purge', () => purgeExpiredIdempotencyKeys(platform.readStore), closers, services.logger);
  if (refreshTokens) every(3_600_000, 'refresh token purge', () => refreshTokens.purgeExpired(), closers, services.logger);
  every(60_000, 'export sweep', () => sweepExpiredExports(services, exportSettings(config)), closers, services.logger);
  // The comms events feed and the webhook delivery log keep COMMS_HISTORY_RETENTION_DAYS (docs/operations.md, "What grows").
  every(3_600_000, 'comms history retention', () => pruneCommsHistoryLogged(services, config), closers, services.logger);
  let drain: HttpDrain | undefined;
  // The overload guard answers before the app while the process cannot keep up (src/http/middleware/overload.ts);
  // CORS comes before both, so that its refusals carry the CORS headers too (src/http/cors.ts).
  const guarded = overload.handler(app);
  const { corsOrigins } = config.http;
  const handler =
    corsOrigins.length === 0
      ? guarded
      : withCors(guarded, { origins: corsOrigins, onPreflight: (route, seconds) => metrics.observeHttp(route, 'OPTIONS', 204, seconds) });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer(handler);
    keepAliveFor(s, config.http.keepAliveTimeoutMs);
    s.listen(config.port, config.host, () => resolve(s));
    answerClientErrors(s);
    continueOnRead(s);
    drain = trackForDrain(s);
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  // An IPv6 HOST (`::`) goes in brackets: `http://:::8080/core` as the dev issuer made every bearer token uncheckable.
  const url = `http://${isIP(config.host) === 6 ? `[${config.host}]` : config.host}:${port}`;
  devIssuer = `${config.publicUrl ?? url}/core`;
  return { server, url, drain: drain! };
}

/** A periodic clean-up that never keeps the process alive and stops with the service. */
async function pruneCommsHistoryLogged(services: Services, config: Config): Promise<void> {
  const deleted = await pruneCommsHistory(services.readStore, { days: config.commsHistoryRetentionDays }, services.clock.now());
  if (deleted.commsEvents + deleted.deliveries > 0) {
    services.logger.info({ ...deleted, retentionDays: config.commsHistoryRetentionDays }, 'comms history past its retention deleted');
  }
}

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
 * Rate-limit counters shared by every instance: MongoDB when configured and able to count
 * atomically, else a SQLite file of their own (a short busy timeout: better-sqlite3 waits synchronously, and on timeout the
 * limiter's in-memory insurance takes over).
 */
async function rateLimitStore(config: Config, closers: (() => Promise<void>)[], logger: Logger): Promise<RateLimitStore> {
  // The built-in identity provider's sign-in throttle counts here even with the rate limits off.
  if (config.rateLimitPerMinute === 0 && config.sendRateLimitPerMinute === 0 && config.oidcIssuer) return { kind: 'memory' };
  if (config.mongoUrl) {
    const client = new MongoClient(config.mongoUrl);
    closers.push(() => client.close());
    // Only a server that counts atomically may hold them (src/http/middleware/rate-limit-store.ts).
    if ((await chooseCounterStore(client, logger)) === 'mongo') return { kind: 'mongo', client, dbName: config.mongoDb };
  }
  const db = openSqliteFile(path.join(config.dataDir, 'rate-limits.sqlite'), 'rate limit store', 'NORMAL');
  db.pragma('busy_timeout = 100');
  closers.push(async () => void db.close());
  return { kind: 'sqlite', db };
}

export async function retryForever(what: string, start: () => Promise<void>, logger: Logger): Promise<void> {
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

/** A `readPreference` of MONGO_URL that lets reads go to a secondary (`secondary`, `secondaryPreferred`, `nearest`), else undefined. */
export function secondaryReadPreference(mongoUrl: string): string | undefined {
  const query = mongoUrl.split('?')[1] ?? '';
  const value = new URLSearchParams(query).get('readPreference') ?? undefined;
  return value && !/^primary(Preferred)?$/i.test(value) ? value : undefined;
}

/** Read-your-writes when the projections run in another process: poll their checkpoints. */
async function pollCheckpoints(eventStore: EventStore, readStore: ReadStore, position: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A position no projection reads counts once the last event they read before it is processed.
  const filter = { streamPrefixes: projections.flatMap((p) => p.filter.streamPrefixes ?? ['']) };
  const head = await withTimeout(eventStore.headPosition(filter), timeoutMs).catch(() => position);
  position = Math.min(position, head);
  while (Date.now() < deadline) {
    const positions = await Promise.all(projections.map((p) => readStore.getCheckpoint(checkpointName(p))));
    if (positions.every((p) => (p ?? -1) >= position)) return;
    await sleep(20);
  }
}

/**
 * /readyz: every probe runs at once with its own deadline, so the answer comes within 2 s
 * whatever a store does (a stalled server is "not ready", not a hung probe).
 */
async function readiness(platform: Platform, runner?: ProjectionRunner): Promise<Readiness> {
  const probeMs = 1500;
  const check = async (probe: () => Promise<void>) => {
    try {
      await withTimeout(probe(), probeMs);
      return { ok: true };
    } catch (error) {
      // Unauthenticated: a driver's message may hold its connection string, never its password.
      return { ok: false, error: withoutCredentials(error instanceof Error ? error.message : String(error)) };
    }
  };
  const [eventStore, readStore, bus, lag] = await Promise.all([
    check(() => platform.eventStore.ping()),
    check(() => platform.readStore.ping()),
    check(() => platform.bus.ping()),
    runner ? withTimeout(runner.lag(), probeMs).catch(() => undefined) : undefined,
  ]);
  const checks: Readiness['checks'] = { eventStore, readStore, bus };
  const rebuilding = runner?.rebuilding;
  if (rebuilding) {
    const { projections: names, position, head, events } = rebuilding;
    checks.projections = { ok: false, error: `rebuilding ${names.join(', ')} (read models built by another version of their code)`, rebuilding: names, position, head, events };
  } else if (runner?.catchingUpTo) {
    // Behind at start (a crash, a stop during an import): answers would miss data until caught up.
    const { position, head } = runner.catchingUpTo;
    checks.projections = { ok: false, error: `catching up after start: at ${position}, head was ${head} at start`, catchingUp: true, position, head, lag: Math.max(0, head - position) };
  } else if (runner && eventStore.ok && lag) checks.projections = { ok: true, ...lag };
  return { ready: Object.values(checks).every((c) => c.ok), checks };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
  ]);
}

async function main(): Promise<void> {
  // ROLE set but empty counts as unset, as every variable does (README, Configuration).
  const role = (process.argv[2] ?? (process.env.ROLE || 'all')) as Role;
  if (!roles.includes(role)) {
    // Named as it was given: the command line's argument, or the variable (which the message did not name).
    console.error(
      process.argv[2] === undefined
        ? `invalid configuration: ROLE must be one of ${roles.join(', ')}, such as api, got "${role}"`
        : `unknown role "${role}"; use one of: ${roles.join(', ')}`,
    );
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
  exitOnCrash(logger);
  let service: RunningService;
  try {
    service = await startService(config, role, { logger });
  } catch (error) {
    logger.fatal({ err: error }, (error as Error).message);
    process.exit(1);
  }
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, timeoutMs: config.shutdown.timeoutMs }, 'stopping');
    let current = 'start';
    // Whatever hangs, the process goes within the bound, saying which step it left unfinished.
    setTimeout(() => {
      logger.error({ step: current, timeoutMs: config.shutdown.timeoutMs }, 'shutdown did not finish in time; exiting anyway');
      process.exit(1);
    }, config.shutdown.timeoutMs).unref();
    try {
      await service.stop((step) => (current = step));
    } catch (error) {
      logger.error({ err: error, step: current }, 'shutdown step failed; exiting');
      process.exit(1);
    }
    logger.info({ signal }, 'stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) void main();
