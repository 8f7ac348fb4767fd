import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withCors } from '../../src/http/cors.js';
import { adminKey, createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * docs/operations.md "Browsers (CORS)": a page on an origin of CORS_ORIGINS may call the API
 * (its preflights answered before authentication, the method guard and the rate limit), and
 * reads the headers it needs; any other origin gets no CORS header at all, as before.
 */
const door = 'https://door.example.com';
const preflightFor = (origin: string, method = 'POST', headers = 'authorization,ocp-apim-subscription-key,content-type') => ({
  origin,
  'access-control-request-method': method,
  'access-control-request-headers': headers,
});
const corsHeaders = (headers: Headers) => [...headers.keys()].filter((name) => name.startsWith('access-control-'));
const listOf = (value: string | null) => (value ?? '').split(',').map((item) => item.trim().toLowerCase());

describe('CORS_ORIGINS unset (the default)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(() => service.close());

  it('sends no CORS header to any origin: a preflight gets the method guard\'s Allow, which a browser refuses', async () => {
    const preflight = await request(service.url, 'OPTIONS', '/checkin/v1/api/events', undefined, preflightFor(door, 'GET'));
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(corsHeaders(preflight.headers)).toEqual([]);
    const actual = await request(service.url, 'GET', '/checkin/v1/api/events', undefined, { origin: door });
    expect(actual.status).toBe(401);
    expect(corsHeaders(actual.headers)).toEqual([]);
    expect(actual.headers.get('vary') ?? '').not.toMatch(/origin/i);
  });
});

describe('CORS_ORIGINS=https://door.example.com,http://localhost:5173', () => {
  let service: TestService;
  let client: Client;
  let eventId: string;
  beforeAll(async () => {
    // The rate limit on, to show that preflights do not count against it.
    service = await startTestService({ CORS_ORIGINS: `${door}/, http://localhost:5173`, RATE_LIMIT_PER_MINUTE: '1000' });
    client = await createClient(service);
    eventId = await newEvent(client);
  });
  afterAll(() => service.close());

  it('answers a preflight from an allowed origin with 204 and the methods and headers the API takes, before authentication', async () => {
    const reply = await request(service.url, 'OPTIONS', `/checkin/v1/api/guests/${eventId}/checkin`, undefined, preflightFor(door));
    expect(reply.status).toBe(204);
    expect(reply.headers.get('access-control-allow-origin')).toBe(door);
    expect(listOf(reply.headers.get('access-control-allow-methods'))).toEqual(expect.arrayContaining(['get', 'post', 'put', 'patch', 'delete']));
    expect(listOf(reply.headers.get('access-control-allow-headers'))).toEqual(
      expect.arrayContaining(['authorization', 'ocp-apim-subscription-key', 'content-type', 'idempotency-key', 'x-request-id', 'traceparent']),
    );
    expect(reply.headers.get('access-control-max-age')).toBe('7200');
    expect(reply.headers.get('access-control-allow-credentials')).toBeNull();
    expect(listOf(reply.headers.get('vary'))).toContain('origin');
    expect(reply.headers.get('content-length')).toBe('0');
  });

  it('answers a preflight for a method the path does not take too: the request itself then gets the 405, readable by the page', async () => {
    const preflight = await request(service.url, 'OPTIONS', '/checkin/v1/api/events', undefined, preflightFor(door, 'DELETE'));
    expect(preflight.status).toBe(204);
    const refused = await client.call('DELETE', '/checkin/v1/api/events', undefined, { origin: door });
    expect(refused.status).toBe(405);
    expect(refused.headers.get('access-control-allow-origin')).toBe(door);
    expect(listOf(refused.headers.get('access-control-expose-headers'))).toContain('allow');
  });

  it('does not count preflights against the rate limit', async () => {
    const before = await client.call('GET', '/checkin/v1/api/events', undefined, { origin: door });
    for (let i = 0; i < 5; i++) {
      const preflight = await request(service.url, 'OPTIONS', '/checkin/v1/api/events', undefined, preflightFor(door, 'GET'));
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('ratelimit-remaining')).toBeNull();
    }
    const after = await client.call('GET', '/checkin/v1/api/events', undefined, { origin: door });
    expect(Number(after.headers.get('ratelimit-remaining'))).toBe(Number(before.headers.get('ratelimit-remaining')) - 1);
  });

  it('counts answered preflights in http_request_duration_seconds under their area', async () => {
    await request(service.url, 'OPTIONS', '/comms/v1/api/comms/templates', undefined, preflightFor(door, 'GET'));
    const text = await service.metrics.render();
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/comms\/v1\/\*"[^}]*method="OPTIONS"[^}]*status="204"[^}]*\} [1-9]/);
  });

  it('lets an allowed page read the answer and the headers it needs: the request id, rate limit, Location, Idempotent-Replayed, cursors, downloads', async () => {
    const reply = await client.call('GET', `/checkin/v1/api/guests/${eventId}?limit=1`, undefined, { origin: 'http://localhost:5173' });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(listOf(reply.headers.get('vary'))).toContain('origin');
    expect(listOf(reply.headers.get('access-control-expose-headers'))).toEqual(
      expect.arrayContaining([
        'x-request-id',
        'retry-after',
        'ratelimit-limit',
        'ratelimit-remaining',
        'ratelimit-reset',
        'location',
        'content-location',
        'content-disposition',
        'idempotent-replayed',
        'x-next-cursor',
        'x-export-id',
      ]),
    );
    // An error keeps them, so the page reads the 401 and its code, not a network error.
    const unauthorized = await request(service.url, 'GET', '/checkin/v1/api/events', undefined, { origin: door });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(door);
    expect(unauthorized.body.code).toBe('unauthorized');
  });

  it('serves the dev provider\'s token endpoint and the OpenAPI document to an allowed page', async () => {
    const token = await request(service.url, 'OPTIONS', '/core/connect/token', undefined, preflightFor(door, 'POST', 'content-type'));
    expect(token.status).toBe(204);
    expect(token.headers.get('access-control-allow-origin')).toBe(door);
    const document = await request(service.url, 'GET', '/openapi.json', undefined, { origin: door });
    expect(document.headers.get('access-control-allow-origin')).toBe(door);
  });

  it('gives another origin, a look-alike, or the operator API no CORS header at all', async () => {
    for (const origin of ['https://evil.example', 'https://door.example.com.evil.example', 'http://door.example.com', 'null']) {
      const preflight = await request(service.url, 'OPTIONS', '/checkin/v1/api/events', undefined, preflightFor(origin, 'GET'));
      expect(corsHeaders(preflight.headers), origin).toEqual([]);
      const actual = await client.call('GET', '/checkin/v1/api/events', undefined, { origin });
      expect(actual.status, origin).toBe(200);
      expect(corsHeaders(actual.headers), origin).toEqual([]);
    }
    const admin = await request(service.url, 'OPTIONS', '/admin/v1/accounts', undefined, preflightFor(door, 'POST'));
    expect(corsHeaders(admin.headers)).toEqual([]);
    const adminCall = await request(service.url, 'POST', '/admin/v1/accounts', {}, { origin: door, authorization: `Bearer ${adminKey}` });
    expect(corsHeaders(adminCall.headers)).toEqual([]);
    const probe = await request(service.url, 'GET', '/healthz', undefined, { origin: door });
    expect(corsHeaders(probe.headers)).toEqual([]);
  });
});

describe('withCors', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    // Stands for the overload guard: it answers with writeHead, before the app.
    const refuse = withCors(
      (_req, res) => {
        res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1' });
        res.end('{"code":"overloaded"}');
      },
      { origins: [door] },
    );
    server = createServer(refuse);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('puts its headers on an answer written before the app (a 503 overloaded), so the page can read Retry-After', async () => {
    const reply = await request(url, 'GET', '/checkin/v1/api/events', undefined, { origin: door });
    expect(reply.status).toBe(503);
    expect(reply.headers.get('access-control-allow-origin')).toBe(door);
    expect(listOf(reply.headers.get('access-control-expose-headers'))).toContain('retry-after');
  });
});
