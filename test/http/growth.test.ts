/**
 * A store outage is expected, not a bug: while MONGO_URL's server (or the event store) is down,
 * every request is answered 503 store_unavailable and logged as one `warn` line without a stack,
 * so the operators' alerting (on `error`) is not flooded. Any other failure stays an `error`
 * with the whole error.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { MongoServerSelectionError } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asUnavailable } from '../../src/adapters/readstore/mongo.js';
import { ReadStoreUnavailableError } from '../../src/adapters/readstore/port.js';
import { StoreUnavailableError } from '../../src/adapters/eventstore/port.js';
import { errorHandler, isStoreOutage } from '../../src/http/errors.js';

type Line = { level: 'warn' | 'error'; fields: Record<string, unknown>; msg: string };
const lines: Line[] = [];
const logger = {
  warn: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'warn', fields, msg }),
  error: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'error', fields, msg }),
};

let server: ReturnType<express.Express['listen']>;
let url: string;

beforeAll(async () => {
  const app = express();
  app.set('logger', logger);
  app.get('/mongo-down', () => {
    throw asUnavailable(new MongoServerSelectionError('connect ECONNREFUSED mongodb://svc:hunter2@127.0.0.1:27017', { type: 'Unknown', servers: new Map() } as never));
  });
  app.post('/mongo-down-after-append', (_req, res) => {
    res.locals.writes = { recorded: true };
    throw new ReadStoreUnavailableError('the read store did not answer');
  });
  app.get('/eventstore-down', () => {
    throw new StoreUnavailableError('unavailable', 'the event store did not answer', true);
  });
  app.get('/bug', () => {
    throw new TypeError("Cannot read properties of undefined (reading 'x')");
  });
  app.use(errorHandler);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('classifying a failure as a store outage', () => {
  it('counts the read store and a retryable event store failure as outages, nothing else', () => {
    expect(isStoreOutage(new ReadStoreUnavailableError('down'))).toBe(true);
    expect(isStoreOutage(asUnavailable(new MongoServerSelectionError('no server', { type: 'Unknown', servers: new Map() } as never)))).toBe(true);
    expect(isStoreOutage(new StoreUnavailableError('deadline_exceeded', 'slow', true))).toBe(true);
    // Refused for good (credentials, configuration): an operator must act, so it stays an error.
    expect(isStoreOutage(new StoreUnavailableError('access_denied', 'denied', false))).toBe(false);
    expect(isStoreOutage(new Error('a bug'))).toBe(false);
    expect(isStoreOutage(undefined)).toBe(false);
  });
});

describe('logging a request that failed', () => {
  const answer = async (method: string, path: string) => {
    lines.length = 0;
    const response = await fetch(`${url}${path}`, { method });
    return { status: response.status, body: (await response.json()) as { code: string }, lines: [...lines] };
  };

  it('logs a read store outage 503 as one warn line without a stack, the password masked', async () => {
    const { status, body, lines: logged } = await answer('GET', '/mongo-down');
    expect(status).toBe(503);
    expect(body.code).toBe('store_unavailable');
    expect(logged).toHaveLength(1);
    expect(logged[0]!.level).toBe('warn');
    expect(logged[0]!.msg).toBe('request failed: store unavailable');
    expect(logged[0]!.fields).toMatchObject({ method: 'GET', path: '/mongo-down', code: 'store_unavailable' });
    expect(logged[0]!.fields.err).toBeUndefined();
    expect(JSON.stringify(logged[0]!.fields)).not.toContain('    at ');
    expect(String(logged[0]!.fields.cause)).toContain('svc:***@127.0.0.1');
    expect(JSON.stringify(logged[0]!.fields)).not.toContain('hunter2');
  });

  it('logs the read_models_behind 503 of an outage after the append as a warn too', async () => {
    const { status, lines: logged } = await answer('POST', '/mongo-down-after-append');
    expect(status).toBe(503);
    expect(logged.map((l) => l.level)).toEqual(['warn']);
  });

  it('logs an event store outage 503 as a warn', async () => {
    const { status, lines: logged } = await answer('GET', '/eventstore-down');
    expect(status).toBe(503);
    expect(logged.map((l) => l.level)).toEqual(['warn']);
    expect(logged[0]!.fields.err).toBeUndefined();
  });

  it('keeps a real bug an error with the whole error (its stack)', async () => {
    const { status, lines: logged } = await answer('GET', '/bug');
    expect(status).toBe(500);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.level).toBe('error');
    expect(logged[0]!.msg).toBe('request failed');
    expect((logged[0]!.fields.err as Error).stack).toContain('TypeError');
  });
});
