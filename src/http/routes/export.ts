import fs from 'node:fs';
import { Router, type Request, type Response } from 'express';
import { getOpenApiMetadata } from '@asteasolutions/zod-to-openapi';
import { contentTypeOf, createExport, openExport, type ExportFile, type ExportSettings, type ExportTarget, type ExportType } from '../../commands/export.js';
import { isWallTime } from '../../shared/date-time.js';
import type { Services } from '../../commands/services.js';
import { CSV_MEDIA_TYPE } from '../../exports/csv.js';
import { XLSX_MEDIA_TYPE } from '../../exports/excel.js';
import { guestColumns } from '../../exports/columns.js';
import { commandContext, principalOf } from '../context.js';
import { HttpError } from '../errors.js';
import { defineRoute } from '../route.js';
import { eventTimeZone, fields } from '../time-zone.js';
import { doNotStoreResponse } from '../middleware/idempotency.js';
import { ExportBody, ExportIdParams, ExportQuery, ExportResponse } from '../schemas/export.js';
import { ex } from '../schemas/example-values.js';

const JSON_TYPE = 'application/json';
const CSV_TYPE = CSV_MEDIA_TYPE.split(';')[0]!;

const csvExampleRow: Record<string, string> = {
  id: '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f',
  firstName: 'Ada',
  lastName: 'Lovelace',
  email: 'ada@example.com',
  plusOnes: '1',
  admittedPlusOnes: '1',
  plusOnesLeft: '0',
  additionalInfo: 'Table 4; vegetarian',
  barcode: 'GALA-0001',
  tags: 'vip,speaker',
  createdBy: ex.clientId,
  admitted: '2026-12-12T19:42:10.000+01:00',
  eventId: '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b',
  isGroup: 'false',
  customId: 'CRM-1001',
};
const csvLine = (cells: string[]) => cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',');
/** A whole CSV export of one guest: the header row of every column, then the guest. */
const csvExample = `${csvLine(guestColumns.map((c) => c.name))}\r\n${csvLine(guestColumns.map((c) => csvExampleRow[c.name] ?? ''))}\r\n`;
/** The file itself, for the document: CSV text or an xlsx workbook. */
const fileContent = {
  [CSV_TYPE]: { schema: { type: 'string' as const }, example: csvExample },
  [XLSX_MEDIA_TYPE]: { schema: { type: 'string' as const, contentMediaType: XLSX_MEDIA_TYPE, contentEncoding: 'binary' } },
};
const fileHeaders = {
  'Content-Disposition': { description: 'attachment; filename="..."; filename*=UTF-8\'\'...', schema: { type: 'string' as const } },
  'X-Export-Id': { description: 'The export id', schema: { type: 'string' as const } },
};

/**
 * The event the body names. Without an `id` and a `timeZoneId`, a time sent without an offset was
 * read on the account's clocks, but each event read its own on its zone's: the times as sent go
 * along, to be read on each candidate event's clocks (createExport).
 */
function exportTarget(body: { id?: string; title: string; startTime: string; endTime: string; timeZoneId?: string }, raw: unknown): ExportTarget {
  const { id, title, startTime, endTime } = body;
  const sent = fields(raw);
  const wallTimes = typeof sent.startTime === 'string' && typeof sent.endTime === 'string' && (isWallTime(sent.startTime) || isWallTime(sent.endTime));
  const wall = id === undefined && !body.timeZoneId && wallTimes ? { startTime: sent.startTime as string, endTime: sent.endTime as string } : undefined;
  return { ...(id !== undefined ? { id } : {}), title, startTime, endTime, ...(wall ? { wall } : {}) };
}

/**
 * Spec: POST /checkin/v1/api/event/export. The answer is the JSON description of the stored
 * file, or the file itself when `Accept` prefers the file's media type (docs/export.md).
 */
export function exportRouter(services: Services, settings: ExportSettings): Router {
  const router = Router();
  const tags = ['Export'];

  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/event/export',
      summary:
        "Export an event's guests as CSV or Excel. JSON answer names the file and its url; with Accept: text/csv or the xlsx type, the file itself",
      tags,
      query: ExportQuery,
      body: ExportBody,
      response: ExportResponse,
      responseContent: {
        [JSON_TYPE]: { schema: ExportResponse, example: getOpenApiMetadata(ExportResponse).example },
        ...fileContent,
      },
      errors: [403, 404, 406, 409],
      links: {
        Download: { operationId: 'getCheckinV1ApiEventExportExportId', parameters: { exportId: '$response.body#/exportId' } },
      },
      timeZone: eventTimeZone(services, ({ body }) => ({ timeZoneId: fields(body).timeZoneId, eventId: fields(body).id })),
    },
    async ({ query, body, req, res }) => {
      const { type, direct } = negotiate(req, query.type);
      const created = await createExport(services, settings, commandContext(res, services.clock), exportTarget(body, req.body), type);
      if (!direct) return created.export;
      // The file is personal data: an Idempotency-Key repeat makes a new export rather than a stored copy.
      doNotStoreResponse(res);
      res.set('Content-Location', created.export.url);
      await sendExport(res, created);
      return undefined;
    },
  );

  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/event/export/:exportId',
      summary: 'Download an export (only by the client that made it, until it expires)',
      tags,
      params: ExportIdParams,
      responseContent: fileContent,
      responseHeaders: fileHeaders,
      errors: [403, 404],
    },
    async ({ params, res }) => {
      const file = await openExport(services, settings, principalOf(res).tenantId, params.exportId, services.clock.now());
      await sendExport(res, file);
    },
  );
  return router;
}

/**
 * `type` picks the format when given; otherwise an Accept naming the xlsx type picks Excel,
 * and CSV is the default. The file is sent directly when Accept prefers the format's media
 * type to JSON. Any other Accept (`text/plain`, `text/json`) gets the spec's answer, the JSON
 * object; only one that asks for the other format's file (`type=EXCEL` with `Accept: text/csv`)
 * is 406, since a client reading the answer as that file would misread it.
 */
export function negotiate(req: Request, asked: ExportType | undefined): { type: ExportType; direct: boolean } {
  const type = asked ?? (req.accepts([JSON_TYPE, CSV_TYPE, XLSX_MEDIA_TYPE]) === XLSX_MEDIA_TYPE ? 'EXCEL' : 'CSV');
  const fileType = type === 'CSV' ? CSV_TYPE : XLSX_MEDIA_TYPE;
  const otherFileType = type === 'CSV' ? XLSX_MEDIA_TYPE : CSV_TYPE;
  const preferred = req.accepts([JSON_TYPE, fileType]);
  if (!preferred && req.accepts(otherFileType) === otherFileType) {
    throw new HttpError(406, 'not_acceptable', `${type === 'EXCEL' ? 'an Excel' : 'a CSV'} export is answered as ${JSON_TYPE} or ${fileType}; the Accept header allows neither`);
  }
  return { type, direct: preferred === fileType };
}

export async function sendExport(res: Response, file: ExportFile): Promise<void> {
  const { export: view } = file;
  res.status(200).set({
    'Content-Type': contentTypeOf(view.type),
    'Content-Length': String(view.sizeBytes),
    'Content-Disposition': attachment(view.fileName),
    'Cache-Control': 'private, no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Export-Id': view.exportId,
  });
  try {
    await streamFile(file.path, res);
  } catch (error) {
    // The client went away mid-download: nothing left to answer.
    if (!res.headersSent) throw error;
    res.destroy();
  }
}

/**
 * The file into the response, with `pipe`: `stream.pipeline(file, res)` puts 7 'close' listeners
 * on a ServerResponse (nodejs/help#4448), which with the 4 of our middleware made Node print a
 * MaxListenersExceededWarning ("possible EventEmitter memory leak") on stderr for every download.
 * As pipeline did: a read error rejects, and a client that goes away ends the read.
 */
function streamFile(file: string, res: Response): Promise<void> {
  const source = fs.createReadStream(file);
  return new Promise<void>((resolve, reject) => {
    const settle = (error?: Error) => {
      res.off('finish', onFinish).off('close', onClose);
      source.off('error', onError);
      if (error) reject(error);
      else resolve();
    };
    const onFinish = () => settle();
    const onClose = () => {
      source.destroy();
      settle(res.writableFinished ? undefined : new Error('the response was closed before the file was sent'));
    };
    const onError = (error: Error) => {
      source.destroy();
      settle(error);
    };
    res.once('finish', onFinish).once('close', onClose);
    source.once('error', onError);
    source.pipe(res);
  });
}

/**
 * RFC 6266: an ASCII `filename` for old clients and the exact name as RFC 8187 `filename*`. The
 * fallback has no `%` either: some clients percent-decode it (RFC 6266, appendix D), so a title
 * "100%Fab" would be saved with a byte 0xFA where the title had "%Fa".
 */
function attachment(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
