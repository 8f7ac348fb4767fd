/**
 * Restore drills (docs/operations.md, Backups and restores): what an operator gets wrong.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { backupDataDir } from '../../src/cli/backup.js';
import { createLogger } from '../../src/shared/logger.js';
import { commsApi, commsSetup, sendTo, until } from '../support/flows.js';
import { clientToken, createClient, newEvent, request, startTestService, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

const run = promisify(execFile);
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const admin = (dataDir: string, args: string[]) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    maxBuffer: 32 * 1024 * 1024,
  });
const webhooksToLoopback = { WEBHOOK_ALLOW_INSECURE: 'true' };
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
});

async function tokenReply(url: string, form: Record<string, string>) {
  const response = await fetch(`${url}/core/connect/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const caughtUp = (service: TestService) =>
  eventually(async () => {
    const { lag, position } = await service.runner!.lag();
    return lag === 0 && position >= 0;
  }, 60_000, 'projections caught up');

const outboxFiles = (dataDir: string) => (fs.existsSync(path.join(dataDir, 'outbox')) ? fs.readdirSync(path.join(dataDir, 'outbox')) : []);

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

describe('restore without the master key', () => {
  it('refuses to start when the master key file was not put back (a new one made the same day has the same id)', async () => {
    const dataDir = tempDir('live-');
    const service = await startTestService({}, { dataDir });
    const backup = path.join(tempDir('backups-'), 'copy');
    let guestId: string;
    let client: Awaited<ReturnType<typeof createClient>>;
    try {
      client = await createClient(service);
      const eventId = await newEvent(client);
      const tag = randomUUID().slice(0, 8);
      const created = await client.call('POST', `${api}/guest`, { eventId, firstName: `Ottilie${tag}`, lastName: 'Brandauer', email: `o.${tag}@example.com` });
      expect(created.status).toBe(200);
      guestId = (created.body as { id: string }).id;
      await backupDataDir(service.platform.config, backup, createLogger('silent'));
    } finally {
      await service.stop();
    }
    const restoredDir = tempDir('restored-');
    for (const name of fs.readdirSync(backup).filter((n) => n.endsWith('.sqlite'))) fs.copyFileSync(path.join(backup, name), path.join(restoredDir, name));
    // The master key file is forgotten: the restore commands, then the service, would make a new
    // one, with the same date-based id as the copy's key made today, and go on with it.
    const refusal = /stored data keys do not open with master key "k\d{8}" of the development master key file .*master-keys\.json: it holds another key under that id .*Put back the master key of this data/;
    for (const command of ['hold-pending-sends', 'reapply-erasures']) {
      const failed = await admin(restoredDir, [command]).then(() => 'exit 0', (error: { stderr: string }) => error.stderr);
      expect(failed).toMatch(refusal);
    }
    await expect(startTestService({}, { dataDir: restoredDir }).then(async (s) => { await s.stop(); return 'started'; })).rejects.toThrow(refusal);
    // With the copy's own key put back, the commands run and the guest reads whole.
    fs.copyFileSync(path.join(dataDir, 'personal-data', 'master-keys.json'), path.join(restoredDir, 'personal-data', 'master-keys.json'));
    for (const command of ['hold-pending-sends', 'reapply-erasures']) await admin(restoredDir, [command]);
    const restored = await startTestService({}, { dataDir: restoredDir });
    try {
      const token = await clientToken(restored.url, client!.id, client!.clientSecret);
      const read = await request(restored.url, 'GET', `${api}/guest/${guestId!}`, undefined, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client!.subscriptionKey });
      expect(read.body).toMatchObject({ id: guestId!, firstName: expect.stringMatching(/^Ottilie/) });
    } finally {
      await restored.stop();
    }
  }, 120_000);
});

describe('the restore drill: a hot backup of realistic data, restored into a fresh DATA_DIR', () => {
  it('brings back every write acknowledged before the backup, readable; keeps the erased guest erased; sends no email or webhook twice', async () => {
    const dataDir = tempDir('drill-');
    const receiver = await startReceiver();
    receivers.push(receiver);
    const service = await startTestService(webhooksToLoopback, { dataDir });
    const backup = path.join(tempDir('drill-backups-'), 'copy');
    const before: { id: string; firstName: string }[] = [];
    let setup: Awaited<ReturnType<typeof commsSetup>>;
    let idempotent: { id: string };
    let erasedId: string;
    let refreshToken: string;
    let invitations: string[];
    const door = { userName: `door-${randomUUID().slice(0, 8)}`, password: 'door staff pass 1' };
    try {
      setup = await commsSetup(service);
      const { client, eventId } = setup;
      const webhook = await client.call('POST', `${commsApi}/webhook`, { url: receiver.url });
      receiver.secret = webhook.body.secret;
      expect((await client.call('POST', '/checkin/v1/api/teammember', { ...door, email: `${door.userName}@example.com` })).status).toBe(200);
      const signedIn = await tokenReply(service.url, { grant_type: 'password', client_id: 'checkin-app', ...door, username: door.userName });
      expect(signedIn.status).toBe(200);
      refreshToken = signedIn.body.refresh_token;
      const guest = async (firstName: string, headers: Record<string, string> = {}) => {
        const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName, lastName: `Drill${firstName}`, email: `${firstName.toLowerCase()}@example.com` }, headers);
        expect(reply.status).toBe(200);
        before.push({ id: reply.body.id, firstName });
        return reply.body as { id: string };
      };
      idempotent = await guest('Idem', { 'idempotency-key': 'drill-key-1' });
      const erased = await guest('Erasme');
      erasedId = erased.id;
      const a = await guest('Anna');
      const b = await guest('Bert');
      invitations = await sendTo(setup, [a.id, b.id]);
      const call = client.call;
      for (const id of invitations) await until(async () => ((await call('GET', `${commsApi}/invitations/${id}`)).body.status === 'sent' ? true : undefined), `invitation ${id} sent`);
      expect((await client.call('POST', `/checkin/v1/api/guest/${erasedId}/erase`, { reason: 'drill' })).status).toBe(200);
      before.splice(before.findIndex((g) => g.id === erasedId), 1);
      await caughtUp(service);
      // Two comms.sent webhooks, delivered.
      await until(async () => (receiver.deliveries.filter((d) => d.body?.type === 'comms.sent').length >= 2 ? true : undefined), 'comms.sent webhooks');

      // Writes go on while the copy runs; every write answered before the backup started must come back.
      let writing = true;
      let n = 0;
      const writer = (async () => {
        while (writing) {
          const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: `Live${n}`, lastName: 'Writer' });
          expect(reply.status).toBe(200);
          n++;
        }
      })();
      try {
        await eventually(async () => n >= 3, 60_000, 'writes under way');
        await admin(dataDir, ['backup', backup, '--pages-per-step', '2', '--pause-ms', '5']);
      } finally {
        writing = false;
        await writer;
      }
    } finally {
      await service.stop();
    }
    const deliveredBefore = receiver.deliveries.length;
    const emailsBefore = outboxFiles(dataDir).length;
    expect(emailsBefore).toBe(2);

    // The operator's restore: the SQLite files, the development key files kept apart, the two commands.
    const restoredDir = tempDir('drill-restored-');
    for (const name of fs.readdirSync(backup).filter((f) => f.endsWith('.sqlite'))) fs.copyFileSync(path.join(backup, name), path.join(restoredDir, name));
    for (const key of ['personal-data/master-keys.json', 'webhooks/encryption-keys.json', 'identity/signing-key.json']) {
      fs.mkdirSync(path.dirname(path.join(restoredDir, key)), { recursive: true });
      fs.copyFileSync(path.join(dataDir, key), path.join(restoredDir, key));
    }
    expect(JSON.parse((await admin(restoredDir, ['hold-pending-sends'])).stdout)).toMatchObject({ held: 0 });
    expect(JSON.parse((await admin(restoredDir, ['reapply-erasures'])).stdout)).toMatchObject({ reErased: 0, alreadyErased: 1 });

    const restored = await startTestService(webhooksToLoopback, { dataDir: restoredDir });
    try {
      await caughtUp(restored);
      const { client, eventId } = setup!;
      const token = await clientToken(restored.url, client.id, client.clientSecret);
      const headers = { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey };
      const get = (pathname: string) => request(restored.url, 'GET', pathname, undefined, headers);
      for (const g of before) expect((await get(`/checkin/v1/api/guest/${g.id}`)).body).toMatchObject({ id: g.id, firstName: g.firstName, email: `${g.firstName.toLowerCase()}@example.com` });
      expect((await get(`/checkin/v1/api/guest/${erasedId!}`)).body).toMatchObject({ id: erasedId!, erased: true, firstName: null, email: null });
      // The idempotency record came back: the retry answers the first guest, not a second one.
      const retry = await request(restored.url, 'POST', '/checkin/v1/api/guest', { eventId, firstName: 'Idem', lastName: 'DrillIdem', email: 'idem@example.com' }, { ...headers, 'content-type': 'application/json', 'idempotency-key': 'drill-key-1' });
      expect({ status: retry.status, body: retry.body }).toMatchObject({ status: 200, body: { id: idempotent!.id } });
      // The team member signs in; its refresh token from before the backup still works.
      expect((await tokenReply(restored.url, { grant_type: 'password', client_id: 'checkin-app', username: door.userName, password: door.password })).status).toBe(200);
      expect((await tokenReply(restored.url, { grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: refreshToken! })).status).toBe(200);
      // The webhook secret opens: a test delivery verifies with the secret from before.
      const test = await request(restored.url, 'POST', `${commsApi}/webhook/test`, undefined, headers);
      expect(test.status).toBe(200);
      const [, ...after] = await until(async () => {
        const found = receiver.deliveries.slice(deliveredBefore);
        const mine = found.find((d) => d.headers['x-service-webhook-id'] === test.body.webhookId);
        return mine ? [mine, ...found.filter((d) => d !== mine)] : undefined;
      }, 'the test delivery');
      expect(receiver.deliveries.slice(deliveredBefore).every((d) => d.specVerified)).toBe(true);
      // Nothing delivered before the backup is delivered again, and no invitation is emailed again.
      expect(after.map((d) => d.body?.type)).toEqual([]);
      const invitationsRead = await Promise.all(invitations!.map(async (id) => (await get(`${commsApi}/invitations/${id}`)).body.status));
      expect(invitationsRead).toEqual(['sent', 'sent']);
      expect(outboxFiles(restoredDir)).toEqual([]);
    } finally {
      await restored.stop();
    }
  }, 300_000);
});

describe('admin restore', () => {
  it('refuses a DATA_DIR with data (the running service, newer data), an unfinished or damaged backup, and a backup without its master key; then restores, holds and erases again', async () => {
    const dataDir = tempDir('restore-live-');
    const service = await startTestService({}, { dataDir });
    const backup = path.join(tempDir('restore-backups-'), 'copy');
    let client: Awaited<ReturnType<typeof createClient>>;
    let keptId: string;
    let goneId: string;
    const failure = (dir: string, args: string[], env: Record<string, string> = {}) =>
      run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'admin.ts'), ...args], { env: { ...embeddedEnv, DATA_DIR: dir, LOG_LEVEL: 'silent', ...env } }).then(
        () => 'exit 0',
        (error: { stderr: string }) => error.stderr,
      );
    try {
      client = await createClient(service);
      const eventId = await newEvent(client);
      const guest = async (firstName: string) => (await client.call('POST', `${api}/guest`, { eventId, firstName, lastName: `Kept${firstName}`, email: `${firstName.toLowerCase()}@example.com` })).body.id as string;
      keptId = await guest('Konrad');
      goneId = await guest('Gisela');
      await admin(dataDir, ['backup', backup]);
      // Erased after the backup: the restored copy brings it back, the erasure list outside the backups erases it again.
      expect((await client.call('POST', `${api}/guest/${goneId}/erase`, { reason: 'after the backup' })).status).toBe(200);
      // Restoring over the running service's DATA_DIR (newer data than the backup): refused, nothing written.
      const before = fs.readdirSync(dataDir).sort();
      expect(await failure(dataDir, ['restore', backup])).toMatch(/DATA_DIR \(.*\) holds data \(.*events\.sqlite.*\): a restore goes into an empty DATA_DIR.*Nothing was changed/);
      expect(fs.readdirSync(dataDir).sort()).toEqual(before);
    } finally {
      await service.stop();
    }
    const target = () => tempDir('restore-into-');
    // Not a finished backup (no manifest), a damaged file, a file of another backup.
    const unfinished = tempDir('unfinished-');
    for (const name of fs.readdirSync(backup).filter((n) => n !== 'manifest.json')) fs.copyFileSync(path.join(backup, name), path.join(unfinished, name));
    expect(await failure(target(), ['restore', unfinished])).toMatch(/holds no manifest\.json: not a backup admin backup finished/);
    const damaged = tempDir('damaged-');
    for (const name of fs.readdirSync(backup)) fs.copyFileSync(path.join(backup, name), path.join(damaged, name));
    fs.appendFileSync(path.join(damaged, 'read-models.sqlite'), 'x');
    const emptyTarget = target();
    expect(await failure(emptyTarget, ['restore', damaged])).toMatch(/read-models\.sqlite does not match the manifest .*Nothing was changed/);
    expect(fs.readdirSync(emptyTarget)).toEqual([]);
    // Without the master key (not put back, no PII_MASTER_KEYS): refused loudly before anything is written.
    expect(await failure(emptyTarget, ['restore', backup])).toMatch(/the backup's personal data is sealed under master key "k\d{8}", which neither PII_MASTER_KEYS nor a key file .* holds: without it the restored guests' personal data is unreadable for good/);
    expect(fs.readdirSync(emptyTarget)).toEqual([]);

    // The master key put back first, then the restore with the erasure list.
    const restoredDir = target();
    fs.mkdirSync(path.join(restoredDir, 'personal-data'));
    fs.copyFileSync(path.join(dataDir, 'personal-data', 'master-keys.json'), path.join(restoredDir, 'personal-data', 'master-keys.json'));
    const list = path.join(tempDir('erasures-'), 'since-backup.txt');
    fs.writeFileSync(list, `${client!.id} ${goneId!}\n`);
    const done = JSON.parse((await admin(restoredDir, ['restore', backup, '--from', list])).stdout);
    expect(done).toMatchObject({
      restored: { files: ['read-models.sqlite', 'bus.sqlite', 'rate-limits.sqlite', 'events.sqlite'] },
      holdPendingSends: { held: 0 },
      reapplyErasures: { reErased: 1 },
    });
    // A second restore into the now full DATA_DIR is refused.
    expect(await failure(restoredDir, ['restore', backup])).toMatch(/holds data/);
    const restored = await startTestService({}, { dataDir: restoredDir });
    try {
      await caughtUp(restored);
      const token = await clientToken(restored.url, client!.id, client!.clientSecret);
      const get = (id: string) => request(restored.url, 'GET', `${api}/guest/${id}`, undefined, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client!.subscriptionKey });
      expect((await get(keptId!)).body).toMatchObject({ id: keptId!, firstName: 'Konrad', email: 'konrad@example.com' });
      expect((await get(goneId!)).body).toMatchObject({ id: goneId!, erased: true, firstName: null, email: null });
    } finally {
      await restored.stop();
    }
  }, 300_000);
});
