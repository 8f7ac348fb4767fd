import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/shared/logger.js';

/** README, Configuration: a value the service cannot use stops the start with a message naming the variable. */
describe('loadConfig', () => {
  it('refuses a LOG_LEVEL pino does not know, naming the variable, instead of crashing later in the logger', () => {
    expect(() => createLogger('verbose')).toThrow();
    expect(() => loadConfig({ LOG_LEVEL: 'verbose' })).toThrow(/invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/);
  });

  it('takes every pino level and defaults to info', () => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) expect(loadConfig({ LOG_LEVEL: level }).logLevel).toBe(level);
    expect(loadConfig({}).logLevel).toBe('info');
  });

  it('names every invalid variable at once', () => {
    expect(() => loadConfig({ PORT: 'eighty', RETENTION_SWEEP_MS: '10', EXPORT_TTL_MINUTES: '0' })).toThrow(
      /PORT must be a non-negative integer.*RETENTION_SWEEP_MS must be at least 1000.*EXPORT_TTL_MINUTES must be at least 1/,
    );
  });
});
