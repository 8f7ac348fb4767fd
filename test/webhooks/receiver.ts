import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../src/webhooks/verify.js';

export interface Delivery {
  headers: http.IncomingHttpHeaders;
  rawBody: Buffer;
  body: any;
  receivedAt: number;
  /** The spec's receiver steps, written out here independently of src/webhooks/verify.ts. */
  specVerified: boolean;
  /** The same, through the exported helper. */
  helperVerified: boolean;
  signature: { t: number; v1: string };
  answered: number;
}

/** What the receiver answers: a status, or 'hang' (never answers). */
export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  secret: string;
  /** Answers for the next deliveries in order; after them, `fallback`. */
  answers: Answer[];
  fallback: Answer;
  waitFor(count: number, timeoutMs?: number): Promise<Delivery[]>;
  /** Requests left hanging whose connection the sender has not given up on yet. */
  hangingOpen(): number;
  close(): Promise<void>;
}

/**
 * Spec, Events, Signature, receiver steps 4 and 5: the raw body, t and v1 from the header,
 * |now - t| <= 300 s, HMAC-SHA256 over t + "." + body, constant-time compare.
 */
export function specVerify(rawBody: Buffer, header: string | undefined, secret: string, nowMs = Date.now()): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2) as [string, string]));
  const t = Number(parts.t);
  const v1 = parts.v1;
  if (!Number.isInteger(t) || !v1 || !/^[0-9a-f]{64}$/.test(v1)) return false;
  if (Math.abs(Math.floor(nowMs / 1000) - t) > 300) return false;
  const expected = createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${t}.`), rawBody])).digest();
  return timingSafeEqual(expected, Buffer.from(v1, 'hex'));
}

/**
 * A real HTTP receiver on 127.0.0.1 that verifies each delivery and answers 401 when it fails.
 * Its URL has a path of its own (`/hook-<uuid>`): only requests under it count as deliveries. Its
 * port came from listen(0), so it may be one another test file's service still sends to (a
 * receiver of that file closed while deliveries to it were retried): those get 404, uncounted.
 */
export async function startReceiver(options: { secret?: string; answers?: Answer[]; fallback?: Answer } = {}): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>();
  const waiters: (() => void)[] = [];
  const receiver: Receiver = {
    url: '',
    deliveries: [],
    secret: options.secret ?? '',
    answers: options.answers ?? [],
    fallback: options.fallback ?? 200,
    waitFor: (count, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (receiver.deliveries.length < count) return false;
          resolve(receiver.deliveries.slice(0, count));
          return true;
        };
        if (check()) return;
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${receiver.deliveries.length} deliveries, expected ${count}`)),
          timeoutMs,
        );
        waiters.push(() => {
          if (check()) clearTimeout(timer);
        });
      }),
    hangingOpen: () => [...hanging].filter((res) => !res.destroyed).length,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const own = `/hook-${randomUUID()}`;
  const server = http.createServer((req, res) => {
    if (!(req.url ?? '').startsWith(own)) {
      req.resume();
      res.statusCode = 404;
      res.end('not this receiver');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const header = req.headers['x-service-signature'] as string | undefined;
      const specVerified = specVerify(rawBody, header, receiver.secret);
      const helperVerified = verifyWebhook(rawBody, header, receiver.secret, { toleranceSec: 300 }).ok;
      const parts = Object.fromEntries((header ?? '').split(',').map((p) => p.split('=', 2)));
      const planned = receiver.answers.shift() ?? receiver.fallback;
      // Spec step 5: a receiver that fails verification answers 401 and ignores the event.
      const answer: Answer = specVerified ? planned : 401;
      let body: unknown;
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch {
        body = undefined;
      }
      receiver.deliveries.push({
        headers: req.headers,
        rawBody,
        body,
        receivedAt: Date.now(),
        specVerified,
        helperVerified,
        signature: { t: Number(parts.t), v1: String(parts.v1) },
        answered: answer === 'hang' ? 0 : answer,
      });
      for (const wake of [...waiters]) wake();
      if (answer === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      res.statusCode = answer;
      res.end(answer >= 200 && answer < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${own}`;
  return receiver;
}

/**
 * Polls until `check` returns a value (not undefined/false), or fails after `timeoutMs`: a hang guard
 * far above what the wait takes, also on a loaded CI machine (5-10x slower than a quiet one).
 */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 60_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
