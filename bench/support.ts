import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

export interface LoadResult {
  requestsPerSec: number;
  total: number;
  p50: number;
  p99: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  durationSec: number;
  /** Latency (ms) of the 2xx answers and of the others (e.g. 503 overloaded), apart. */
  accepted: { count: number; p50: number; p99: number; max: number };
  refused: { count: number; p50: number; p99: number; max: number };
  /** Each connection's first answer, apart from the two above: its time includes opening the connection. */
  first: { count: number; p50: number; p99: number; max: number };
  /** The load generator's CPU time over its whole run (µs, user + system): it shares the cores with the service. */
  cpuMicros: number;
}

export interface LoadSpec {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  connections: number;
  durationSec?: number;
  amount?: number;
  /** Rotated over requests (e.g. one barcode per scan). */
  bodies?: string[];
  /**
   * Well-behaved clients instead of autocannon's closed loop: each connection waits the
   * Retry-After of a 503 before its next request (bench/polite-load.ts).
   */
  honourRetryAfter?: boolean;
}

/** Runs autocannon in a child process (see bench/load.ts). */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const tsx = path.join(here, '..', 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const specFile = path.join(tempDir('bench-load-'), 'spec.json');
  fs.writeFileSync(specFile, JSON.stringify(spec));
  try {
    const generator = spec.honourRetryAfter ? 'polite-load.ts' : 'load.ts';
    const { stdout } = await run(...onOtherCores(process.execPath, [tsx, path.join(here, generator), specFile]), { maxBuffer: 64 * 1024 * 1024 });
    return JSON.parse(stdout) as LoadResult;
  } finally {
    fs.rmSync(path.dirname(specFile), { recursive: true, force: true });
  }
}

/**
 * BENCH_DOOR_CORE=N: the door's core. The service's main thread (the door's) runs on core N
 * alone; every other thread of this process and every process a bench starts (the load
 * generator, the remote doubles) runs on the other cores. It shows what a core of its own
 * gives the door on a machine where the load comes from elsewhere (Linux, `taskset`).
 */
const doorCore = process.env.BENCH_DOOR_CORE === undefined ? undefined : Number(process.env.BENCH_DOOR_CORE);
const otherCores = () => os.cpus().map((_, i) => i).filter((i) => i !== doorCore).join(',');

/** A command to start on the cores other than the door's (unchanged without BENCH_DOOR_CORE). */
export function onOtherCores(command: string, args: string[]): [string, string[]] {
  return doorCore === undefined ? [command, args] : ['taskset', ['-c', otherCores(), command, ...args]];
}

/**
 * With BENCH_DOOR_CORE: puts this process's main thread on the door's core and its other threads
 * (worker threads, libuv's pool, V8's helpers) on the others. A thread started later takes the
 * cores of the thread that started it, so call it again after starting threads.
 */
export function pinDoorThread(): void {
  if (doorCore === undefined) return;
  const others = otherCores();
  const threads = fs.readdirSync(`/proc/${process.pid}/task`).map(Number);
  for (const tid of threads) {
    execFileSync('taskset', ['-p', '-c', tid === process.pid ? String(doorCore) : others, String(tid)], { stdio: 'ignore' });
  }
}

/**
 * The CPU time of this process's main thread so far (µs, user + system; Linux, /proc, 10 ms
 * steps): unlike its event-loop utilisation, it does not count time the thread waited for a core.
 */
export function mainThreadCpuMicros(): number {
  const stat = fs.readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** This process's CPU time so far (µs, user + system, all its threads). */
export function processCpuMicros(): number {
  const used = process.cpuUsage();
  return used.user + used.system;
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const machine = (): string =>
  `${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;

/** A markdown table, printed and returned for docs/benchmarks.md. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const lines = [`| ${headers.join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`];
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

/** Replaces (or appends) the `## <title>` section of docs/benchmarks.md with this run's figures. */
export function record(title: string, body: string): void {
  const file = path.join(here, '..', 'docs', 'benchmarks.md');
  const header = '# Benchmarks\n\nFigures from `npm run bench -- <suite>`; each section is replaced by its latest run.\n';
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : header;
  const section = `## ${title}\n\n${new Date().toISOString().slice(0, 10)}, ${machine()}\n\n${body.trim()}\n`;
  const pattern = new RegExp(`## ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n[\\s\\S]*?(?=\\n## |$)`);
  const next = pattern.test(current) ? current.replace(pattern, section) : `${current.trimEnd()}\n\n${section}`;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, next.endsWith('\n') ? next : `${next}\n`);
}

export const tempDir = (prefix: string): string => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

/** Polls `condition` every 20 ms; the time it first held (epoch ms). Fails, naming `what`, after `timeoutMs` (a hang guard). */
export async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 600_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now();
}
