import type { Logger } from './logger.js';

/**
 * An exception nobody caught (a library throwing inside a stream listener) or a promise rejected
 * with nobody to hear it ends the process, as Node does by default: the state it leaves is
 * unknown, and everything acknowledged is already durable (restart it). First it says so in the
 * log's own shape, with the error and its stack, instead of a bare stack trace on stderr that a
 * log pipeline reading JSON lines drops. pino writes synchronously to stdout, so the line is out
 * before the exit.
 */
export function exitOnCrash(logger: Logger, exit: (code: number) => void = (code) => process.exit(code)): void {
  const crash = (kind: 'uncaught exception' | 'unhandled rejection') => (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    logger.fatal({ err: error, kind }, `${kind}: ${message}; exiting (a supervisor should restart the process: nothing acknowledged is lost)`);
    exit(1);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
}
