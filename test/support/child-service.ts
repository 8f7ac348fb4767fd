/**
 * The service as a child process (`node --import tsx src/main.ts [role]`), for tests that
 * signal or kill it. Its JSON log lines are kept; the URL comes from its "listening" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { adminKey } from './service.js';

export interface ChildService {
  child: ChildProcess;
  pid: number;
  dataDir: string;
  /** Base URL once listening (api and all roles). */
  url?: string;
  /** Every log line so far, parsed when JSON. */
  logs: Record<string, unknown>[];
  /** stderr text (non-JSON output). */
  stderr: string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits for a log line matching `test` (hang guard: timeoutMs). */
  waitForLog(test: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  kill(signal: NodeJS.Signals): void;
  /** The signal to the process group (as `kill -TERM -<pgid>` or a supervisor would). */
  killGroup(signal: NodeJS.Signals): void;
}

const repoRoot = path.resolve(import.meta.dirname, '..', '..');

export async function spawnService(
  env: Record<string, string> = {},
  options: { role?: string; dataDir?: string; waitForListening?: boolean } = {},
): Promise<ChildService> {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-child-'));
  const role = options.role ?? 'all';
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src', 'main.ts'), role], {
    cwd: repoRoot,
    env: {
      // Embedded stores unless the test names real servers: CI's MONGO_URL holds other services' read models.
      ...withoutServerUrls(process.env),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ADMIN_API_KEY: adminKey,
      SQLITE_SYNCHRONOUS: 'NORMAL',
      RATE_LIMIT_PER_MINUTE: '0',
      SEND_RATE_LIMIT_PER_MINUTE: '0',
      // Fault tests count exact outcomes on a loaded machine: load shedding would refuse requests at random.
      OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a signal to the group reaches it as an operator's stop would.
    detached: true,
  });
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  const service: ChildService = {
    child,
    pid: child.pid!,
    dataDir,
    logs,
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    waitForLog: (test, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = logs.find(test);
          if (!found) return false;
          waiters.delete(check as () => void);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check as () => void);
          // How far the child got: its last log lines, and whether it is still alive.
          const last = logs.slice(-8).map((l) => JSON.stringify(l).slice(0, 300));
          const alive = child.exitCode === null && child.signalCode === null;
          // A log line can be held back by a blocked event loop (pino writes asynchronously): what
          // the threads were doing tells a busy loop (main R) from one waiting in a system call.
          const threads = alive ? `; threads: ${threadStates(child.pid!)}` : '';
          reject(new Error(`no matching log line within ${timeoutMs} ms (pid ${child.pid}, ${alive ? 'still running' : 'exited'})${threads}; last log lines: ${last.join(' | ') || 'none'}; stderr: ${service.stderr.slice(-2000)}`));
        }, timeoutMs);
        if (!check()) waiters.add(check as () => void);
      }),
    kill: (signal) => void child.kill(signal),
    killGroup: (signal) => {
      try {
        process.kill(-child.pid!, signal);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    },
  };
  let buffered = '';
  // CHILD_LOG_DIR: keep each child's log lines in a file too (for a failed fault test).
  const logFile = process.env.CHILD_LOG_DIR ? path.join(process.env.CHILD_LOG_DIR, `${role}-${child.pid}.log`) : undefined;
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    if (logFile) fs.appendFileSync(logFile, chunk);
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
    }
    for (const waiter of [...waiters]) waiter();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (service.stderr += chunk));
  if (options.waitForListening ?? (role === 'all' || role === 'api')) {
    const line = await Promise.race([
      service.waitForLog((l) => l.msg === 'listening'),
      service.exited.then((e) => {
        throw new Error(`the service exited before listening (${JSON.stringify(e)}): ${service.stderr.slice(-2000)}`);
      }),
    ]);
    service.url = line.url as string;
  }
  return service;
}

/** x86-64 numbers of the system calls a blocked thread is likely in (elsewhere the number is shown). */
const syscallNames: Record<string, string> = {
  '0': 'read', '1': 'write', '7': 'poll', '35': 'nanosleep', '72': 'fcntl', '74': 'fsync', '75': 'fdatasync',
  '202': 'futex', '230': 'clock_nanosleep', '232': 'epoll_wait', '281': 'epoll_pwait',
};

/**
 * A running process's threads from Linux's /proc: `main` (the event loop's thread) with its state
 * (R running or runnable, S sleeping, D waiting for the disk), CPU seconds and the system call it
 * is in (`running` or `user code` when in none), then the other threads counted by state and
 * call. `main R 41.2s running` is a busy event loop, `main S 0.4s fsync` one waiting for the
 * disk. `unknown` where /proc cannot be read.
 */
export function threadStates(pid: number): string {
  try {
    const describe = (tid: string) => {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
      let call = 'unknown';
      try {
        const number = fs.readFileSync(`/proc/${pid}/task/${tid}/syscall`, 'utf8').trim().split(' ')[0]!;
        call = number === 'running' ? 'running' : number === '-1' ? 'user code' : process.arch === 'x64' ? (syscallNames[number] ?? `syscall ${number}`) : `syscall ${number}`;
      } catch {
        // not readable (permissions): state and CPU time still tell
      }
      return `${fields[0]} ${seconds.toFixed(1)}s ${call}`;
    };
    const others = new Map<string, number>();
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      if (tid === String(pid)) continue;
      const state = describe(tid).replace(/ [\d.]+s /, ' ');
      others.set(state, (others.get(state) ?? 0) + 1);
    }
    return `main ${describe(String(pid))}; others: ${[...others].map(([state, n]) => `${n}x ${state}`).join(', ')}`;
  } catch {
    return 'unknown (no /proc)';
  }
}

function withoutServerUrls(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { MONGO_URL: _mongo, KAFKA_BROKERS: _kafka, EVENTSTORE_URL: _esdb, ...rest } = env;
  return rest;
}
