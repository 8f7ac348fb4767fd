import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { backupDataDir } from '../../src/cli/backup.js';
import { requireStore } from '../../src/cli/common.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { clientToken, passwordToken, request, startTestService } from '../support/service.js';

const run = promisify(execFile);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-test-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

// The commands work on the embedded stores of a DATA_DIR, as the in-process test service does:
// the real servers' URLs that CI exports (MONGO_URL, ...) would point them at other stores.
const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...embeddedEnv } = process.env;
const cliIn = (dir: string) => (script: string, args: string[]) =>
  run(process.execPath, ['--import', 'tsx', path.join('src', 'cli', script), ...args], {
    env: { ...embeddedEnv, DATA_DIR: dir, LOG_LEVEL: 'silent' },
  });
const cli = cliIn(dataDir);

// Each command is a fresh `node --import tsx` (10-16 s apiece on a loaded 2-core machine): the timeouts are hang guards only.
describe('operator command lines', () => {
  it('creates an account that logs in and reads itself once the service runs on the same data', async () => {
    // The password on standard input (--password-stdin), kept out of the command line npm echoes.
    const creating = cli('admin.ts', ['create-account', '--init', '--email', 'op@example.com', '--password-stdin', '--comms-api-enabled', 'true']);
    creating.child.stdin!.end('operator passphrase\n');
    const { stdout } = await creating;
    const account = JSON.parse(stdout);
    expect(account).toMatchObject({ email: 'op@example.com', commsApiEnabled: true, senderTrusted: false });
    expect(account.clientSecret).toMatch(/^cs_/);
    const service = await startTestService({}, { dataDir });
    try {
      const token = await clientToken(service.url, account.id, account.clientSecret);
      const me = await request(service.url, 'GET', '/users/v1/api/users/email?email=op@example.com', undefined, {
        authorization: `Bearer ${token}`,
        'ocp-apim-subscription-key': account.subscriptionKey,
      });
      expect(me.status).toBe(200);
      expect(me.body.id).toBe(account.id);
      // The password read from standard input, without its line break, is the account's password.
      expect(await passwordToken(service.url, me.body.userName ?? 'op@example.com', 'operator passphrase')).toEqual(expect.any(String));
    } finally {
      await service.stop();
    }
    const trusted = JSON.parse((await cli('admin.ts', ['set-access', account.id, '--sender-trusted', 'true'])).stdout);
    expect(trusted).toMatchObject({ commsApiEnabled: true, senderTrusted: true });
  }, 240_000);

  it('explains a wrong command and exits non-zero', async () => {
    await expect(cli('admin.ts', ['frobnicate'])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('unknown command') });
    await expect(cli('relay.ts', ['reset', 'x'])).rejects.toMatchObject({ stderr: expect.stringContaining('reset needs a position') });
  }, 240_000);

  it('rebuilds read models with progress and reports checkpoints', async () => {
    const { stdout } = await cli('projections.ts', ['rebuild']);
    expect(stdout).toMatch(/rebuilt every projection: \d+ events/);
    const status = (await cli('projections.ts', ['status'])).stdout;
    expect(status).toMatch(/accounts\s+position \d+\s+head \d+\s+lag 0/);
    const relay = (await cli('relay.ts', ['reset', '-1'])).stdout;
    expect(relay).toContain('to the beginning');
    // The history holds accounts and events only, none of which the relay publishes: even from the
    // beginning it is caught up (the unfiltered head would have said it was behind forever).
    expect((await cli('relay.ts', ['status'])).stdout).toBe('relay checkpoint none; last event it publishes -1; caught up\n');
  }, 240_000);
});

describe('operator command lines: help and refusals', () => {
  it('lists every subcommand with an example under --help', async () => {
    const expected: Record<string, string[]> = {
      'admin.ts': ['create-account', 'list-accounts', 'set-access', 'issue-key', 'revoke-key', 'rewrap-personal-data-keys', 'reencrypt-secrets', 'backup', 'reapply-erasures'],
      'projections.ts': ['status', 'rebuild'],
      'relay.ts': ['status', 'reset'],
    };
    for (const [script, commands] of Object.entries(expected)) {
      const { stdout } = await cli(script, ['--help']);
      for (const command of commands) expect(stdout, `${script} --help`).toMatch(new RegExp(`example: npm run \\w+ -- ${command}`));
      expect(stdout).toContain('--init');
    }
  }, 240_000);

  it('refuses a DATA_DIR that holds no store, naming the path, and creates one with --init', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-empty-'));
    const inEmpty = cliIn(empty);
    try {
      for (const [script, args] of [['projections.ts', ['rebuild']], ['relay.ts', ['status']], ['admin.ts', ['issue-key', 'x']]] as const) {
        await expect(inEmpty(script, [...args])).rejects.toMatchObject({
          code: 1,
          stderr: expect.stringContaining(`no event store at ${path.join(empty, 'events.sqlite')}`),
        });
      }
      expect(fs.readdirSync(empty)).toEqual([]);
      const { stdout } = await inEmpty('projections.ts', ['rebuild', '--init']);
      expect(stdout).toMatch(/rebuilt every projection: 0 events/);
      expect(fs.existsSync(path.join(empty, 'events.sqlite'))).toBe(true);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  }, 240_000);

  it('does not offer --init to a command that has nothing to do on an empty store (backup, reapply-erasures, hold-pending-sends)', async () => {
    // They refuse an empty DATA_DIR with or without --init (docs/operations.md, Operator commands);
    // the refusal used to end "or pass --init to create an empty store there", which then refused the same way.
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-empty-'));
    try {
      const refusal = await cliIn(empty)('admin.ts', ['hold-pending-sends', '--init']).catch((error: { code: number; stderr: string }) => error);
      expect(refusal).toMatchObject({ code: 1, stderr: expect.stringContaining(`no event store at ${path.join(empty, 'events.sqlite')}`) });
      expect((refusal as { stderr: string }).stderr).not.toContain('pass --init');
      expect((refusal as { stderr: string }).stderr).toContain('admin hold-pending-sends has nothing to do on an empty store, so --init does not apply');
      expect(fs.readdirSync(empty)).toEqual([]);
      const config = loadConfig({ DATA_DIR: empty, LOG_LEVEL: 'silent' });
      await expect(backupDataDir(config, path.join(os.tmpdir(), `cli-backup-${process.pid}`), createLogger('silent'))).rejects.toThrow(
        /no event store at .*admin backup has nothing to do on an empty store, so --init does not apply/,
      );
      // Commands that can start from an empty store still offer it.
      expect(() => requireStore(config, false)).toThrow(/or pass --init to create an empty store there/);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  }, 240_000);

  it('refuses to rebuild while a projections role holds the read store, and rebuilds once it stopped', async () => {
    const service = await startTestService({}, { dataDir });
    try {
      await expect(cli('projections.ts', ['rebuild'])).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringMatching(new RegExp(`a projections role \\(pid ${process.pid} .*holds this read store; stop it`)),
      });
    } finally {
      await service.stop();
    }
    const { stdout } = await cli('projections.ts', ['rebuild']);
    expect(stdout).toMatch(/rebuilt every projection: \d+ events/);
  }, 240_000);
});
