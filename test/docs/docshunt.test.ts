import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startTestService, request, type TestService } from '../support/service.js';

/**
 * The README's Configuration table and docs/operations.md read mechanically and held against the
 * code, so that a later change to either side that leaves the other behind fails here.
 */
const root = path.join(__dirname, '..', '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
const operations = fs.readFileSync(path.join(root, 'docs', 'operations.md'), 'utf8');
const configSection = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('The embedded bus keeps messages'));
const rows = configSection
  .split('\n')
  .filter((line) => line.startsWith('| `'))
  .map((line) => {
    const [names = '', , ...meaning] = line.split(' | ');
    return { names: [...names.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!), meaning: meaning.join(' | ') };
  });
const tableNames = rows.flatMap((row) => row.names);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'docshunt-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** loadConfig's answer to `env` (on top of a private DATA_DIR): the config, or the refusal's message. */
function configFor(env: Record<string, string>): { config?: unknown; refusal?: string } {
  try {
    return { config: loadConfig({ DATA_DIR: dataDir, ...env }) };
  } catch (error) {
    return { refusal: (error as Error).message };
  }
}

function srcFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? srcFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe("README's Configuration table against src/config.ts", () => {
  it('lists every variable the service reads, and the service reads every variable it lists', () => {
    const read = new Set<string>();
    const env = new Proxy({ DATA_DIR: dataDir } as Record<string, string>, {
      get: (target, name) => (typeof name === 'string' && /^[A-Z]/.test(name) && read.add(name), target[name as string]),
    });
    loadConfig(env);
    // Outside the one config reader only main.ts (ROLE) and the CLIs' log level read the environment.
    for (const file of srcFiles(path.join(root, 'src'))) {
      for (const match of fs.readFileSync(file, 'utf8').matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)) read.add(match[1]!);
    }
    expect(tableNames.length).toBeGreaterThan(50);
    expect([...read].filter((name) => !tableNames.includes(name)).sort()).toEqual([]);
    expect(tableNames.filter((name) => !read.has(name)).sort()).toEqual([]);
  });

  it('enforces every "at least N" and "at most N" the table states, naming the variable', () => {
    let checked = 0;
    for (const { names, meaning } of rows) {
      // "at least 60 s" of the keep-alive row is Node's header timeout, not a bound on a value.
      for (const [, side, figure] of meaning.matchAll(/at (least|most) (\d+)(?!\d| s\b)/g)) {
        const bound = Number(figure);
        const outside = side === 'least' ? bound - 1 : bound + 1;
        // The bound is on one of the row's variables, as a number or as a length in characters.
        const holds = names.some((name) =>
          [String, (n: number) => 'a'.repeat(n)].some((write) => {
            const at = configFor({ [name]: write(bound) });
            const past = configFor({ [name]: write(outside) });
            return at.refusal === undefined && past.refusal?.includes(name) === true;
          }),
        );
        expect(holds, `${names.join(', ')}: at ${side} ${bound}`).toBe(true);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('holds every millisecond timer setting to the most the paragraph under the table states', () => {
    const paragraph = readme.slice(readme.indexOf('Numbers are whole'), readme.indexOf('The embedded bus keeps messages'));
    const most = Number(/that a timer waits[\s\S]*?is at most (\d+)/.exec(paragraph)?.[1]);
    expect(most).toBe(2_147_483_647);
    const exceptions = new Map([...paragraph.matchAll(/`([A-Z_]+)` at most (\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
    const timers = tableNames.filter((name) => /_TIMEOUT_MS$|_SWEEP_MS$|^SEND_LEASE_MS$|^SHUTDOWN_/.test(name));
    expect(timers.length).toBeGreaterThan(6);
    for (const name of timers) {
      const max = exceptions.get(name) ?? most;
      // SHUTDOWN_TIMEOUT_MS must stay above SHUTDOWN_DRAIN_TIMEOUT_MS (8000 by default): a small drain keeps that rule out of the way.
      const others: Record<string, string> = name.startsWith('SHUTDOWN_') && name !== 'SHUTDOWN_TIMEOUT_MS' ? { SHUTDOWN_TIMEOUT_MS: String(most) } : {};
      const drain: Record<string, string> = name === 'SHUTDOWN_TIMEOUT_MS' ? { SHUTDOWN_DRAIN_TIMEOUT_MS: '1' } : {};
      const at = configFor({ ...others, ...drain, [name]: String(name === 'SHUTDOWN_DRAIN_TIMEOUT_MS' ? max - 1 : max) });
      expect(at.refusal, `${name}=${max}`).toBeUndefined();
      expect(configFor({ ...others, ...drain, [name]: String(max + 1) }).refusal, `${name}=${max + 1}`).toContain(name);
    }
  });

  it('counts a variable set to the empty string as unset, as the paragraph under the table says', () => {
    expect(readme).toMatch(/set to the empty string \(`NAME=`[^)]*\) counts as unset/);
    const defaults = configFor({});
    for (const name of tableNames.filter((n) => n !== 'DATA_DIR')) expect(configFor({ [name]: '' }), `${name}=""`).toEqual(defaults);
    expect(loadConfig({ DATA_DIR: '' })).toEqual(loadConfig({}));
  });

  it('refuses a BODY_LIMIT that is not a size as the row writes one, instead of reading its leading digits as bytes', () => {
    const row = rows.find((r) => r.names.includes('BODY_LIMIT'))!;
    const taken = [...row.meaning.matchAll(/`(\d+(?:b|kb|mb|gb|tb|pb))`/g)].map((m) => m[1]!);
    expect(taken).toContain('16mb');
    for (const size of taken) expect(configFor({ BODY_LIMIT: size }).refusal, size).toBeUndefined();
    const refused = /`([^`]+)` or `([^`]+)` is refused/.exec(row.meaning)!.slice(1);
    for (const size of refused) expect(configFor({ BODY_LIMIT: size }).refusal ?? 'accepted', size).toContain('BODY_LIMIT');
    for (const size of ['1048576', '2 MB', '1.5mb', '100b']) expect(configFor({ BODY_LIMIT: size }).refusal, size).toBeUndefined();
    // bytes.parse reads '16m' (nginx's way of writing it) as 16 bytes, and '1e6' as 1: every request would be 413.
    for (const size of ['16m', '1e6', '0x10', '-1mb', '16 megabytes', ' 16mb', '1.5']) {
      expect(configFor({ BODY_LIMIT: size }).refusal, size).toMatch(/invalid configuration: BODY_LIMIT must be a size such as 16mb, 512kb or a number of bytes/);
    }
  });
});

const execFileAsync = promisify(execFile);
const tsx = path.join(root, 'node_modules', '.bin', 'tsx');

/** Runs `file` with tsx in `env`; its exit code and output (a hang guard far above any real run). */
async function runTsx(file: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // The embedded stores these commands are about: not the real servers a test run may have set.
    const inherited = { ...process.env };
    for (const name of ['MONGO_URL', 'KAFKA_BROKERS', 'EVENTSTORE_URL']) delete inherited[name];
    const { stdout, stderr } = await execFileAsync(tsx, [path.join(root, file), ...args], { env: { ...inherited, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('ROLE set to the empty string', () => {
  it('counts as unset (role all), as every other variable: the start goes on to read the rest of the configuration', async () => {
    const result = await runTsx('src/main.ts', [], { ROLE: '', PORT: 'eighty', DATA_DIR: path.join(dataDir, 'role') });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('invalid configuration: PORT must be a non-negative integer');
    expect(result.stderr).not.toContain('ROLE');
  }, 90_000);
});

describe('docs/operations.md, Operator commands: which admin commands refuse --init', () => {
  it('names exactly the commands that refuse --init on a DATA_DIR without an event store', async () => {
    const sentence = /`--init` creates it, except for ([^,]*(?:, [^,]*)*?), which have nothing to do/.exec(operations.replace(/\s+/g, ' '))?.[1];
    expect(sentence).toBeDefined();
    const documented = [...sentence!.matchAll(/`admin ([a-z-]+)`/g)].map((m) => m[1]!).sort();
    const commands: Record<string, string[]> = {
      'create-account': ['--email', 'docshunt@example.com', '--password', 'docshunt passphrase 1'],
      'list-accounts': [],
      'set-access': ['no-such-account', '--sender-trusted', 'true'],
      'issue-key': ['no-such-account'],
      'revoke-key': ['no-such-account', 'key_1'],
      'rewrap-personal-data-keys': [],
      'reencrypt-secrets': [],
      backup: [path.join(dataDir, 'backup-copy')],
      restore: [path.join(dataDir, 'no-such-backup')],
      'reapply-erasures': [],
      'hold-pending-sends': ['--dry-run'],
      'dead-letters': ['list'],
    };
    const help = await runTsx('src/cli/admin.ts', ['--help'], { DATA_DIR: path.join(dataDir, 'help') });
    const listed = [...new Set([...`${help.stdout}${help.stderr}`.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!))];
    expect(listed.sort()).toEqual(Object.keys(commands).sort());
    const refusing: string[] = [];
    for (const [command, args] of Object.entries(commands)) {
      const empty = fs.mkdtempSync(path.join(dataDir, 'init-'));
      const result = await runTsx('src/cli/admin.ts', [command, ...args, '--init'], { DATA_DIR: empty, LOG_LEVEL: 'silent' });
      if (result.stderr.includes('so --init does not apply to it')) refusing.push(command);
      else expect(fs.existsSync(path.join(empty, 'events.sqlite')), `${command} --init: ${result.stderr}`).toBe(true);
    }
    expect(documented).toEqual(refusing.sort());
  }, 300_000);
});

describe('docs/operations.md, Metrics: the table against GET /metrics', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  }, 60_000);
  afterAll(() => service?.close());

  it('lists every metric the service exports, and the service exports every metric it lists', async () => {
    const section = operations.slice(operations.indexOf('## Metrics'), operations.indexOf('## Identity provider'));
    const documented = section
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => [...line.split(' | ')[0]!.matchAll(/`([a-z_*]+)`/g)].map((m) => m[1]!));
    const prefixes = documented.filter((name) => name.endsWith('*')).map((name) => name.slice(0, -1));
    const names = documented.filter((name) => !name.endsWith('*'));
    const scrape = await request(service.url, 'GET', '/metrics');
    expect(scrape.status).toBe(200);
    const exported = [...String(scrape.body).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
    expect(names.filter((name) => !exported.includes(name))).toEqual([]);
    expect(exported.filter((name) => !names.includes(name) && !prefixes.some((prefix) => name.startsWith(prefix)))).toEqual([]);
    for (const prefix of prefixes) expect(exported.some((name) => name.startsWith(prefix)), prefix).toBe(true);
  });
});
