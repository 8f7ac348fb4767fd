import type { Server } from 'node:http';

/** Node's own default `headersTimeout`: a slow client never gets less time than it did. */
const nodeHeadersTimeoutMs = 60_000;

/**
 * Keep-alive behind a load balancer (docs/operations.md, "Keep-alive behind a load balancer"):
 * a balancer keeps idle connections to the service for its own idle timeout (AWS ALB 60 s,
 * nginx upstream keepalive 60 s, Google Cloud 600 s) and sends the next request on one of them.
 * Node closes an idle connection after 5 s by default, so a request sent as Node closes it is
 * lost and the client gets a 502: the service must wait longer than the balancer does.
 *
 * `headersTimeout` is kept above `keepAliveTimeout`, as load-balancer guides for Node say. Since
 * Node 18 it runs from a request's first byte, so it no longer cuts an idle connection (checked on
 * Node 20); the pairing costs nothing and keeps a reader of those guides from wondering.
 * `requestTimeout` (Node's 300 s for a whole request) stays as it is.
 */
export function keepAliveFor(server: Server, keepAliveTimeoutMs: number): void {
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.headersTimeout = Math.max(nodeHeadersTimeoutMs, keepAliveTimeoutMs + 1000);
}
