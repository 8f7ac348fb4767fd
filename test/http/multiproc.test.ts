import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';
import type {
  EventFilter,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadStreamOptions,
  StreamAppend,
  SubscribeOptions,
  Subscription,
  SubscriptionBatch,
} from '../../src/adapters/eventstore/port.js';

/**
 * Uniqueness and exactly-once across concurrent writers (docs/eventstore.md, "What each unique
 * rule relies on"), on the embedded store and on EventStoreDB's write semantics (no multi-stream
 * transaction; every append yields so the racers' appends interleave).
 */
const rounds = 6;

describe.each(['embedded store', 'stream by stream, interleaved'] as const)('on the %s', (mode) => {
  let service: TestService;
  let alice: Client;
  let bob: Client;
  let eventId: string;
  beforeAll(async () => {
    service = await startTestService(
      {},
      mode === 'embedded store'
        ? {}
        : {
            wrapEventStore: (inner) => {
              const store = new StreamByStreamStore(inner);
              store.beforeAppend = () => new Promise((resolve) => setImmediate(resolve));
              return store;
            },
          },
    );
    alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    eventId = await newEvent(alice);
  });
  afterAll(() => service.close());

  const guestsWith = async (customId: string) =>
    ((await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=100&q=${encodeURIComponent(customId)}`)).body.items as Record<string, any>[]).filter(
      (g) => g.customId.toLowerCase() === customId.toLowerCase(),
    );

  it('one template id created at once with different content: every answer is the one stored template', async () => {
    for (let round = 0; round < rounds; round++) {
      const id = randomUUID();
      const replies = await Promise.all(
        [0, 1, 2, 3].map((n) => alice.call('POST', '/comms/v1/api/comms/template', { id, eventId, name: `Invite ${n}`, html: `<p>Hi ${n}</p>` })),
      );
      expect(replies.map((r) => r.status), JSON.stringify(replies.map((r) => r.body))).toEqual([200, 200, 200, 200]);
      const stored = (await alice.call('GET', `/comms/v1/api/comms/template/${id}`)).body;
      for (const reply of replies) expect(reply.body).toEqual(stored);
    }
  });

  it('one user name taken by team members of two clients at once: exactly one member has it', async () => {
    for (let round = 0; round < rounds; round++) {
      const userName = `door-${randomUUID().slice(0, 8)}`;
      const body = (n: number) => ({ userName: n % 2 ? userName.toUpperCase() : userName, password: `Pw-${randomUUID()}`, email: `${n}@example.com` });
      const replies = await Promise.all([0, 1, 2, 3].map((n) => (n < 2 ? alice : bob).call('POST', '/checkin/v1/api/teammember', body(n))));
      expect(replies.filter((r) => r.status === 200), JSON.stringify(replies.map((r) => r.body))).toHaveLength(1);
      expect(replies.filter((r) => r.status !== 200).every((r) => r.status === 409 && r.body.code === 'username_taken')).toBe(true);
    }
  });

  it('one account renamed twice at once: it keeps exactly the name it ends with; the other names are free again', async () => {
    for (let round = 0; round < 3; round++) {
      const client = await createClient(service);
      const names = [0, 1].map((n) => `acct-${n}-${randomUUID().slice(0, 8)}`);
      const replies = await Promise.all(names.map((userName) => client.call('PUT', '/users/v1/api/user', { id: client.id, userName })));
      expect(replies.map((r) => r.status), JSON.stringify(replies.map((r) => r.body))).toEqual([204, 204]);
      const kept = (await service.platform.readStore.collection<{ _id: string; userName: string }>('accounts').get(client.id))!.userName;
      expect(names).toContain(kept);
      // The name it does not use, and its first one (its email), can be taken by someone else.
      for (const free of [...names.filter((n) => n !== kept), client.email]) {
        const taken = await bob.call('POST', '/checkin/v1/api/teammember', { userName: free, password: `Pw-${randomUUID()}`, email: 'door@example.com' });
        expect(taken.status, `${free}: ${JSON.stringify(taken.body)}`).toBe(200);
      }
      const refused = await bob.call('POST', '/checkin/v1/api/teammember', { userName: kept, password: `Pw-${randomUUID()}`, email: 'door@example.com' });
      expect(refused.body.code).toBe('username_taken');
    }
  });

  it('batch upserts of different guests claiming one customId at once: one guest holds it', async () => {
    for (let round = 0; round < rounds; round++) {
      const customId = `crm-${randomUUID().slice(0, 8)}`;
      const replies = await Promise.all(
        [0, 1, 2].map((n) =>
          alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [
            { id: randomUUID(), customId: n ? customId.toUpperCase() : customId, firstName: `G${n}` },
            { id: randomUUID(), firstName: `Other${n}` },
          ]),
        ),
      );
      expect(replies.filter((r) => r.status === 204), JSON.stringify(replies.map((r) => r.body))).toHaveLength(1);
      expect(await guestsWith(customId)).toHaveLength(1);
    }
  });

  it('a customId moved by two guests at once onto one value: one guest holds it', async () => {
    for (let round = 0; round < rounds; round++) {
      const target = `crm-${randomUUID().slice(0, 8)}`;
      const ids = [randomUUID(), randomUUID()];
      for (const [n, id] of ids.entries()) {
        expect((await alice.call('POST', '/checkin/v1/api/guest', { id, eventId, customId: `${target}-${n}`, firstName: `G${n}` })).status).toBe(200);
      }
      const replies = await Promise.all(ids.map((id) => alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id, customId: target }])));
      expect(replies.map((r) => r.status).sort(), JSON.stringify(replies.map((r) => r.body))).toEqual([204, 409]);
      expect(await guestsWith(target)).toHaveLength(1);
    }
  });

  it('one Idempotency-Key on many guest creates at once: one guest', async () => {
    for (let round = 0; round < rounds; round++) {
      const customId = `idem-${randomUUID().slice(0, 8)}`;
      const key = { 'idempotency-key': randomUUID() };
      const replies = await Promise.all([0, 1, 2, 3].map(() => alice.call('POST', '/checkin/v1/api/guests/' + eventId, [{ customId, firstName: 'Once' }], key)));
      expect(replies.every((r) => r.status < 300 || r.body.code === 'idempotency_key_in_progress'), JSON.stringify(replies.map((r) => r.body))).toBe(true);
      expect(await guestsWith(customId)).toHaveLength(1);
    }
  });

  it('an erasure racing an update: the guest ends erased, with no personal data', async () => {
    for (let round = 0; round < rounds; round++) {
      const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: `er-${round}-${randomUUID().slice(0, 6)}`, firstName: 'Ada', email: 'ada@example.com' });
      const id = created.body.id as string;
      const [erased, updated] = await Promise.all([
        alice.call('POST', `/checkin/v1/api/guest/${id}/erase`, { reason: 'request' }),
        alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id, firstName: 'Back', email: 'back@example.com' }]),
      ]);
      expect(erased.status, JSON.stringify(erased.body)).toBeLessThan(300);
      expect([204, 404, 409, 410]).toContain(updated.status);
      const after = await alice.call('GET', `/checkin/v1/api/guest/${id}/personal-data`);
      // Without the signed ticket code and the customId's keyed hash: random base64 that 'Ada' can be inside by chance
      // (the code starts with its key id in base64: 'T1.Ada' for one key in 1024).
      const text = JSON.stringify(after.body, (key, value) => (['ticketCode', 'code', 'customIdKey'].includes(key) ? undefined : value));
      expect(text).not.toContain('Back');
      expect(text).not.toContain('back@example.com');
      expect(text).not.toContain('Ada');
    }
  });
});

/**
 * The projections held back (a projections role behind, on another process): a request whose
 * change another request recorded first decides nothing of its own, and must still answer what
 * was stored, not 503 read_models_behind, once the read models catch up within the wait.
 */
class HeldProjections implements EventStore {
  readonly kind: string;
  readonly atomicBatches: boolean;
  held = false;
  private waiting: (() => void)[] = [];
  onAppend?: (streamName: string) => void;
  onRead?: (streamName: string) => void;
  constructor(private readonly inner: EventStore) {
    this.kind = inner.kind;
    this.atomicBatches = inner.atomicBatches;
  }
  release(): void {
    this.held = false;
    for (const go of this.waiting.splice(0)) go();
  }
  async append(streamName: string, events: NewEvent[], expected: ExpectedRevision) {
    const written = await this.inner.append(streamName, events, expected);
    this.onAppend?.(streamName);
    return written;
  }
  async appendMany(appends: StreamAppend[]) {
    const written = await this.inner.appendMany(appends);
    for (const a of appends) this.onAppend?.(a.streamName);
    return written;
  }
  /** Runs after a stream was read, before its reader gets the events (a racer's change in between). */
  afterRead?: (streamName: string) => Promise<void>;
  async readStream(streamName: string, options?: ReadStreamOptions) {
    const events = await this.inner.readStream(streamName, options);
    this.onRead?.(streamName);
    await this.afterRead?.(streamName);
    return events;
  }
  headPosition(filter?: EventFilter) {
    return this.inner.headPosition(filter);
  }
  subscribeToAll(options?: SubscribeOptions): Subscription {
    const inner = this.inner.subscribeToAll(options);
    const self = this;
    async function* gated(): AsyncGenerator<SubscriptionBatch> {
      for await (const batch of inner) {
        while (self.held) await new Promise<void>((resolve) => self.waiting.push(resolve));
        yield batch;
      }
    }
    const iterator = gated();
    return { [Symbol.asyncIterator]: () => iterator, stop: () => inner.stop() };
  }
  ping() {
    return this.inner.ping();
  }
  close() {
    return this.inner.close();
  }
}

describe('a duplicate create decided while the read models lag behind the first', () => {
  let service: TestService;
  let store: HeldProjections;
  let alice: Client;
  let eventId: string;
  beforeAll(async () => {
    service = await startTestService(
      { READ_YOUR_WRITES_TIMEOUT_MS: '60000' },
      { wrapEventStore: (inner) => (store = new HeldProjections(inner)) },
    );
    alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    eventId = await newEvent(alice);
  });
  afterAll(() => service.close());

  it('template: the second create of one id answers the stored template (the first), not 503', async () => {
    const id = randomUUID();
    let firstStored!: () => void;
    const stored = new Promise<void>((resolve) => (firstStored = resolve));
    let appended = false;
    store.onAppend = (streamName) => {
      if (streamName.startsWith('template-') && streamName.endsWith(id)) ((appended = true), firstStored());
    };
    // Once the second request has read the stream the first wrote, the projections catch up.
    store.onRead = (streamName) => {
      if (appended && streamName.startsWith('template-') && streamName.endsWith(id)) setTimeout(() => store.release(), 300);
    };
    store.held = true;
    const first = alice.call('POST', '/comms/v1/api/comms/template', { id, eventId, name: 'First', html: '<p>1</p>' });
    await stored;
    const second = await alice.call('POST', '/comms/v1/api/comms/template', { id, eventId, name: 'Second', html: '<p>2</p>' });
    store.release();
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ id, name: 'First' });
    expect((await first).body).toEqual(second.body);
    store.onAppend = store.onRead = undefined;
  });

  it('guest: a create repeated with one customId and the same content answers the one guest, not 503', async () => {
    const customId = `crm-${randomUUID().slice(0, 8)}`;
    let firstStored!: () => void;
    const stored = new Promise<void>((resolve) => (firstStored = resolve));
    let appended = false;
    store.onAppend = (streamName) => {
      if (streamName.startsWith('guest-') && !appended) ((appended = true), firstStored());
    };
    store.onRead = (streamName) => {
      if (appended && streamName.startsWith('guestcustomid-')) setTimeout(() => store.release(), 300);
    };
    store.held = true;
    const record = { eventId, customId, firstName: 'Grace', email: 'grace@example.com' };
    const first = alice.call('POST', '/checkin/v1/api/guest', record);
    await stored;
    const second = await alice.call('POST', '/checkin/v1/api/guest', record);
    store.release();
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect((await first).body).toEqual(second.body);
    store.onAppend = store.onRead = undefined;
  });
});

describe.each(['embedded store', 'stream by stream'] as const)('an erasure that read the guest before an update changed its customId, on the %s', (mode) => {
  let service: TestService;
  let held: HeldProjections;
  let alice: Client;
  let eventId: string;
  beforeAll(async () => {
    service = await startTestService(
      {},
      {
        wrapEventStore: (inner) => {
          held = new HeldProjections(inner);
          return mode === 'embedded store' ? held : new StreamByStreamStore(held);
        },
      },
    );
    alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    eventId = await newEvent(alice);
  });
  afterAll(() => service.close());

  it('leaves neither customId held: each can be given to a new guest', async () => {
    const before = `crm-${randomUUID().slice(0, 8)}`;
    const after = `crm-${randomUUID().slice(0, 8)}`;
    const id = randomUUID();
    expect((await alice.call('POST', '/checkin/v1/api/guest', { id, eventId, customId: before, firstName: 'Ada' })).status).toBe(200);
    let racer: Promise<{ status: number; body: any }> | undefined;
    // The erasure reads the guest's stream (its values, its customIds); the update lands just after.
    held.afterRead = async (streamName) => {
      if (racer || !streamName.startsWith('guest-') || !streamName.endsWith(id)) return;
      racer = alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id, customId: after, firstName: 'Back' }]);
      expect((await racer).status).toBe(204);
    };
    const erased = await alice.call('POST', `/checkin/v1/api/guest/${id}/erase`, { reason: 'request' });
    held.afterRead = undefined;
    expect(racer).toBeDefined();
    expect(erased.status, JSON.stringify(erased.body)).toBeLessThan(300);
    // The erasure's retry (its answer lost) finds the guest by the customId it had last.
    const again = await alice.call('POST', `/checkin/v1/api/guest/${after}/erase?eventId=${eventId}`, { reason: 'request' });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ id, erased: true });
    for (const customId of [before, after]) {
      const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId, firstName: 'New' });
      expect(created.status, `${customId}: ${JSON.stringify(created.body)}`).toBe(200);
    }
  });
});

/**
 * Two api processes over one DATA_DIR (test/identity/refreshtok.test.ts runs them so too): the
 * embedded read store keeps a copy of its documents in each process, so an Idempotency-Key must
 * be taken on its file, not on a process's copy. (The second process's own read models are not
 * updated by the first's projections: its writes answer 503 read_models_behind here, README, Roles.)
 */
describe('two api processes sharing one DATA_DIR', () => {
  let first: TestService;
  let second: TestService;
  beforeAll(async () => {
    // One issuer for both, so a token of one is good at the other.
    first = await startTestService({ PUBLIC_URL: 'http://checkin.test' });
    second = await startTestService({ PUBLIC_URL: 'http://checkin.test', READ_YOUR_WRITES_TIMEOUT_MS: '200' }, { role: 'api', dataDir: first.dataDir });
  });
  afterAll(async () => {
    await second?.stop();
    await first?.close();
  });

  it('one Idempotency-Key sent to both at once runs the request once', async () => {
    const alice = await createClient(first);
    const eventId = await newEvent(alice);
    const atSecond = (method: string, pathname: string, body: unknown, headers: Record<string, string>) =>
      request(second.url, method, pathname, body, { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey, ...headers });
    for (let round = 0; round < rounds; round++) {
      const key = { 'idempotency-key': randomUUID() };
      const body = [{ firstName: `Once-${round}` }];
      const replies = await Promise.all([alice.call('POST', `/checkin/v1/api/guests/${eventId}`, body, key), atSecond('POST', `/checkin/v1/api/guests/${eventId}`, body, key)]);
      expect(replies.every((r) => r.status === 200 || ['idempotency_key_in_progress', 'read_models_behind'].includes(r.body.code)), JSON.stringify(replies.map((r) => r.body))).toBe(true);
      // The first process projects every write, the second's too.
      await first.services.readYourWrites(await first.platform.eventStore.headPosition());
      const listed = (await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=100`)).body.items as { firstName: string }[];
      expect(listed.filter((g) => g.firstName === `Once-${round}`)).toHaveLength(1);
    }
  });
});
