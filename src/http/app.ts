import express, { type Express, type RequestHandler, type Router } from 'express';
import { pinoHttp } from 'pino-http';
import { redactRequestUrl } from '../observability/request-log.js';
import type { Services } from '../commands/services.js';
import { bodyReadError, errorHandler, unknownRoute } from './errors.js';
import { openApiDocument } from './openapi.js';
import './webhooks-doc.js';
import { commsGates } from './auth.js';
import { idempotency } from './middleware/idempotency.js';
import type { RateLimits } from './middleware/rate-limit.js';
import { declaredLengthLimit, jsonOnly, verifyUtf8, wellFormedJson, knownBodyNames } from './middleware/body-guards.js';
import { methodGuard } from './middleware/methods.js';
import { onlyUnder, routersFor } from './middleware/dispatch.js';
import { compressAnswers } from './middleware/compression.js';
import { declaredRoutes, type StoredEventIdOf } from './route.js';
import { storedEventId } from '../commands/events.js';
import { docsRouter } from './docs-page.js';
import { adminAuth, adminRouter } from './routes/admin.js';
import { eventsRouter } from './routes/events.js';
import { exportRouter } from './routes/export.js';
import { personalDataRouter } from './routes/personal-data.js';
import type { PersonalDataSettings } from '../commands/personal-data.js';
import { guestsRouter } from './routes/guests.js';
import { teamMembersRouter } from './routes/team-members.js';
import { usersRouter } from './routes/users.js';
import { webhooksRouter } from './routes/webhooks.js';
import type { WebhookSettings } from '../commands/webhooks.js';
import { ticketsRouter } from './routes/tickets.js';
import type { ExportSettings } from '../commands/export.js';
import type { LinkPolicy } from '../comms/link-safety.js';
import { commsRouter } from './routes/comms.js';
import { providerEventsRouter } from './routes/provider-events.js';
import { sendingDomainRouter } from './routes/sending-domain.js';
import { analyticsRouter } from './routes/analytics.js';
import { dashboardRouter, type DashboardOptions } from '../dashboard/page.js';
import type { DomainAuthenticator } from '../adapters/domains/port.js';
import type { Metrics } from '../observability/metrics.js';
import { traceContext } from './middleware/trace-context.js';
import { httpMetrics, routeLabel } from './middleware/http-metrics.js';
import { metricsEndpoint } from './routes/metrics.js';

export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; error?: string; [key: string]: unknown }>;
}

export interface AppOptions {
  services: Services;
  readiness: () => Promise<Readiness>;
  bodyLimit: string;
  trustProxy: string | boolean | number;
  /** Sets `res.locals.principal` (and `res.locals.account`) on API routes. */
  authenticate: RequestHandler;
  /** The dev identity provider, mounted at /core when no external issuer is configured. */
  identityProvider?: Router;
  /** Enables /admin/v1 when set. */
  adminApiKey?: string;
  /** Spec Limits: per source IP on the whole API, and on comms send. */
  rateLimits?: RateLimits;
  /** Mounts the webhook routes (/comms/v1/api/comms/webhook..., /events) when set. */
  webhooks?: WebhookSettings;
  /** Mounts the guest export routes (/checkin/v1/api/event/export...) when set. */
  exports?: ExportSettings;
  /** Mounts erasure and access of guests' personal data (issue 14) when set. */
  personalData?: PersonalDataSettings;
  /** The /dashboard page's settings (its token endpoint; default the dev provider's). */
  dashboard?: DashboardOptions;
  /** Mounts templates, send and invitations (and the provider event intake when its key is set). */
  comms?: { linkPolicy: LinkPolicy; domains: DomainAuthenticator; sendgridEventPublicKey?: string };
  /** Mounts GET /metrics and observes every request (docs/operations.md "Metrics"). */
  metrics?: { registry: Metrics; token?: string };
  /** HTTP_COMPRESSION: gzip or brotli for answers of 1 KiB or more, as the client accepts (docs/operations.md "Compression"). */
  compression?: boolean;
}

const apiAreas = ['/checkin/v1', '/comms/v1', '/users/v1', '/admin/v1'];

export function createApp(options: AppOptions): Express {
  const { services } = options;
  const routers = [eventsRouter(services), guestsRouter(services), ticketsRouter(services), teamMembersRouter(services), usersRouter(services)];
  if (options.webhooks) routers.push(webhooksRouter(services, options.webhooks));
  if (options.exports) routers.push(exportRouter(services, options.exports));
  if (options.personalData) routers.push(personalDataRouter(services, options.personalData));
  routers.push(analyticsRouter(services, options.exports));
  if (options.comms) routers.push(commsRouter(services, options.comms.linkPolicy), sendingDomainRouter(services, options.comms.domains));
  const admin = options.adminApiKey ? adminRouter(services) : undefined;
  const known = declaredRoutes(admin ? [...routers, admin] : routers);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.set('etag', false);
  app.set('logger', services.logger);
  // Event ids as stored (src/http/route.ts toStoredEventIds; docs/identifiers.md, Case).
  app.locals.storedEventId = ((clientId, eventId) => storedEventId(services, clientId, eventId)) satisfies StoredEventIdOf;
  app.use(traceContext);
  if (options.metrics) app.use(httpMetrics(options.metrics.registry));
  // Before everything that answers, the idempotency middleware included: it stores the plain answer.
  if (options.compression) app.use(compressAnswers(known));
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    const readiness = await options.readiness();
    res.status(readiness.ready ? 200 : 503).json(readiness);
  });
  if (options.metrics) app.get('/metrics', metricsEndpoint(options.metrics.registry, options.metrics.token));
  if (services.logger.isLevelEnabled('info')) {
    app.use(
      pinoHttp({
        logger: services.logger,
        genReqId: (_req, res) => (res as unknown as { locals: { requestId: string } }).locals.requestId,
        // Credentials a caller or a proxy in front may send (a gateway's session cookie, a proxy's login), and the cursor (a guest's sort values).
        redact: [
          'req.headers.authorization',
          'req.headers["ocp-apim-subscription-key"]',
          'req.headers["proxy-authorization"]',
          'req.headers.cookie',
          'res.headers["set-cookie"]',
          'res.headers["x-next-cursor"]',
        ],
        // Personal data in URLs (search text, cursors, customIds) is not logged: a log line cannot be erased.
        serializers: { req: redactRequestUrl },
        // The route template, as in the metrics' `route` label: a log pipeline groups by it (the URL holds ids).
        customSuccessObject: (req, _res, fields) => ({ ...fields, route: routeLabel(req as express.Request) }),
        customErrorObject: (req, _res, _error, fields) => ({ ...fields, route: routeLabel(req as express.Request) }),
      }),
    );
  }

  // Spec Limits: every request to the API host counts (the document, the docs page, the dashboard,
  // the token endpoint: password guessing); only the probes and /metrics above keep answering.
  if (options.rateLimits) app.use(options.rateLimits.all, options.rateLimits.send);

  // Every route is registered once createApp returns: the document is built on first request and kept.
  let document: string | undefined;
  app.get('/openapi.json', (_req, res) => {
    document ??= JSON.stringify(openApiDocument());
    res.type('json').send(document);
  });
  app.use(onlyUnder('/docs', docsRouter('/openapi.json')));
  app.use(onlyUnder('/dashboard', dashboardRouter(options.dashboard)));
  if (options.identityProvider) app.use('/core', options.identityProvider);

  if (options.comms?.sendgridEventPublicKey) app.use(providerEventsRouter(services, options.comms.sendgridEventPublicKey));

  // Before authentication: which methods a path takes is public (it is in /openapi.json).
  app.use(methodGuard(known));
  // Every API answer is one caller's data (guests' personal data, secrets shown once): no cache
  // keeps it, a browser's own included. A route that says otherwise sets its own.
  app.use(apiAreas, (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });
  // Spec, Authentication rule 1: no valid token is 401, whatever the body holds (malformed JSON,
  // another media type, a declared length over the limit); a caller's body is read only once the
  // caller is known. Routers declare full paths.
  app.use(['/checkin/v1', '/comms/v1', '/users/v1'], options.authenticate);
  app.use('/comms/v1', commsGates());
  if (admin) app.use('/admin/v1', adminAuth(options.adminApiKey!));
  // A known caller's declared length over the limit is refused before the body is read.
  app.use(apiAreas, declaredLengthLimit(options.bodyLimit));
  app.use(apiAreas, jsonOnly);
  const parseJson = express.json({ limit: options.bodyLimit, strict: false, type: ['application/json', 'application/*+json'], verify: verifyUtf8 });
  app.use(knownBodyNames);
  app.use((req, res, next) => parseJson(req, res, (error?: unknown) => next(error === undefined ? undefined : bodyReadError(error))));
  app.use(wellFormedJson);
  // After the gates, so a refusal is not stored and replayed once the account is enabled.
  app.use(['/checkin/v1', '/comms/v1', '/users/v1'], idempotency(services.readStore, { now: () => services.clock.now() }));
  app.use(routersFor(routers));
  if (admin) app.use(routersFor([admin]));

  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
