import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * docs/operations.md "Compression": answers of 1 KiB or more are sent with gzip or brotli as the
 * client's Accept-Encoding asks; small answers, requests that accept none, HEAD and the door's
 * scans are sent as they are. (fetch asks for gzip itself and decodes: these requests use
 * node:http to see the bytes on the wire.)
 */
interface Wire {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: Buffer;
}

function onTheWire(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Wire> {
  return new Promise((resolve, reject) => {
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const request = http.request(
      url,
      { method: init.method ?? 'GET', headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...init.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** The body as the client reads it once Content-Encoding is undone. */
function decoded(wire: Wire): unknown {
  const encoding = wire.headers['content-encoding'];
  const plain =
    encoding === 'gzip' ? zlib.gunzipSync(wire.bytes) : encoding === 'br' ? zlib.brotliDecompressSync(wire.bytes) : wire.bytes;
  return JSON.parse(plain.toString('utf8'));
}

let service: TestService;
let client: Client;
let eventId: string;
const auth = () => ({ authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey });

/** 200 guests a batch, each with some text, so a list of them is far over 1 KiB (and `count` over 64 KiB streams in parts). */
async function importGuests(count: number, prefix: string): Promise<void> {
  for (let start = 0; start < count; start += 200) {
    const batch = Array.from({ length: Math.min(200, count - start) }, (_, k) => ({
      firstName: `${prefix}${start + k}`,
      lastName: 'Lastname',
      email: `guest${start + k}@example.com`,
      additionalInfo: 'table 12, vegetarian, arrives late',
      barcode: `${prefix}-${start + k}`,
    }));
    const reply = await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, batch);
    expect(reply.status).toBe(204);
  }
}

beforeAll(async () => {
  service = await startTestService();
  client = await createClient(service);
  eventId = await newEvent(client);
  await importGuests(2000, 'G');
});
afterAll(() => service.close());

describe('response compression (HTTP_COMPRESSION, default on)', () => {
  it('sends a large JSON answer with brotli or gzip as Accept-Encoding prefers, and plain to a client that accepts neither', async () => {
    const path = `${service.url}/checkin/v1/api/guests/${eventId}?limit=500`;
    const plain = await onTheWire(path, { headers: auth() });
    expect(plain.headers['content-encoding']).toBeUndefined();
    const list = decoded(plain) as { items: unknown[] };
    expect(list.items).toHaveLength(500);

    const gzip = await onTheWire(path, { headers: { ...auth(), 'accept-encoding': 'gzip' } });
    expect(gzip.status).toBe(200);
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.headers['content-length']).toBeUndefined();
    expect(gzip.headers.vary).toMatch(/Accept-Encoding/i);
    expect(gzip.headers['cache-control']).toBe('no-store');
    expect(decoded(gzip)).toEqual(list);
    expect(gzip.bytes.length).toBeLessThan(plain.bytes.length / 4);

    const br = await onTheWire(path, { headers: { ...auth(), 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(decoded(br)).toEqual(list);
    // q=0 refuses an encoding.
    const noBrotli = await onTheWire(path, { headers: { ...auth(), 'accept-encoding': 'br;q=0, gzip' } });
    expect(noBrotli.headers['content-encoding']).toBe('gzip');
  });

  it('streams a list of thousands compressed, whole, with backpressure and no listener left behind per chunk', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // byinfo without limit: the spec's plain array of every match, written in 64 KiB parts.
      const path = `${service.url}/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=${encodeURIComponent('vegetarian')}`;
      const gzip = await onTheWire(path, { headers: { ...auth(), 'accept-encoding': 'gzip' } });
      expect(gzip.status).toBe(200);
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gzip.headers['transfer-encoding']).toBe('chunked');
      const guests = decoded(gzip) as { barcode: string }[];
      expect(guests).toHaveLength(2000);
      expect(new Set(guests.map((g) => g.barcode)).size).toBe(2000);
      const plain = await onTheWire(path, { headers: auth() });
      expect(decoded(plain)).toEqual(guests);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('leaves small answers, HEAD and answers to no Accept-Encoding as they were: plain, with their Content-Length', async () => {
    const small = await onTheWire(`${service.url}/checkin/v1/api/event/${eventId}`, { headers: { ...auth(), 'accept-encoding': 'gzip, br' } });
    expect(small.status).toBe(200);
    expect(small.bytes.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(Number(small.headers['content-length'])).toBe(small.bytes.length);

    const head = await onTheWire(`${service.url}/checkin/v1/api/guests/${eventId}?limit=500`, { method: 'HEAD', headers: { ...auth(), 'accept-encoding': 'gzip' } });
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBeUndefined();

    const error = await onTheWire(`${service.url}/checkin/v1/api/events`, { headers: { 'accept-encoding': 'gzip' } });
    expect(error.status).toBe(401);
    expect(error.headers['content-encoding']).toBeUndefined();
  });

  it('never compresses the door scans, not even a guest photo over 1 KiB: the middleware is not entered (no Vary)', async () => {
    // About 8 kB of base64, as a door scanner shows a guest's photo.
    const image = Buffer.alloc(6000, 7).toString('base64');
    const created = await client.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Pic', lastName: 'Ture', barcode: 'PHOTO-1', image }]);
    expect(created.status).toBe(200);
    const scan = await onTheWire(`${service.url}/checkin/v1/api/guests/${eventId}/checkin`, {
      method: 'POST',
      headers: { ...auth(), 'accept-encoding': 'gzip, deflate, br' },
      body: { barcode: 'PHOTO-1' },
    });
    expect(scan.status).toBe(200);
    expect(scan.bytes.length).toBeGreaterThan(8000);
    expect(scan.headers['content-encoding']).toBeUndefined();
    expect(scan.headers.vary ?? '').not.toMatch(/Accept-Encoding/i);
    expect(decoded(scan)).toMatchObject({ result: 'admitted', guest: { image } });
  });

  it('stores the plain answer for Idempotency-Key: the replay is encoded for the client that asks it, and plain for one that does not', async () => {
    const batch = Array.from({ length: 20 }, (_, k) => ({ firstName: `Idem${k}`, lastName: 'Potent', additionalInfo: 'a'.repeat(100) }));
    const key = `compress-${Date.now()}`;
    const first = await onTheWire(`${service.url}/checkin/v1/api/guests/${eventId}`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': key, 'accept-encoding': 'gzip' },
      body: batch,
    });
    expect(first.status).toBe(200);
    expect(first.headers['content-encoding']).toBe('gzip');
    const replayedGzip = await onTheWire(`${service.url}/checkin/v1/api/guests/${eventId}`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': key, 'accept-encoding': 'br' },
      body: batch,
    });
    expect(replayedGzip.headers['idempotent-replayed']).toBe('true');
    expect(replayedGzip.headers['content-encoding']).toBe('br');
    expect(decoded(replayedGzip)).toEqual(decoded(first));
    const replayedPlain = await onTheWire(`${service.url}/checkin/v1/api/guests/${eventId}`, {
      method: 'POST',
      headers: { ...auth(), 'idempotency-key': key },
      body: batch,
    });
    expect(replayedPlain.headers['content-encoding']).toBeUndefined();
    expect(decoded(replayedPlain)).toEqual(decoded(first));
  });

  it('compresses a CSV export download (Content-Disposition kept), not an xlsx one (a zip already)', async () => {
    const event = { id: eventId, title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
    const csv = await client.call('POST', '/checkin/v1/api/event/export', event);
    expect(csv.status).toBe(200);
    const download = await onTheWire(`${service.url}${csv.body.url}`, { headers: { ...auth(), 'accept-encoding': 'gzip' } });
    expect(download.status).toBe(200);
    expect(download.headers['content-type']).toMatch(/^text\/csv/);
    expect(download.headers['content-encoding']).toBe('gzip');
    expect(download.headers['content-disposition']).toMatch(/^attachment; filename=/);
    const plain = await onTheWire(`${service.url}${csv.body.url}`, { headers: auth() });
    expect(Number(plain.headers['content-length'])).toBe(plain.bytes.length);
    expect(zlib.gunzipSync(download.bytes).equals(plain.bytes)).toBe(true);
    expect(plain.bytes.toString('utf8')).toContain('G1999');

    const xlsx = await client.call('POST', '/checkin/v1/api/event/export?type=EXCEL', event);
    expect(xlsx.status).toBe(200);
    const excel = await onTheWire(`${service.url}${xlsx.body.url}`, { headers: { ...auth(), 'accept-encoding': 'gzip, br' } });
    expect(excel.status).toBe(200);
    expect(excel.headers['content-encoding']).toBeUndefined();
    expect(Number(excel.headers['content-length'])).toBe(excel.bytes.length);
  });

  it('compresses the OpenAPI document for a browser', async () => {
    const document = await onTheWire(`${service.url}/openapi.json`, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(document.headers['content-encoding']).toBe('br');
    expect((decoded(document) as { openapi: string }).openapi).toMatch(/^3\.1/);
  });
});

describe('HTTP_COMPRESSION=off', () => {
  it('sends every answer as it is', async () => {
    const off = await startTestService({ HTTP_COMPRESSION: 'off' });
    try {
      const document = await onTheWire(`${off.url}/openapi.json`, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(document.status).toBe(200);
      expect(document.headers['content-encoding']).toBeUndefined();
      expect(Number(document.headers['content-length'])).toBe(document.bytes.length);
    } finally {
      await off.close();
    }
  });
});
