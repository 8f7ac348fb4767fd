import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/main.js';
import type { Role } from '../../src/config.js';
import type { Clock } from '../../src/shared/clock.js';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import type { Logger } from '../../src/shared/logger.js';

export const adminKey = 'test-admin-key-0123456789';

export interface TestService extends RunningService {
  url: string;
  dataDir: string;
  /** The settings the service started with (defaults, `env`, and the names it got on shared servers). */
  env: Record<string, string>;
  /** Stops the service and removes its data folder. */
  close(): Promise<void>;
}

/**
 * Names of its own on the shared real servers for a service with this data folder: CI runs every
 * test file against ONE Kafka broker and ONE MongoDB-protocol server, in parallel. A service given
 * KAFKA_BROKERS without KAFKA_NAMESPACE used the plain topics and consumer groups (`send-worker`,
 * `webhook-dispatcher`) of every other such service in the run: Kafka split the partitions between
 * them, and one file's invitations and webhooks went to another file's workers, which knew neither
 * (its receiver got 0 deliveries). MONGO_URL without MONGO_DB meant the shared database `checkin`.
 * The names follow the data folder (a mkdtemp name, unique on the machine), so a restart on the same
 * folder, or a second role given it, finds its topics, committed offsets and read models again.
 * A test that wants the plain names says so: `KAFKA_NAMESPACE: ''`.
 */
export function sharedServerNames(env: Record<string, string>, dataDir: string): Record<string, string> {
  const scope = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 12);
  return {
    ...(env.KAFKA_BROKERS && !('KAFKA_NAMESPACE' in env) ? { KAFKA_NAMESPACE: `test-${scope}` } : {}),
    ...(env.MONGO_URL && !('MONGO_DB' in env) ? { MONGO_DB: `test_${scope}` } : {}),
  };
}

/**
 * The real service in this process: embedded adapters in a temp folder, HTTP on an ephemeral port;
 * on a real server (KAFKA_BROKERS, MONGO_URL in `env`) under names of its own (sharedServerNames).
 */
export async function startTestService(
  env: Record<string, string> = {},
  options: { role?: Role; clock?: Clock; dataDir?: string; logger?: Logger; wrapEventStore?: (store: EventStore) => EventStore } = {},
): Promise<TestService> {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-test-'));
  const settings: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    ADMIN_API_KEY: adminKey,
    SQLITE_SYNCHRONOUS: 'NORMAL',
    RATE_LIMIT_PER_MINUTE: '0',
    SEND_RATE_LIMIT_PER_MINUTE: '0',
    // In-process tests have no kept-alive client to wait for: idle sockets close at once.
    SHUTDOWN_IDLE_GRACE_MS: '0',
    // Tests share a loaded machine: load shedding would refuse their requests at random (test/http/overload.test.ts turns it on).
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
    // The default (auto) depends on the machine's cores: the suite runs the same everywhere, with
    // the workers on the main thread unless a test asks for the thread (test/workers/workers-thread*.test.ts).
    WORKERS_THREAD: 'off',
    ...env,
    ...sharedServerNames(env, dataDir),
  };
  const config = loadConfig(settings);
  const service = await startService(config, options.role ?? 'all', {
    clock: options.clock,
    logger: options.logger,
    ...(options.wrapEventStore ? { wrapEventStore: options.wrapEventStore } : {}),
  });
  return {
    ...service,
    url: service.url!,
    dataDir,
    env: settings,
    close: async () => {
      await service.stop();
      if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Client {
  id: string;
  email: string;
  password: string;
  clientSecret: string;
  subscriptionKey: string;
  token: string;
  /** fetch with this client's two authentication headers and JSON. */
  call(method: string, pathname: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
}

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

export async function request(
  baseUrl: string,
  method: string,
  pathname: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(`${baseUrl}${pathname}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

let counter = 0;

/** Creates an event of the client (title "Ball", 2026-01-01 to 2027-12-31, `fields` on top) and returns its id. */
export async function newEvent(client: Client, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z', ...fields });
  if (reply.status !== 200) throw new Error(`event create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.id as string;
}

/** Opens an account through the admin API and logs in with client_credentials. */
export async function createClient(
  service: { url: string },
  access: { commsApiEnabled?: boolean; senderTrusted?: boolean } = {},
): Promise<Client> {
  counter += 1;
  const email = `client${counter}-${Date.now()}@example.com`;
  const password = 'correct horse battery staple';
  const created = await request(service.url, 'POST', '/admin/v1/accounts', { email, password, ...access }, {
    authorization: `Bearer ${adminKey}`,
  });
  if (created.status !== 201) throw new Error(`account create failed: ${created.status} ${JSON.stringify(created.body)}`);
  const token = await clientToken(service.url, created.body.id, created.body.clientSecret);
  const client: Client = {
    id: created.body.id,
    email,
    password,
    clientSecret: created.body.clientSecret,
    subscriptionKey: created.body.subscriptionKey,
    token,
    call: (method, pathname, body, headers = {}) =>
      request(service.url, method, pathname, body, {
        authorization: `Bearer ${client.token}`,
        'ocp-apim-subscription-key': client.subscriptionKey,
        ...headers,
      }),
  };
  return client;
}

export async function clientToken(baseUrl: string, clientId: string, clientSecret: string): Promise<string> {
  return tokenFor(baseUrl, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
}

export async function passwordToken(baseUrl: string, username: string, password: string): Promise<string> {
  return tokenFor(baseUrl, { grant_type: 'password', client_id: 'checkin-app', username, password });
}

async function tokenFor(baseUrl: string, form: Record<string, string>): Promise<string> {
  const response = await fetch(`${baseUrl}/core/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!response.ok || !body.access_token) throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
  return body.access_token;
}
