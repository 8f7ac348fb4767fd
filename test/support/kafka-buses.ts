/**
 * Kafka buses for a test file against a real broker (test/support/real-servers.ts decides where
 * it comes from): `open` makes a bus on it, and every bus opened and consumer pushed is closed
 * after the file's tests, before the server is stopped.
 */
import { afterAll } from 'vitest';
import { KafkaBus, type KafkaBusOptions } from '../../src/adapters/bus/kafka.js';
import type { Consumer } from '../../src/adapters/bus/port.js';
import { createLogger } from '../../src/shared/logger.js';
import { realServer, type Availability } from './real-servers.js';

export interface KafkaBuses {
  kafka: Availability;
  /** A bus on the broker with these options over the file's defaults. */
  open(options?: Partial<KafkaBusOptions>): KafkaBus;
  /** Consumers to close after the file's tests. */
  consumers: Consumer[];
}

export async function kafkaBuses(defaults: Omit<KafkaBusOptions, 'brokers'>): Promise<KafkaBuses> {
  const kafka = await realServer('kafka');
  const buses: KafkaBus[] = [];
  const consumers: Consumer[] = [];
  afterAll(async () => {
    await Promise.allSettled(consumers.map((consumer) => consumer.close()));
    await Promise.allSettled(buses.map((bus) => bus.close()));
    await kafka.stop();
  });
  const brokers = (kafka.url ?? '').split(',').map((broker) => broker.trim());
  const logger = createLogger(process.env.LOG_LEVEL ?? 'silent');
  return {
    kafka,
    consumers,
    open: (options = {}) => {
      const bus = new KafkaBus({ brokers, logger, ...defaults, ...options });
      buses.push(bus);
      return bus;
    },
  };
}
