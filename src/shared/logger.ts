import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { traceLogFields } from '../observability/trace.js';
import { withoutCredentials } from './without-credentials.js';

export type { Logger };

/** pino's error serializer, with the password of any connection string in the message and stack masked (drivers put their URL in some errors). */
function errWithoutCredentials(error: Error): Record<string, unknown> {
  const serialized = stdSerializers.err(error) as unknown as Record<string, unknown>;
  for (const field of ['message', 'stack'] as const) {
    if (typeof serialized[field] === 'string') serialized[field] = withoutCredentials(serialized[field] as string);
  }
  return serialized;
}

/**
 * Structured JSON logs on stdout; LOG_LEVEL chooses the level (silent in tests by default).
 * Every line written while a traced step runs carries its traceId, spanId and requestId.
 * Logged errors (`err`) never carry a connection string's password.
 */
export function createLogger(level: string = 'info', destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'checkin-service' },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: traceLogFields,
    serializers: { err: errWithoutCredentials },
  };
  return destination ? pino(options, destination) : pino(options);
}
