import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { MongoClient } from 'mongodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import { MongoReadStore } from '../../src/adapters/readstore/mongo.js';
import type { ReadStore } from '../../src/adapters/readstore/port.js';
import type { Principal } from '../../src/http/context.js';
import { errorHandler, HttpError } from '../../src/http/errors.js';
import { idempotency, purgeExpiredIdempotencyKeys } from '../../src/http/middleware/idempotency.js';

const TTL_MS = 24 * 60 * 60 * 1000;

/** Stands in for authentication: the caller's client id comes from a header. */
const fakeAuth: RequestHandler = (req, res, next) => {
  const tenantId = req.get('x-tenant') ?? 'tenant-a';
  res.locals.principal = { tenantId, actor: { type: 'client', id: tenantId }, role: 'client' } satisfies Principal;
  next();
};

/** The middleware only uses the read-store port: it runs against each adapter at hand. */
const stores: [string, () => Promise<{ store: ReadStore; drop: () => Promise<void> }>][] = [
  ['embedded read store', async () => ({ store: new EmbeddedReadStore(':memory:'), drop: async () => {} })],
];
const mongoUrl = process.env.MONGO_URL;
if (mongoUrl) {
  stores.push([
    'MongoDB read store (MONGO_URL)',
    async () => {
      const dbName = `idempotency_test_${process.pid}_${Date.now()}`;
      return {
        store: new MongoReadStore({ url: mongoUrl, dbName }),
        drop: async () => {
          const client = new MongoClient(mongoUrl);
          await client.db(dbName).dropDatabase().finally(() => client.close());
        },
      };
    },
  ]);
}

describe.each(stores)('Idempotency-Key on POST (DESIGN.md section 5), %s', (_name, openStore) => {
  let store: ReadStore;
  let dropStore: () => Promise<void>;
  let url: string;
  let clock: Date;
  let runs: number;
  let release: () => void;
  /** Per run of /stalls: lets that run answer. */
  let stalled: Record<number, () => void>;
  let closeServer: () => Promise<void>;

  beforeEach(async () => {
    ({ store, drop: dropStore } = await openStore());
    clock = new Date('2026-11-21T10:00:00.000Z');
    runs = 0;
    let opened!: () => void;
    const gate = new Promise<void>((resolve) => (opened = resolve));
    release = opened;

    const app = express();
    app.use(express.json());
    app.use(fakeAuth);
    app.use(idempotency(store, { now: () => clock }));
    app.post('/comms/v1/api/comms/send', (req, res) => {
      runs++;
      res.status(201).location(`/messages/${runs}`).json({ run: runs, received: req.body });
    });
    app.post('/slow', async (_req, res) => {
      runs++;
      await gate;
      res.status(201).json({ run: runs });
    });
    // The first two runs wait until the test lets them answer; the first one then fails (5xx).
    stalled = {};
    app.post('/stalls', async (_req, res, next) => {
      const run = ++runs;
      if (run <= 2) await new Promise<void>((resolve) => (stalled[run] = resolve));
      if (run === 1) return next(new Error('the event store went away'));
      res.status(201).json({ run });
    });
    app.post('/fails-once', (_req, res, next) => {
      runs++;
      if (runs === 1) return next(new Error('the database went away'));
      res.json({ run: runs });
    });
    app.post('/rejects', (_req, _res, next) => {
      runs++;
      next(new HttpError(409, 'conflict', 'already there'));
    });
    app.post('/no-content', (_req, res) => {
      runs++;
      res.status(204).end();
    });
    app.get('/comms/v1/api/comms/send', (_req, res) => {
      runs++;
      res.json({ run: runs });
    });
    app.use(errorHandler);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    closeServer = () => new Promise((resolve) => server.close(() => resolve()));
  });

  afterEach(async () => {
    release();
    for (const answer of Object.values(stalled)) answer();
    await closeServer();
    await dropStore();
    await store.close();
  });

  interface Reply {
    status: number;
    body: Record<string, unknown> | null;
    text: string;
    headers: Headers;
  }

  async function post(path: string, body: unknown, headers: Record<string, string> = {}, method = 'POST'): Promise<Reply> {
    const response = await fetch(url + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(method === 'GET' ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : null, headers: response.headers };
  }

  const send = (body: unknown, key?: string, tenant = 'tenant-a') =>
    post('/comms/v1/api/comms/send', body, { 'x-tenant': tenant, ...(key !== undefined ? { 'idempotency-key': key } : {}) });

  it('replays the first response to a repeat with the same key and body, without running the handler again', async () => {
    const first = await send({ to: 'ann@example.com', templateId: 't1' }, 'key-1');
    const second = await send({ templateId: 't1', to: 'ann@example.com' }, 'key-1');
    expect(runs).toBe(1);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(second.headers.get('location')).toBe('/messages/1');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses the same key with a different body with 422 idempotency_key_reused', async () => {
    await send({ to: 'ann@example.com' }, 'key-1');
    const reused = await send({ to: 'bob@example.com' }, 'key-1');
    expect(reused.status).toBe(422);
    expect(reused.body?.code).toBe('idempotency_key_reused');
    expect(runs).toBe(1);
  });

  it('refuses the same key on another path with 422 idempotency_key_reused', async () => {
    await send({ to: 'ann@example.com' }, 'key-1');
    const reused = await post('/rejects', { to: 'ann@example.com' }, { 'idempotency-key': 'key-1' });
    expect(reused.status).toBe(422);
    expect(reused.body?.code).toBe('idempotency_key_reused');
  });

  it('keeps each client’s keys apart', async () => {
    const a = await send({ to: 'ann@example.com' }, 'shared-key', 'tenant-a');
    const b = await send({ to: 'ann@example.com' }, 'shared-key', 'tenant-b');
    expect(runs).toBe(2);
    expect(a.body?.run).toBe(1);
    expect(b.body?.run).toBe(2);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  it('answers a repeat while the first is still running with 409 idempotency_key_in_progress', async () => {
    const first = post('/slow', { n: 1 }, { 'idempotency-key': 'slow-key' });
    await expect.poll(() => runs, { timeout: 60_000 }).toBe(1);
    const concurrent = await post('/slow', { n: 1 }, { 'idempotency-key': 'slow-key' });
    expect(concurrent.status).toBe(409);
    expect(concurrent.body?.code).toBe('idempotency_key_in_progress');
    expect(concurrent.headers.get('retry-after')).toBe('1');
    release();
    expect((await first).status).toBe(201);
    const after = await post('/slow', { n: 1 }, { 'idempotency-key': 'slow-key' });
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(runs).toBe(1);
  });

  it('does not keep a 5xx response: the retry runs the request again', async () => {
    const failed = await post('/fails-once', {}, { 'idempotency-key': 'retry-me' });
    expect(failed.status).toBe(500);
    const retried = await post('/fails-once', {}, { 'idempotency-key': 'retry-me' });
    expect(retried.status).toBe(200);
    expect(retried.body?.run).toBe(2);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keeps a 4xx answer like any other', async () => {
    const first = await post('/rejects', {}, { 'idempotency-key': 'refused' });
    const second = await post('/rejects', {}, { 'idempotency-key': 'refused' });
    expect(first.status).toBe(409);
    expect(second.status).toBe(409);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(runs).toBe(1);
  });

  it('replays an empty 204', async () => {
    await post('/no-content', {}, { 'idempotency-key': 'empty' });
    const second = await post('/no-content', {}, { 'idempotency-key': 'empty' });
    expect(second.status).toBe(204);
    expect(second.text).toBe('');
    expect(runs).toBe(1);
  });

  it('forgets a key after 24 hours: the request runs again, even with another body', async () => {
    await send({ to: 'ann@example.com' }, 'old-key');
    clock = new Date(clock.getTime() + TTL_MS - 1);
    expect((await send({ to: 'ann@example.com' }, 'old-key')).headers.get('idempotent-replayed')).toBe('true');
    clock = new Date(clock.getTime() + 1);
    const again = await send({ to: 'bob@example.com' }, 'old-key');
    expect(again.status).toBe(201);
    expect(again.body?.run).toBe(2);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect((await send({ to: 'bob@example.com' }, 'old-key')).body?.run).toBe(2);
  });

  it('lets a retry run a request whose first attempt was abandoned mid-way', async () => {
    const first = post('/slow', {}, { 'idempotency-key': 'abandoned' });
    await expect.poll(() => runs, { timeout: 60_000 }).toBe(1);
    clock = new Date(clock.getTime() + 10 * 60 * 1000);
    const retry = post('/slow', {}, { 'idempotency-key': 'abandoned' });
    await expect.poll(() => runs, { timeout: 60_000 }).toBe(2);
    release();
    expect((await first).status).toBe(201);
    expect((await retry).status).toBe(201);
  });

  it('an abandoned first attempt that ends after a retry took its key over leaves the retry’s record alone', async () => {
    // The first attempt is abandoned (10 minutes in progress), a retry takes the key over and
    // runs; then the first one ends with a 5xx. That must not free the key under the running
    // retry: a third attempt is 409 in progress, and afterwards replays the retry's answer.
    const first = post('/stalls', {}, { 'idempotency-key': 'late' });
    await expect.poll(() => runs, { timeout: 60_000 }).toBe(1);
    clock = new Date(clock.getTime() + 10 * 60 * 1000);
    const retry = post('/stalls', {}, { 'idempotency-key': 'late' });
    await expect.poll(() => runs, { timeout: 60_000 }).toBe(2);
    stalled[1]!();
    expect((await first).status).toBe(500);
    const third = await post('/stalls', {}, { 'idempotency-key': 'late' });
    expect(third.status).toBe(409);
    expect(third.body?.code).toBe('idempotency_key_in_progress');
    stalled[2]!();
    expect((await retry).body).toEqual({ run: 2 });
    const replayed = await post('/stalls', {}, { 'idempotency-key': 'late' });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual({ run: 2 });
    expect(runs).toBe(2);
  });

  it('refuses a key that is empty, longer than 255 or not printable ASCII with 400 validation_error', async () => {
    for (const key of ['x'.repeat(256), 'tab\there', 'naïve']) {
      const reply = await send({}, key);
      expect(reply.status).toBe(400);
      expect(reply.body?.code).toBe('validation_error');
      expect(reply.body?.errors).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
    }
    // fetch drops an empty header value on some platforms; send one raw through the header API.
    const empty = await fetch(url + '/comms/v1/api/comms/send', {
      method: 'POST',
      headers: [['content-type', 'application/json'], ['idempotency-key', '']],
      body: '{}',
    });
    expect(empty.status).toBe(400);
    expect(runs).toBe(0);
    expect((await send({}, 'x'.repeat(255))).status).toBe(201);
  });

  it('runs the handler every time without the header, and ignores it on other methods', async () => {
    await send({ to: 'ann@example.com' });
    await send({ to: 'ann@example.com' });
    await post('/comms/v1/api/comms/send', undefined, { 'idempotency-key': 'get-key' }, 'GET');
    await post('/comms/v1/api/comms/send', undefined, { 'idempotency-key': 'get-key' }, 'GET');
    expect(runs).toBe(4);
  });

  it('lets exactly one of two retries racing over an expired key run the request', async () => {
    // Both retries read the expired record before either replaces it (a barrier on the first two
    // reads), and the second one's replacement waits until the first is in its handler: the
    // widest window two processes can meet in. The second must find the first's record.
    let raceRuns = 0;
    let firstInHandler!: () => void;
    const inHandler = new Promise<void>((resolve) => (firstInHandler = resolve));
    let armed = false;
    let reads = 0;
    let mutations = 0;
    let bothRead!: () => void;
    const readBarrier = new Promise<void>((resolve) => (bothRead = resolve));
    const racing = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'collection') return Reflect.get(target, property, receiver) as unknown;
        return (name: string) => {
          const inner = target.collection(name);
          return new Proxy(inner, {
            get(collection, method, innerReceiver) {
              const original = Reflect.get(collection, method, innerReceiver) as unknown;
              if (typeof original !== 'function') return original;
              const call = (...args: unknown[]) => (original as (...a: unknown[]) => Promise<unknown>).apply(collection, args);
              if (method === 'get')
                return async (...args: unknown[]) => {
                  const result = await call(...args);
                  if (armed && ++reads <= 2) {
                    if (reads === 2) bothRead();
                    await readBarrier;
                  }
                  return result;
                };
              if (method === 'deleteOne' || method === 'swap')
                return async (...args: unknown[]) => {
                  if (armed && ++mutations === 2) await inHandler;
                  return call(...args);
                };
              return original.bind(collection);
            },
          });
        };
      },
    });
    const app = express();
    app.use(express.json());
    app.use(fakeAuth);
    app.use(idempotency(racing, { now: () => clock }));
    app.post('/race', (_req, res) => {
      raceRuns++;
      if (raceRuns === 2) firstInHandler();
      res.status(201).json({ run: raceRuns });
    });
    app.use(errorHandler);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const raceUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/race`;
    const race = async () => {
      const response = await fetch(raceUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'racy' }, body: '{}' });
      return { status: response.status, text: await response.text() };
    };
    try {
      expect((await race()).status).toBe(201);
      clock = new Date(clock.getTime() + TTL_MS);
      armed = true;
      const replies = await Promise.all([race(), race()]);
      expect(raceRuns).toBe(2);
      const fresh = replies.filter((reply) => reply.text === JSON.stringify({ run: 2 }));
      expect(fresh.length).toBeGreaterThanOrEqual(1);
      for (const reply of replies) expect([201, 409]).toContain(reply.status);
    } finally {
      await new Promise((resolve) => server.close(() => resolve(undefined)));
    }
  });

  it('purging leaves a key that a retry took over after the purge read it expired', async () => {
    await send({ to: 'ann@example.com' }, 'purge-race');
    clock = new Date(clock.getTime() + TTL_MS);
    // The retry arrives between the purge's read of the expired record and its delete.
    const retryDuringPurge = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'collection') return Reflect.get(target, property, receiver) as unknown;
        return (name: string) => {
          const inner = target.collection(name);
          return new Proxy(inner, {
            get(collection, method, innerReceiver) {
              if (method !== 'stream') return Reflect.get(collection, method, innerReceiver) as unknown;
              return async function* (...args: Parameters<typeof inner.stream>) {
                for await (const doc of inner.stream(...args)) {
                  expect((await send({ to: 'ann@example.com' }, 'purge-race')).body?.run).toBe(2);
                  yield doc;
                }
              };
            },
          });
        };
      },
    });
    expect(await purgeExpiredIdempotencyKeys(retryDuringPurge, clock)).toBe(0);
    const again = await send({ to: 'ann@example.com' }, 'purge-race');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body?.run).toBe(2);
    expect(runs).toBe(2);
  });

  it('purges expired keys', async () => {
    await send({ to: 'ann@example.com' }, 'purge-me');
    expect(await purgeExpiredIdempotencyKeys(store, clock)).toBe(0);
    expect(await purgeExpiredIdempotencyKeys(store, new Date(clock.getTime() + TTL_MS))).toBe(1);
    expect(await store.collection('idempotency_keys').count()).toBe(0);
  });
});
