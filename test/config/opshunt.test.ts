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

describe('a wrong value is shown without its password', () => {
  const problem = (env: Record<string, string>): string => {
    try {
      loadConfig({ ...env, DATA_DIR: '/tmp/opshunt-config-data' });
    } catch (thrown) {
      return (thrown as Error).message;
    }
    return '';
  };

  it('a URL with a mistyped scheme, and a broker written with credentials, keep the rest and hide the password', () => {
    expect(problem({ SENDGRID_BASE_URL: 'htps//apiuser:Sup3rS3cretPass@sendgrid.internal' })).toContain(
      'SENDGRID_BASE_URL must be an http:// or https:// URL such as https://api.sendgrid.com, got "htps//apiuser:***@sendgrid.internal"',
    );
    expect(problem({ PUBLIC_URL: 'ftp://ops:Sup3rS3cretPass@checkin.example.com' })).toContain('got "ftp://ops:***@checkin.example.com"');
    expect(problem({ KAFKA_BROKERS: 'kafka-1:9092,svc:Sup3rS3cretPass@kafka-2:9092' })).toContain('got "svc:***@kafka-2:9092"');
    for (const env of [{ SENDGRID_BASE_URL: 'htps//apiuser:Sup3rS3cretPass@x' }, { KAFKA_BROKERS: 'svc:Sup3rS3cretPass@kafka-2:9092' }] as Record<string, string>[]) {
      expect(problem(env)).not.toContain('Sup3rS3cretPass');
    }
  });
});
