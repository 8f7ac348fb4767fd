import { pino, type DestinationStream, type Logger } from 'pino';
import { traceLogFields } from '../observability/trace.js';

export type { Logger };

/**
 * Structured JSON logs on stdout; LOG_LEVEL chooses the level (silent in tests by default).
 * Every line written while a traced step runs carries its traceId, spanId and requestId.
 */
export function createLogger(level: string = 'info', destination?: DestinationStream): Logger {
  const options = { level, base: { service: 'checkin-service' }, timestamp: pino.stdTimeFunctions.isoTime, mixin: traceLogFields };
  return destination ? pino(options, destination) : pino(options);
}
