/**
 * SASL/PLAIN sends the password as it is: without TLS it crosses the network in clear. The start
 * says so (a warning naming the two settings), and never with the password.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createBus } from '../../src/main.js';
import { createLogger } from '../../src/shared/logger.js';

function busLog(env: Record<string, string>): string[] {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => void (lines.push(String(chunk)), done()) });
  const config = loadConfig({ DATA_DIR: '/tmp/kafka-plain-warning', KAFKA_BROKERS: '127.0.0.1:1', ...env });
  const bus = createBus(config, createLogger('info', sink));
  void bus.close();
  return lines;
}

const sasl = { KAFKA_SASL_USERNAME: 'app', KAFKA_SASL_PASSWORD: 'plain-password-never-logged' };

describe('KAFKA_SASL_MECHANISM=plain', () => {
  it('without KAFKA_SSL: warns that the password crosses the network in clear, without the password', () => {
    const lines = busLog({ ...sasl, KAFKA_SASL_MECHANISM: 'plain' });
    const warning = lines.find((line) => line.includes('KAFKA_SASL_MECHANISM=plain without KAFKA_SSL=true'));
    expect(warning).toBeDefined();
    expect(lines.join('')).not.toContain(sasl.KAFKA_SASL_PASSWORD);
  });

  it('with KAFKA_SSL=true, or with SCRAM: no such warning', () => {
    for (const env of [
      { ...sasl, KAFKA_SASL_MECHANISM: 'plain', KAFKA_SSL: 'true' },
      { ...sasl, KAFKA_SASL_MECHANISM: 'scram-sha-512' },
    ]) {
      expect(busLog(env).some((line) => line.includes('in clear'))).toBe(false);
    }
  });
});
