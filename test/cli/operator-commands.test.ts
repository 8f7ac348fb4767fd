/**
 * The operator commands as an operator runs them (docs/operations.md, Operator commands): a wrong
 * value is refused with a message naming it and exit 1, and nothing is changed.
 */
import { execFile, spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService } from '../support/service.js';

const run = promisify(execFile);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'operator-commands-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

// The embedded stores of a DATA_DIR: the real servers' URLs CI exports would point the commands elsewhere.
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const cli = (script: string, args: string[], env: Record<string, string> = {}) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', script), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env },
  });

let accountId: string;
beforeAll(async () => {
  const { stdout } = await cli('admin.ts', ['create-account', '--init', '--email', 'ops@example.com', '--password', 'operator passphrase']);
  accountId = JSON.parse(stdout).id;
}, 240_000);

// Each command is a fresh `node --import tsx` (10-16 s on a loaded machine): the timeouts are hang guards only.
describe('operator commands: wrong values', () => {
  it('refuses a true|false option given another value, naming the option, and leaves the account as it was', async () => {
    await cli('admin.ts', ['set-access', accountId, '--sender-trusted', 'true']);
    // Before, anything but "true" read as false: "yes" switched sender trust off and exited 0.
    await expect(cli('admin.ts', ['set-access', accountId, '--sender-trusted', 'yes'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--sender-trusted takes true or false, not "yes"'),
    });
    await expect(
      cli('admin.ts', ['create-account', '--email', 'other@example.com', '--password', 'operator passphrase', '--comms-api-enabled', '1']),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('--comms-api-enabled takes true or false') });
    const { stdout } = await cli('admin.ts', ['set-access', accountId, '--comms-api-enabled', 'true']);
    expect(JSON.parse(stdout)).toMatchObject({ commsApiEnabled: true, senderTrusted: true });
  }, 240_000);
});

describe('operator commands: an unknown account', () => {
  it('says an account id is not known here and how to list the accounts, for every command that takes one', async () => {
    // Before: 'admin: user not found', the users API's words, with nothing to say where to look.
    const unknown = /no account "no-such-account" is known in the event store in DATA_DIR \(.*operator-commands-.*\); npm run admin -- list-accounts lists the accounts with their ids. Nothing was changed/;
    for (const args of [['issue-key', 'no-such-account'], ['set-access', 'no-such-account', '--sender-trusted', 'true'], ['revoke-key', 'no-such-account', 'key_1']]) {
      await expect(cli('admin.ts', args), args.join(' ')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(unknown) });
    }
    await expect(cli('admin.ts', ['revoke-key', accountId, 'no-such-key'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`account "${accountId}" has no live subscription key "no-such-key" (never issued to it, or revoked already); npm run admin -- list-accounts shows each account's key ids`),
    });
  }, 240_000);

  it('lists the accounts from the event store, with their key ids and no secret', async () => {
    const { stdout } = await cli('admin.ts', ['list-accounts']);
    const listed = JSON.parse(stdout) as Record<string, unknown>[];
    expect(listed).toContainEqual(
      expect.objectContaining({ id: accountId, email: 'ops@example.com', userName: 'ops@example.com', subscriptionKeyIds: [expect.any(String)] }),
    );
    expect(stdout).not.toMatch(/secret|hash|sk_|cs_/i);
  }, 240_000);

  it('refuses set-access with nothing to switch, and words where an option belongs, changing nothing', async () => {
    // Before, both exited 0 having changed nothing: `set-access <id> sender-trusted true` read as no option at all.
    await expect(cli('admin.ts', ['set-access', accountId])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('set-access needs what to switch: --comms-api-enabled true|false and/or --sender-trusted true|false'),
    });
    await expect(cli('admin.ts', ['set-access', accountId, 'sender-trusted', 'true'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('set-access does not take "sender-trusted" "true"; options are written --name value'),
    });
    await expect(cli('admin.ts', ['create-account', '--bogus'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/Unknown option '--bogus'.* \(npm run admin -- --help lists each command's options\). Nothing was changed/),
    });
    await expect(cli('admin.ts', ['issue-key'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('issue-key needs the account id: npm run admin -- issue-key <accountId> (npm run admin -- list-accounts shows the ids)'),
    });
  }, 240_000);
});

describe('operator commands: create-account', () => {
  it('refuses what POST /admin/v1/accounts refuses, naming the option, and opens nothing', async () => {
    // Before, the command opened an account with the email 'notanemail', which the admin API refuses.
    await expect(cli('admin.ts', ['create-account', '--email', 'notanemail', '--password', 'operator passphrase'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('admin: create-account: --email must be an email address (npm run admin -- --help shows an example). Nothing was changed'),
    });
    expect((await cli('admin.ts', ['list-accounts'])).stdout).not.toContain('notanemail');
  }, 240_000);
});

describe('operator commands: an option of another command', () => {
  it('is refused, naming what the command takes, and nothing is done', async () => {
    const keys = async () => (JSON.parse((await cli('admin.ts', ['list-accounts'])).stdout) as { id: string; subscriptionKeyIds: string[] }[]).find((a) => a.id === accountId)!.subscriptionKeyIds;
    const before = await keys();
    // Before, it was ignored: issue-key issued a key and exited 0, sender trust unchanged.
    await expect(cli('admin.ts', ['issue-key', accountId, '--sender-trusted', 'true'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('issue-key does not take --sender-trusted; it takes no options (npm run admin -- --help). Nothing was changed'),
    });
    await expect(cli('admin.ts', ['hold-pending-sends', '--dry-run', '--from', 'x'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('hold-pending-sends does not take --from; it takes --dry-run'),
    });
    expect(await keys()).toEqual(before);
  }, 240_000);

  it('names a backup pacing option given a value it cannot use, with one it can', async () => {
    // Before: '--pages-per-step needs a positive integer', without the value given or one to give.
    const target = path.join(os.tmpdir(), `operator-backup-${process.pid}`);
    await expect(cli('admin.ts', ['backup', target, '--pages-per-step', '0'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--pages-per-step needs a positive integer such as 1000 (pages of 4 kB a step), not "0"'),
    });
    await expect(cli('admin.ts', ['backup', target, '--pause-ms', '1s'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--pause-ms needs a whole number of milliseconds such as 10, not "1s"'),
    });
    expect(fs.existsSync(target)).toBe(false);
  }, 240_000);
});

describe('operator commands: configuration', () => {
  it('names a LOG_LEVEL pino does not know, as the service does', async () => {
    // Before, admin made its logger before reading the config: 'admin: default level:verbose must be included in custom levels'.
    await expect(cli('admin.ts', ['list-accounts'], { LOG_LEVEL: 'verbose' })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('admin: invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'),
    });
  }, 240_000);
});

describe('operator commands: an empty LOG_LEVEL', () => {
  it('reads LOG_LEVEL= as unset, as the service does', async () => {
    // Before: 'relay: default level: must be included in custom levels', exit 1 (an env file with LOG_LEVEL= and no value).
    expect((await cli('relay.ts', ['status'], { LOG_LEVEL: '' })).stdout).toMatch(/^relay checkpoint none;/);
    expect(JSON.parse((await cli('admin.ts', ['list-accounts'], { LOG_LEVEL: '' })).stdout)).toContainEqual(expect.objectContaining({ id: accountId }));
  }, 240_000);
});

describe('operator commands: relay reset', () => {
  it('refuses a position past the event store head, naming the head, and leaves the checkpoint where it was', async () => {
    // Before, the checkpoint moved there and the service then refused to start (checkpoints ahead of this event store's head).
    await expect(cli('relay.ts', ['reset', '99999'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/reset 99999 is past the event store's head \d+; give a position from -1 to \d+/),
    });
    expect((await cli('relay.ts', ['status'])).stdout).toMatch(/^relay checkpoint none;/);
  }, 240_000);

  it('refuses words the command does not take, and a missing position, saying what to write', async () => {
    // Before, `relay status 42` ran status and `reset 42 43` moved the checkpoint to 42, both exiting 0.
    await expect(cli('relay.ts', ['status', '42'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('status does not take "42"; use status, or reset <position> (--help shows examples). Nothing was changed'),
    });
    await expect(cli('relay.ts', ['reset', '-1', '0'])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('reset does not take "0"') });
    await expect(cli('relay.ts', ['reset'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('such as npm run relay -- reset -1; npm run relay -- status shows the checkpoint'),
    });
    await expect(cli('projections.ts', ['status', 'guests'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('status takes no names, it lists every projection ("guests" given)'),
    });
    expect((await cli('relay.ts', ['status'])).stdout).toMatch(/^relay checkpoint none;/);
  }, 240_000);

  it('keeps its log lines on stderr at any LOG_LEVEL: stdout is the one-line result', async () => {
    const { stdout, stderr } = await cli('relay.ts', ['status'], { LOG_LEVEL: 'info' });
    expect(stdout.trim().split('\n')).toEqual([expect.stringMatching(/^relay checkpoint none;/)]);
    expect(stderr).toMatch(/"level":30/);
  }, 240_000);
});

describe('operator commands: progress', () => {
  it('logs a projections rebuild as JSON lines on stderr when it is not a terminal, the result alone on stdout', async () => {
    // Before, the only progress was a bar drawn on a terminal: in a log file or a CI job, nothing until the end.
    const { stdout, stderr } = await cli('projections.ts', ['rebuild'], { LOG_LEVEL: 'info' });
    expect(stdout).toMatch(/^rebuilt every projection: \d+ events in [\d.]+ s\n$/);
    const lines = stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const started = lines.find((l) => l.msg === 'projections rebuild: started');
    expect(started).toMatchObject({ head: expect.any(Number), projections: expect.arrayContaining(['guests', 'accounts']) });
    expect(lines.find((l) => l.msg === 'projections rebuild: progress')).toMatchObject({
      position: started!.head,
      head: started!.head,
      events: expect.any(Number),
      percent: 100,
    });
    const finished = lines.find((l) => l.msg === 'projections rebuild: finished');
    expect(finished).toMatchObject({ events: Number(/: (\d+) events/.exec(stdout)![1]), seconds: expect.any(Number) });
  }, 240_000);
});

describe('operator commands: an unknown projection', () => {
  it('refuses projections rebuild of an unknown name before it starts anything, naming the known ones', async () => {
    // Before, it logged 'projections rebuild: started' (and took the read store) before refusing.
    const refused = cli('projections.ts', ['rebuild', 'bogus'], { LOG_LEVEL: 'info' });
    await expect(refused).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/unknown projection bogus; known: .*guests/) });
    const { stderr } = (await refused.catch((error: { stderr: string }) => error)) as { stderr: string };
    expect(stderr).not.toContain('projections rebuild: started');
  }, 240_000);
});

describe('operator commands: a store in use', () => {
  it('refuses hold-pending-sends while the service runs on the store, naming it; --dry-run still lists', async () => {
    // Before, it ran: every send in progress was failed as outcome_unknown, and one that then went out read failed.
    const service = await startTestService({}, { dataDir });
    try {
      await expect(cli('admin.ts', ['hold-pending-sends'])).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringMatching(new RegExp(`the service runs on this store \\(its projections role, pid ${process.pid} .*Stop every role of the service first`)),
      });
      expect(JSON.parse((await cli('admin.ts', ['hold-pending-sends', '--dry-run'])).stdout)).toMatchObject({ dryRun: true, held: 0 });
    } finally {
      await service.stop();
    }
    expect(JSON.parse((await cli('admin.ts', ['hold-pending-sends'])).stdout)).toMatchObject({ dryRun: false, held: 0 });
  }, 240_000);
});

describe('operator commands: a rebuild holds the store', () => {
  it('holds the read store while projections rebuild runs (the document a starting service refuses on) and gives it back at the end', async () => {
    // Before, a rebuild only checked that no service held the store: one started during the
    // rebuild projected into the collections the rebuild was refilling.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'operator-rebuild-holds-'));
    try {
      const service = await startTestService({}, { dataDir: dir });
      const client = await createClient(service);
      const eventId = await newEvent(client);
      for (let start = 0; start < 6_000; start += 200) {
        const batch = Array.from({ length: 200 }, (_, k) => ({ firstName: `F${start + k}`, lastName: 'L', email: `g${start + k}@example.com`, barcode: `B-${start + k}` }));
        expect((await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, batch)).status).toBe(204);
      }
      await service.stop();
      const readModels = new Database(path.join(dir, 'read-models.sqlite'));
      const holderRow = readModels.prepare("SELECT body FROM readstore_docs WHERE collection = 'service_holders' AND id = 'projections'").pluck();
      const rebuild = spawn(process.execPath, ['--import', 'tsx', path.join('src', 'cli', 'projections.ts'), 'rebuild'], { env: { ...embeddedEnv, DATA_DIR: dir, LOG_LEVEL: 'silent' }, stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => rebuild.once('exit', resolve));
      const seen: Record<string, unknown>[] = [];
      let code: number | null | undefined;
      void exited.then((c) => (code = c));
      while (code === undefined) {
        const body = holderRow.get() as string | undefined;
        if (body) seen.push(JSON.parse(body) as Record<string, unknown>);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(code).toBe(0);
      expect(seen).toContainEqual(expect.objectContaining({ role: 'rebuild', pid: rebuild.pid, host: os.hostname() }));
      expect(holderRow.get()).toBeUndefined();
      readModels.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('operator commands: help', () => {
  it('lists the admin commands with their examples when no command is given, and exits 1', async () => {
    // Before: `unknown command ""` and a list of names, no usage or examples.
    const refused = await cli('admin.ts', []).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('admin: no command given') });
    for (const command of ['create-account', 'list-accounts', 'set-access', 'issue-key', 'revoke-key', 'backup', 'reapply-erasures', 'hold-pending-sends']) {
      expect((refused as { stderr: string }).stderr).toContain(`example: npm run admin -- ${command}`);
    }
  }, 240_000);
});
