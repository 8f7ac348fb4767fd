/**
 * A library that throws inside a listener, or rejects a promise nobody awaits, ends the process
 * (Node's default, kept: its state is unknown and every acknowledged write is durable), but first
 * the log says so as one structured JSON line (level fatal, the error and its stack), where a log
 * pipeline reading JSON lines finds it; before, Node printed a bare stack trace on stderr.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnService } from '../support/child-service.js';

const preload = pathToFileURL(path.resolve(import.meta.dirname, '..', 'fixtures', 'crash-on-signal.mjs')).href;

describe('a crash the code did not catch', () => {
  it.each([
    ['exception', 'uncaught exception', 'thrown in a stream listener'],
    ['rejection', 'unhandled rejection', 'rejected in a library, nobody listening'],
  ])('(%s) is logged as one fatal JSON line naming the error, then the process exits 1', async (crashKind, kind, message) => {
    const service = await spawnService({ CRASH_KIND: crashKind, NODE_OPTIONS: `--import=${preload}` });
    service.kill('SIGUSR2');
    const exited = await service.exited;
    expect(exited.code).toBe(1);
    const fatal = service.logs.find((line) => line.level === 60);
    expect(fatal, service.stderr).toMatchObject({ kind, err: { message, stack: expect.stringContaining(message) } });
    expect(String(fatal!.msg)).toContain(`${kind}: ${message}`);
  });
});
