import { defineConfig } from 'vitest/config';

/** The browser tests (npm run test:browser; .ci/run): Debian's chromium driven by playwright-core. */
export default defineConfig({
  test: {
    include: ['test/browser/**/*.browser.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
