import type { RequestHandler } from 'express';
import { runInTrace, startTrace } from '../../observability/trace.js';

/**
 * Accepts the caller's W3C `traceparent` and `X-Request-Id` (or makes them), answers with the
 * request id, and runs the rest of the request in that trace: its log lines, the events it
 * appends and the bus messages they become all carry it (src/observability/trace.ts).
 */
export const traceContext: RequestHandler = (req, res, next) => {
  const trace = startTrace({ traceparent: req.get('traceparent'), requestId: req.get('x-request-id') });
  res.locals.requestId = trace.requestId;
  res.locals.trace = trace;
  const correlation = req.get('x-correlation-id');
  if (correlation && correlation.length <= 200) res.locals.correlationId = correlation;
  res.set('X-Request-Id', trace.requestId);
  runInTrace(trace, next);
};
