import http from 'node:http';
import https from 'node:https';
import type { AttemptOutcome } from '../domain/webhook.js';
import { hostOf, pinnedLookup, resolveUrl, UrlRefusedError, type Resolver, type UrlPolicy } from '../shared/url-guard.js';
import { signatureHeader } from '../webhooks/verify.js';

export interface WebhookRequest {
  url: string;
  /** The exact bytes to sign and send. */
  body: string;
  secret: string;
  webhookId: string;
  eventType: string;
  /** Unix seconds for the `t=` of the signature: the moment of this attempt. */
  unixTime: number;
}

export interface SenderOptions {
  policy: UrlPolicy;
  resolver: Resolver;
  timeoutMs: number;
}

/**
 * One delivery attempt: checks the URL again after DNS resolution, connects only to the
 * addresses it checked, signs exactly the bytes it sends, and reports what came back.
 * Never throws: every failure is an outcome (refused URLs are final; the rest retryable).
 */
export class WebhookSender {
  // Keep-alive: a busy receiver's deliveries reuse connections. Sockets are keyed by host and
  // port; each request still carries its own pinned lookup for any new connection.
  private readonly agents: { 'http:': http.Agent; 'https:': https.Agent };

  constructor(private readonly options: SenderOptions) {
    // Idle sockets close after this; it must outlast one attempt's own timeout.
    const idle = Math.max(30_000, options.timeoutMs + 5_000);
    this.agents = {
      'http:': new http.Agent({ keepAlive: true, timeout: idle }),
      'https:': new https.Agent({ keepAlive: true, timeout: idle }),
    };
  }

  async send(request: WebhookRequest, signal?: AbortSignal): Promise<AttemptOutcome> {
    let target: Awaited<ReturnType<typeof resolveUrl>>;
    try {
      target = await resolveUrl(request.url, this.options.policy, this.options.resolver);
    } catch (error) {
      if (error instanceof UrlRefusedError) return { kind: 'error', error: error.message, retryable: false };
      return { kind: 'error', error: `DNS lookup failed: ${(error as Error).message}`, retryable: true };
    }
    const body = Buffer.from(request.body, 'utf8');
    const { url, addresses } = target;
    const transport = url.protocol === 'https:' ? https : http;
    const first = await this.post(transport, url, addresses, request, body, signal);
    // A kept-alive connection the receiver closed as this request went out (it keeps idle
    // connections shorter than we do and did not say so: gunicorn's 2 s, a proxy's): nothing
    // reached it, so the request goes once more at once, on a new connection (Node's advice for
    // `reusedSocket`), instead of failing the attempt and waiting for the next one.
    if (first.outcome.kind === 'error' && first.reusedSocket && first.reset && !signal?.aborted) {
      return (await this.post(transport, url, addresses, request, body, signal)).outcome;
    }
    return first.outcome;
  }

  private post(
    transport: typeof http | typeof https,
    url: URL,
    addresses: Awaited<ReturnType<typeof resolveUrl>>['addresses'],
    request: WebhookRequest,
    body: Buffer,
    signal: AbortSignal | undefined,
  ): Promise<{ outcome: AttemptOutcome; reusedSocket: boolean; reset: boolean }> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: AttemptOutcome, reset = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve({ outcome, reusedSocket: req.reusedSocket, reset });
      };
      const req = transport.request({
        protocol: url.protocol,
        host: hostOf(url),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        agent: this.agents[url.protocol as 'http:' | 'https:'],
        lookup: pinnedLookup(addresses),
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(body.length),
          'User-Agent': 'checkin-service-webhooks/1',
          'X-Service-Signature': signatureHeader(request.secret, request.unixTime, body),
          'X-Service-Webhook-Id': request.webhookId,
          'X-Service-Event': request.eventType,
        },
      });
      const timer = setTimeout(() => {
        req.destroy(new Error(`no response within ${this.options.timeoutMs} ms`));
      }, this.options.timeoutMs);
      const onAbort = () => req.destroy(new Error('aborted: the dispatcher is stopping'));
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res) => {
        const statusCode = res.statusCode ?? 0;
        const retryAfterMs = statusCode === 429 || statusCode === 503 ? retryAfterOf(res.headers['retry-after']) : undefined;
        finish({ kind: 'response', statusCode, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
        // Drain (and ignore) the answer so the connection can be reused; a body that never ends is cut off.
        const cutOff = setTimeout(() => res.destroy(), this.options.timeoutMs);
        res.on('close', () => clearTimeout(cutOff));
        res.resume();
      });
      req.on('error', (error) => {
        const code = (error as NodeJS.ErrnoException).code;
        finish({ kind: 'error', error: error.message || String(error), retryable: true }, code === 'ECONNRESET' || code === 'EPIPE');
      });
      req.end(body);
    });
  }

  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}

/** The most a receiver's Retry-After holds a delivery back: an hour (the schedule goes on after it). */
const maxRetryAfterMs = 3_600_000;

/** `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 10.2.3), in ms from now, capped; undefined when absent or unreadable. */
export function retryAfterOf(header: string | undefined, now = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(0, ms), maxRetryAfterMs);
}
