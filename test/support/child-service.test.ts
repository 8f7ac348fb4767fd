import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { threadStates } from './child-service.js';

/** What a fault test's wait reports when it gives up: whether the child's event loop was busy or waiting. */
// Linux only: the report reads /proc/<pid>/task (elsewhere threadStates answers nothing to check).
describe.runIf(process.platform === 'linux')('threadStates', () => {
  let pids: number[] = [];
  afterEach(() => {
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    pids = [];
  });

  const child = async (code: string) => {
    const started = spawn(process.execPath, ['-e', `console.log('ready'); ${code}`], { stdio: ['ignore', 'pipe', 'ignore'] });
    pids.push(started.pid!);
    await once(started.stdout!, 'data');
    return started.pid!;
  };

  it('names a main thread stuck in JavaScript running', async () => {
    const pid = await child('for (;;) {}');
    expect(threadStates(pid)).toMatch(/^main R [\d.]+s (running|user code); others: /);
  });

  it('names a main thread with nothing to do sleeping in the event loop', async () => {
    const pid = await child('setInterval(() => {}, 60_000)');
    // The first read may catch the thread just before it sleeps: it settles within the hang guard.
    await expect.poll(() => threadStates(pid), { timeout: 60_000 }).toMatch(process.arch === 'x64' ? /^main S [\d.]+s epoll_p?wait/ : /^main S [\d.]+s syscall \d+/);
  });
});
