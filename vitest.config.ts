import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Fault tests (child processes, kills, servers stopped): `npm run test:fault`, run by .ci/run.
    exclude: ['test/fault/**', 'node_modules/**'],
    testTimeout: 20_000,
    hookTimeout: 120_000,
    pool: 'forks',
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
