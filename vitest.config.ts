import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Fault tests (child processes, kills, servers stopped): `npm run test:fault`, run by .ci/run.
    exclude: ['test/fault/**', 'node_modules/**'],
    // A hang guard, not a speed limit: a test that takes 10 s alone (a worker thread's burst) took over 20 s on
    // a loaded 2-core CI machine and failed there; 120 s is far above any real figure, like hookTimeout.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
