import type { Logger } from '../../shared/logger.js';
import { withoutAddresses } from '../../shared/redaction.js';
import type { BusMessage, MessageHandler, OutgoingMessage } from './port.js';
import { carrierFromHeaders, runInCarriedTrace } from '../../observability/trace.js';

/** What became of one message: handled (maybe by dead-lettering it), or abandoned by a closing consumer. */
export type Delivery = { outcome: 'handled'; deadLetter?: OutgoingMessage } | { outcome: 'abandoned' };

/** Resolves with the promise's outcome, or 'aborted' as soon as the signal fires. */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | 'aborted'> {
  if (signal.aborted) return Promise.resolve('aborted');
  return new Promise((resolve) => {
    const onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve({ ok: true, value });
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        resolve({ ok: false, error });
      },
    );
  });
}

/** The dead-letter copy of a message: the original key, value and headers, plus why and where from. */
export function deadLetterMessage(message: BusMessage, error: unknown, attempts: number): OutgoingMessage {
  return {
    key: message.key,
    value: message.value,
    headers: {
      ...message.headers,
      // A header is kept as long as the topic and cannot be erased: no email address in it (docs/personal-data.md).
      'x-dlq-error': withoutAddresses(error instanceof Error ? error.message || error.name : String(error)),
      'x-dlq-attempts': String(attempts),
      'x-dlq-source-topic': message.topic,
      'x-dlq-source-partition': String(message.partition),
      'x-dlq-source-offset': message.offset,
    },
  };
}

/**
 * Runs a handler with in-process retries (both adapters): a message that exhausts them is
 * handed back with its dead-letter copy; a close (the signal) abandons it uncommitted.
 */
export async function deliverWithRetries(
  message: BusMessage,
  handler: MessageHandler,
  options: {
    maxAttempts: number;
    retryDelayMs: (attempt: number) => number;
    signal: AbortSignal;
    logger: Logger;
    adapter: string;
    /** Called after each retry delay (Kafka: keep the group membership alive). */
    betweenAttempts?: () => Promise<void>;
  },
): Promise<Delivery> {
  const { signal } = options;
  for (let attempt = 1; ; attempt++) {
    // Aborted during betweenAttempts: the handler is not called again.
    if (signal.aborted) return { outcome: 'abandoned' };
    const result = await untilAborted(
      // The handler runs in the trace the message carries (its log lines and appends keep the request id).
      runInCarriedTrace(carrierFromHeaders(message.headers), () => Promise.resolve().then(() => handler({ ...message, attempt }))),
      signal,
    );
    if (result === 'aborted') return { outcome: 'abandoned' };
    if (result.ok) return { outcome: 'handled' };
    if (attempt >= options.maxAttempts) {
      return { outcome: 'handled', deadLetter: deadLetterMessage(message, result.error, attempt) };
    }
    options.logger.warn(
      { err: result.error, topic: message.topic, partition: message.partition, offset: message.offset, attempt },
      `${options.adapter}: handler failed, retrying`,
    );
    const delay = options.retryDelayMs(attempt);
    if ((await untilAborted(new Promise((resolve) => setTimeout(resolve, delay)), signal)) === 'aborted') {
      return { outcome: 'abandoned' };
    }
    await options.betweenAttempts?.().catch(() => undefined);
  }
}
