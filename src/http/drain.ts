/**
 * Graceful HTTP shutdown (issue 12, item 3). `drain()`:
 *  1. stops accepting: the listening socket closes at once (new connections are refused),
 *     but kept-alive sockets stay open, unlike `server.close()`, which since Node 19 also
 *     destroys idle sockets at once, under a request a client may be sending right then;
 *  2. answers every request from then on, and those in flight, with `Connection: close`,
 *     so each kept-alive client is told to go away by the answer to its own request;
 *  3. once no request is in flight and a client has had `idleGraceMs` to send the next
 *     one, closes the sockets that are still idle;
 *  4. at `deadlineMs`, destroys what is left (a request that would not finish).
 * It resolves when every socket is closed, with what it had to do.
 */
import type { Server, ServerResponse } from 'node:http';
import net from 'node:net';
import type { Socket } from 'node:net';

export interface DrainOptions {
  /** How long a kept-alive client has to send its next request after draining starts. */
  idleGraceMs: number;
  /** After this, requests still in flight are cut off. */
  deadlineMs: number;
}

export interface DrainResult {
  /** Requests in flight when draining started. */
  inFlightAtStart: number;
  /** Idle kept-alive sockets closed after the grace. */
  idleClosed: number;
  /** Sockets destroyed at the deadline (their requests got no answer). */
  cutOff: number;
  ms: number;
}

export interface HttpDrain {
  readonly draining: boolean;
  drain(options: DrainOptions): Promise<DrainResult>;
}

/** Tracks sockets and responses of `server` from now on; call before `listen`'s first connection. */
export function trackForDrain(server: Server): HttpDrain {
  const sockets = new Set<Socket>();
  const active = new Set<ServerResponse>();
  let draining = false;
  let notify: (() => void) | undefined;

  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      notify?.();
    });
  });
  // First of the request listeners: the header is set before the app can answer.
  server.prependListener('request', (_req, res: ServerResponse) => {
    active.add(res);
    if (draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      active.delete(res);
      notify?.();
    });
  });

  const idleSockets = () => {
    const busy = new Set<unknown>([...active].map((res) => res.socket));
    return [...sockets].filter((socket) => !busy.has(socket));
  };

  return {
    get draining() {
      return draining;
    },
    async drain({ idleGraceMs, deadlineMs }) {
      const started = Date.now();
      draining = true;
      const result: DrainResult = { inFlightAtStart: active.size, idleClosed: 0, cutOff: 0, ms: 0 };
      for (const res of active) if (!res.headersSent) res.setHeader('Connection', 'close');
      // net.Server's close: stop listening, leave the open sockets to the steps below.
      await new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        net.Server.prototype.close.call(server);
        resolve();
      });
      await new Promise<void>((resolve) => {
        const check = () => {
          const elapsed = Date.now() - started;
          if (sockets.size === 0) return finish();
          if (elapsed >= deadlineMs) {
            result.cutOff = sockets.size;
            for (const socket of sockets) socket.destroy();
            return finish();
          }
          if (active.size === 0 && elapsed >= idleGraceMs) {
            for (const socket of idleSockets()) {
              result.idleClosed += 1;
              socket.destroy();
            }
          }
        };
        const timer = setInterval(check, 25);
        const finish = () => {
          clearInterval(timer);
          notify = undefined;
          resolve();
        };
        notify = check;
        check();
      });
      // The http server's own housekeeping (header timeout checks) stops with it.
      server.closeAllConnections();
      result.ms = Date.now() - started;
      return result;
    },
  };
}
