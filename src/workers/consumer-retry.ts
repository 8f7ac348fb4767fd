import { defaultRetryDelayMs, type ConsumerOptions } from '../adapters/bus/port.js';

/**
 * How long the workers' bus consumers (send worker, webhook dispatcher) retry a message before it
 * goes to `<topic>.dlq`: about 15 minutes (100 ms doubling to 5 s, then every 5 s). Their
 * handlers only read and append to the stores, so what makes them fail is a store that cannot be
 * reached (a restart, a failover), not the message; and nothing reads a dead letter back, so an
 * invitation dead-lettered after the bus's default 1.5 s of retries was never sent nor reported.
 * The partition waits meanwhile, in order; a member keeps its group membership while it retries.
 */
export const workerConsumerRetry: Pick<ConsumerOptions, 'maxAttempts' | 'retryDelayMs'> = {
  maxAttempts: 186,
  retryDelayMs: defaultRetryDelayMs,
};
