import type { Request, Response, Router } from 'express';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z, type ZodType } from 'zod';
import { ErrorBody, registry } from './openapi.js';
import { fromZodError, HttpError } from './errors.js';
import type { KnownRoute } from './middleware/methods.js';
import { readingTimesIn } from './schemas/common.js';
import { isWallTime } from '../shared/date-time.js';
import { ianaZone } from '../shared/time-zones.js';
import { principalOf, type Principal } from './context.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteSpec<B extends ZodType, Q extends ZodType, P extends ZodType> {
  method: Method;
  /** Express path, e.g. `/checkin/v1/api/event/:id`. */
  path: string;
  summary: string;
  tags: string[];
  body?: B;
  query?: Q;
  params?: P;
  /** Response schema for the success status. */
  response?: ZodType;
  /** Success status; 204 sends no body. Default 200. */
  status?: 200 | 201 | 202 | 204;
  /** Whether the route needs the two authentication headers (default true). */
  secured?: boolean;
  /** Roles that may call it (default: clients only). README "Team members" lists the door routes. */
  roles?: Principal['role'][];
  /** Error statuses this route can answer, for the document. */
  errors?: number[];
  /**
   * The time zone (IANA or Windows name) in which the request's date-times without an offset
   * are read, from the raw request (e.g. the event's); the client's zone, else UTC, when it
   * gives none.
   */
  timeZone?: (raw: { params: Record<string, string>; body: unknown; query: unknown }, res: Response) => Promise<string | undefined>;
}

export interface RouteInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  req: Request;
  res: Response;
}

/** A thin route: parse with zod, call the handler, send its value with the spec's status. */
export function defineRoute<B extends ZodType = ZodType, Q extends ZodType = ZodType, P extends ZodType = ZodType>(
  router: Router,
  spec: RouteSpec<B, Q, P>,
  handler: (input: RouteInput<z.infer<B>, z.infer<Q>, z.infer<P>>) => Promise<unknown>,
): void {
  register(spec);
  declared.set(router, [...(declared.get(router) ?? []), { method: spec.method, path: spec.path }]);
  const roles = spec.roles ?? ['client'];
  router[spec.method](spec.path, async (req, res) => {
    if (spec.secured !== false && !roles.includes(principalOf(res).role)) {
      throw new HttpError(403, 'forbidden', `a ${principalOf(res).role} may not call ${spec.method.toUpperCase()} ${spec.path}`);
    }
    const parse = <S extends ZodType | undefined>(schema: S, value: unknown) => {
      if (!schema) return value;
      const result = schema.safeParse(value);
      if (!result.success) throw fromZodError(result.error);
      return result.data;
    };
    const zone = hasWallTime(req.query) || hasWallTime(req.body) ? await readingZoneOf(spec, req, res) : 'UTC';
    const { params, query, body } = readingTimesIn(zone, () => ({
      params: parse(spec.params, req.params),
      query: parse(spec.query, req.query),
      body: parse(spec.body, spec.body ? (req.body ?? {}) : undefined),
    }));
    const value = await handler({ body, query, params, req, res } as RouteInput<z.infer<B>, z.infer<Q>, z.infer<P>>);
    if (res.headersSent) return;
    const status = spec.status ?? 200;
    if (status === 204) res.status(204).end();
    else res.status(status).json(value);
  });
}

/** Whether a request value holds a date-time without an offset anywhere. */
function hasWallTime(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return isWallTime(value);
  if (depth > 4 || value === null || typeof value !== 'object') return false;
  return Object.values(value).some((v) => hasWallTime(v, depth + 1));
}

/** The route's zone (the event's), else the client's, else UTC; names neither IANA nor Windows are skipped. */
async function readingZoneOf(spec: RouteSpec<ZodType, ZodType, ZodType>, req: Request, res: Response): Promise<string> {
  const given = await spec.timeZone?.({ params: req.params as Record<string, string>, body: req.body, query: req.query }, res);
  const account = res.locals.account as { timeZoneId?: string } | undefined;
  for (const name of [given, account?.timeZoneId]) {
    const zone = name ? ianaZone(name) : undefined;
    if (zone) return zone;
  }
  return 'UTC';
}

const declared = new WeakMap<Router, KnownRoute[]>();

/** The routes `defineRoute` declared on these routers (for 405 and OPTIONS). */
export const declaredRoutes = (routers: Router[]): KnownRoute[] => routers.flatMap((r) => declared.get(r) ?? []);

const errorText: Record<number, string> = {
  400: 'Validation error',
  401: 'Missing, invalid or expired bearer token, or a wrong subscription key',
  403: 'Not allowed for this account or role',
  404: 'Not found, or owned by another client',
  406: 'Not acceptable: the Accept header allows no format this route can send',
  409: 'Conflict',
  405: 'Method not allowed on this path (see Allow)',
  413: 'Body too large',
  415: 'The body is not JSON',
  422: 'Unprocessable',
  429: 'Rate limit',
};

function register(spec: RouteSpec<ZodType, ZodType, ZodType>): void {
  const path = spec.path.replace(/:(\w+)/g, '{$1}');
  const errors = [400, ...(spec.secured === false ? [] : [401]), ...(spec.errors ?? [])];
  const config: RouteConfig = {
    method: spec.method,
    path,
    summary: spec.summary,
    tags: spec.tags,
    ...(spec.secured === false ? {} : { security: [{ bearer: [], subscriptionKey: [] }] }),
    request: {
      ...(spec.params ? { params: spec.params as never } : {}),
      ...(spec.query ? { query: spec.query as never } : {}),
      ...(spec.body ? { body: { content: { 'application/json': { schema: spec.body } } } } : {}),
    },
    responses: {
      [spec.status ?? 200]: {
        description: 'Success',
        ...(spec.response && spec.status !== 204 ? { content: { 'application/json': { schema: spec.response } } } : {}),
      },
      ...Object.fromEntries(
        [...new Set(errors)].map((status) => [
          status,
          { description: errorText[status] ?? 'Error', content: { 'application/json': { schema: ErrorBody } } },
        ]),
      ),
    },
  };
  registry.registerPath(config);
}
