/**
 * Read models built by another version of a projection's code are rebuilt before the
 * projections role projects again (src/projections/versions.ts; docs/operations.md, Upgrades).
 * An upgrade that changes what a projection writes (the funnel counting imported admissions,
 * say) would otherwise leave read models built before it silently wrong for the code after it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventStore, Subscription } from '../../src/adapters/eventstore/port.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { ReadStore } from '../../src/adapters/readstore/port.js';
import { projections } from '../../src/main.js';
import { identityCollection } from '../../src/projections/store-identity.js';
import { versionOf, type ProjectionVersionDoc } from '../../src/projections/versions.js';
import { clientToken, createClient, newEvent, request, startTestService, type Client } from '../support/service.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'projection-versions-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** Changes the stopped service's read-models file as another version of the code would have left it. */
async function withReadStore(dataDir: string, change: (store: EmbeddedReadStore) => Promise<void>): Promise<void> {
  const store = new EmbeddedReadStore(path.join(dataDir, 'read-models.sqlite'));
  try {
    await change(store);
  } finally {
    await store.close();
  }
}

/** GET as the client, from a service started again on the same DATA_DIR (a client's `call` names the first one's URL). */
const getAs = (client: Client, baseUrl: string, pathname: string) =>
  request(baseUrl, 'GET', pathname, undefined, { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey });

const versionDocs = (store: ReadStore) => store.collection<ProjectionVersionDoc>(identityCollection);

/** A logger whose lines the test reads. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    }),
  );
  return { logger, lines };
}

describe('projection versions', () => {
  it('records the version of every projection a fresh service builds', async () => {
    const dataDir = tempDir();
    const service = await startTestService({}, { dataDir });
    await createClient(service);
    await service.stop();
    await withReadStore(dataDir, async (store) => {
      for (const projection of projections) {
        expect((await versionDocs(store).get(`projection-version:${projection.name}`))?.version, projection.name).toBe(versionOf(projection));
      }
    });
  }, 120_000);

  it('rebuilds a projection another version built before projecting, logging its progress, and records the version', async () => {
    const dataDir = tempDir();
    const first = await startTestService({}, { dataDir });
    const client = await createClient(first);
    const eventId = await newEvent(client, { title: 'Gala' });
    await first.stop();
    // As a later version of the events projection would have left it (a rollback): its
    // documents in a shape this code does not read (here: gone), its version recorded above ours.
    await withReadStore(dataDir, async (store) => {
      await store.dropCollection('events');
      await versionDocs(store).replaceOne('projection-version:events', { projection: 'events', version: 99, recordedAt: new Date().toISOString() });
    });

    // The rebuild's replay (from the start, events' streams only) waits until the test has seen
    // /readyz while it runs.
    let openReplay!: () => void;
    const replayMayGo = new Promise<void>((resolve) => (openReplay = resolve));
    const gated = (store: EventStore): EventStore =>
      new Proxy(store, {
        get(target, property) {
          const value = Reflect.get(target, property, target) as unknown;
          if (property !== 'subscribeToAll') return typeof value === 'function' ? value.bind(target) : value;
          return (options: Parameters<EventStore['subscribeToAll']>[0]): Subscription => {
            const subscription = target.subscribeToAll(options);
            if (options?.fromPosition !== -1 || options.filter?.streamPrefixes?.join() !== 'event-') return subscription;
            return {
              async *[Symbol.asyncIterator]() {
                await replayMayGo;
                yield* subscription;
              },
              stop: () => subscription.stop(),
            };
          };
        },
      });
    const { logger, lines } = capturedLogger();
    const second = await startTestService({}, { dataDir, logger, wrapEventStore: gated });
    try {
      await expect.poll(async () => (await request(second.url, 'GET', '/readyz')).status, { timeout: 60_000 }).toBe(503);
      const during = await request(second.url, 'GET', '/readyz');
      expect(during.body.checks.projections).toMatchObject({ ok: false, rebuilding: ['events'] });
      openReplay();
      await expect.poll(async () => (await request(second.url, 'GET', '/readyz')).status, { timeout: 60_000 }).toBe(200);
      // A token of this service (the issuer is its URL).
      client.token = await clientToken(second.url, client.id, client.clientSecret);
      await expect.poll(async () => (await getAs(client, second.url, `/checkin/v1/api/event/${eventId}`)).status, { timeout: 60_000 }).toBe(200);
      expect((await getAs(client, second.url, `/checkin/v1/api/event/${eventId}`)).body.title).toBe('Gala');
      const warned = lines.find((line) => String(line.msg).startsWith('projections: read models built by another version'));
      expect(warned?.outdated).toEqual([{ name: 'events', built: 99, current: 1 }]);
      expect(lines.some((line) => line.msg === 'projections upgrade rebuild: finished')).toBe(true);
    } finally {
      await second.stop();
    }
    await withReadStore(dataDir, async (store) => {
      expect((await versionDocs(store).get('projection-version:events'))?.version).toBe(1);
    });
  }, 120_000);

  it('counts a read store from before versions were recorded as version 1: projections at a later version are rebuilt, the others kept', async () => {
    const dataDir = tempDir();
    const first = await startTestService({}, { dataDir });
    const client = await createClient(first);
    await first.stop();
    await withReadStore(dataDir, async (store) => {
      for (const projection of projections) await versionDocs(store).deleteOne(`projection-version:${projection.name}`);
      // What the accounts projection (version 2) reads must come from its rebuild.
      await store.dropCollection('accounts');
    });

    const { logger, lines } = capturedLogger();
    const second = await startTestService({}, { dataDir, logger });
    try {
      await expect.poll(async () => clientToken(second.url, client.id, client.clientSecret).then(() => true, () => false), { timeout: 60_000 }).toBe(true);
      const warned = lines.find((line) => String(line.msg).startsWith('projections: read models built by another version'));
      const rebuilt = (warned?.outdated as { name: string }[] | undefined)?.map((o) => o.name).sort();
      expect(rebuilt).toEqual(projections.filter((p) => versionOf(p) !== 1).map((p) => p.name).sort());
      expect(rebuilt).toContain('accounts');
    } finally {
      await second.stop();
    }
  }, 120_000);
});
