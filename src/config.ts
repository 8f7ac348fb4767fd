import path from 'node:path';

/** The one config reader (DESIGN.md section 6). Only the composition root and the CLIs call it. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: string;
  eventStoreUrl?: string;
  mongoUrl?: string;
  mongoDb: string;
  kafkaBrokers?: string[];
  /** FULL (default) fsyncs each append; NORMAL trades the last writes on power loss for speed. */
  sqliteSynchronous: 'FULL' | 'NORMAL';
  readYourWritesTimeoutMs: number;
  bodyLimit: string;
  trustProxy: string | boolean | number;
  /** External OpenID issuer; unset means the built-in dev provider at /core. */
  oidcIssuer?: string;
  oidcAudience?: string;
  /** Base URL clients use to reach this service (the dev issuer is `<publicUrl>/core`). */
  publicUrl?: string;
  /** Enables /admin/v1. */
  adminApiKey?: string;
  tokenTtlSeconds: number;
}

export type Role = 'api' | 'projections' | 'relay' | 'workers' | 'all';
export const roles: Role[] = ['api', 'projections', 'relay', 'workers', 'all'];

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const int = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) problems.push(`${name} must be a non-negative integer, got "${raw}"`);
    return value;
  };
  const synchronous = (env.SQLITE_SYNCHRONOUS ?? 'FULL').toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') problems.push(`SQLITE_SYNCHRONOUS must be FULL or NORMAL`);
  const config: Config = {
    port: int('PORT', 8080),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    logLevel: env.LOG_LEVEL || 'info',
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    mongoUrl: env.MONGO_URL || undefined,
    mongoDb: env.MONGO_DB || 'checkin',
    kafkaBrokers: env.KAFKA_BROKERS ? env.KAFKA_BROKERS.split(',').map((b) => b.trim()).filter(Boolean) : undefined,
    sqliteSynchronous: synchronous as 'FULL' | 'NORMAL',
    readYourWritesTimeoutMs: int('READ_YOUR_WRITES_TIMEOUT_MS', 2000),
    bodyLimit: env.BODY_LIMIT || '5mb',
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    oidcIssuer: env.OIDC_ISSUER || undefined,
    oidcAudience: env.OIDC_AUDIENCE || undefined,
    publicUrl: env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : undefined,
    adminApiKey: env.ADMIN_API_KEY || undefined,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 3600),
  };
  if (config.adminApiKey !== undefined && config.adminApiKey.length < 16) {
    problems.push('ADMIN_API_KEY must be at least 16 characters');
  }
  if (problems.length > 0) throw new Error(`invalid configuration: ${problems.join('; ')}`);
  return config;
}

/** Express `trust proxy`: "true"/"false", a hop count, or a comma-separated list of addresses/subnets. */
function parseTrustProxy(raw: string | undefined): string | boolean | number {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}
