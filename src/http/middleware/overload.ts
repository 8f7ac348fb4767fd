import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Metrics } from '../../observability/metrics.js';
import type { Logger } from '../../shared/logger.js';
import { acceptableRequestId } from '../../observability/trace.js';
import { newId } from '../../shared/ids.js';
import { HttpError } from '../errors.js';
import { overloadState } from '../../shared/overload-state.js';

export interface OverloadOptions {
  /** Refuse new requests while the event loop's mean delay over the last sample is above this (ms); 0 switches it off. */
  maxEventLoopDelayMs: number;
  /** The Retry-After of a refusal, in seconds. */
  retryAfterSeconds: number;
  /** How often the delay is sampled (ms). */
  sampleIntervalMs?: number;
  /** While overloaded, this many accepted requests may still be in flight, so the service keeps making progress. */
  minInFlight?: number;
  /** API requests in flight at most, overloaded or not (0 or absent: no cap). */
  maxInFlight?: number;
  metrics?: Metrics;
  logger?: Logger;
}

/**
 * Load shedding (docs/operations.md "Overload"): when the process cannot keep up, a request
 * waits in the event loop before any of its work starts, so the event-loop delay is the early
 * sign. While it is above the threshold, new API requests get 503 `overloaded` with Retry-After
 * at once, which costs next to nothing, and the requests already accepted finish in time; a
 * few (`minInFlight`) are still accepted at a time, so the service keeps serving at its pace
 * instead of refusing everyone until the delay clears. Independently of the delay, at most
 * `maxInFlight` API requests are in flight at once: one event loop serves them one slice at a
 * time, so more in flight adds waiting to every one of them, not throughput (a burst from many
 * clients would otherwise be admitted whole before the delay shows it).
 * The guard sits in front of the express app (`handler`): a refusal must cost far less than
 * the work it saves, so it is written directly, in the error body shape, without the app's
 * middleware. /healthz, /readyz and /metrics pass and keep answering; so do the dev identity
 * provider's discovery and keys, which the service's own token checks fetch.
 */
export class OverloadGuard {
  private readonly histogram?: IntervalHistogram;
  private readonly timer?: NodeJS.Timeout;
  private delayMs = 0;
  private overloaded = false;
  private inFlight = 0;

  constructor(private readonly options: OverloadOptions) {
    if (options.maxEventLoopDelayMs <= 0) return;
    this.histogram = monitorEventLoopDelay({ resolution: 10 });
    this.histogram.enable();
    this.timer = setInterval(() => this.sample(), options.sampleIntervalMs ?? 100);
    this.timer.unref();
  }

  /** The mean event-loop delay of the last sample, in ms (the monitor's own resolution taken off). */
  get eventLoopDelayMs(): number {
    return this.delayMs;
  }

  get isOverloaded(): boolean {
    return this.overloaded;
  }

  /** The server's request listener: `app` behind the guard. */
  handler(app: RequestListener): RequestListener {
    const retryAfter = String(this.options.retryAfterSeconds);
    const refusal = new HttpError(503, 'overloaded', `the service is overloaded; retry after ${retryAfter} s`);
    const body = JSON.stringify({ code: refusal.code, message: refusal.message });
    const minInFlight = this.options.minInFlight ?? 8;
    // The cap belongs to load shedding: with the delay threshold at 0, nothing is refused.
    const maxInFlight = this.options.maxEventLoopDelayMs > 0 && this.options.maxInFlight ? this.options.maxInFlight : Infinity;
    const finished = () => {
      this.inFlight -= 1;
    };
    return (req: IncomingMessage, res: ServerResponse) => {
      const admit = this.inFlight < minInFlight || (!this.overloaded && this.inFlight < maxInFlight);
      if (admit || exempt(req.url ?? '')) {
        this.inFlight += 1;
        res.once('close', finished);
        return app(req, res);
      }
      this.options.metrics?.countOverloadRefusal();
      const incoming = req.headers['x-request-id'];
      res.writeHead(refusal.status, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Retry-After': retryAfter,
        'X-Request-Id': typeof incoming === 'string' && acceptableRequestId(incoming) ? incoming : newId(),
      });
      res.end(body);
    };
  }

  close(): void {
    clearInterval(this.timer);
    if (this.overloaded) overloadState.shedding = false;
    this.histogram?.disable();
  }

  private sample(): void {
    const histogram = this.histogram!;
    if (histogram.count === 0) return;
    this.delayMs = Math.max(0, histogram.mean / 1e6 - 10);
    histogram.reset();
    const overloaded = this.delayMs > this.options.maxEventLoopDelayMs;
    if (overloaded !== this.overloaded) {
      this.overloaded = overloaded;
      overloadState.shedding = overloaded;
      const fields = { eventLoopDelayMs: Math.round(this.delayMs), thresholdMs: this.options.maxEventLoopDelayMs };
      if (overloaded) this.options.logger?.warn(fields, 'overloaded: refusing new requests with 503 until the event loop catches up');
      else this.options.logger?.info(fields, 'no longer overloaded: accepting requests again');
    }
  }
}

/** Paths that pass even while overloaded: health, metrics, and the dev provider's keys. */
function exempt(url: string): boolean {
  return url === '/healthz' || url === '/readyz' || url === '/metrics' || url.startsWith('/metrics?') || url.startsWith('/core/.well-known/');
}
