import { Router, type Request, type RequestHandler, type Response } from 'express';
import { getOpenApiMetadata, type RouteConfig, type ZodContentObject } from '@asteasolutions/zod-to-openapi';
import { z, type ZodType } from 'zod';
import { ErrorBody, registry } from './openapi.js';
import { fromZodError, HttpError } from './errors.js';
import type { KnownRoute } from './middleware/methods.js';
import { readingTimesIn } from './schemas/common.js';
import { isWallTime } from '../shared/date-time.js';
import { ianaZone } from '../shared/time-zones.js';
import { principalOf, type Principal } from './context.js';
import { SerializedJson } from '../shared/serialized-json.js';

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
  /** The operator API takes `Authorization: Bearer <ADMIN_API_KEY>` instead (with `secured: false`). */
  security?: 'admin';
  /** Longer text for the document: the rules the handler enforces beyond the schemas. */
  description?: string;
  /** A whole example request body; default: the body schema's own example. */
  bodyExample?: unknown;
  /** A whole example success body; default: the response schema's own example. */
  responseExample?: unknown;
  /** A success answer that is not JSON (a file download): media type to schema and example. */
  responseContent?: ZodContentObject;
  /** Headers of the success answer, for the document. */
  responseHeaders?: Record<string, { description: string; schema: { type: 'string' } }>;
  /** OpenAPI links from the success answer to the operations that use its ids (stateful clients and tests). */
  links?: Record<string, { operationId: string; parameters?: Record<string, string>; requestBody?: unknown; description?: string }>;
  /** operationId in the document; default derived from method and path. */
  operationId?: string;
  /** Roles that may call it (default: clients only). README "Team members" lists the door routes. */
  roles?: Principal['role'][];
  /** Error statuses this route can answer, for the document. */
  errors?: number[];
  /**
   * Answered without compression, the middleware not even entered (middleware/compression.ts):
   * for the door's scans, whose answers are a few hundred bytes, or a guest's photo (base64 of a
   * JPEG, which compresses by a quarter at most), where every scan would pay for the wrapping.
   */
  uncompressed?: true;
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
  const known: KnownRoute = { method: spec.method, path: spec.path, ...(spec.params ? { params: spec.params } : {}), ...(spec.uncompressed ? { uncompressed: true } : {}) };
  declared.set(router, [...(declared.get(router) ?? []), known]);
  const roles = spec.roles ?? ['client'];
  const handle: RequestHandler = async (req, res) => {
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
      // No body reads as {} (an object of optional fields is then valid); where a JSON array is
      // expected, no body is a missing body ("required"). A JSON null is a body, refused as such.
      body: parse(spec.body, spec.body ? (req.body === undefined ? (spec.body instanceof z.ZodArray ? undefined : {}) : req.body) : undefined),
    }));
    await toStoredEventIds(spec.path, req, res, { params, query, body });
    const value = await handler({ body, query, params, req, res } as RouteInput<z.infer<B>, z.infer<Q>, z.infer<P>>);
    if (res.headersSent) return;
    const status = spec.status ?? 200;
    if (status === 204) res.status(204).end();
    else if (value instanceof SerializedJson) res.status(status).set('Content-Type', 'application/json; charset=utf-8').send(value.bytes);
    else res.status(status).json(value);
  };
  router[spec.method](spec.path, handle);
  // The same route alone on a router of its own, for a dispatcher that has found it (routeAlone).
  const alone = Router();
  alone[spec.method](spec.path, handle);
  single.set(router, [...(single.get(router) ?? []), { path: spec.path, alone }]);
}

/** What createApp puts in `app.locals.storedEventId`: commands/events.ts storedEventId for the app's services. */
export type StoredEventIdOf = (clientId: string, eventId: string) => Promise<string>;

/**
 * Every event id a request names (path `eventId`, an event route's `{id}`, query and body
 * `eventId`, the export body's `id`) as the event is stored: itself, or, for a GUID-shaped id in
 * another case than an event stored before plain ids kept their case, that event's lowercase id
 * (docs/identifiers.md, Case). Only a GUID-shaped id with an upper-case letter is looked up.
 */
async function toStoredEventIds(path: string, req: Request, res: Response, parsed: { params: unknown; query: unknown; body: unknown }): Promise<void> {
  const storedEventId = req.app.locals.storedEventId as StoredEventIdOf | undefined;
  const principal = res.locals.principal as { tenantId?: string } | undefined;
  if (!storedEventId || !principal?.tenantId) return;
  const places: [unknown, string][] = [
    [parsed.params, 'eventId'],
    [parsed.query, 'eventId'],
    [parsed.body, 'eventId'],
  ];
  if (/\/event\/:id(\/|$)/.test(path)) places.push([parsed.params, 'id']);
  if (path === '/checkin/v1/api/event/export' && req.method === 'POST') places.push([parsed.body, 'id']);
  for (const [holder, key] of places) {
    if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) continue;
    const record = holder as Record<string, unknown>;
    const value = record[key];
    if (typeof value === 'string' && value !== value.toLowerCase()) record[key] = await storedEventId(principal.tenantId, value);
  }
  // A batch's records may repeat the path's event id: spelled as the path was, it is the same event.
  const resolved = (parsed.params ?? {}) as Record<string, unknown>;
  const given = (req.params as Record<string, unknown>).eventId;
  if (Array.isArray(parsed.body) && typeof given === 'string' && resolved.eventId !== given) {
    for (const item of parsed.body as unknown[]) {
      if (item !== null && typeof item === 'object' && (item as Record<string, unknown>).eventId === given) (item as Record<string, unknown>).eventId = resolved.eventId;
    }
  }
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
const single = new WeakMap<Router, { path: string; alone: Router }[]>();

/**
 * Each route `defineRoute` declared on this router, in declaration order, with a router that
 * holds that route alone: running it does what the whole router does for a request the route
 * matches, without testing the router's other routes first (src/http/middleware/dispatch.ts).
 */
export const routesAlone = (router: Router): { path: string; alone: Router }[] => single.get(router) ?? [];

/** The routes `defineRoute` declared on these routers (for 405 and OPTIONS). */
export const declaredRoutes = (routers: Router[]): KnownRoute[] => routers.flatMap((r) => declared.get(r) ?? []);

const errorText: Record<number, string> = {
  400: 'Validation error: `errors` names each field that is wrong',
  401: 'Missing, invalid or expired bearer token, or a wrong subscription key',
  403: 'Not allowed for this account or role',
  404: 'Not found, or owned by another client',
  406: 'Not acceptable: the Accept header allows no format this route can send',
  409: 'Conflict',
  405: 'Method not allowed on this path (`Allow` lists the methods)',
  413: 'Body larger than BODY_LIMIT, or (EventStoreDB) a record larger than the event store takes in one append',
  415: 'The body is not sent as application/json',
  422: 'Unprocessable',
  429: 'Rate limit: retry after `Retry-After` seconds',
  431: 'Request line or headers too large',
  500: 'Unexpected server error (`internal_error`): retry; the message never carries the cause, report the `X-Request-Id` if it persists',
  503: 'Unavailable, retry after `Retry-After` seconds: `overloaded` (the service), `store_unavailable` (the event store or the read store), `read_models_behind` (the change was recorded but its read model did not show it in time: read it back, do not send it again) or `identity_provider_unavailable` (the bearer token could not be checked)',
};

const errorCodes: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limit',
  431: 'request_header_fields_too_large',
  500: 'internal_error',
  503: 'unavailable',
};

function errorExample(status: number): unknown {
  if (status === 400) {
    return {
      code: 'validation_error',
      message: 'the request is not valid: see errors',
      errors: [{ path: 'startTime', message: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-21T10:00:00Z' }],
    };
  }
  if (status === 500) return { code: 'internal_error', message: 'an unexpected error happened; retry, and report the request id if it persists' };
  if (status === 429) return { code: 'rate_limit', message: 'too many requests from this source IP; retry in 60 s' };
  return { code: errorCodes[status] ?? 'error', message: errorText[status] ?? 'error' };
}

/** Every 429 says when to come back (src/http/middleware/rate-limit.ts). */
const rateLimitHeaders = {
  'Retry-After': {
    description: 'Seconds until the source IP may send again: the rest of the 60-second block, or of the send window',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
} as const;

/** The example a schema carries (`.openapi({ example })`), an array of its element's, or undefined. */
export function exampleOf(schema: ZodType | undefined): unknown {
  if (!schema) return undefined;
  const own = getOpenApiMetadata(schema).example;
  if (own !== undefined) return own;
  if (schema instanceof z.ZodArray) {
    const item = exampleOf(schema.element as ZodType);
    return item === undefined ? undefined : [item];
  }
  return undefined;
}

/** `POST /checkin/v1/api/guests/{eventId}/checkin` → `postCheckinV1ApiGuestsEventIdCheckin`. */
export function operationIdOf(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

function register(spec: RouteSpec<ZodType, ZodType, ZodType>): void {
  const path = spec.path.replace(/:(\w+)/g, '{$1}');
  const admin = spec.security === 'admin';
  const secured = spec.secured !== false || admin;
  // Every request can meet the rate limit and the header size limit; a body can be too large or not JSON.
  const clientOnly = secured && !admin && !(spec.roles ?? ['client']).includes('team_member');
  // Any request may also meet the overload guard, an unreachable event store or (secured) identity provider: 503;
  // and, like any service, an unexpected error: 500 (spec, Errors: "unexpected server error; retry").
  const errors = [...new Set([400, ...(secured ? [401] : []), ...(clientOnly ? [403] : []), ...(spec.errors ?? []), ...(spec.body ? [413, 415] : []), 429, 431, 500, 503])];
  const bodyExample = spec.bodyExample ?? exampleOf(spec.body);
  const responseExample = spec.responseExample ?? exampleOf(spec.response);
  const config: RouteConfig = {
    method: spec.method,
    path,
    operationId: spec.operationId ?? operationIdOf(spec.method, path),
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: spec.tags,
    ...(admin ? { security: [{ adminKey: [] }] } : secured ? { security: [{ bearer: [], subscriptionKey: [] }] } : {}),
    request: {
      ...(spec.params ? { params: spec.params as never } : {}),
      ...(spec.query ? { query: spec.query as never } : {}),
      ...(spec.body
        ? {
            body: {
              // Required unless an absent body (read as {}) is itself valid.
              required: !spec.body.safeParse({}).success,
              content: { 'application/json': { schema: spec.body, ...(bodyExample !== undefined ? { example: bodyExample } : {}) } },
            },
          }
        : {}),
    },
    responses: {
      [spec.status ?? 200]: {
        description: spec.status === 204 ? 'Done; no body' : 'Success',
        ...(spec.responseHeaders ? { headers: spec.responseHeaders } : {}),
        ...(spec.links ? { links: spec.links } : {}),
        ...(spec.responseContent
          ? { content: spec.responseContent }
          : spec.response && spec.status !== 204
            ? {
                content: {
                  'application/json': { schema: spec.response, ...(responseExample !== undefined ? { example: responseExample } : {}) },
                },
              }
            : {}),
      },
      ...Object.fromEntries(
        [...new Set(errors)].sort().map((status) => [
          status,
          {
            description: errorText[status] ?? 'Error',
            ...(status === 429 ? { headers: rateLimitHeaders } : {}),
            content: { 'application/json': { schema: ErrorBody, example: errorExample(status) } },
          },
        ]),
      ),
    },
  };
  registry.registerPath(config);
}
