import { defineConfig } from 'vitest/config';

/**
 * Fault tests (issue 12, item 5): the service as child processes, killed or stopped, or its
 * servers stopped, each asserting exact counts. Heavy: one file at a time, run once by .ci/run
 * (`npm run test:fault`), not by `npm test`. docs/operations.md, Fault tests, has their figures.
 */
export default defineConfig({
  test: {
    include: ['test/fault/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
