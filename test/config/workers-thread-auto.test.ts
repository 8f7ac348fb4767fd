import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { loadConfig, workersThreadSetting, WORKERS_THREAD_AUTO_CORES } from '../../src/config.js';

/** WORKERS_THREAD=auto (the default): the workers get a thread of their own where a core is free for it (README, Configuration). */
describe('WORKERS_THREAD', () => {
  it('auto (or unset) puts the workers on a thread from three cores, not on two', () => {
    expect(WORKERS_THREAD_AUTO_CORES).toBe(3);
    for (const raw of [undefined, '', 'auto', ' AUTO ']) {
      const problems: string[] = [];
      expect(workersThreadSetting(raw, 1, problems)).toBe(false);
      expect(workersThreadSetting(raw, 2, problems)).toBe(false);
      expect(workersThreadSetting(raw, 3, problems)).toBe(true);
      expect(workersThreadSetting(raw, 16, problems)).toBe(true);
      expect(problems).toEqual([]);
    }
  });

  it('on and off are kept whatever the cores', () => {
    const problems: string[] = [];
    expect(workersThreadSetting('on', 1, problems)).toBe(true);
    expect(workersThreadSetting('OFF', 64, problems)).toBe(false);
    expect(problems).toEqual([]);
  });

  it('refuses another value, naming the three', () => {
    const problems: string[] = [];
    workersThreadSetting('yes', 4, problems);
    expect(problems).toEqual(['WORKERS_THREAD must be on, off or auto (the default: on from 3 cores), got "yes"']);
    expect(() => loadConfig({ WORKERS_THREAD: 'yes' })).toThrow(/WORKERS_THREAD must be on, off or auto/);
  });

  it('the loaded config says whether the choice was automatic, decided on this machine’s cores', () => {
    const unset = loadConfig({});
    expect(unset.workersThreadAuto).toBe(true);
    expect(unset.workersThread).toBe(availableParallelism() >= 3);
    expect(loadConfig({ WORKERS_THREAD: 'on' })).toMatchObject({ workersThread: true, workersThreadAuto: false });
    expect(loadConfig({ WORKERS_THREAD: 'off' })).toMatchObject({ workersThread: false, workersThreadAuto: false });
  });
});
