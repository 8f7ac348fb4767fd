import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { errorHandler } from '../../src/http/errors.js';
import { sendJsonArray } from '../../src/http/json-array.js';

type Item = { n: number; text: string };

/**
 * A source of `count` items of about `size` characters each in batches of 50, as a read store
 * gives them; the batch reaching `failAfter` items fails instead, when given.
 */
function source(count: number, options: { size?: number; failAfter?: number; onReturn?: () => void } = {}): AsyncIterable<Item[]> {
  return {
    [Symbol.asyncIterator]() {
      let n = 0;
      return {
        async next() {
          if (n >= count) return { done: true, value: undefined };
          // Yield to the event loop between batches, as a store reading in batches does.
          await new Promise((resolve) => setImmediate(resolve));
          const size = Math.min(50, count - n);
          if (options.failAfter !== undefined && n + size > options.failAfter) throw new Error('the store went away');
          const batch = Array.from({ length: size }, () => ({ n: n++, text: 'x'.repeat(options.size ?? 10) }));
          return { done: false, value: batch };
        },
        async return() {
          options.onReturn?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function serve(items: () => AsyncIterable<Item[]>): Promise<string> {
  const app = express();
  app.get('/list', async (_req, res, next) => {
    try {
      await sendJsonArray(res, items());
    } catch (error) {
      next(error);
    }
  });
  app.use(errorHandler);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server!.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/list`;
}

describe('sendJsonArray (byinfo answers)', () => {
  it('sends a small array whole, with its Content-Length, as valid JSON', async () => {
    const url = await serve(() => source(300));
    const reply = await fetch(url);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('application/json');
    const text = await reply.text();
    expect(reply.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect(reply.headers.get('transfer-encoding')).toBeNull();
    const items = JSON.parse(text) as { n: number }[];
    expect(items.map((item) => item.n)).toEqual(Array.from({ length: 300 }, (_, n) => n));
  });

  it('sends an empty array as []', async () => {
    const url = await serve(() => source(0));
    const reply = await fetch(url);
    expect(reply.status).toBe(200);
    expect(await reply.text()).toBe('[]');
  });

  it('streams an array larger than a chunk (chunked), every item once and in order', async () => {
    const url = await serve(() => source(2_000, { size: 500 }));
    const reply = await fetch(url);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('transfer-encoding')).toBe('chunked');
    const items = JSON.parse(await reply.text()) as { n: number }[];
    expect(items).toHaveLength(2_000);
    expect(items.every((item, i) => item.n === i)).toBe(true);
  });

  it('answers an error met before anything was sent like any other error (500 in the error shape)', async () => {
    const url = await serve(() => source(100, { failAfter: 10 }));
    const reply = await fetch(url);
    expect(reply.status).toBe(500);
    expect(await reply.json()).toMatchObject({ code: 'internal_error' });
  });

  it('cuts the connection on an error after the first chunk went out, so the client sees a truncated answer', async () => {
    const url = await serve(() => source(2_000, { size: 500, failAfter: 1_000 }));
    const reply = await fetch(url);
    expect(reply.status).toBe(200);
    await expect(reply.text()).rejects.toThrow();
  });

  it('stops reading when the client goes away mid-answer, and closes the source', async () => {
    let closed = false;
    let served = 0;
    const url = await serve(() => {
      const inner = source(1_000_000, { size: 500, onReturn: () => (closed = true) });
      return {
        [Symbol.asyncIterator]() {
          const it = inner[Symbol.asyncIterator]();
          return { next: () => (served++, it.next()), return: () => it.return!() };
        },
      };
    });
    // The client reads the first bytes, then drops the connection.
    await new Promise<void>((resolve, reject) => {
      const request = http.get(url, (response) => {
        response.once('data', () => {
          request.destroy();
          resolve();
        });
      });
      request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
    });
    // Hang guard far above any real figure: the source is closed within moments of the abort.
    for (let waited = 0; !closed && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(closed).toBe(true);
    expect(served).toBeLessThan(1_000_000);
  });
});

describe('errorHandler after the answer began', () => {
  it('writes nothing more (no status, no headers, no body) to a response whose headers are out', () => {
    const touched: string[] = [];
    const res = {
      headersSent: true,
      locals: {},
      app: { get: () => undefined },
      set: () => touched.push('set'),
      status: () => touched.push('status'),
      json: () => touched.push('json'),
    };
    const req = { get: () => undefined, complete: true, method: 'GET', path: '/list' };
    expect(() => errorHandler(new Error('the store went away'), req as never, res as never, () => undefined)).not.toThrow();
    expect(touched).toEqual([]);
  });
});
