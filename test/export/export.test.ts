import fs from 'node:fs';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { quotePrefixedCells } from '../support/xlsx-quoted.js';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredExports } from '../../src/commands/export.js';
import { isoInZone } from '../../src/exports/wall-clock.js';
import { createClient, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const TTL_MINUTES = 60;

/** Every spec Guest field, plus `plusOnesLeft` after `admittedPlusOnes`, `ticketCode`, and `image` last (docs/export.md). */
const columns = [
  'id', 'firstName', 'otherNames', 'lastName', 'email', 'plusOnes', 'admittedPlusOnes', 'plusOnesLeft',
  'additionalInfo', 'barcode', 'tags', 'createdBy', 'admitted', 'blockedDate', 'blockedReason', 'eventId',
  'validFrom', 'validTo', 'isGroup', 'discharged', 'customId', 'commsTemplateId', 'correlationId', 'ticketCode', 'image',
];

let service: TestService;
let alice: Client;
let bob: Client;
let eventId: string;
/** The guests as the API returns them, with plusOnesLeft, in export order. */
let expected: Record<string, unknown>[];
let clockShiftMs = 0;

const exportCall = (client: Client, body: unknown, query = '', headers: Record<string, string> = {}) =>
  client.call('POST', `/checkin/v1/api/event/export${query}`, body, headers);
const eventBody = () => ({ id: eventId, title: 'Café Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });

/** fetch keeping the bytes (the shared helper decodes text). */
async function download(client: Client, pathname: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${service.url}${pathname}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${client.token}`,
      'ocp-apim-subscription-key': client.subscriptionKey,
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    ...(init.body ? { body: JSON.stringify(init.body) } : {}),
  });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

const timestampColumns = ['admitted', 'blockedDate', 'validFrom', 'validTo', 'discharged'];
/** CSV shows times as Excel does: in the event's zone, with the offset (docs/export.md). */
const inBerlin = isoInZone('Europe/Berlin');

const neutralised = (text: string) => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text);

beforeAll(async () => {
  service = await startTestService(
    { EXPORT_TTL_MINUTES: String(TTL_MINUTES) },
    { clock: { now: () => new Date(Date.now() + clockShiftMs) } },
  );
  alice = await createClient(service);
  bob = await createClient(service);
  const event = await alice.call('POST', '/checkin/v1/api/event', {
    title: 'Café Ball',
    startTime: '2026-01-01T18:00:00Z',
    endTime: '2027-12-31T23:00:00Z',
    timeZoneId: 'Europe/Berlin',
  });
  eventId = event.body.id;
  const created = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
    { firstName: 'Zoë', lastName: 'Müller, "Jr."', otherNames: 'two\nlines', email: 'zoe@example.com', plusOnes: 2, isGroup: true, barcode: 'Z-1', tags: 'vip,press' },
    { firstName: '=HYPERLINK("http://evil.example","click")', lastName: '+SUM(A1:A9)', additionalInfo: '@cmd|calc', barcode: '-12', customId: '=C-2', otherNames: '\tpadded', correlationId: '\rcr' },
    { firstName: 'Åsa', lastName: 'Ångström', otherNames: 'comma, inside', validFrom: '2026-07-01T10:00:00Z', validTo: '2026-12-01T10:00:00Z', plusOnes: 0, isGroup: false },
    { firstName: 'Bob', lastName: 'Blocked', barcode: 'B-1', image: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' },
  ]);
  expect(created.status).toBe(200);
  const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'Z-1', at: '2026-03-29T00:30:00Z' });
  expect(scan.body.result).toBe('admitted');
  const block = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { barcodes: ['B-1'], reason: '=bad' });
  expect(block.status).toBe(200);
  const listed = await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=100`);
  expected = await Promise.all(
    (listed.body.items as Record<string, unknown>[]).map(async (guest) => {
      // A guest without a barcode has a signed ticket (issue 16): the last column.
      const ticket = (await alice.call('GET', `/checkin/v1/api/guest/${guest.id}/ticket`)).body;
      return {
        ...guest,
        plusOnesLeft: guest.admitted ? Math.max(0, Number(guest.plusOnes ?? 0) - Number(guest.admittedPlusOnes)) : Number(guest.plusOnes ?? 0),
        ...(ticket.kind === 'signed' ? { ticketCode: ticket.code } : {}),
      };
    }),
  );
});
afterAll(() => service.close());

describe('CSV export (spec: POST /checkin/v1/api/event/export)', () => {
  it('answers with the file description, and the url serves an RFC 4180 file with BOM, CRLF and a header row', async () => {
    const reply = await exportCall(alice, eventBody());
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ eventId, type: 'CSV', contentType: 'text/csv; charset=utf-8', rowCount: 4 });
    expect(reply.body.url).toBe(`/checkin/v1/api/event/export/${reply.body.exportId}`);
    expect(reply.body.fileName).toMatch(/^Café Ball guests \d{8}T\d{6}Z\.csv$/);
    expect(Date.parse(reply.body.expiresAt) - Date.parse(reply.body.createdAt)).toBe(TTL_MINUTES * 60_000);

    const file = await download(alice, reply.body.url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(file.headers.get('content-disposition')).toBe(
      `attachment; filename="${reply.body.fileName.replace('é', '_')}"; filename*=UTF-8''${encodeURIComponent(reply.body.fileName)}`,
    );
    expect(file.headers.get('cache-control')).toBe('private, no-store');
    expect([...file.bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const text = file.bytes.toString('utf8');
    expect(text.slice(1, text.indexOf('\r\n'))).toBe(columns.join(','));
    expect(text.endsWith('\r\n')).toBe(true);
    // A line break inside a field is quoted (RFC 4180), a lone LF or CR as much as CRLF; quotes are doubled.
    expect(text).toContain(',"two\nlines",');
    expect(text).toContain(`,"'\rcr"`);
    expect(text).toContain(',"Müller, ""Jr."""');

    // The export is in the audit trail: who took the guest list out, and when.
    const [audit] = await service.platform.eventStore.readStream(`export-${reply.body.exportId}`);
    expect(audit).toMatchObject({ type: 'GuestsExported', data: { eventId, type: 'CSV', rowCount: 4 }, metadata: { tenantId: alice.id } });
  });

  it('round-trips names with commas, quotes, newlines and accents exactly; formula-like text only gains the apostrophe', async () => {
    const reply = await exportCall(alice, eventBody(), '?type=csv');
    const file = await download(alice, reply.body.url);
    const records = parse(file.bytes, { bom: true, columns: true, relax_column_count: false }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual(columns);
    expect(records).toEqual(
      expected.map((guest) =>
        Object.fromEntries(
          columns.map((name) => {
            const value = guest[name];
            if (timestampColumns.includes(name) && typeof value === 'string') return [name, inBerlin(new Date(value))];
            return [name, value === undefined || value === null ? '' : typeof value === 'string' ? neutralised(value) : String(value)];
          }),
        ),
      ),
    );
    const evil = records.find((r) => r.barcode === "'-12")!;
    expect(evil).toMatchObject({
      firstName: `'=HYPERLINK("http://evil.example","click")`,
      lastName: "'+SUM(A1:A9)",
      additionalInfo: "'@cmd|calc",
      customId: "'=C-2",
      otherNames: "'\tpadded",
      correlationId: "'\rcr",
    });
    const zoe = records.find((r) => r.firstName === 'Zoë')!;
    expect(zoe).toMatchObject({ lastName: 'Müller, "Jr."', otherNames: 'two\nlines', plusOnes: '2', admittedPlusOnes: '2', plusOnesLeft: '0', isGroup: 'true', admitted: '2026-03-29T01:30:00.000+01:00' });
    expect(records.find((r) => r.lastName === 'Blocked')).toMatchObject({ blockedReason: "'=bad" });
  });

  it('orders guests by last name, then first name, case-insensitively', async () => {
    const reply = await exportCall(alice, eventBody());
    const records = parse((await download(alice, reply.body.url)).bytes, { bom: true, columns: true }) as Record<string, string>[];
    const names = records.map((r) => r.lastName.replace(/^'/, '').toLowerCase());
    expect(names).toEqual([...names].sort());
  });
});

describe('Excel export', () => {
  let workbook: ExcelJS.Workbook;
  let reply: Awaited<ReturnType<Client['call']>>;
  /** Cells of the guest sheet marked quotePrefix: text kept text, shown exactly as written. */
  let quoted: string[];

  beforeAll(async () => {
    reply = await exportCall(alice, eventBody(), '?type=excel');
    const file = await download(alice, reply.body.url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe(XLSX);
    workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(file.bytes as unknown as ArrayBuffer);
    quoted = await quotePrefixedCells(file.bytes);
  });

  it('is EXCEL for any case of type, named .xlsx', () => {
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ type: 'EXCEL', contentType: XLSX, rowCount: 4 });
    expect(reply.body.fileName).toMatch(/\.xlsx$/);
  });

  it('has the guest sheet with a frozen header row and an autofilter over every row', () => {
    const sheet = workbook.getWorksheet('Guests')!;
    expect(sheet).toBeDefined();
    expect(sheet.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(sheet.autoFilter).toBe(`A1:Y5`);
    expect((sheet.getRow(1).values as unknown[]).slice(1)).toEqual(columns);
    expect(sheet.getRow(1).font?.bold).toBe(true);
    expect(sheet.rowCount).toBe(5);
  });

  it('round-trips text exactly (formula-like text too, marked quotePrefix instead of an apostrophe), and types integers and booleans', () => {
    const sheet = workbook.getWorksheet('Guests')!;
    const rows = expected.map((_, i) => sheet.getRow(i + 2));
    for (const [i, guest] of expected.entries()) {
      for (const [c, name] of columns.entries()) {
        const cell = rows[i]!.getCell(c + 1);
        const value = guest[name];
        if (value === undefined || value === null) expect(cell.value, name).toBeNull();
        else if (['admitted', 'blockedDate', 'validFrom', 'validTo', 'discharged'].includes(name)) expect(cell.type, name).toBe(ExcelJS.ValueType.Date);
        // XML turns a carriage return into a line feed; everything else comes back as written.
        else if (typeof value === 'string') {
          expect(cell.value, name).toBe(value.replace(/\r/g, '\n'));
          // Formula-like text is a quotePrefix cell (never evaluated, also when edited); other text is not.
          expect(quoted.includes(cell.address), `${name} ${cell.address}`).toBe(neutralised(value) !== value);
        }
        else expect(cell.value, name).toBe(value);
      }
    }
    const zoe = rows[expected.findIndex((g) => g.firstName === 'Zoë')]!;
    expect(zoe.getCell('D').value).toBe('Müller, "Jr."');
    expect(zoe.getCell('C').value).toBe('two\nlines');
    expect(zoe.getCell('F').type).toBe(ExcelJS.ValueType.Number);
    expect(zoe.getCell('S').type).toBe(ExcelJS.ValueType.Boolean);
    expect(zoe.getCell('S').value).toBe(true);
    const evil = rows[expected.findIndex((g) => g.barcode === '-12')]!;
    expect(evil.getCell('B').value).toBe(`=HYPERLINK("http://evil.example","click")`);
    expect(quoted).toContain(evil.getCell('B').address);
    expect(evil.getCell('B').type).toBe(ExcelJS.ValueType.String);
  });

  it("shows dates as date cells in the event's time zone (wall-clock time, DST included)", () => {
    const sheet = workbook.getWorksheet('Guests')!;
    const row = (field: string, value: string) => sheet.getRow(expected.findIndex((g) => g[field] === value) + 2);
    const col = (name: string) => columns.indexOf(name) + 1;
    const asa = row('firstName', 'Åsa');
    // 10:00Z is 12:00 in Berlin in July (CEST) and 11:00 in December (CET); a cell holds that wall time.
    expect(asa.getCell(col('validFrom')).value).toEqual(new Date('2026-07-01T12:00:00Z'));
    expect(asa.getCell(col('validTo')).value).toEqual(new Date('2026-12-01T11:00:00Z'));
    expect(asa.getCell(col('validFrom')).numFmt).toBe('yyyy-mm-dd hh:mm:ss');
    // Text and number cells carry no date format (cells share one style object per column kind).
    expect(asa.getCell(col('firstName')).numFmt).toBeUndefined();
    expect(asa.getCell(col('plusOnes')).numFmt).toBeUndefined();
    // 00:30Z on the night the clocks go forward is 01:30 CET.
    expect(row('firstName', 'Zoë').getCell(col('admitted')).value).toEqual(new Date('2026-03-29T01:30:00Z'));
  });

  it('has a Summary sheet with the event stats', () => {
    const summary = workbook.getWorksheet('Summary')!;
    expect(summary).toBeDefined();
    const values = new Map<string, unknown>();
    summary.eachRow((row) => values.set(String(row.getCell(1).value), row.getCell(2).value));
    expect(values.get('Event')).toBe('Café Ball');
    expect(values.get('Guests in this file')).toBe(4);
    expect(values.get('Invited')).toBe(4);
    expect(values.get('Admitted')).toBe(1);
    expect(values.get('Blocked')).toBe(1);
    expect(values.get('Plus ones invited')).toBe(2);
    expect(values.get('Times shown in')).toBe('Europe/Berlin, from the event');
    expect(values.get('Starts')).toEqual(new Date('2026-01-01T19:00:00Z'));
  });
});

describe('direct download by Accept', () => {
  it('sends the CSV itself for Accept: text/csv', async () => {
    const file = await download(alice, '/checkin/v1/api/event/export', { method: 'POST', body: eventBody(), headers: { accept: 'text/csv' } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(file.headers.get('content-disposition')).toMatch(/^attachment; filename="Caf_ Ball guests .*\.csv"; filename\*=UTF-8''Caf%C3%A9%20Ball/);
    expect(file.headers.get('content-location')).toMatch(/^\/checkin\/v1\/api\/event\/export\/[0-9a-f-]{36}$/);
    expect(parse(file.bytes, { bom: true, columns: true })).toHaveLength(4);
  });

  it('sends Excel for the xlsx media type (type may be left out), and 406 when type and Accept disagree', async () => {
    const file = await download(alice, '/checkin/v1/api/event/export', { method: 'POST', body: eventBody(), headers: { accept: XLSX } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe(XLSX);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(file.bytes as unknown as ArrayBuffer);
    expect(workbook.getWorksheet('Guests')!.rowCount).toBe(5);
    const clash = await exportCall(alice, eventBody(), '?type=EXCEL', { accept: 'text/csv' });
    expect(clash.status).toBe(406);
    expect(clash.body.code).toBe('not_acceptable');
    expect(clash.body.message).toBe(`an Excel export is answered as application/json or ${XLSX}; the Accept header allows neither`);
  });

  it('answers JSON for Accept: application/json or */*', async () => {
    for (const accept of ['application/json', '*/*']) {
      const reply = await exportCall(alice, eventBody(), '?type=EXCEL', { accept });
      expect(reply.status).toBe(200);
      expect(reply.body.type).toBe('EXCEL');
    }
  });
});

describe('validation, tenancy and roles', () => {
  it('is in the OpenAPI document, with the Event fields the spec requires and type CSV or EXCEL', async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    const post = doc.paths['/checkin/v1/api/event/export'].post;
    expect(post.parameters.find((p: { name: string }) => p.name === 'type').schema.enum).toEqual(['CSV', 'EXCEL']);
    const request = doc.components.schemas.ExportRequest;
    // The Event's fields written out (an allOf would refuse null where the export takes it as absent).
    expect(Object.keys(request.properties)).toEqual(expect.arrayContaining(Object.keys(doc.components.schemas.Event.properties)));
    // id is optional as in the spec's Event: without it the event is found by title and times.
    expect([...request.required].sort()).toEqual(['endTime', 'startTime', 'title']);
    expect(doc.components.schemas.Event.required).toEqual(expect.arrayContaining(['title', 'startTime', 'endTime']));
    expect(doc.paths['/checkin/v1/api/event/export/{exportId}'].get).toBeDefined();
  });

  it('refuses a type other than CSV or EXCEL (400)', async () => {
    const reply = await exportCall(alice, eventBody(), '?type=pdf');
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_error');
    expect(reply.body.errors[0].path).toBe('type');
  });

  it('needs the spec-required fields (400); without id the event is found by its title and times', async () => {
    const { id: _id, ...noId } = eventBody();
    const byDetails = await exportCall(alice, noId);
    expect(byDetails.status).toBe(200);
    expect(byDetails.body.eventId).toBe(eventId);
    const { title: _t, ...noTitle } = eventBody();
    expect((await exportCall(alice, noTitle)).status).toBe(400);
    expect((await exportCall(alice, { ...eventBody(), id: 'x'.repeat(129) })).status).toBe(400);
    expect((await exportCall(alice, { ...eventBody(), id: 'no-such-event' })).status).toBe(404);
  });

  it("reports another client's event, an unknown event and another client's export as 404", async () => {
    expect((await exportCall(bob, eventBody())).status).toBe(404);
    expect((await exportCall(alice, { ...eventBody(), id: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    const mine = await exportCall(alice, eventBody());
    const stolen = await download(bob, mine.body.url);
    expect(stolen.status).toBe(404);
    expect(JSON.parse(stolen.bytes.toString()).code).toBe('not_found');
    expect((await download(alice, '/checkin/v1/api/event/export/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('is refused to team members (403), on POST and on GET', async () => {
    const userName = `export-door-${Date.now()}`;
    await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `${userName}@example.com` });
    const token = await passwordToken(service.url, userName, 'door staff pass 1');
    const asMember = { authorization: `Bearer ${token}` };
    const post = await exportCall(alice, eventBody(), '', asMember);
    expect(post.status).toBe(403);
    expect(post.body.code).toBe('forbidden');
    const mine = await exportCall(alice, eventBody());
    expect((await alice.call('GET', mine.body.url, undefined, asMember)).status).toBe(403);
  });
});

describe('expiry', () => {
  it('serves the url until expiresAt, then 404 and the file is gone', async () => {
    const reply = await exportCall(alice, eventBody());
    const file = path.join(service.dataDir, 'exports', `${reply.body.exportId}.csv`);
    expect(fs.existsSync(file)).toBe(true);
    clockShiftMs = TTL_MINUTES * 60_000 - 1_000;
    expect((await download(alice, reply.body.url)).status).toBe(200);
    clockShiftMs = TTL_MINUTES * 60_000 + 1_000;
    try {
      expect((await download(alice, reply.body.url)).status).toBe(404);
      expect(fs.existsSync(file)).toBe(false);
    } finally {
      clockShiftMs = 0;
    }
  });

  it('the sweep deletes expired exports and files that lost their record', async () => {
    const reply = await exportCall(alice, eventBody(), '?type=EXCEL');
    const dir = path.join(service.dataDir, 'exports');
    const file = path.join(dir, `${reply.body.exportId}.xlsx`);
    const orphan = path.join(dir, '11111111-1111-4111-8111-111111111111.csv.part');
    fs.writeFileSync(orphan, 'interrupted');
    const settings = { dir, ttlMs: TTL_MINUTES * 60_000 };
    expect(await sweepExpiredExports(service.services, settings, new Date())).toBe(0);
    expect(fs.existsSync(file)).toBe(true);
    const later = new Date(Date.now() + TTL_MINUTES * 60_000 + 1_000);
    expect(await sweepExpiredExports(service.services, settings, later)).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(orphan)).toBe(false);
    expect((await download(alice, reply.body.url)).status).toBe(404);
  });
});
