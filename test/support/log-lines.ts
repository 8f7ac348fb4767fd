import { Writable } from 'node:stream';
import { createLogger } from '../../src/shared/logger.js';
import type { Logger } from '../../src/shared/logger.js';

/** A logger at `level` whose JSON lines are kept, parsed, in `lines` (for tests that read what was logged). */
export function loggedLines(level = 'info'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}
