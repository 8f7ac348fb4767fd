import fs from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import bytes from 'bytes';
import { MongoClient } from 'mongodb';
import { sendgridSignatureVerifier } from './adapters/mailer/sendgrid-events.js';
import { connectionStringProblem } from './adapters/eventstore/esdb.js';
import { defaultKafkaMaxBatchBytes, kafkaNamespacePattern, kafkaSaslMechanisms, minKafkaMaxBatchBytes, type KafkaSasl, type KafkaSaslMechanism } from './adapters/bus/kafka.js';
import { defaultRetryDelaysMs as defaultWebhookRetryDelaysMs } from './domain/webhook.js';
import { parseKey } from './shared/encryption.js';
import { withoutCredentials } from './shared/without-credentials.js';

/** The one config reader (README, Configuration). Only the composition root and the CLIs call it. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: string;
  eventStoreUrl?: string;
  /** EventStoreDB's `MaxAppendSize` as the server is configured (EVENTSTORE_MAX_APPEND_SIZE). */
  eventStoreMaxAppendBytes: number;
  mongoUrl?: string;
  mongoDb: string;
  kafkaBrokers?: string[];
  /**
   * KAFKA_MAX_BATCH_BYTES: the most bytes one record batch may hold (a publish is split into sends
   * under it; a relayed event larger goes without its data). At or below the topics' max.message.bytes.
   */
  kafkaMaxBatchBytes: number;
  /**
   * KAFKA_NAMESPACE: prefix (`<namespace>.`) of every topic and consumer group of this deployment,
   * so that deployments sharing a Kafka cluster do not consume one another's messages. Unset: none.
   */
  kafkaNamespace?: string;
  /**
   * KAFKA_SSL (and KAFKA_SSL_CA_FILE, KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE, read at start): TLS to
   * the brokers, with a private CA and a client certificate (mTLS) when given; unset or false: plain TCP.
   */
  kafkaSsl?: true | { ca?: string; cert?: string; key?: string };
  /** KAFKA_SASL_MECHANISM, _USERNAME, _PASSWORD or _PASSWORD_FILE; unset: no SASL. */
  kafkaSasl?: KafkaSasl;
  /** KAFKA_REPLICATION_FACTOR: replicas of the topics the service creates; unset: the cluster's default.replication.factor. */
  kafkaReplicationFactor?: number;
  /** FULL (default) fsyncs each append; NORMAL trades the last writes on power loss for speed. */
  sqliteSynchronous: 'FULL' | 'NORMAL';
  /**
   * WORKERS_THREAD: with the embedded event store and bus, the role `all` runs the send worker
   * and the webhook dispatcher on a worker thread of their own (src/workers/thread.ts), so an
   * invitation's events are decided and appended off the door's thread (on, off, or auto, the
   * default: on where the process may use at least WORKERS_THREAD_AUTO_CORES cores).
   */
  workersThread: boolean;
  /** Whether workersThread came from WORKERS_THREAD=auto (unset) rather than on or off. */
  workersThreadAuto: boolean;
  readYourWritesTimeoutMs: number;
  bodyLimit: string;
  trustProxy: string | boolean | number;
  /** External OpenID issuer; unset means the built-in dev provider at /core. */
  oidcIssuer?: string;
  /** The token claims that carry the account id and the role (an external provider's names for them). */
  oidcTenantClaim: string;
  oidcRoleClaim: string;
  oidcAudience?: string;
  /** DASHBOARD_TOKEN_URL: where /dashboard asks for a token; default the dev provider's, or the external issuer's token_endpoint (discovery). */
  dashboardTokenUrl?: string;
  /** Base URL clients use to reach this service (the dev issuer is `<publicUrl>/core`). */
  publicUrl?: string;
  /** Enables /admin/v1. */
  adminApiKey?: string;
  tokenTtlSeconds: number;
  /** Dev provider refresh tokens: a sign-in's absolute lifetime and how long one may lie unused. */
  refreshTokenTtlSeconds: number;
  refreshTokenIdleSeconds: number;
  /** Dev provider refresh tokens: how long a just-spent token still answers its successor (0: never). */
  refreshTokenReuseGraceSeconds: number;
  /** Per source IP per minute on the whole API (60 s block on excess); 0 switches it off. */
  rateLimitPerMinute: number;
  /** Per source IP per minute on POST /comms/v1/api/comms/send, on top; 0 switches it off. */
  sendRateLimitPerMinute: number;
  /** WEBHOOK_ALLOW_INSECURE=true (development and tests only): webhooks may use http:// and loopback/private hosts. */
  webhookAllowInsecure: boolean;
  /** WEBHOOK_RETRY_DELAYS_MS: the backoff schedule in ms (attempts = delays + 1); unset = about 10 attempts over 8 h. */
  webhookRetryDelaysMs?: number[];
  /** WEBHOOK_TIMEOUT_MS: how long one delivery attempt may take (default 10 s). */
  webhookTimeoutMs: number;
  /**
   * COMMS_HISTORY_RETENTION_DAYS: days the comms events feed and the webhook delivery log keep an
   * entry (a delivery: once finished); 0 keeps them for ever. Default 30.
   */
  commsHistoryRetentionDays: number;
  /**
   * WEBHOOK_ENCRYPTION_KEYS: `id:key,...` (32-byte keys, base64/base64url/hex) that encrypt webhook secrets;
   * WEBHOOK_ENCRYPTION_KEY_ID names the one new secrets use (default the first). Unset: a key file
   * generated under DATA_DIR/webhooks/ on first start (development).
   */
  webhookEncryptionKeys?: { id: string; key: Buffer }[];
  webhookEncryptionKeyId?: string;
  /** EXPORT_DIR: where guest export files are written (default DATA_DIR/exports). */
  exportDir: string;
  /** EXPORT_TTL_MINUTES: how long an export's download url works (default 60). */
  exportTtlMinutes: number;
  /** Invitation emails (spec: Comms template, check-in rule 1); see commsConfig. */
  comms: CommsConfig;
  /** Graceful shutdown on SIGTERM (docs/operations.md, Shutdown). */
  shutdown: ShutdownConfig;
  /**
   * READ_STORE_MISMATCH: what to do when the read store holds another event store's read models
   * (src/projections/store-identity.ts): `refuse` (default) or `rebuild` (projections role).
   */
  readStoreMismatch: 'refuse' | 'rebuild';
  /** Metrics and load shedding (docs/operations.md); see observabilityConfig. */
  observability: ObservabilityConfig;
  /** The HTTP server behind load balancers and for browsers (docs/operations.md, "HTTP behind load balancers and for browsers"). */
  http: HttpConfig;
  /** Crypto-shredding and retention of guests' personal data (docs/personal-data.md). */
  personalData: PersonalDataConfig;
}

export interface PersonalDataConfig {
  /**
   * PII_MASTER_KEYS: `id:key,...` (32-byte keys, base64/base64url/hex) that wrap the guests' data keys;
   * PII_MASTER_KEY_ID names the one new keys are wrapped with (default the first). Unset: a key file
   * generated under DATA_DIR/personal-data/ on first start (development only).
   */
  masterKeys?: { id: string; key: Buffer }[];
  masterKeyId?: string;
  /** PII_ENCRYPTION=off stores personal fields in plaintext (benchmark baseline only; default on). */
  encryption: boolean;
  /** RETENTION_SWEEP_MS: how often the retention worker looks for events past their retention (default 1 h). */
  retentionSweepMs: number;
}

export interface HttpConfig {
  /**
   * HTTP_KEEP_ALIVE_TIMEOUT_MS: how long an idle kept-alive connection stays open (default 65000).
   * Longer than the idle timeout of the load balancer in front (AWS ALB and nginx 60 s), so the
   * balancer, never Node, closes an idle connection: one Node closes as the balancer reuses it is a 502.
   */
  keepAliveTimeoutMs: number;
  /** HTTP_COMPRESSION: gzip or brotli for answers of 1 KiB or more that the client accepts so (on or off; default on). */
  compression: boolean;
  /** CORS_ORIGINS: the browser origins (`https://door.example.com`) that may call the API; empty: no CORS headers. */
  corsOrigins: string[];
}

export interface ShutdownConfig {
  /** SHUTDOWN_IDLE_GRACE_MS: how long a kept-alive client has to send its next request (answered with Connection: close) before idle sockets are closed; default 1000. */
  idleGraceMs: number;
  /** SHUTDOWN_DRAIN_TIMEOUT_MS: requests still in flight after this are cut off; default 8000. */
  drainTimeoutMs: number;
  /** SHUTDOWN_TIMEOUT_MS: the process exits by then whatever is left (exit code 1, naming the step); default 14000. */
  timeoutMs: number;
}

export interface ObservabilityConfig {
  /** METRICS_TOKEN: GET /metrics then needs `Authorization: Bearer <token>`; unset, it answers only on loopback. */
  metricsToken?: string;
  /** METRICS_PORT: for a process without the api role, a listener of its own for /metrics and /healthz. */
  metricsPort?: number;
  /** OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: above this mean event-loop delay, new requests get 503 (default 50; 0 = off). */
  overloadMaxEventLoopDelayMs: number;
  /** OVERLOAD_RETRY_AFTER_SECONDS: the Retry-After of those 503s (default 1). */
  overloadRetryAfterSeconds: number;
  /** OVERLOAD_MIN_IN_FLIGHT: requests still accepted at a time while overloaded, so work goes on (default 8). */
  overloadMinInFlight: number;
  /**
   * OVERLOAD_MAX_IN_FLIGHT: API requests in flight at most, overloaded or not; more are refused
   * at once with 503 (default 32; 0: no cap). Off with the rest of load shedding.
   */
  overloadMaxInFlight: number;
}

export interface CommsConfig {
  /** SENDGRID_API_KEY: sends go through SendGrid; SENDGRID_BASE_URL points the client at another host (a test double). */
  sendgridApiKey?: string;
  sendgridBaseUrl?: string;
  /** SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: enables the provider event intake and verifies its ECDSA signatures. */
  sendgridEventPublicKey?: string;
  /** SMTP_URL: sends go to this SMTP server (when SendGrid is not configured). */
  smtpUrl?: string;
  /** OUTBOX_DIR: where the embedded mailer writes `.eml` files (default DATA_DIR/outbox). */
  outboxDir: string;
  /** OUTBOX_RETENTION_DAYS: days an `.eml` file of the outbox is kept (default 30); 0 keeps them for ever. */
  outboxRetentionDays: number;
  /** INVITES_SENDING_ADDRESS / INVITES_SENDER_NAME: the From of sends whose template names none. */
  sendingAddress: string;
  senderName?: string;
  /** SPAM_BLOCKED_DOMAINS: links to these domains (and their subdomains) fail the spam check. */
  blockedLinkDomains: string[];
  /** SEND_RETRY_DELAYS_MS: waits before retrying a send the provider refused for now (attempts = delays + 1). */
  sendRetryDelaysMs: number[];
  /**
   * SEND_CREDENTIALS_RETRY_DELAYS_MS: waits before trying again a send the provider refused on our
   * credentials, the last one repeating (default 10 s, 30 s, 1 min, 2 min, 5 min).
   */
  sendCredentialsRetryDelaysMs: number[];
  /** SEND_CREDENTIALS_HOLD_MS: how long such a send is held before it fails as provider_credentials_refused (default a day). */
  sendCredentialsHoldMs: number;
  /** SEND_CONCURRENCY: emails in flight at once in one worker process. */
  sendConcurrency: number;
  /**
   * SEND_LEASE_MS: how long a send attempt is held without a heartbeat (renewed every third of
   * it while it runs); after a kill another worker takes it over once this passes. Default 10 s.
   */
  sendLeaseMs: number;
  /** WORKER_SWEEP_MS: how often a worker looks for sends and webhook deliveries no live worker holds. Default 5 s. */
  sweepMs: number;
}

/** pino's levels (LOG_LEVEL). */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export type Role = 'api' | 'projections' | 'relay' | 'workers' | 'all';
export const roles: Role[] = ['api', 'projections', 'relay', 'workers', 'all'];

/**
 * The longest wait a Node timer takes: a longer setTimeout/setInterval fires after 1 ms instead
 * (TimeoutOverflowWarning), so RETENTION_SWEEP_MS=3000000000 would sweep a thousand times a second.
 */
const maxTimerMs = 2_147_483_647;

/** What a whole-number setting takes besides "not negative": its range, and a good value to show. */
interface WholeRule {
  min?: number;
  max?: number;
  /** The unit and why the bound, said after it ("milliseconds; ..."). */
  why?: string;
  /** A good value for the message; default the setting's default. */
  example?: number;
}

/** Reads a whole-number setting; a value it cannot take is a problem naming it, the rule and a good value. */
type WholeReader = (name: string, fallback: number, rule?: WholeRule) => number;

/** A whole number written in decimal digits, else NaN: Number() would also read 1e3, 0x10 and 0b1, numbers nobody meant to write. */
const wholeNumber = (text: string): number => (/^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN);

/**
 * Cores from which WORKERS_THREAD=auto runs the workers on a thread of their own: the door's
 * thread, the workers' thread, and one for the rest (SQLite's fsyncs, GC, other processes). On
 * two cores the thread only competes with the door (docs/benchmarks.md, "The door while
 * invitations go out").
 */
export const WORKERS_THREAD_AUTO_CORES = 3;

const workersThreadValue = (raw: string | undefined): string => (raw ?? '').trim().toLowerCase();

/** WORKERS_THREAD (on, off, auto) as a decision, given the cores this process may use. */
export function workersThreadSetting(raw: string | undefined, cores: number, problems: string[]): boolean {
  const value = workersThreadValue(raw);
  if (value === 'on') return true;
  if (value === 'off') return false;
  if (value !== '' && value !== 'auto') problems.push(`WORKERS_THREAD must be on, off or auto (the default: on from ${WORKERS_THREAD_AUTO_CORES} cores), got "${raw}"`);
  return cores >= WORKERS_THREAD_AUTO_CORES;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const int: WholeReader = (name, fallback, rule = {}) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = wholeNumber(raw);
    const example = rule.example ?? fallback;
    if (!Number.isInteger(value) || value < 0) {
      problems.push(`${name} must be a non-negative integer such as ${example}, got "${raw}"`);
    } else if (value < (rule.min ?? 0) || value > (rule.max ?? Infinity)) {
      const range = `at least ${rule.min ?? 0}${rule.max === undefined ? '' : ` and at most ${rule.max}`}`;
      problems.push(`${name} must be ${range}${rule.why ? ` (${rule.why})` : ''}, such as ${example}, got ${value}`);
    }
    return value;
  };
  /** A setting in milliseconds that a timer waits (at most maxTimerMs). */
  const ms = (name: string, fallback: number, min: number): number => int(name, fallback, { min, max: maxTimerMs, why: 'milliseconds' });
  const onOff = (name: string, fallback: boolean): boolean => {
    const raw = (env[name] ?? '').trim().toLowerCase();
    if (raw === '') return fallback;
    if (raw !== 'on' && raw !== 'off') problems.push(`${name} must be on or off, such as ${fallback ? 'on' : 'off'} (the default), got "${env[name]}"`);
    return raw === 'on';
  };
  const synchronous = (env.SQLITE_SYNCHRONOUS || 'FULL').toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') problems.push(`SQLITE_SYNCHRONOUS must be FULL (the default) or NORMAL, got "${env.SQLITE_SYNCHRONOUS}"`);
  const config: Config = {
    port: int('PORT', 8080),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    logLevel: env.LOG_LEVEL || 'info',
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    // The server refuses to start with a MaxAppendSize over its largest record, 16 MiB less
    // 10,000 bytes (ClusterVNodeOptionsValidator.cs, TFConsts.EffectiveMaxLogRecordSize, 24.10).
    eventStoreMaxAppendBytes: int('EVENTSTORE_MAX_APPEND_SIZE', 1_048_576, { min: 65_536, max: 16_767_216, why: "bytes; the server's default is 1048576, its largest 16767216" }),
    mongoUrl: env.MONGO_URL || undefined,
    mongoDb: env.MONGO_DB || 'checkin',
    kafkaBrokers: env.KAFKA_BROKERS ? env.KAFKA_BROKERS.split(',').map((b) => b.trim()) : undefined,
    kafkaMaxBatchBytes: int('KAFKA_MAX_BATCH_BYTES', defaultKafkaMaxBatchBytes, { min: minKafkaMaxBatchBytes, why: "bytes, and at most the topics' max.message.bytes" }),
    kafkaNamespace: env.KAFKA_NAMESPACE || undefined,
    ...kafkaSecurityConfig(env, problems),
    kafkaReplicationFactor: env.KAFKA_REPLICATION_FACTOR ? int('KAFKA_REPLICATION_FACTOR', 0, { min: 1, example: 3, why: 'replicas of each topic the service creates, at most the number of brokers' }) : undefined,
    sqliteSynchronous: synchronous as 'FULL' | 'NORMAL',
    workersThread: workersThreadSetting(env.WORKERS_THREAD, availableParallelism(), problems),
    workersThreadAuto: !['on', 'off'].includes(workersThreadValue(env.WORKERS_THREAD)),
    readYourWritesTimeoutMs: ms('READ_YOUR_WRITES_TIMEOUT_MS', 2000, 0),
    // Spec Limits: 200 records per call, each with an image "under 50 kB" (68,268 base64 characters)
    // and its other fields, must fit: 200 x 80 kB (docs/identifiers.md, Request bodies).
    bodyLimit: env.BODY_LIMIT || '16mb',
    trustProxy: parseTrustProxy(env.TRUST_PROXY, problems),
    oidcIssuer: env.OIDC_ISSUER || undefined,
    oidcTenantClaim: env.OIDC_TENANT_CLAIM || 'tenant',
    oidcRoleClaim: env.OIDC_ROLE_CLAIM || 'role',
    oidcAudience: env.OIDC_AUDIENCE || undefined,
    dashboardTokenUrl: env.DASHBOARD_TOKEN_URL || undefined,
    publicUrl: env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : undefined,
    adminApiKey: env.ADMIN_API_KEY || undefined,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 3600, { min: 1, max: 31_536_000, why: 'seconds, a year at most; a token of 0 s is expired when issued' }),
    refreshTokenTtlSeconds: int('REFRESH_TOKEN_TTL_SECONDS', 2_592_000, { min: 60, max: 31_536_000, why: 'seconds from the password sign-in, a year at most' }),
    refreshTokenIdleSeconds: int('REFRESH_TOKEN_IDLE_SECONDS', 604_800, { min: 60, max: 31_536_000, why: 'seconds a refresh token may lie unused, a year at most' }),
    refreshTokenReuseGraceSeconds: int('REFRESH_TOKEN_REUSE_GRACE_SECONDS', 30, { min: 0, max: 300, why: 'seconds a just-rotated refresh token is still taken (0 turns it off), five minutes at most' }),
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 1000),
    sendRateLimitPerMinute: int('SEND_RATE_LIMIT_PER_MINUTE', 300),
    ...webhookConfig(env, problems, int),
    exportDir: path.resolve(env.EXPORT_DIR || path.join(env.DATA_DIR || './data', 'exports')),
    exportTtlMinutes: int('EXPORT_TTL_MINUTES', 60, { min: 1, max: 525_600, why: 'minutes, a year at most: a download of guests\' personal data should not outlive the event by much, and past the calendar\'s end no expiry can be written' }),
    comms: commsConfig(env, problems, int),
    shutdown: {
      idleGraceMs: ms('SHUTDOWN_IDLE_GRACE_MS', 1000, 0),
      drainTimeoutMs: ms('SHUTDOWN_DRAIN_TIMEOUT_MS', 8000, 0),
      timeoutMs: ms('SHUTDOWN_TIMEOUT_MS', 14_000, 1),
    },
    readStoreMismatch: env.READ_STORE_MISMATCH === 'rebuild' ? 'rebuild' : 'refuse',
    observability: {
      metricsToken: env.METRICS_TOKEN || undefined,
      metricsPort: env.METRICS_PORT ? int('METRICS_PORT', 0, { example: 9464 }) : undefined,
      overloadMaxEventLoopDelayMs: int('OVERLOAD_MAX_EVENT_LOOP_DELAY_MS', 50),
      overloadRetryAfterSeconds: int('OVERLOAD_RETRY_AFTER_SECONDS', 1, { min: 1, why: 'seconds' }),
      overloadMinInFlight: int('OVERLOAD_MIN_IN_FLIGHT', 8),
      overloadMaxInFlight: int('OVERLOAD_MAX_IN_FLIGHT', 32),
    },
    personalData: personalDataConfig(env, problems, int),
    http: {
      keepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, {
        min: 1000,
        // The header timeout is set a second above it, and both are timers.
        max: maxTimerMs - 1000,
        why: 'milliseconds, longer than the idle timeout of the load balancer in front: AWS ALB and nginx 60 s, Google Cloud 600 s',
      }),
      compression: onOff('HTTP_COMPRESSION', true),
      corsOrigins: parseOrigins(env.CORS_ORIGINS, problems),
    },
  };
  if (config.eventStoreUrl) {
    const problem = connectionStringProblem(config.eventStoreUrl);
    if (problem) problems.push(`EVENTSTORE_URL must be an EventStoreDB connection string such as esdb://localhost:2113?tls=false: ${problem}`);
  }
  // The MongoDB driver parses its URL in the constructor (no connection is made); unparsed, the start
  // crashed with a MongoParseError that named no variable. So did a SendGrid key that is not one.
  if (config.mongoUrl) {
    try {
      new MongoClient(config.mongoUrl);
    } catch (error) {
      problems.push(`MONGO_URL must be a MongoDB connection string such as mongodb://localhost:27017: ${withoutCredentials((error as Error).message)}`);
    }
  }
  // @sendgrid/client only warns on stdout ('API key does not start with "SG."'), and every send then
  // failed 401: a key id or the secret of another service pasted in. The key is not echoed.
  if (config.comms.sendgridApiKey !== undefined && !config.comms.sendgridApiKey.trim().startsWith('SG.')) {
    problems.push('SENDGRID_API_KEY must be a SendGrid API key, which starts with SG. (SendGrid, Settings, API Keys shows it once when created; the key id is not the key)');
  }
  if (config.comms.sendgridEventPublicKey) {
    try {
      sendgridSignatureVerifier(config.comms.sendgridEventPublicKey);
    } catch (error) {
      problems.push(`SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY must be the verification key SendGrid shows for its signed Event Webhook (base64 or PEM): ${(error as Error).message}`);
    }
  }
  // Not URLs, these made every bearer token uncheckable (503 identity_provider_unavailable on every
  // request, 'Invalid URL' in a warning) or the dashboard's sign-in fail, with the start looking fine.
  // SENDGRID_BASE_URL the same way: the client joins it with /v3/mail/send, so every send failed instead.
  for (const [name, value, example] of [
    ['PUBLIC_URL', config.publicUrl, 'https://checkin.example.com'],
    ['OIDC_ISSUER', config.oidcIssuer, 'https://login.example.com/'],
    ['DASHBOARD_TOKEN_URL', config.dashboardTokenUrl, 'https://login.example.com/oauth/token'],
    ['SENDGRID_BASE_URL', config.comms.sendgridBaseUrl, 'https://api.sendgrid.com'],
  ] as const) {
    if (value !== undefined && !urlWithHost(value, ['http:', 'https:'])) problems.push(`${name} must be an http:// or https:// URL such as ${example}, got ${shown(value)}`);
  }
  // The driver refuses a '.' only when the read store opens (exit 1, no variable named); MongoDB refuses the rest at the first write.
  // MongoDB counts the 63 in bytes (UTF-8: DatabaseName::kMaxDatabaseNameLength): `é` takes two.
  if (env.MONGO_DB !== undefined && env.MONGO_DB !== '' && (!/^[^/\\. "$*<>:|?\0]+$/.test(env.MONGO_DB) || Buffer.byteLength(env.MONGO_DB, 'utf8') > 63)) {
    problems.push(`MONGO_DB must be a MongoDB database name such as checkin (at most 63 bytes in UTF-8, none of / \\ . " $ * < > : | ? or a space), got ${JSON.stringify(env.MONGO_DB)}`);
  }
  // A link's host is compared with each entry and its subdomains: 'https://evil.example' or '*.evil.example' matched nothing.
  const wrongDomains = config.comms.blockedLinkDomains.filter((domain) => !blockableDomain(domain));
  if (wrongDomains.length > 0) {
    problems.push(
      `SPAM_BLOCKED_DOMAINS must be comma-separated domain names such as evil.example,spam.example (subdomains are blocked with them; no scheme, path or *), got ${wrongDomains.map((d) => JSON.stringify(d)).join(', ')}`,
    );
  }
  // nodemailer takes any string: without smtp:// a host name (SMTP_URL=mail.example.com) is read as
  // no host at all, and every invitation would go to localhost:587.
  if (config.comms.smtpUrl && !urlWithHost(config.comms.smtpUrl, ['smtp:', 'smtps:'])) {
    problems.push(`SMTP_URL must be a URL such as smtps://user:password@mail.example.com:465 or smtp://mail.example.com:587 (smtp:// or smtps:// and a host)`);
  }
  // Express and Node would refuse these later with a stack trace that names no variable.
  for (const [name, value] of [['PORT', config.port], ['METRICS_PORT', config.observability.metricsPort]] as const) {
    if (value !== undefined && value > 65_535) problems.push(`${name} must be a port number from 0 to 65535, got ${value}`);
  }
  // Node looks HOST up only when it listens: 'http://0.0.0.0' or '0.0.0.0:8080' failed there
  // (getaddrinfo ENOTFOUND, exit 1) with a stack trace that named no variable.
  if (!listenHost(config.host)) {
    problems.push(`HOST must be an IP address or a host name to listen on, such as 127.0.0.1, 0.0.0.0 or :: (no scheme, port or brackets; the port is PORT), got ${JSON.stringify(config.host)}`);
  }
  // kafkajs splits each broker at ':' and dials the two halves: 'http://kafka:9092' is a host 'http' on
  // port NaN, and 'kafka:abc' port NaN, both found only when the bus never connects. An empty entry
  // ('kafka-1:9092,' or ',' alone, a template's unset variable) was dropped, and ',' left no broker at all.
  const wrongBrokers = (config.kafkaBrokers ?? []).filter((broker) => !kafkaBroker(broker));
  if (wrongBrokers.length > 0) {
    problems.push(
      `KAFKA_BROKERS must be comma-separated host:port pairs such as kafka-1:9092,kafka-2:9092 (no scheme, no empty entries, an IPv4 address or a host name), got ${wrongBrokers.map(shown).join(', ')}`,
    );
  }
  // bytes.parse reads any leading digits: '16m' (nginx's spelling) was 16 bytes and '1e6' 1 byte, so every request was 413.
  if (!/^(\d+ *b?|\d+(\.\d+)? *(kb|mb|gb|tb|pb))$/i.test(config.bodyLimit) || typeof bytes.parse(config.bodyLimit) !== 'number') {
    problems.push(`BODY_LIMIT must be a size such as 16mb, 512kb or a number of bytes, got "${config.bodyLimit}"`);
  }
  // A file where a folder belongs stopped the start in mkdir (EEXIST, exit 1) without naming the variable.
  // (OUTBOX_DIR and EXPORT_DIR only when set: by default they are in DATA_DIR, which is named then.)
  for (const [name, folder, example] of [
    ['DATA_DIR', config.dataDir, './data'],
    ['OUTBOX_DIR', env.OUTBOX_DIR && config.comms.outboxDir, './data/outbox'],
    ['EXPORT_DIR', env.EXPORT_DIR && config.exportDir, './data/exports'],
  ] as const) {
    const file = folder ? fileInTheWay(folder) : undefined;
    if (file) problems.push(`${name} must be a folder, or a path where one can be created, such as ${example}; ${file} is a file`);
  }
  // pino throws on a level it does not know, which would crash the start without naming the variable.
  if (!logLevels.includes(config.logLevel)) problems.push(`LOG_LEVEL must be one of ${logLevels.join(', ')}, got "${config.logLevel}"`);
  // RFC 9068 4: a resource server checks `aud`. Without it, every token of the issuer (ID tokens, tokens for other APIs) would do.
  if (config.oidcIssuer && !config.oidcAudience) {
    problems.push("OIDC_AUDIENCE must be set with OIDC_ISSUER: the API's own identifier, which the provider puts in `aud` of the access tokens meant for it (README, Authentication and roles)");
  }
  if (env.READ_STORE_MISMATCH && !['refuse', 'rebuild'].includes(env.READ_STORE_MISMATCH)) {
    problems.push(`READ_STORE_MISMATCH must be refuse (the default) or rebuild, got "${env.READ_STORE_MISMATCH}"`);
  }
  if (config.observability.metricsToken !== undefined && config.observability.metricsToken.length < 16) {
    problems.push('METRICS_TOKEN must be at least 16 characters, such as the output of openssl rand -hex 32');
  }
  // Past the whole bound the process exits 1 mid-drain: a request given SHUTDOWN_DRAIN_TIMEOUT_MS to finish never had it.
  if (config.shutdown.timeoutMs <= config.shutdown.drainTimeoutMs) {
    problems.push(
      `SHUTDOWN_TIMEOUT_MS must be more than SHUTDOWN_DRAIN_TIMEOUT_MS (the whole shutdown bounds the drain and the steps after it), such as 14000 with 8000, got ${config.shutdown.timeoutMs} with ${config.shutdown.drainTimeoutMs}`,
    );
  }
  // The floor of requests accepted while overloaded is taken above the cap, so a larger floor would quietly be the cap.
  const { overloadMinInFlight: floor, overloadMaxInFlight: cap } = config.observability;
  if (cap > 0 && floor > cap) {
    problems.push(`OVERLOAD_MIN_IN_FLIGHT must be at most OVERLOAD_MAX_IN_FLIGHT (requests accepted while overloaded, under the cap on all), such as 8 with 32, got ${floor} with ${cap}`);
  }
  if (config.kafkaNamespace !== undefined && !kafkaNamespacePattern.test(config.kafkaNamespace)) {
    problems.push(`KAFKA_NAMESPACE may hold only letters, digits, '.', '_' and '-' (at most 100), such as staging-eu, got ${JSON.stringify(config.kafkaNamespace)}`);
  }
  if (config.adminApiKey !== undefined && config.adminApiKey.length < 16) {
    problems.push('ADMIN_API_KEY must be at least 16 characters, such as the output of openssl rand -hex 32');
  }
  if (problems.length > 0) throw new Error(`invalid configuration: ${problems.join('; ')}`);
  return config;
}

function webhookConfig(env: NodeJS.ProcessEnv, problems: string[], int: WholeReader): Pick<
  Config,
  'webhookAllowInsecure' | 'webhookRetryDelaysMs' | 'webhookTimeoutMs' | 'webhookEncryptionKeys' | 'webhookEncryptionKeyId' | 'commsHistoryRetentionDays'
> {
  const insecure = (env.WEBHOOK_ALLOW_INSECURE || 'false').toLowerCase();
  if (insecure !== 'true' && insecure !== 'false') problems.push(`WEBHOOK_ALLOW_INSECURE must be true or false (the default), got "${env.WEBHOOK_ALLOW_INSECURE}"`);
  let delays: number[] | undefined;
  if (env.WEBHOOK_RETRY_DELAYS_MS) {
    // An empty entry ('5000,,60000') read as 0 ms, a retry at once that nobody asked for.
    const entries = env.WEBHOOK_RETRY_DELAYS_MS.split(',').map((d) => d.trim());
    delays = entries.map(wholeNumber);
    if (entries.some((d) => d === '') || delays.some((d) => !Number.isInteger(d) || d < 0)) {
      problems.push(`WEBHOOK_RETRY_DELAYS_MS must be comma-separated non-negative integers (milliseconds) such as 5000,30000,120000, got "${env.WEBHOOK_RETRY_DELAYS_MS}"`);
    }
  }
  const timeout = int('WEBHOOK_TIMEOUT_MS', 10_000, { min: 1, max: maxTimerMs, why: 'milliseconds' });
  const historyDays = int('COMMS_HISTORY_RETENTION_DAYS', 30, { max: 36_500, example: 30, why: 'days (0 keeps the history for ever)' });
  // A delivery is removed only once finished, but a window inside the retry schedule would empty the
  // log of deliveries a receiver is still being retried for by the time it reconciles.
  const retryWindowMs = (delays ?? defaultWebhookRetryDelaysMs).reduce((sum, d) => sum + (Number.isInteger(d) ? d : 0), 0);
  if (historyDays > 0 && historyDays * 86_400_000 <= retryWindowMs) {
    problems.push(
      `COMMS_HISTORY_RETENTION_DAYS must be longer than the webhook retry schedule (WEBHOOK_RETRY_DELAYS_MS, ${Math.ceil(retryWindowMs / 86_400_000)} days), or 0, got ${historyDays}`,
    );
  }
  const { keys, keyId } = keyList(env, 'WEBHOOK_ENCRYPTION_KEYS', 'WEBHOOK_ENCRYPTION_KEY_ID', problems);
  return {
    webhookAllowInsecure: insecure === 'true',
    webhookRetryDelaysMs: delays,
    webhookTimeoutMs: timeout,
    commsHistoryRetentionDays: historyDays,
    webhookEncryptionKeys: keys,
    webhookEncryptionKeyId: keyId,
  };
}

/**
 * KAFKA_SSL, KAFKA_SSL_CA_FILE, KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE and KAFKA_SASL_*. A problem
 * names the variable and never holds the password nor the private key (nor a file's contents: a
 * password file given as the CA file is not echoed).
 */
function kafkaSecurityConfig(env: NodeJS.ProcessEnv, problems: string[]): Pick<Config, 'kafkaSsl' | 'kafkaSasl'> {
  const sslRaw = (env.KAFKA_SSL ?? '').trim().toLowerCase();
  if (sslRaw !== '' && sslRaw !== 'true' && sslRaw !== 'false') problems.push(`KAFKA_SSL must be true or false (the default), got ${JSON.stringify(env.KAFKA_SSL)}`);
  let kafkaSsl: Config['kafkaSsl'];
  if (sslRaw === 'true') kafkaSsl = true;
  const tlsFiles: { ca?: string; cert?: string; key?: string } = {};
  if (env.KAFKA_SSL_CA_FILE) {
    const file = env.KAFKA_SSL_CA_FILE;
    if (sslRaw !== 'true') problems.push('KAFKA_SSL_CA_FILE is set but KAFKA_SSL is not true: set KAFKA_SSL=true for TLS to the brokers, or unset KAFKA_SSL_CA_FILE');
    const ca = readSetting('KAFKA_SSL_CA_FILE', file, problems);
    if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----')) {
      problems.push(`KAFKA_SSL_CA_FILE must be a PEM file of the CA certificates that signed the brokers' certificates (-----BEGIN CERTIFICATE-----), ${JSON.stringify(file)} holds none`);
    } else if (ca !== undefined) tlsFiles.ca = ca;
  }
  // Mutual TLS (a client certificate: Aiven, MSK with TLS authentication): the certificate and its key go together.
  const certFile = env.KAFKA_SSL_CERT_FILE || undefined;
  const keyFile = env.KAFKA_SSL_KEY_FILE || undefined;
  if (certFile || keyFile) {
    const given = [certFile && 'KAFKA_SSL_CERT_FILE', keyFile && 'KAFKA_SSL_KEY_FILE'].filter(Boolean).join(' and ');
    if (sslRaw !== 'true') problems.push(`${given} ${certFile && keyFile ? 'are' : 'is'} set but KAFKA_SSL is not true: a client certificate is sent only over TLS, set KAFKA_SSL=true`);
    if (!certFile || !keyFile) {
      problems.push(`KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together (the client certificate and its private key, both PEM), only ${given} is set`);
    }
    if (certFile) {
      const cert = readSetting('KAFKA_SSL_CERT_FILE', certFile, problems);
      if (cert !== undefined && !cert.includes('-----BEGIN CERTIFICATE-----')) {
        problems.push(`KAFKA_SSL_CERT_FILE must be a PEM file of this service's client certificate (-----BEGIN CERTIFICATE-----, its chain after it), ${JSON.stringify(certFile)} holds none`);
      } else if (cert !== undefined) tlsFiles.cert = cert;
    }
    if (keyFile) {
      // The key is a secret: a problem names the file, never its contents.
      const key = readSetting('KAFKA_SSL_KEY_FILE', keyFile, problems);
      if (key !== undefined && /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(key)) {
        problems.push(`KAFKA_SSL_KEY_FILE must hold an unencrypted PEM private key, ${JSON.stringify(keyFile)} holds an encrypted one: decrypt it with openssl pkey -in <file> -out <new file> and keep the new file as secret as the old`);
      } else if (key !== undefined && !/-----BEGIN (RSA |EC )?PRIVATE KEY-----/.test(key)) {
        problems.push(`KAFKA_SSL_KEY_FILE must be a PEM file of the client certificate's private key (-----BEGIN PRIVATE KEY-----), ${JSON.stringify(keyFile)} holds none`);
      } else if (key !== undefined) tlsFiles.key = key;
    }
  }
  if (sslRaw === 'true' && Object.keys(tlsFiles).length > 0) kafkaSsl = tlsFiles;
  const mechanismRaw = (env.KAFKA_SASL_MECHANISM ?? '').trim().toLowerCase();
  const username = env.KAFKA_SASL_USERNAME || undefined;
  const passwordSet = Boolean(env.KAFKA_SASL_PASSWORD);
  const passwordFile = env.KAFKA_SASL_PASSWORD_FILE || undefined;
  if (mechanismRaw === '') {
    const stray = (['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE'] as const).filter((name) => env[name]);
    if (stray.length > 0) problems.push(`${stray.join(', ')} ${stray.length > 1 ? 'are' : 'is'} set but KAFKA_SASL_MECHANISM is not: set it to ${kafkaSaslMechanisms.join(', ')} (as the cluster's listener expects)`);
    return { kafkaSsl };
  }
  let ok = true;
  if (!(kafkaSaslMechanisms as readonly string[]).includes(mechanismRaw)) {
    problems.push(`KAFKA_SASL_MECHANISM must be one of ${kafkaSaslMechanisms.join(', ')}, got ${JSON.stringify(env.KAFKA_SASL_MECHANISM)}`);
    ok = false;
  }
  if (!username) {
    problems.push(`KAFKA_SASL_USERNAME must be set with KAFKA_SASL_MECHANISM (the SASL user, for Confluent Cloud the API key)`);
    ok = false;
  }
  let password: string | undefined;
  if (passwordSet && passwordFile) {
    problems.push('KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set: set one of them');
    ok = false;
  } else if (passwordFile) {
    // One trailing line end is dropped: `echo secret > file` and editors add it.
    password = readSetting('KAFKA_SASL_PASSWORD_FILE', passwordFile, problems)?.replace(/\r?\n$/, '');
    if (password === '') problems.push(`KAFKA_SASL_PASSWORD_FILE must name a file holding the password, ${JSON.stringify(passwordFile)} is empty`);
  } else if (passwordSet) password = env.KAFKA_SASL_PASSWORD;
  else problems.push('KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE must be set with KAFKA_SASL_MECHANISM');
  if (!ok || !username || !password) return { kafkaSsl };
  return { kafkaSsl, kafkaSasl: { mechanism: mechanismRaw as KafkaSaslMechanism, username, password } };
}

/** A file a setting names, as text; a problem naming the setting (not the contents) when it cannot be read. */
function readSetting(name: string, file: string, problems: string[]): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`${name} must name a readable file, ${JSON.stringify(file)}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    return undefined;
  }
}

/**
 * A wrong value as a problem shows it, without a password: `user:secret@` before a host (a URL with
 * a mistyped scheme, `htps//user:secret@host`, a broker written `user:secret@kafka:9092`) is
 * shown `user:***@`, as withoutCredentials does for a well-formed URL.
 */
const shown = (value: string): string => JSON.stringify(withoutCredentials(value).replace(/(^|[\s/,])([^\s/:@,]*):[^\s/@,]+@/g, '$1$2:***@'));

/** `<NAME>=id:key,...` and `<NAME>_ID`: a keyring's keys as configured (32-byte keys). */
function keyList(env: NodeJS.ProcessEnv, name: string, idName: string, problems: string[]) {
  let keys: { id: string; key: Buffer }[] | undefined;
  if (env[name]) {
    keys = env[name].split(',').map((entry) => {
      const cut = entry.indexOf(':');
      const id = entry.slice(0, cut).trim();
      const key = parseKey(entry.slice(cut + 1));
      // The key is a secret: the message names the entry by its id, and only one short enough not to be a key written first.
      if (cut <= 0 || !key) {
        const which = cut > 0 && id.length <= 20 ? `the key of "${id}" is not 32 bytes` : 'an entry is not <id>:<key>';
        problems.push(`${name}: each entry must be <id>:<32-byte key in base64 or hex>, such as k1:<output of openssl rand -base64 32>; ${which}`);
      }
      return { id, key: key ?? Buffer.alloc(0) };
    });
  }
  const keyId = env[idName] || undefined;
  if (keyId && !keys?.some((k) => k.id === keyId)) {
    problems.push(`${idName} must name a key in ${name}${keys ? ` (${keys.map((k) => JSON.stringify(k.id)).join(', ')})` : ', which is not set'}, got ${JSON.stringify(keyId)}`);
  }
  return { keys, keyId };
}

function personalDataConfig(env: NodeJS.ProcessEnv, problems: string[], int: WholeReader): PersonalDataConfig {
  const { keys, keyId } = keyList(env, 'PII_MASTER_KEYS', 'PII_MASTER_KEY_ID', problems);
  const encryption = (env.PII_ENCRYPTION || 'on').toLowerCase();
  if (encryption !== 'on' && encryption !== 'off') problems.push(`PII_ENCRYPTION must be on (the default) or off, got "${env.PII_ENCRYPTION}"`);
  const sweep = int('RETENTION_SWEEP_MS', 3_600_000, { min: 1000, max: maxTimerMs, why: 'milliseconds' });
  return { masterKeys: keys, masterKeyId: keyId, encryption: encryption === 'on', retentionSweepMs: sweep };
}

function commsConfig(env: NodeJS.ProcessEnv, problems: string[], int: WholeReader): CommsConfig {
  const list = (raw: string | undefined): string[] => (raw ?? '').split(',').map((item) => item.trim()).filter(Boolean);
  // Empty counts as unset, as for every variable: '' had read as no retries at all.
  const delays = list(env.SEND_RETRY_DELAYS_MS || '2000,10000').map(wholeNumber);
  if (delays.some((d) => !Number.isInteger(d) || d < 0)) {
    problems.push(`SEND_RETRY_DELAYS_MS must be comma-separated non-negative integers (milliseconds) such as 2000,10000, got "${env.SEND_RETRY_DELAYS_MS}"`);
  }
  const credentialDelays = list(env.SEND_CREDENTIALS_RETRY_DELAYS_MS || '10000,30000,60000,120000,300000').map(wholeNumber);
  if (credentialDelays.length === 0 || credentialDelays.some((d) => !Number.isInteger(d) || d < 0 || d > maxTimerMs)) {
    problems.push(`SEND_CREDENTIALS_RETRY_DELAYS_MS must be comma-separated non-negative integers (milliseconds) such as 10000,300000, got "${env.SEND_CREDENTIALS_RETRY_DELAYS_MS}"`);
  }
  const sendingAddress = env.INVITES_SENDING_ADDRESS || 'invites@checkin.localhost';
  if (!/^[^@\s]+@[^@\s]+$/.test(sendingAddress)) problems.push(`INVITES_SENDING_ADDRESS must be an email address such as invites@example.com, got ${JSON.stringify(sendingAddress)}`);
  const concurrency = int('SEND_CONCURRENCY', 8, { min: 1, why: 'emails in flight at once' });
  return {
    sendgridApiKey: env.SENDGRID_API_KEY || undefined,
    sendgridBaseUrl: env.SENDGRID_BASE_URL || undefined,
    sendgridEventPublicKey: env.SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    outboxDir: path.resolve(env.OUTBOX_DIR || path.join(env.DATA_DIR || './data', 'outbox')),
    outboxRetentionDays: int('OUTBOX_RETENTION_DAYS', 30, { max: 36_500, example: 30, why: 'days (0 keeps the emails for ever)' }),
    sendingAddress,
    senderName: env.INVITES_SENDER_NAME || undefined,
    blockedLinkDomains: list(env.SPAM_BLOCKED_DOMAINS).map((d) => d.toLowerCase()),
    sendRetryDelaysMs: delays,
    sendConcurrency: concurrency,
    sendCredentialsRetryDelaysMs: credentialDelays,
    sendCredentialsHoldMs: int('SEND_CREDENTIALS_HOLD_MS', 86_400_000, { min: 0, why: 'milliseconds a send refused on our provider credentials is held and retried' }),
    // A lease is renewed every third of it, at most every 100 ms: one under a second lapses between
    // heartbeats at an ordinary pause, and another worker would take over (and send again) an email
    // still going out; 0 made every attempt stale at once.
    sendLeaseMs: int('SEND_LEASE_MS', 10_000, { min: 1000, max: maxTimerMs, why: 'milliseconds; a shorter lease lapses between heartbeats and the email may go out twice' }),
    // 0 switched the sweep off: a killed worker's sends and deliveries were never taken over.
    sweepMs: int('WORKER_SWEEP_MS', 5_000, { min: 100, max: maxTimerMs, why: 'milliseconds; the sweep takes over the work of a killed worker' }),
  };
}

/** The file that keeps `folder` from being a folder (itself, or a parent of it), if any. */
function fileInTheWay(folder: string): string | undefined {
  for (let at = folder; ; at = path.dirname(at)) {
    let stat: fs.Stats | undefined;
    try {
      stat = fs.statSync(at, { throwIfNoEntry: false });
    } catch (error) {
      // ENOTDIR: a parent is a file, found further up. Anything else (EACCES) is left to the start to report.
      if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') return undefined;
    }
    if (stat) return stat.isDirectory() ? undefined : at;
    if (path.dirname(at) === at) return undefined;
  }
}

/** An address Node's `listen` takes: an IPv4 or IPv6 address, or a host name (RFC 1123 labels). */
function listenHost(host: string): boolean {
  if (isIP(host) !== 0) return true;
  const labels = host.split('.');
  // A last label of digits only is a mistyped IPv4 address (10.0.0.256), which DNS would be asked for.
  return host.length <= 253 && labels.every((label) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(label)) && !/^\d+$/.test(labels.at(-1)!);
}

/** A domain as the spam check compares links with it (src/comms/link-safety.ts): a host name, IDN and a trailing dot allowed. */
function blockableDomain(domain: string): boolean {
  if (/[/:?#@*\\\s]/.test(domain)) return false;
  try {
    return listenHost(new URL(`http://${domain}`).hostname.replace(/\.$/, ''));
  } catch {
    return false;
  }
}

/** `host:port` as kafkajs reads a broker (it splits at ':', so no IPv6 address). */
function kafkaBroker(broker: string): boolean {
  const match = /^([^:]+):(\d{1,5})$/.exec(broker);
  return match !== null && listenHost(match[1]!) && Number(match[2]) >= 1 && Number(match[2]) <= 65_535;
}

/** Whether `raw` is a URL of one of these schemes (`http:`, ...) with a host. */
function urlWithHost(raw: string, schemes: readonly string[]): boolean {
  try {
    const url = new URL(raw);
    return schemes.includes(url.protocol) && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * CORS_ORIGINS: comma-separated origins, each as a browser sends it in `Origin` (scheme, host and
 * a port other than the scheme's default; no path). A trailing `/` is dropped and the scheme and
 * host are lowercased, as browsers send them; `https://x.example/app` names no origin, and `*`
 * or `null` would let any page (or any sandboxed one) in: each is refused naming the entry.
 * Schemes other than http(s) are taken for app shells (`capacitor://localhost`).
 */
function parseOrigins(raw: string | undefined, problems: string[]): string[] {
  const entries = (raw ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  const origins: string[] = [];
  const wrong: string[] = [];
  for (const entry of entries) {
    const origin = originOf(entry);
    if (origin) origins.push(origin);
    else wrong.push(entry);
  }
  if (wrong.length > 0) {
    problems.push(
      `CORS_ORIGINS must be comma-separated origins such as https://door.example.com,http://localhost:5173 (scheme, host and port only; no path, no * or null), got ${wrong.map((w) => JSON.stringify(w)).join(', ')}`,
    );
  }
  return [...new Set(origins)];
}

/** `entry` as a browser serializes its origin, or undefined when it is not one. */
function originOf(entry: string): string | undefined {
  // scheme://host[:port], at most a trailing slash: nothing else is in an Origin header (no user, path or query).
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s]+\/?$/i.test(entry)) return undefined;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  if (url.host === '') return undefined;
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : `${url.protocol}//${url.host}`;
}

/** The names Express's `trust proxy` (proxy-addr) takes for ranges. */
const trustProxyNames = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * Express `trust proxy`: "true"/"false" (any case), a hop count, or a comma-separated list of
 * addresses, subnets (`10.0.0.0/8`, `10.0.0.0/255.0.0.0`, `fc00::/7`) and the names loopback,
 * linklocal, uniquelocal. Anything else is a problem here: proxy-addr would throw at start
 * ("invalid IP address: yes") without naming the variable.
 */
function parseTrustProxy(raw: string | undefined, problems: string[]): string | boolean | number {
  if (raw === undefined || raw === '' || raw.toLowerCase() === 'false') return false;
  if (raw.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const wrong = raw.split(',').map((entry) => entry.trim()).filter((entry) => !trustProxyEntry(entry));
  if (wrong.length > 0) {
    problems.push(
      `TRUST_PROXY must be true, false, a hop count, or comma-separated proxy addresses or subnets (or loopback, linklocal, uniquelocal), got ${wrong.map((w) => JSON.stringify(w)).join(', ')}`,
    );
  }
  return raw;
}

function trustProxyEntry(entry: string): boolean {
  if (trustProxyNames.includes(entry)) return true;
  const [address = '', range, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (/^\d+$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  if (family !== 4 || isIP(range) !== 4) return false;
  // A netmask: ones, then zeros (255.255.0.0), as proxy-addr requires.
  const bits = range.split('.').reduce((mask, octet) => mask * 256 + Number(octet), 0);
  return /^1*0*$/.test(bits.toString(2).padStart(32, '0'));
}
