import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 120_000,
    pool: 'forks',
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
