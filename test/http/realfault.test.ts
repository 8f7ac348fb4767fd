/**
 * A MongoDB-protocol read store that cannot be reached (found by test/fault/realfault.test.ts,
 * which stops a real FerretDB): the driver's errors become ReadStoreUnavailableError, answered
 * 503 with Retry-After instead of 500; after the request's change was appended, 503
 * read_models_behind (recorded: read it back), so a client does not send it again.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { MongoBulkWriteError, MongoNetworkError, MongoServerSelectionError } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asUnavailable, serverSelectionDefault } from '../../src/adapters/readstore/mongo.js';
import { ReadStoreUnavailableError } from '../../src/adapters/readstore/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { handleCommand, handleCommands, type CommandContext } from '../../src/commands/handle-command.js';
import { DomainError, type Decider } from '../../src/domain/decider.js';
import { errorHandler } from '../../src/http/errors.js';

let server: ReturnType<express.Express['listen']>;
let url: string;

beforeAll(async () => {
  const app = express();
  const down = () => asUnavailable(new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:27017', { type: 'Unknown', servers: new Map() } as never));
  app.get('/read', () => {
    throw down();
  });
  // As a command does: its append succeeded (handleCommand marks the request's holder), then the read-back failed.
  app.post('/write', (_req, res) => {
    res.locals.writes = { recorded: true };
    throw down();
  });
  app.post('/refused-before-writing', (_req, res) => {
    res.locals.writes = { recorded: false };
    throw down();
  });
  app.use(errorHandler);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a read store that cannot be reached', () => {
  it('turns the driver\'s server-selection and network errors into ReadStoreUnavailableError, and leaves other errors as they are', () => {
    expect(asUnavailable(new MongoServerSelectionError('no server', { type: 'Unknown', servers: new Map() } as never))).toBeInstanceOf(ReadStoreUnavailableError);
    expect(asUnavailable(new MongoNetworkError('connection 5 to 127.0.0.1:27018 closed'))).toBeInstanceOf(ReadStoreUnavailableError);
    // A bulkWrite (the key store's insert) wraps a lost connection in a MongoBulkWriteError.
    const lost = new MongoBulkWriteError(new MongoNetworkError('connection 1 to 127.0.0.1:30703 closed') as never, {} as never);
    expect(asUnavailable(lost)).toBeInstanceOf(ReadStoreUnavailableError);
    // Node's socket error escaping the driver (a write after the server ended the socket).
    expect(asUnavailable(Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' }))).toBeInstanceOf(ReadStoreUnavailableError);
    const other = new Error('a bug');
    expect(asUnavailable(other)).toBe(other);
  });

  it('answers a read 503 store_unavailable with Retry-After, not 500', async () => {
    const reply = await fetch(`${url}/read`);
    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect((await reply.json()).code).toBe('store_unavailable');
  });

  it('answers a change that was recorded before the read store failed 503 read_models_behind (read it back, do not send again)', async () => {
    const reply = await fetch(`${url}/write`, { method: 'POST' });
    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('1');
    const body = await reply.json();
    expect(body.code).toBe('read_models_behind');
    expect(body.message).toContain('was recorded');
  });

  it('answers a change refused before anything was appended 503 store_unavailable (send it again)', async () => {
    const reply = await fetch(`${url}/refused-before-writing`, { method: 'POST' });
    expect(reply.status).toBe(503);
    expect((await reply.json()).code).toBe('store_unavailable');
  });

  it('waits 5 s for a server, not the driver\'s 30 s, unless MONGO_URL says otherwise', () => {
    expect(serverSelectionDefault('mongodb://db:27017/')).toEqual({ serverSelectionTimeoutMS: 5_000 });
    expect(serverSelectionDefault('mongodb://db:27017/?replicaSet=rs0&serverSelectionTimeoutMS=20000')).toEqual({});
  });

  it('marks the request as having written once an append succeeded, and not for a refusal or a no-op', async () => {
    type Noted = { type: 'Noted'; data: { n: number } };
    const decider: Decider<number, { n: number }, Noted> = {
      initialState: () => 0,
      evolve: (_s, e) => e.data.n,
      decide: (c, s) => {
        if (c.n < 0) throw new DomainError('validation_error', 'negative');
        return c.n === s ? [] : [{ type: 'Noted', data: { n: c.n } }];
      },
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'realfault-'));
    const store = new SqliteEventStore(path.join(dir, 'events.sqlite'));
    try {
      const context = (): CommandContext & { writes: { recorded: boolean } } => ({ tenantId: 't', actor: { type: 'system', id: 'test' }, correlationId: 'c', now: new Date(), writes: { recorded: false } });
      const refused = context();
      await expect(handleCommand(store, decider, 's-1', { n: -1 }, refused)).rejects.toThrow('negative');
      expect(refused.writes.recorded).toBe(false);
      const written = context();
      // A copy of the context (as commands make for a causation id) shares the holder.
      await handleCommand(store, decider, 's-1', { n: 1 }, { ...written, causationId: 'x' });
      expect(written.writes.recorded).toBe(true);
      const unchanged = context();
      await handleCommand(store, decider, 's-1', { n: 1 }, unchanged);
      expect(unchanged.writes.recorded).toBe(false);
      const batch = context();
      await handleCommands(store, [{ streamName: 's-2', decider, command: { n: 2 } }, { streamName: 's-3', decider, command: { n: 3 } }], batch);
      expect(batch.writes.recorded).toBe(true);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * mongodb 7.0 keeps the closed topology of a client whose first connection failed: every later
 * operation answered "Topology is closed", also once the server was back (a service started
 * while FerretDB was down answered 500 to every guest create until restarted). Needs a
 * MongoDB-protocol server (MONGO_URL); a proxy on a port of its own plays the server that comes back.
 */
describe.skipIf(!process.env.MONGO_URL)('a MONGO_URL server down when the service starts (needs MONGO_URL)', () => {
  it('answers again once the server is back, though the first operations found none', async () => {
    const net = await import('node:net');
    const { MongoReadStore } = await import('../../src/adapters/readstore/mongo.js');
    const target = new URL(process.env.MONGO_URL!);
    // The proxy holds its port from the start and drops every connection while the server is
    // "down": a port closed and listened on again later could be taken meanwhile by another test
    // file's listen(0) (CI runs them in parallel), and the listen then failed EADDRINUSE.
    let down = true;
    const proxy = net.createServer((client) => {
      if (down) return void client.destroy();
      const upstream = net.connect(Number(target.port), target.hostname);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as AddressInfo).port;
    const store = new MongoReadStore({ url: `mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=1000&directConnection=true`, dbName: `realfault_${process.pid}` });
    try {
      await expect(store.collection('guests').get('g-1')).rejects.toBeInstanceOf(ReadStoreUnavailableError);
      await expect(store.ping()).rejects.toBeInstanceOf(ReadStoreUnavailableError);
      down = false;
      let answered: unknown;
      for (let attempt = 0; attempt < 50 && answered === undefined; attempt++) {
        answered = await store.collection('guests').get('g-1').then(
          (doc) => doc ?? 'none',
          () => new Promise((resolve) => setTimeout(() => resolve(undefined), 200)),
        );
      }
      expect(answered).toBe('none');
      await store.ping();
    } finally {
      await store.close();
      proxy.close();
    }
  }, 60_000);
});
