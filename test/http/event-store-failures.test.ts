import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionStringProblem, EsdbEventStore, fromEsdbMetadata, toEsdbMetadata, toPortError } from '../../src/adapters/eventstore/esdb.js';
import { StoreUnavailableError } from '../../src/adapters/eventstore/port.js';
import { loadConfig } from '../../src/config.js';
import { toHttpError } from '../../src/http/errors.js';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

let service: TestService;
let store: StreamByStreamStore;
let alice: Client;

beforeAll(async () => {
  service = await startTestService({}, { wrapEventStore: (inner) => (store = new StreamByStreamStore(inner)) });
  alice = await createClient(service);
});
afterAll(async () => {
  store.setStalled(false);
  store.failure = undefined;
  await service.close();
});

describe('an event store that is down, refuses, or stalls', () => {
  it('answers 503 store_unavailable with Retry-After when the store cannot serve, and changes nothing', async () => {
    store.failure = new StoreUnavailableError('unavailable', 'EventStoreDB did not answer (test)', true);
    try {
      const reply = await alice.call('POST', '/checkin/v1/api/event', { title: 'Down', startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-01T20:00:00Z' });
      expect(reply.status).toBe(503);
      expect(reply.body).toEqual({ code: 'store_unavailable', message: expect.stringContaining('Retry-After') });
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      store.failure = undefined;
    }
    const events = await alice.call('GET', '/checkin/v1/api/events');
    expect(events.status).toBe(200);
    expect(JSON.stringify(events.body)).not.toContain('"Down"');
  });

  it('answers 503 without Retry-After when the store refuses this service (access denied)', async () => {
    store.failure = new StoreUnavailableError('access_denied', 'EventStoreDB denied access (test)', false);
    try {
      const reply = await alice.call('POST', '/checkin/v1/api/event', { title: 'Denied', startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-01T20:00:00Z' });
      expect(reply.status).toBe(503);
      expect(reply.body.code).toBe('store_unavailable');
      expect(reply.headers.get('retry-after')).toBeNull();
      expect(JSON.stringify(reply.body)).not.toContain('EVENTSTORE_URL');
    } finally {
      store.failure = undefined;
    }
  });

  it('answers /readyz (not ready) while the store stalls, and ready again once it answers', async () => {
    store.setStalled(true);
    try {
      const ready = await request(service.url, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.eventStore).toEqual({ ok: false, error: expect.stringContaining('no answer') });
    } finally {
      store.setStalled(false);
    }
    const again = await request(service.url, 'GET', '/readyz');
    expect(again.status).toBe(200);
    expect(again.body.checks.projections).toMatchObject({ ok: true, lag: expect.any(Number) });
  }, 20_000);

  it('shows a store error on /readyz (unauthenticated) without the password of a connection string in it', async () => {
    store.failure = new StoreUnavailableError('unavailable', 'cannot reach esdb://admin:changeit@db.internal:2113?tls=false (test)', true);
    try {
      const ready = await request(service.url, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.eventStore.error).toContain('esdb://admin:***@db.internal:2113');
      expect(JSON.stringify(ready.body)).not.toContain('changeit');
    } finally {
      store.failure = undefined;
    }
    const again = await request(service.url, 'GET', '/readyz');
    expect(again.status).toBe(200);
    expect(again.body.checks.projections).toMatchObject({ ok: true, lag: expect.any(Number) });
  }, 20_000);
});

describe('EventStoreDB errors and settings in the port’s terms', () => {
  it('maps the client’s failures to StoreUnavailableError, retryable or not', () => {
    const cases = [
      ['unavailable', 'unavailable', true],
      ['not-leader', 'unavailable', true],
      ['deadline-exceeded', 'deadline_exceeded', true],
      ['access-denied', 'access_denied', false],
      ['stream-deleted', 'stream_deleted', false],
    ] as const;
    for (const [type, reason, retryable] of cases) {
      const mapped = toPortError(Object.assign(new Error(type), { type }), 'test');
      expect(mapped).toBeInstanceOf(StoreUnavailableError);
      expect(mapped).toMatchObject({ reason, retryable });
      expect(toHttpError(mapped).status).toBe(503);
    }
    const other = new Error('something else');
    expect(toPortError(other, 'test')).toBe(other);
  });

  it('refuses a malformed EVENTSTORE_URL at start with a config error naming the variable', () => {
    expect(connectionStringProblem('esdb://localhost:2113?tls=false')).toBeUndefined();
    expect(() => loadConfig({ EVENTSTORE_URL: 'http://localhost:2113' })).toThrow(/EVENTSTORE_URL/);
    expect(() => loadConfig({ EVENTSTORE_URL: 'esdb://host:port' })).toThrow(/EVENTSTORE_URL/);
    expect(() => new EsdbEventStore('nonsense')).toThrow(/EVENTSTORE_URL/);
  });

  it("takes the server's MaxAppendSize from EVENTSTORE_MAX_APPEND_SIZE (default 1 MiB, at least 64 KiB)", () => {
    expect(loadConfig({}).eventStoreMaxAppendBytes).toBe(1_048_576);
    expect(loadConfig({ EVENTSTORE_MAX_APPEND_SIZE: '4194304' }).eventStoreMaxAppendBytes).toBe(4_194_304);
    expect(() => loadConfig({ EVENTSTORE_MAX_APPEND_SIZE: '1000' })).toThrow(/EVENTSTORE_MAX_APPEND_SIZE must be at least 65536/);
  });

  it('writes $correlationId and $causationId for the server’s correlation projection, and reads the port’s metadata back', () => {
    const metadata = { tenantId: 't', actor: { type: 'user' as const, id: 'u' }, correlationId: 'corr', requestId: 'req', occurredAt: '2026-01-01T00:00:00.000Z' };
    expect(toEsdbMetadata(metadata)).toMatchObject({ $correlationId: 'corr', $causationId: 'req' });
    expect(toEsdbMetadata({ ...metadata, causationId: 'cause' })).toMatchObject({ $causationId: 'cause' });
    expect(fromEsdbMetadata(toEsdbMetadata(metadata))).toEqual(metadata);
  });
});
