import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; LOG_LEVEL chooses the level (silent in tests by default). */
export function createLogger(level: string = 'info'): Logger {
  return pino({ level, base: { service: 'checkin-service' }, timestamp: pino.stdTimeFunctions.isoTime });
}
