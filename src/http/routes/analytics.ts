import { Router, type Request, type Response } from 'express';
import { exportFunnel, exportTimeline } from '../../commands/analytics-export.js';
import type { ExportFile, ExportSettings, ExportType } from '../../commands/export.js';
import { invitationFunnel } from '../../commands/funnel.js';
import type { Services } from '../../commands/services.js';
import { eventTimelineJson } from '../../commands/timeline.js';
import { commandContext, principalOf } from '../context.js';
import { doNotStoreResponse } from '../middleware/idempotency.js';
import { defineRoute } from '../route.js';
import { FunnelExportQuery, FunnelQuery, FunnelResponse, TimelineExportQuery, TimelineQuery, TimelineResponse } from '../schemas/analytics.js';
import { IdParams } from '../schemas/event.js';
import { ExportResponse } from '../schemas/export.js';
import { eventTimeZone } from '../time-zone.js';
import { negotiate, sendExport } from './export.js';

const viewers = ['client', 'team_member'] as const;
const tags = ['Analytics'];

/**
 * Issue 15 (docs/analytics.md): the arrivals timeline, the invitation funnel, and both as
 * CSV/Excel exports answered like the guest export (JSON description, or the file by Accept).
 * The funnel routes sit under /comms/v1, so the comms gates apply to them.
 */
export function analyticsRouter(services: Services, exports?: ExportSettings): Router {
  const router = Router();
  // `from` and `to` without an offset are wall times of the event's clocks, on which the buckets are (docs/identifiers.md).
  const timeZone = eventTimeZone(services, ({ params }) => ({ eventId: params.id }));
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/:id/timeline',
      summary: 'Arrivals over time: per bucket admitted people, exits, rejections by reason and people inside; by gate or device on request',
      tags,
      roles: [...viewers],
      params: IdParams,
      query: TimelineQuery,
      timeZone,
      response: TimelineResponse,
      errors: [404],
    },
    ({ params, query, res }) => eventTimelineJson(services, principalOf(res).tenantId, params.id, query),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/comms/v1/api/comms/funnel',
      summary: 'Invitation funnel of an event (or one template): invited, sent, delivered, opened, bounced..., checked in, rates; by template',
      tags,
      roles: [...viewers],
      query: FunnelQuery,
      response: FunnelResponse,
      errors: [403, 404],
    },
    ({ query, res }) => invitationFunnel(services, principalOf(res).tenantId, query),
  );
  if (!exports) return router;

  /** As the guest export: the stored file's description, or the file itself when Accept prefers it. */
  const answer = async (req: Request, res: Response, asked: ExportType | undefined, create: (type: ExportType) => Promise<ExportFile>) => {
    const { type, direct } = negotiate(req, asked);
    const created = await create(type);
    if (!direct) return created.export;
    doNotStoreResponse(res);
    res.set('Content-Location', created.export.url);
    await sendExport(res, created);
    return undefined;
  };
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/event/:id/timeline/export',
      summary: 'The timeline as CSV or Excel (type=CSV|EXCEL; same bucket, by, from and to as the timeline)',
      tags,
      params: IdParams,
      query: TimelineExportQuery,
      timeZone,
      response: ExportResponse,
      errors: [404, 406],
    },
    ({ params, query, req, res }) => {
      const { type, ...timeline } = query;
      return answer(req, res, type, (chosen) => exportTimeline(services, exports, commandContext(res, services.clock), params.id, timeline, chosen));
    },
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/comms/v1/api/comms/funnel/export',
      summary: 'The funnel as CSV or Excel (type=CSV|EXCEL): a row per template and a total row',
      tags,
      query: FunnelExportQuery,
      response: ExportResponse,
      errors: [403, 404, 406],
    },
    ({ query, req, res }) => {
      const { type, ...funnel } = query;
      return answer(req, res, type, (chosen) => exportFunnel(services, exports, commandContext(res, services.clock), funnel, chosen));
    },
  );
  return router;
}
