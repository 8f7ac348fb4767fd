/**
 * The API routers are dispatched by path (src/http/middleware/dispatch.ts): only routers with a
 * matching declared route run, in mounting order, with express's own outcome.
 */
import express, { Router } from 'express';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { onlyUnder, routersFor } from '../../src/http/middleware/dispatch.js';
import { errorHandler, unknownRoute } from '../../src/http/errors.js';
import { defineRoute } from '../../src/http/route.js';
import { DomainError } from '../../src/domain/decider.js';

let server: Server;
let base: string;
const ran: string[] = [];

beforeAll(async () => {
  const first = Router();
  const second = Router();
  const open = { summary: 'test', tags: ['test'], secured: false as const };
  defineRoute(first, { ...open, method: 'get', path: '/t/things/:id' }, async ({ params }) => (ran.push('first'), { by: 'first', id: (params as { id: string }).id }));
  defineRoute(second, { ...open, method: 'get', path: '/t/things/export' }, async () => (ran.push('second'), { by: 'second' }));
  defineRoute(second, { ...open, method: 'get', path: '/t/other' }, async () => (ran.push('second'), { by: 'second' }));
  defineRoute(second, { ...open, method: 'get', path: '/t/fails' }, async () => {
    throw new DomainError('not_found', 'nothing here');
  });
  // Routes of one router run on their own (routesAlone): order and methods as the whole router's.
  const third = Router();
  defineRoute(third, { ...open, method: 'get', path: '/t/items/:id' }, async ({ params }) => (ran.push('third :id'), { by: 'third :id', id: (params as { id: string }).id }));
  defineRoute(third, { ...open, method: 'get', path: '/t/items/latest' }, async () => (ran.push('third latest'), { by: 'third latest' }));
  defineRoute(third, { ...open, method: 'put', path: '/t/items/:id' }, async () => (ran.push('third put'), { by: 'third put' }));
  // A literal route whose parameter is a GUID, mounted first, and a later route of an id that may be the literal.
  const guid = z.object({ fileId: z.uuid() });
  defineRoute(first, { ...open, method: 'get', path: '/t/docs/export/:fileId', params: guid }, async ({ params }) => (ran.push('first file'), { by: 'first file', id: (params as { fileId: string }).fileId }));
  defineRoute(second, { ...open, method: 'get', path: '/t/docs/:id/stats' }, async ({ params }) => (ran.push('second stats'), { by: 'second stats', id: (params as { id: string }).id }));
  // A router with a layer of its own besides declared routes runs whole: its middleware is not skipped.
  const guarded = Router();
  guarded.use((_req, res, next) => {
    res.set('x-guarded', 'yes');
    next();
  });
  defineRoute(guarded, { ...open, method: 'get', path: '/t/guarded' }, async () => (ran.push('guarded'), { by: 'guarded' }));
  const pages = Router();
  pages.get('/pages/a', (_req, res) => void res.json({ page: 'a' }));
  const app = express();
  app.use(onlyUnder('/pages', pages));
  app.use(routersFor([first, second, third, guarded]));
  app.use(unknownRoute);
  app.use(errorHandler);
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const get = async (path: string, method = 'GET') => {
  ran.length = 0;
  const reply = await fetch(`${base}${path}`, { method });
  return { status: reply.status, body: (await reply.json()) as Record<string, unknown>, ran: [...ran], guarded: reply.headers.get('x-guarded') };
};

describe('routers dispatched by path', () => {
  it('runs only the router whose route matches', async () => {
    expect(await get('/t/other')).toEqual({ status: 200, body: { by: 'second' }, ran: ['second'], guarded: null });
  });

  it('keeps mounting order when two routers match: the first one answers, as express would', async () => {
    expect(await get('/t/things/export')).toEqual({ status: 200, body: { by: 'first', id: 'export' }, ran: ['first'], guarded: null });
    // Case-insensitive with a trailing slash, as express matches; the same path again comes from the cache.
    expect((await get('/T/Things/42/')).body).toEqual({ by: 'first', id: '42' });
    expect((await get('/T/Things/42/')).body).toEqual({ by: 'first', id: '42' });
  });

  it('runs the routes of one router in declaration order and by method, as the whole router would', async () => {
    expect(await get('/t/items/latest')).toMatchObject({ status: 200, body: { by: 'third :id', id: 'latest' }, ran: ['third :id'] });
    expect(await get('/t/items/7', 'PUT')).toMatchObject({ status: 200, body: { by: 'third put' }, ran: ['third put'] });
    expect(await get('/t/items/7')).toMatchObject({ status: 200, body: { by: 'third :id', id: '7' }, ran: ['third :id'] });
  });

  it('tries first the routes whose params schemas take the path: a literal route yields where its own parameter cannot be meant', async () => {
    expect(await get('/t/docs/export/stats')).toMatchObject({ status: 200, body: { by: 'second stats', id: 'export' }, ran: ['second stats'] });
    const file = '0190a5c2-7b3e-7c4d-8e5f-6a7b8c9d0e1f';
    expect(await get(`/t/docs/export/${file}`)).toMatchObject({ status: 200, body: { by: 'first file', id: file }, ran: ['first file'] });
  });

  it('answers a parameter that is not valid percent-encoding with 400 naming it, without running the route', async () => {
    const reply = await get('/t/things/%E0%A4%A');
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'validation_error', errors: [{ path: 'id' }] });
    expect(reply.ran).toEqual([]);
  });

  it('runs a router with layers of its own whole, so its middleware still runs', async () => {
    expect(await get('/t/guarded')).toEqual({ status: 200, body: { by: 'guarded' }, ran: ['guarded'], guarded: 'yes' });
  });

  it('passes errors to the error handler and unknown paths to the 404 handler', async () => {
    const failed = await get('/t/fails');
    expect(failed.status).toBe(404);
    expect(failed.body).toMatchObject({ code: 'not_found', message: 'nothing here' });
    const unknown = await get('/t/nowhere');
    expect(unknown.status).toBe(404);
    expect(unknown.ran).toEqual([]);
  });

  it('serves a prefix-only router under its prefix and skips it elsewhere', async () => {
    expect((await get('/pages/a')).body).toEqual({ page: 'a' });
    expect((await get('/PAGES/a')).body).toEqual({ page: 'a' });
    expect((await get('/pagesx/a')).status).toBe(404);
  });
});
