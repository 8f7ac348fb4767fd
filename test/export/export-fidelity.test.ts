/**
 * What organizers rely on when they open an export in a spreadsheet or feed it to another
 * system (docs/export.md): names in any script, times at the ends of the range, the file name,
 * empty events and erased guests.
 */
import ExcelJS from 'exceljs';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeExcelInProcess } from '../../src/exports/excel.js';
import type { Column } from '../../src/exports/columns.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

const exportCall = (client: Client, body: unknown, query = '') => client.call('POST', `/checkin/v1/api/event/export${query}`, body);

async function download(client: Client, pathname: string) {
  const response = await fetch(`${service.url}${pathname}`, {
    headers: { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey },
  });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function newEventWith(title: string, guests: Record<string, unknown>[], timeZoneId = 'Europe/Berlin') {
  const body = { title, startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-02T02:00:00Z', timeZoneId };
  const event = await alice.call('POST', '/checkin/v1/api/event', body);
  expect(event.status).toBe(200);
  if (guests.length > 0) expect((await alice.call('POST', `/checkin/v1/api/guests/${event.body.id}`, guests)).status).toBe(200);
  return { ...body, id: event.body.id as string };
}

async function csvRecords(event: { id: string }) {
  const reply = await exportCall(alice, event, '?type=CSV');
  expect(reply.status).toBe(200);
  const file = await download(alice, reply.body.url);
  expect(file.status).toBe(200);
  return { reply, file, records: parse(file.bytes, { bom: true, columns: true }) as Record<string, string>[] };
}

async function guestSheet(event: { id: string }) {
  const reply = await exportCall(alice, event, '?type=EXCEL');
  expect(reply.status).toBe(200);
  const file = await download(alice, reply.body.url);
  expect(file.status).toBe(200);
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(file.bytes as unknown as ArrayBuffer);
  return { reply, sheet: workbook.getWorksheet('Guests')! };
}

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

describe('export fidelity', () => {
  it('guards what follows a semicolon too, so a spreadsheet that splits CSV at semicolons (the list separator of most of Europe) makes no formula of it', async () => {
    // Before, Excel in a German or French locale split `Smith;=HYPERLINK(...)` at the semicolon and
    // read the second half as a formula: the apostrophe guarded only a field's start, and the
    // field's quotes do not count there (a quote opens a quoted cell only at a cell's start).
    const event = await newEventWith('Semicolons', [
      { firstName: 'Ada', lastName: 'Smith;=HYPERLINK("http://evil.example","click")', additionalInfo: 'Table 4;+SUM(A1:A9)', barcode: 'S-1' },
    ]);
    const { file, records } = await csvRecords(event);
    // Read with commas, the text gains only an apostrophe after the semicolon, as a formula-like start gains one.
    expect(records[0]).toMatchObject({ lastName: `Smith;'=HYPERLINK("http://evil.example","click")`, additionalInfo: "Table 4;'+SUM(A1:A9)" });
    // Read as a semicolon-separated file, as such a spreadsheet reads it: no cell starts a formula.
    const asSemicolons = parse(file.bytes, { bom: true, delimiter: ';', relax_column_count: true, relax_quotes: true }) as string[][];
    for (const cell of asSemicolons.flat()) expect(cell, cell).not.toMatch(/^[=+\-@]/);
  });

  it('keeps names in any script and emoji, in CSV and Excel', async () => {
    const names = [
      { firstName: '李', lastName: '小龍' },
      { firstName: 'Ольга', lastName: 'Иванова' },
      { firstName: 'أحمد', lastName: 'الفارسي' },
      { firstName: '👩‍👩‍👧 Family', lastName: 'Zzz 🎉' },
    ];
    const event = await newEventWith('Scripts', names);
    const { records } = await csvRecords(event);
    expect(records.map((r) => [r.firstName, r.lastName]).sort()).toEqual(names.map((n) => [n.firstName, n.lastName]).sort());
    const { sheet } = await guestSheet(event);
    const cells: string[][] = [];
    for (let r = 2; r <= sheet.rowCount; r++) cells.push([sheet.getRow(r).getCell(2).value as string, sheet.getRow(r).getCell(4).value as string]);
    expect(cells.sort()).toEqual(names.map((n) => [n.firstName, n.lastName]).sort());
  });

  it('writes the header row alone for an event without guests, in CSV and Excel', async () => {
    const event = await newEventWith('Empty', []);
    const { reply, records, file } = await csvRecords(event);
    expect(reply.body.rowCount).toBe(0);
    expect(records).toEqual([]);
    expect(file.bytes.toString('utf8')).toMatch(/^\uFEFFid,firstName,.*,image\r\n$/);
    const excel = await guestSheet(event);
    expect(excel.reply.body.rowCount).toBe(0);
    expect(excel.sheet.rowCount).toBe(1);
  });

  it('downloads an export whose title is cut to 100 characters in the middle of an emoji', async () => {
    const event = await newEventWith(`${'x'.repeat(99)}🎉 party`, [{ firstName: 'A' }]);
    const reply = await exportCall(alice, event);
    expect(reply.status).toBe(200);
    const file = await download(alice, reply.body.url);
    expect(file.status).toBe(200);
    expect(reply.body.fileName).toBe(`${'x'.repeat(99)} guests ${reply.body.fileName.split(' guests ')[1]}`);
    expect(file.headers.get('content-disposition')).toContain(`filename*=UTF-8''${'x'.repeat(99)}%20guests%20`);
  });

  it('refuses a title holding a lone surrogate (no character; I-JSON), so no export file name meets one from the API', async () => {
    const before = await alice.call('GET', '/checkin/v1/api/events?limit=1000');
    const refused = await alice.call('POST', '/checkin/v1/api/event', { title: 'Broken \ud83c title', startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-02T02:00:00Z' });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'invalid_encoding' });
    expect(JSON.stringify(refused.body)).toContain('title');
    const after = await alice.call('GET', '/checkin/v1/api/events?limit=1000');
    expect(after.body.items.length).toBe(before.body.items.length);
  });

  it("writes the API's \"no end\" 9999-12-31T23:59:59Z as a time in both files, east of UTC too", async () => {
    const event = await newEventWith('Forever', [{ firstName: 'F', validTo: '9999-12-31T23:59:59Z', validFrom: '2026-01-01T00:00:00Z' }]);
    const { records } = await csvRecords(event);
    expect(new Date(records[0]!.validTo!).toISOString()).toBe('9999-12-31T23:59:59.000Z');
    expect(records[0]!.validFrom).toBe('2026-01-01T01:00:00.000+01:00');
    const { sheet } = await guestSheet(event);
    const cell = sheet.getRow(2).getCell(18);
    // Excel's last date is 9999-12-31 23:59:59: a later wall time is no date it can show (####).
    expect(cell.value).toBe('9999-12-31T23:59:59.000Z');
    expect(sheet.getRow(2).getCell(17).value).toEqual(new Date('2026-01-01T01:00:00Z'));
  });

  it("exports an erased guest's row with its ids, times and counts and no personal data", async () => {
    const event = await newEventWith('Erased', [{ firstName: 'Gone', lastName: 'Person', email: 'gone@example.com', barcode: 'ER-1', plusOnes: 2, customId: 'crm-9', image: 'aGVsbG8=' }]);
    const listed = await alice.call('GET', `/checkin/v1/api/guests/${event.id}?limit=10`);
    const id = listed.body.items[0].id as string;
    const erased = await alice.call('POST', `/checkin/v1/api/guest/${id}/erase`, { reason: 'asked' });
    expect(erased.status).toBe(200);
    const after = (await alice.call('GET', `/checkin/v1/api/guest/${id}`)).body;
    const { records } = await csvRecords(event);
    expect(records).toHaveLength(1);
    for (const field of ['firstName', 'lastName', 'email', 'barcode', 'customId', 'image', 'otherNames', 'additionalInfo']) {
      expect(after[field], field).toBeNull();
      expect(records[0]![field], field).toBe('');
    }
    expect(records[0]).toMatchObject({ id, eventId: event.id, plusOnes: '2' });
    const { sheet } = await guestSheet(event);
    expect(sheet.getRow(2).getCell(1).value).toBe(id);
    expect(sheet.getRow(2).getCell(2).value).toBeNull();
  });
});

describe("Excel's sheet limit", () => {
  it('continues on a further sheet, with its own header, once a sheet holds as many rows as Excel allows', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'export-fidelity-'));
    try {
      const file = path.join(dir, 'many.xlsx');
      const columns: Column<number>[] = [{ name: 'n', kind: 'integer', width: 8, value: (n) => n }];
      const count = await writeExcelInProcess([1, 2, 3, 4, 5, 6, 7], file, { columns, timeZone: 'UTC', rowsPerSheet: 3, summary: (n) => [['Guests in this file', n]] });
      expect(count).toBe(7);
      const workbook = new ExcelJS.Workbook();
      await workbook.xlsx.readFile(file);
      expect(workbook.worksheets.map((sheet) => sheet.name)).toEqual(['Guests', 'Guests (2)', 'Guests (3)', 'Summary']);
      const values = (name: string) => workbook.getWorksheet(name)!.getSheetValues().slice(1).map((row) => (row as unknown[])[1]);
      expect(values('Guests')).toEqual(['n', 1, 2, 3]);
      expect(values('Guests (2)')).toEqual(['n', 4, 5, 6]);
      expect(values('Guests (3)')).toEqual(['n', 7]);
      expect(workbook.getWorksheet('Guests (2)')!.autoFilter).toBe('A1:A4');
      expect(values('Summary')).toEqual(['Guests in this file']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
