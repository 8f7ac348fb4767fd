import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

/**
 * docs/quickstart.md says every command in it "runs as is in bash with curl and jq". This runs
 * them: terminal 1 is the service (started here with the environment the page exports),
 * terminal 2 the page's webhook receiver, terminal 3 every later block in one bash script. Only
 * the service's address and the receiver's port change, to free ones.
 */
const page = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'quickstart.md'), 'utf8');
const blocks = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
const adminKey = /ADMIN_API_KEY=(\S+)/.exec(blocks[0] ?? '')?.[1];
const tools = ['bash', 'curl', 'jq'].filter((tool) => !process.env.PATH?.split(path.delimiter).some((dir) => fs.existsSync(path.join(dir, tool))));

let service: TestService;
let receiver: ChildProcess | undefined;
let receiverOutput = '';
let port: number;

/**
 * A port for the page's receiver, which binds the number it is given, free right now. Not one from
 * listen(0): that port, closed and bound again by the receiver a moment later, could be taken
 * meanwhile by another test file's listen(0) or outgoing connection (CI runs files in parallel), and
 * the wait below then reached that file's server. Below the kernel's ephemeral range
 * (ip_local_port_range) no automatic bind lands, only a port asked for by number.
 */
async function receiverPort(): Promise<number> {
  let low = 32768;
  try {
    low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: the usual bound
  }
  const from = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 100; attempt++) {
    const candidate = from + Math.floor(Math.random() * (low - from));
    const server = net.createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(candidate, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return candidate;
    }
  }
  throw new Error(`no free port below ${low} in 100 tries`);
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// The page's commands need bash, curl and jq; a machine without one of them cannot run the page.
describe.skipIf(tools.length > 0)(`docs/quickstart.md, run as written${tools.length > 0 ? ` (skipped: ${tools.join(', ')} not on PATH)` : ''}`, () => {
  beforeAll(async () => {
    expect(blocks.length).toBeGreaterThan(8);
    expect(adminKey).toBeDefined();
    service = await startTestService({ ADMIN_API_KEY: adminKey!, WEBHOOK_ALLOW_INSECURE: 'true' });
    port = await receiverPort();
    const receiverCommand = blocks[1]!.trim().replace(/\b9099\b/g, String(port));
    receiver = spawn('bash', ['-c', receiverCommand]);
    receiver.stdout!.on('data', (chunk: Buffer) => (receiverOutput += chunk.toString()));
    let receiverStderr = '';
    receiver.stderr!.on('data', (chunk: Buffer) => (receiverStderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => receiver!.once('exit', (code) => resolve(code)));
    // Whichever comes first; neither promise is left to reject unheard.
    const problem = await Promise.race([
      eventually(
        () =>
          new Promise<boolean>((resolve) => {
            const socket = net.connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
            socket.on('error', () => resolve(false));
          }),
        30_000,
        'the quickstart receiver listening',
      ).then(() => undefined, (error: unknown) => error),
      // Named, not waited out: a receiver that could not listen (EADDRINUSE) ends at once.
      exited.then((code) => new Error(`the quickstart receiver exited (${code}) on port ${port}: ${receiverStderr.slice(-1000)}`)),
    ]);
    if (problem) throw problem;
  });
  afterAll(async () => {
    receiver?.kill();
    await service?.close();
  });

  it('terminal 3: every block runs, the guest is admitted, the invitation is sent, and the receiver gets a signed comms.sent', async () => {
    const script = ['set -euo pipefail', ...blocks.slice(2)].join('\n').replaceAll('http://127.0.0.1:8080', service.url).replace(/\b9099\b/g, String(port));
    const result = await run('bash', ['-c', script], { DATA_DIR: service.dataDir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // Step 5's scan, then the same barcode's event stats.
    expect(result.stdout).toMatch(/"result": "admitted"/);
    expect(result.stdout).toMatch(/"admitted": 1\b/);
    // Step 8: the invitation settled as sent, and its .eml in the outbox with the merged subject.
    expect(result.stdout).toMatch(/"status": "sent"/);
    expect(result.stdout).toMatch(/^Subject: Your invitation to Winter gala$/m);
    // Terminal 2 printed the signed webhook.
    await eventually(async () => /^comms\.sent t=\d+,v1=[0-9a-f]{64} \{/m.test(receiverOutput), 30_000, 'comms.sent at the quickstart receiver');
    // A hang guard only: the page's wait loop (step 8) never ends if the invitation never settles.
  }, 120_000);
});
