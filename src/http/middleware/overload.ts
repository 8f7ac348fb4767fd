import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import type { Metrics } from '../../observability/metrics.js';
import type { Logger } from '../../shared/logger.js';
import { HttpError } from '../errors.js';

export interface OverloadOptions {
  /** Refuse new requests while the event loop's mean delay over the last sample is above this (ms); 0 switches it off. */
  maxEventLoopDelayMs: number;
  /** The Retry-After of a refusal, in seconds. */
  retryAfterSeconds: number;
  /** How often the delay is sampled (ms). */
  sampleIntervalMs?: number;
  /** While overloaded, this many accepted requests may still be in flight, so the service keeps making progress. */
  minInFlight?: number;
  metrics?: Metrics;
  logger?: Logger;
}

/**
 * Load shedding (docs/operations.md "Overload"): when the process cannot keep up, a request
 * waits in the event loop before any of its work starts, so the event-loop delay is the early
 * sign. While it is above the threshold, new API requests get 503 `overloaded` with Retry-After
 * at once, which costs next to nothing, and the requests already accepted finish in time; a
 * few (`minInFlight`) are still accepted at a time, so the service keeps serving at its pace
 * instead of refusing everyone until the delay clears.
 * /healthz, /readyz and /metrics are mounted before the guard and keep answering; so do the dev
 * identity provider's discovery and keys, which the service's own token checks fetch.
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

  middleware(): RequestHandler {
    const retryAfter = String(this.options.retryAfterSeconds);
    const minInFlight = this.options.minInFlight ?? 8;
    const finished = () => {
      this.inFlight -= 1;
    };
    return (req, res, next) => {
      // The dev identity provider's discovery and keys: the service's own token checks fetch them.
      if (!this.overloaded || this.inFlight < minInFlight || req.path.startsWith('/core/.well-known/')) {
        this.inFlight += 1;
        res.once('close', finished);
        return next();
      }
      this.options.metrics?.countOverloadRefusal();
      next(new HttpError(503, 'overloaded', `the service is overloaded; retry after ${retryAfter} s`, undefined, { 'Retry-After': retryAfter }));
    };
  }

  close(): void {
    clearInterval(this.timer);
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
      const fields = { eventLoopDelayMs: Math.round(this.delayMs), thresholdMs: this.options.maxEventLoopDelayMs };
      if (overloaded) this.options.logger?.warn(fields, 'overloaded: refusing new requests with 503 until the event loop catches up');
      else this.options.logger?.info(fields, 'no longer overloaded: accepting requests again');
    }
  }
}
