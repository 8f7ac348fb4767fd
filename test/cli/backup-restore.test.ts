/**
 * Backups and restores of the embedded deployment (docs/operations.md, Backups and restores):
 * `admin backup` while the service writes, a restore into a fresh DATA_DIR that catches up,
 * and `admin reapply-erasures` for both ways a restore brings an erased guest back.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { MongoClient, type Document } from 'mongodb';
import { destination } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { backupDataDir, type BackupManifest } from '../../src/cli/backup.js';
import { parseLine } from '../../src/commands/reapply-erasures.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { clientToken, createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { filesHolding } from '../support/files-holding.js';

const run = promisify(execFile);
const api = '/checkin/v1/api';
const temp: string[] = [];
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temp.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of temp) fs.rmSync(dir, { recursive: true, force: true });
});

// The embedded stores of a DATA_DIR: the real servers' URLs CI exports would point the command elsewhere.
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const admin = (dataDir: string, args: string[], logLevel = 'silent', env: Record<string, string> = {}) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: logLevel, ...env },
    maxBuffer: 32 * 1024 * 1024,
  });

/** What an operator puts back: the SQLite files of the backup, and the development master key kept apart. */
function restore(backup: string, keysFrom: string): string {
  const dataDir = tempDir('restored-');
  for (const name of fs.readdirSync(backup).filter((n) => n.endsWith('.sqlite'))) fs.copyFileSync(path.join(backup, name), path.join(dataDir, name));
  fs.mkdirSync(path.join(dataDir, 'personal-data'));
  fs.copyFileSync(path.join(keysFrom, 'personal-data', 'master-keys.json'), path.join(dataDir, 'personal-data', 'master-keys.json'));
  return dataDir;
}

const caughtUp = (service: TestService) =>
  eventually(async () => {
    const { lag, position } = await service.runner!.lag();
    return lag === 0 && position >= 0;
  }, 60_000, 'projections caught up');

const person = () => {
  const tag = randomUUID().slice(0, 8);
  return { firstName: `Ottilie${tag}`, lastName: `Brandauer${tag}`, email: `ottilie.${tag}@example.com`, additionalInfo: `seat ${tag}-north` };
};
const needlesOf = (p: ReturnType<typeof person>) => [p.firstName, p.lastName, p.email, p.additionalInfo];

describe('admin backup and restore', () => {
  it('copies a DATA_DIR while guests are written; the restored copy starts and its read models match its events', async () => {
    const dataDir = tempDir('live-');
    const service = await startTestService({}, { dataDir });
    const backup = path.join(tempDir('backups-'), 'copy');
    let writes = 0;
    let manifest: BackupManifest | undefined;
    let stderr = '';
    let clientId: string;
    let eventId: string;
    try {
      const client = await createClient(service);
      clientId = client.id;
      eventId = await newEvent(client);
      const batch = Array.from({ length: 60 }, (_, i) => ({ firstName: `Early${i}`, lastName: `Guest${i}`, additionalInfo: 'x'.repeat(200) }));
      expect((await client.call('POST', `${api}/guests/${eventId}`, batch)).status).toBe(200);
      // Guests keep coming while the copy runs; small steps with pauses (2 pages, 10 ms) make the copy see them.
      let writing = true;
      const writer = (async () => {
        while (writing) {
          const created = await client.call('POST', `${api}/guest`, { eventId, firstName: `Live${writes}`, lastName: 'Writer' });
          expect(created.status).toBe(200);
          writes++;
        }
      })();
      try {
        await eventually(async () => writes >= 3, 60_000, 'writes under way');
        const copied = await admin(dataDir, ['backup', backup, '--pages-per-step', '2', '--pause-ms', '10'], 'info');
        manifest = JSON.parse(copied.stdout) as BackupManifest;
        stderr = copied.stderr;
      } finally {
        writing = false;
        await writer;
      }
    } finally {
      await service.stop();
    }
    if (!manifest) throw new Error('no manifest');
    // Progress lines on stderr, with pages; the derived files first, the event store last.
    const lines = stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l.msg === 'backup: copying' && typeof l.pagesCopied === 'number' && typeof l.totalPages === 'number')).toBe(true);
    // rate-limits.sqlite: the built-in identity provider's sign-in throttle counts there even with the rate limits off.
    expect(manifest.files.map((f) => f.name)).toEqual(['read-models.sqlite', 'bus.sqlite', 'rate-limits.sqlite', 'events.sqlite']);
    // The service wrote during the copy: a file's copy started over (and still ended).
    expect(manifest.files.some((f) => f.restarts > 0), JSON.stringify(manifest.files)).toBe(true);
    expect(lines.some((l) => l.msg === 'backup: the service wrote meanwhile; the copy of this file starts over with larger steps')).toBe(true);
    expect(manifest.files.every((f) => f.bytes > 0 && /^[0-9a-f]{64}$/.test(f.sha256))).toBe(true);
    expect(manifest.service.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(manifest.notCopied.map((n) => n.path)).toEqual(expect.arrayContaining(['personal-data/master-keys.json', 'outbox', 'exports']));
    expect(fs.readdirSync(backup).sort()).toEqual(['bus.sqlite', 'events.sqlite', 'manifest.json', 'rate-limits.sqlite', 'read-models.sqlite']);

    // In the copy, no checkpoint is ahead of the copied events: the read models' and the relay's.
    const events = new Database(path.join(backup, 'events.sqlite'), { readonly: true });
    const head = (events.prepare('SELECT MAX(position) AS p FROM events').get() as { p: number }).p;
    const copiedGuests = new Set(
      (events.prepare("SELECT stream FROM events WHERE type = 'GuestRegistered'").pluck().all() as string[]).map((s) => s.slice('guest-'.length)),
    );
    events.close();
    expect(manifest.eventStore.lastPosition).toBe(head);
    const readModels = new Database(path.join(backup, 'read-models.sqlite'), { readonly: true });
    const checkpoints = readModels.prepare('SELECT name, position FROM readstore_checkpoints').all() as { name: string; position: number }[];
    readModels.close();
    expect(checkpoints.length).toBeGreaterThan(0);
    expect(checkpoints.filter((c) => c.position > head)).toEqual([]);
    // Writes went on during the copy, and some of them are in it.
    expect(copiedGuests.size).toBeGreaterThan(60);

    // Restore into a fresh DATA_DIR and start: the service accepts the copy (its identity check
    // refuses checkpoints ahead of the events) and catches up to exactly the copied guests.
    const restoredDir = restore(backup, dataDir);
    const restored = await startTestService({}, { dataDir: restoredDir });
    try {
      await caughtUp(restored);
      const docs: { _id: string; clientId: string; firstName?: string }[] = [];
      for await (const doc of restored.platform.readStore.collection<{ _id: string; clientId: string; firstName?: string }>('guests').stream({ clientId: clientId!, eventId: eventId! })) docs.push(doc);
      expect(new Set(docs.map((d) => d._id))).toEqual(copiedGuests);
      // Personal data opens with the master key put back beside the copy.
      expect(docs.filter((d) => d.firstName === undefined)).toEqual([]);
    } finally {
      await restored.stop();
    }
  }, 300_000);

  it('refuses a destination inside DATA_DIR or not empty, and names the servers\' own tools instead of copying them', async () => {
    const dataDir = tempDir('refuse-');
    fs.writeFileSync(path.join(dataDir, 'events.sqlite'), '');
    const config = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });
    const logger = createLogger('silent');
    await expect(backupDataDir(config(), path.join(dataDir, 'backups', 'today'), logger)).rejects.toThrow(/inside DATA_DIR/);
    const full = tempDir('full-');
    fs.writeFileSync(path.join(full, 'old.txt'), 'x');
    await expect(backupDataDir(config(), full, logger)).rejects.toThrow(/not empty/);
    await expect(backupDataDir(config({ MONGO_URL: 'mongodb://db.example:27017' }), tempDir('m-'), logger)).rejects.toThrow(/mongodump/);
    await expect(backupDataDir(config({ EVENTSTORE_URL: 'esdb://es.example:2113?tls=false' }), tempDir('e-'), logger)).rejects.toThrow(/EventStoreDB/);
    await expect(backupDataDir(loadConfig({ DATA_DIR: tempDir('empty-'), LOG_LEVEL: 'silent' }), tempDir('x-'), logger)).rejects.toThrow(/no event store at/);
  });
});

describe('admin reapply-erasures', () => {
  it('reads an erasure list: the log line of an erasure, other log lines skipped, ids with or without their client', () => {
    const guestId = randomUUID();
    const line = JSON.stringify({ level: 30, clientId: 'c-1', guestId, eventId: 'e-1', msg: 'guest personal data erased' });
    expect(parseLine(line)).toEqual({ kind: 'guest', clientId: 'c-1', guestId, eventId: 'e-1' });
    expect(parseLine(JSON.stringify({ level: 30, guestId, msg: 'guest created' }))).toEqual({ kind: 'skip' });
    expect(parseLine(JSON.stringify({ guestId }))).toEqual({ kind: 'guest', guestId });
    expect(parseLine(guestId)).toEqual({ kind: 'guest', guestId });
    expect(parseLine(`c-1 ${guestId}`)).toEqual({ kind: 'guest', clientId: 'c-1', guestId });
    expect(parseLine(`c%3A1:${guestId}`)).toEqual({ kind: 'guest', clientId: 'c:1', guestId });
    expect(parseLine('# a comment')).toEqual({ kind: 'skip' });
    expect(parseLine('')).toEqual({ kind: 'skip' });
    expect(parseLine('not-a-guest')).toEqual({ kind: 'invalid', text: 'not-a-guest' });
    expect(parseLine('{"guestId": 12')).toEqual({ kind: 'invalid', text: '{"guestId": 12' });
  });

  /** A client with one event and two guests, and what the projections made of them. */
  async function twoGuests(service: TestService) {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const gone = person();
    const kept = person();
    const goneId = (await client.call('POST', `${api}/guest`, { eventId, ...gone })).body.id as string;
    const keptId = (await client.call('POST', `${api}/guest`, { eventId, ...kept })).body.id as string;
    await caughtUp(service);
    return { client, eventId, gone, kept, goneId, keptId };
  }

  const expectErased = (dataDir: string, client: Client, ids: { goneId: string; keptId: string; kept: ReturnType<typeof person> }) =>
    expectErasedOn(dataDir, {}, { client, ...ids });

  it('(a) the key store alone restored older: the GuestErased events find the guest, whose key and read models are erased again', async () => {
    const dataDir = tempDir('keys-older-');
    const service = await startTestService({}, { dataDir });
    const older = path.join(tempDir('older-'), 'copy');
    let setup: Awaited<ReturnType<typeof twoGuests>>;
    try {
      setup = await twoGuests(service);
      await backupDataDir(service.platform.config, older, createLogger('silent'));
      expect((await setup.client.call('POST', `${api}/guest/${setup.goneId}/erase`, { reason: 'request 7' })).status).toBe(200);
    } finally {
      await service.stop();
    }
    const { gone, goneId, client } = setup!;
    expect(filesHolding(dataDir, needlesOf(gone))).toEqual([]);

    // As production's MongoDB restored from the older copy (key store and read models) while
    // EventStoreDB keeps its events: the key rows and the read models of the copy come back.
    const db = new Database(path.join(dataDir, 'events.sqlite'));
    db.exec(`ATTACH DATABASE '${path.join(older, 'events.sqlite')}' AS older`);
    db.exec('INSERT OR REPLACE INTO main.personal_data_keys SELECT * FROM older.personal_data_keys');
    const keyRow = db.prepare("SELECT wrapped FROM personal_data_keys WHERE guest_id LIKE '%' || ?").pluck();
    expect(keyRow.get(goneId)).toEqual(expect.any(String));
    db.exec('DETACH DATABASE older');
    db.close();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(path.join(dataDir, `read-models.sqlite${suffix}`), { force: true });
    fs.copyFileSync(path.join(older, 'read-models.sqlite'), path.join(dataDir, 'read-models.sqlite'));
    expect(filesHolding(dataDir, needlesOf(gone))).toContain('read-models.sqlite');

    const first = JSON.parse((await admin(dataDir, ['reapply-erasures'])).stdout);
    expect(first).toMatchObject({ erasureEvents: 1, reErased: 1, guests: [{ clientId: client.id, guestId: goneId, source: 'events' }] });
    const check = new Database(path.join(dataDir, 'events.sqlite'), { readonly: true });
    expect(check.prepare("SELECT wrapped FROM personal_data_keys WHERE guest_id LIKE '%' || ?").pluck().get(goneId)).toBeNull();
    check.close();
    expect(filesHolding(dataDir, needlesOf(gone))).toEqual([]);
    // Idempotent: nothing left to do.
    expect(JSON.parse((await admin(dataDir, ['reapply-erasures'])).stdout)).toMatchObject({ erasureEvents: 1, reErased: 0, alreadyErased: 1 });

    // The service catches up from the older checkpoints: the guest stays erased, the other one is whole.
    await expectErased(dataDir, client, setup!);
    expect(filesHolding(dataDir, needlesOf(gone))).toEqual([]);
  }, 300_000);

  it('(b) everything restored older: the erasure log lines kept outside the backup erase the guest again (--from)', async () => {
    const dataDir = tempDir('all-older-');
    const logFile = path.join(tempDir('logs-'), 'service.log');
    const logger = createLogger('info', destination({ dest: logFile, sync: true }));
    const service = await startTestService({}, { dataDir, logger });
    const backup = path.join(tempDir('backup-'), 'copy');
    let setup: Awaited<ReturnType<typeof twoGuests>>;
    try {
      setup = await twoGuests(service);
      await backupDataDir(service.platform.config, backup, createLogger('silent'));
      expect((await setup.client.call('POST', `${api}/guest/${setup.goneId}/erase`, { reason: 'request 8' })).status).toBe(200);
    } finally {
      await service.stop();
    }
    const { gone, goneId, client } = setup!;
    // The erasure's log line: ids, no personal data.
    const log = fs.readFileSync(logFile, 'utf8');
    const record = log.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.msg === 'guest personal data erased');
    expect(record).toMatchObject({ clientId: client.id, guestId: goneId, eventId: setup!.eventId });
    expect(needlesOf(gone).filter((n) => log.includes(n))).toEqual([]);

    // The whole DATA_DIR comes back from the backup: the erasure (event and tombstone) is gone with it.
    const restoredDir = restore(backup, dataDir);
    expect(filesHolding(restoredDir, needlesOf(gone))).toContain('read-models.sqlite');
    const withoutList = JSON.parse((await admin(restoredDir, ['reapply-erasures'])).stdout);
    expect(withoutList).toMatchObject({ erasureEvents: 0, reErased: 0 });

    // The whole service log is given: lines of other messages are skipped.
    const first = JSON.parse((await admin(restoredDir, ['reapply-erasures', '--from', logFile])).stdout);
    expect(first).toMatchObject({ reErased: 1, guests: [{ clientId: client.id, guestId: goneId, source: 'list' }], list: { notFound: [], ambiguous: [], invalid: [] } });
    expect(first.list.skipped).toBeGreaterThan(0);
    expect(filesHolding(restoredDir, needlesOf(gone))).toEqual([]);
    // A plain list of guest ids does as well, and a second run finds the guest erased.
    const list = path.join(tempDir('list-'), 'erased.txt');
    fs.writeFileSync(list, `# erased since the backup\n${goneId}\n`);
    expect(JSON.parse((await admin(restoredDir, ['reapply-erasures', '--from', list])).stdout)).toMatchObject({ reErased: 0, alreadyErased: 1 });

    await expectErased(restoredDir, client, setup!);
    expect(filesHolding(restoredDir, needlesOf(gone))).toEqual([]);
  }, 300_000);
});

// The production case (a) needs a MongoDB-protocol server for the key store: CI exports MONGO_URL
// (scripts/test-servers.sh); without one there is no MongoDB key store to restore.
describe.skipIf(!process.env.MONGO_URL)('admin reapply-erasures on MongoDB (MONGO_URL; skipped without one, always set under CI)', () => {
  it('(a) the MongoDB database (read models and key store) restored from an older dump while the event store is intact', async () => {
    const mongo = { MONGO_URL: process.env.MONGO_URL!, MONGO_DB: `reapply_${Date.now()}_${process.pid}` };
    const dataDir = tempDir('mongo-older-');
    const client = new MongoClient(mongo.MONGO_URL);
    const db = client.db(mongo.MONGO_DB);
    /** Every collection's documents, as mongodump would keep them. */
    const dump = async () => {
      const all = new Map<string, Document[]>();
      for (const { name } of await db.listCollections().toArray()) all.set(name, await db.collection(name).find({}).toArray());
      return all;
    };
    const holding = async (needles: string[]) => {
      const hits: string[] = [];
      for (const [name, docs] of await dump()) {
        for (const doc of docs) if (needles.some((n) => JSON.stringify(doc).toLowerCase().includes(n.toLowerCase()))) hits.push(`${name}/${String(doc._id)}`);
      }
      return hits;
    };
    try {
      const service = await startTestService(mongo, { dataDir });
      let older: Map<string, Document[]>;
      let setup: { client: Client; eventId: string; gone: ReturnType<typeof person>; kept: ReturnType<typeof person>; goneId: string; keptId: string };
      try {
        const owner = await createClient(service);
        const eventId = await newEvent(owner);
        const gone = person();
        const kept = person();
        const goneId = (await owner.call('POST', `${api}/guest`, { eventId, ...gone })).body.id as string;
        const keptId = (await owner.call('POST', `${api}/guest`, { eventId, ...kept })).body.id as string;
        await caughtUp(service);
        setup = { client: owner, eventId, gone, kept, goneId, keptId };
        older = await dump();
        expect((await owner.call('POST', `${api}/guest/${goneId}/erase`, { reason: 'request 9' })).status).toBe(200);
      } finally {
        await service.stop();
      }
      expect(await holding(needlesOf(setup.gone))).toEqual([]);
      // mongorestore --drop of the older dump; EventStoreDB's part (here events.sqlite) keeps the GuestErased event.
      for (const { name } of await db.listCollections().toArray()) await db.collection(name).drop();
      for (const [name, docs] of older) if (docs.length > 0) await db.collection(name).insertMany(docs);
      const keys = db.collection<{ _id: string; wrapped?: string | null }>('personal_data_keys');
      const goneKey = async () => (await keys.find({}).toArray()).find((k) => k._id.endsWith(setup.goneId));
      expect((await goneKey())?.wrapped).toEqual(expect.any(String));
      expect(await holding(needlesOf(setup.gone))).not.toEqual([]);

      const first = JSON.parse((await admin(dataDir, ['reapply-erasures'], 'silent', mongo)).stdout);
      expect(first).toMatchObject({ erasureEvents: 1, reErased: 1, guests: [{ guestId: setup.goneId, source: 'events' }] });
      expect((await goneKey())?.wrapped ?? null).toBeNull();
      expect(await holding(needlesOf(setup.gone))).toEqual([]);
      expect(JSON.parse((await admin(dataDir, ['reapply-erasures'], 'silent', mongo)).stdout)).toMatchObject({ reErased: 0, alreadyErased: 1 });

      await expectErasedOn(dataDir, mongo, setup);
      expect(await holding(needlesOf(setup.gone))).toEqual([]);
    } finally {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    }
  }, 300_000);
});

/** The service started on `dataDir` catches up: the erased guest stays erased, the other one is whole. */
async function expectErasedOn(dataDir: string, env: Record<string, string>, ids: { client: Client; goneId: string; keptId: string; kept: ReturnType<typeof person> }) {
  const service = await startTestService(env, { dataDir });
  try {
    await caughtUp(service);
    const token = await clientToken(service.url, ids.client.id, ids.client.clientSecret);
    const get = (pathname: string) => request(service.url, 'GET', pathname, undefined, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': ids.client.subscriptionKey });
    expect((await get(`${api}/guest/${ids.goneId}`)).body).toMatchObject({ id: ids.goneId, erased: true, firstName: null, lastName: null, email: null });
    expect((await get(`${api}/guest/${ids.keptId}`)).body).toMatchObject({ id: ids.keptId, firstName: ids.kept.firstName, email: ids.kept.email });
  } finally {
    await service.stop();
  }
}
