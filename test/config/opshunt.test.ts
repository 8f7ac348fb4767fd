/**
 * A connection string's password stays out of the output: EventStoreDB's parser printed an option
 * it ignores with the whole EVENTSTORE_URL under it (password included) through console.warn, and
 * the start went on without the setting. The option is now a configuration problem named without
 * the string.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';

afterEach(() => vi.restoreAllMocks());

describe('EVENTSTORE_URL with an option the client ignores', () => {
  for (const [option, named] of [
    ['tsl=false', 'Unknown option key "tsl", setting will be ignored.'],
    ['tls=false&tlsVerifyCert=false', '"tlsVerifyCert" is not currently supported by this client, and will have no effect.'],
  ] as const) {
    it(`refuses ${option}, naming it, and prints nothing of the connection string`, () => {
      const warn = vi.spyOn(console, 'warn');
      const error = vi.spyOn(console, 'error');
      let message = '';
      try {
        loadConfig({ EVENTSTORE_URL: `esdb://admin:Sup3rS3cretPass@esdb.internal:2113?${option}`, DATA_DIR: '/tmp/opshunt-config-data' });
      } catch (thrown) {
        message = (thrown as Error).message;
      }
      expect(message).toContain(`EVENTSTORE_URL must be an EventStoreDB connection string such as esdb://localhost:2113?tls=false: ${named}`);
      expect(message).not.toContain('Sup3rS3cretPass');
      expect(warn).not.toHaveBeenCalled();
      expect(error).not.toHaveBeenCalled();
    });
  }

  it('still accepts a connection string with known options, and warns about nothing', () => {
    const warn = vi.spyOn(console, 'warn');
    expect(loadConfig({ EVENTSTORE_URL: 'esdb://admin:Sup3rS3cretPass@esdb.internal:2113?tls=false', DATA_DIR: '/tmp/opshunt-config-data' }).eventStoreUrl).toBeDefined();
    expect(warn).not.toHaveBeenCalled();
  });
});
