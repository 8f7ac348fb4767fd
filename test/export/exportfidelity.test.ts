/**
 * Guest exports as organizers open them (docs/export.md): what Excel, LibreOffice, Numbers and
 * Google Sheets would show for values they like to convert (leading zeros, long digit strings,
 * things that look like dates, numbers or booleans), for times, long texts and the CSV's bytes.
 * The xlsx is read from its XML as Excel reads it (`cellsAsExcelReads`), and through exceljs.
 */
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

const exportCall = (client: Client, body: unknown, query = '') => client.call('POST', `/checkin/v1/api/event/export${query}`, body);

async function download(pathname: string): Promise<Buffer> {
  const response = await fetch(`${service.url}${pathname}`, {
    headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey },
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

async function newEventWith(title: string, guests: Record<string, unknown>[], timeZoneId = 'Europe/Berlin') {
  const body = { title, startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-02T02:00:00Z', timeZoneId };
  const event = await alice.call('POST', '/checkin/v1/api/event', body);
  expect(event.status).toBe(200);
  if (guests.length > 0) expect((await alice.call('POST', `/checkin/v1/api/guests/${event.body.id}`, guests)).status).toBe(200);
  return { ...body, id: event.body.id as string };
}

async function exported(event: { id: string }, type: 'CSV' | 'EXCEL'): Promise<Buffer> {
  const reply = await exportCall(alice, event, `?type=${type}`);
  expect(reply.status).toBe(200);
  return download(reply.body.url);
}

const header = (bytes: Buffer): string[] => (parse(bytes, { bom: true, to_line: 1 }) as string[][])[0]!;
const csvRecords = (bytes: Buffer) => parse(bytes, { bom: true, columns: true }) as Record<string, string>[];

interface RawCell {
  /** t attribute: inlineStr, s, b, n (absent), str … */
  type: string;
  style: number;
  /** The text as Excel shows it (XML entities and ECMA-376 `_xHHHH_` escapes decoded), or the number. */
  value: string | number | boolean;
}

/** XML entities, as any XML parser decodes them. */
const xmlText = (xml: string): string =>
  xml.replace(/&(?:#x([0-9a-fA-F]+)|#(\d+)|(amp|lt|gt|quot|apos));/g, (_, hex: string, dec: string, name: string) =>
    hex ? String.fromCodePoint(parseInt(hex, 16)) : dec ? String.fromCodePoint(Number(dec)) : { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[name]!,
  );

/**
 * ECMA-376 Part 1, 22.9.2.19 ST_Xstring: in a cell's text, `_xHHHH_` is the character HHHH. Excel
 * (and LibreOffice, openpyxl) decode it; exceljs does not, so exceljs alone would not show the defect.
 */
const stXstring = (text: string): string => text.replace(/_x([0-9a-fA-F]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** Every cell of a worksheet part, by reference (A2 …), as Excel reads it. */
async function cellsAsExcelReads(bytes: Buffer, part = 'xl/worksheets/sheet1.xml'): Promise<Map<string, RawCell>> {
  const zip = await JSZip.loadAsync(bytes);
  const xml = await zip.file(part)!.async('string');
  const cells = new Map<string, RawCell>();
  for (const match of xml.matchAll(/<c r="([A-Z]+\d+)"([^>]*?)(?:\/>|>(.*?)<\/c>)/g)) {
    const [, ref, attributes, inner = ''] = match;
    const type = /t="(\w+)"/.exec(attributes!)?.[1] ?? 'n';
    const style = Number(/s="(\d+)"/.exec(attributes!)?.[1] ?? 0);
    let value: string | number | boolean;
    if (type === 'inlineStr') value = stXstring(xmlText([...inner.matchAll(/<t(?: [^>]*)?>(.*?)<\/t>/gs)].map((t) => t[1]).join('')));
    else if (type === 'b') value = /<v>1<\/v>/.test(inner);
    else value = Number(/<v>(.*?)<\/v>/.exec(inner)?.[1]);
    cells.set(ref!, { type, style, value });
  }
  return cells;
}

/** The number format code of each cellXfs style index. */
async function styleFormats(bytes: Buffer): Promise<string[]> {
  const zip = await JSZip.loadAsync(bytes);
  const xml = await zip.file('xl/styles.xml')!.async('string');
  const formats = new Map<string, string>([['0', 'General'], ['49', '@']]);
  for (const [, id, code] of xml.matchAll(/<numFmt numFmtId="(\d+)" formatCode="([^"]*)"\/>/g)) formats.set(id!, xmlText(code!));
  const cellXfs = /<cellXfs[^>]*>(.*?)<\/cellXfs>/s.exec(xml)![1]!;
  return [...cellXfs.matchAll(/<xf [^>]*?numFmtId="(\d+)"/g)].map(([, id]) => formats.get(id!) ?? `#${id}`);
}

const columnOf = (bytes: Buffer, name: string): string => String.fromCharCode(65 + header(bytes).indexOf(name));

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

/** Values spreadsheets turn into numbers, dates or booleans when they read text. */
const convertible = ['00123', '1234567890123456', '1-2', '3/4', 'MARCH1', '1e5', 'TRUE', '0049 30 1234', '12:30', '1,5', '$12'];

describe('values a spreadsheet would convert', () => {
  it('are text cells in the Excel file, exactly as sent, in every text column', async () => {
    const guests = convertible.map((value, i) => ({
      firstName: value,
      lastName: `L${String(i).padStart(2, '0')}`,
      barcode: value,
      customId: `${value}-${i}`,
      additionalInfo: value,
      tags: value,
    }));
    const event = await newEventWith('Convertible', guests);
    const bytes = await exported(event, 'EXCEL');
    const cells = await cellsAsExcelReads(bytes);
    const csv = await exported(event, 'CSV');
    const names = ['firstName', 'barcode', 'additionalInfo', 'tags'];
    for (let i = 0; i < convertible.length; i++) {
      const row = i + 2; // rows are in last-name order: L00, L01 …
      for (const name of names) {
        const cell = cells.get(`${columnOf(csv, name)}${row}`)!;
        expect(cell, `${name} ${convertible[i]}`).toEqual({ type: 'inlineStr', style: 0, value: convertible[i] });
      }
      expect(cells.get(`${columnOf(csv, 'customId')}${row}`)!.value).toBe(`${convertible[i]}-${i}`);
    }
    // exceljs reads them as strings too.
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(bytes as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Guests')!;
    expect(convertible.map((_, i) => sheet.getRow(i + 2).getCell(header(csv).indexOf('barcode') + 1).value)).toEqual(convertible);
    // The CSV holds the same text, unchanged (a spreadsheet opening it converts: docs/export.md, CSV).
    expect(csvRecords(csv).map((r) => r.barcode)).toEqual(convertible);
  });

  it('keeps a text holding `_xHHHH_` as written: Excel would read it as an escaped character', async () => {
    // Before, `_x0041_` went into the cell's XML as is, and Excel, LibreOffice and openpyxl read
    // it as the ECMA-376 escape of "A" (`_x000D_` as a carriage return, `_x0009_` as a tab).
    const texts = ['Tab_x0041_le 4', 'line_x000D_break', 'Ref _x005F_x0041_', '_x263A_', 'A_x00e9_b', 'plain_x12_ and _xZZZZ_ stay'];
    const event = await newEventWith(
      'Escapes',
      texts.map((text, i) => ({ firstName: text, lastName: `E${i}`, additionalInfo: text, barcode: text })),
    );
    const bytes = await exported(event, 'EXCEL');
    const cells = await cellsAsExcelReads(bytes);
    const csv = await exported(event, 'CSV');
    for (let i = 0; i < texts.length; i++) {
      for (const name of ['firstName', 'additionalInfo', 'barcode']) {
        expect(cells.get(`${columnOf(csv, name)}${i + 2}`)!.value, `${name} ${texts[i]}`).toBe(texts[i]);
      }
    }
    // The event's title on the summary sheet, the same way.
    const titled = await newEventWith('Gala_x0032_026', []);
    const summary = await cellsAsExcelReads(await exported(titled, 'EXCEL'), 'xl/worksheets/sheet2.xml');
    expect(summary.get('B1')!.value).toBe('Gala_x0032_026');
    // The CSV has no such escapes: the text is as sent.
    expect(csvRecords(csv).map((r) => r.additionalInfo)).toEqual(texts);
  });
});

describe('times', () => {
  it('are date cells with a date-time format, on the event clock the summary names; ISO 8601 with the offset in the CSV', async () => {
    const event = await newEventWith('Times', [
      { firstName: 'W', lastName: 'Winter', validFrom: '2026-01-15T09:30:00Z', validTo: '2026-07-15T21:45:10Z' },
    ]);
    const bytes = await exported(event, 'EXCEL');
    const cells = await cellsAsExcelReads(bytes);
    const formats = await styleFormats(bytes);
    const csv = await exported(event, 'CSV');
    const serial = (iso: string) => 25569 + Date.parse(iso) / 86_400_000;
    const from = cells.get(`${columnOf(csv, 'validFrom')}2`)!;
    const to = cells.get(`${columnOf(csv, 'validTo')}2`)!;
    expect(from.type).toBe('n');
    expect(formats[from.style]).toBe('yyyy-mm-dd hh:mm:ss');
    // Berlin: +01:00 in January, +02:00 in July.
    expect(from.value).toBeCloseTo(serial('2026-01-15T10:30:00Z'), 8);
    expect(to.value).toBeCloseTo(serial('2026-07-15T23:45:10Z'), 8);
    // The header is the spec's field name; the zone is said on the summary sheet.
    expect(header(csv)[header(csv).indexOf('validFrom')]).toBe('validFrom');
    const summary = await cellsAsExcelReads(bytes, 'xl/worksheets/sheet2.xml');
    const labels = [...summary.entries()].filter(([ref]) => ref.startsWith('A')).map(([ref, cell]) => [ref.slice(1), cell.value]);
    const zoneRow = labels.find(([, label]) => label === 'Times shown in')![0];
    expect(summary.get(`B${zoneRow}`)!.value).toMatch(/^Europe\/Berlin, from /);
    expect(csvRecords(csv)[0]).toMatchObject({ validFrom: '2026-01-15T10:30:00.000+01:00', validTo: '2026-07-15T23:45:10.000+02:00' });
  });
});

describe('the CSV bytes', () => {
  it('start with a BOM, use commas and CRLF, quote line breaks and quotes, and guard formulas only with a leading apostrophe', async () => {
    const event = await newEventWith('Bytes', [
      { firstName: 'Zoë', lastName: 'A1', additionalInfo: 'two\nlines and a "quote"', email: 'zoe@example.com' },
      { firstName: '-5', lastName: 'A2', additionalInfo: '+44 20 7946 0958', barcode: '=1+2', customId: '@home' },
    ]);
    const csv = await exported(event, 'CSV');
    expect([...csv.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const text = csv.toString('utf8');
    expect(text.split('\r\n')).toHaveLength(4); // header, two rows, and the empty rest after the last CRLF
    expect(text).toContain('"two\nlines and a ""quote"""');
    const [first, second] = csvRecords(csv);
    expect(first).toMatchObject({ firstName: 'Zoë', additionalInfo: 'two\nlines and a "quote"' });
    // As documented: the apostrophe and nothing else.
    expect(second).toMatchObject({ firstName: "'-5", additionalInfo: "'+44 20 7946 0958", barcode: "'=1+2", customId: "'@home" });
  });
});

describe('long texts', () => {
  it("are cut to Excel's 32,767 characters in the Excel file and whole in the CSV", async () => {
    const long = `${'x'.repeat(40_000)}END`;
    const event = await newEventWith('Long', [{ firstName: 'Long', lastName: 'Text', additionalInfo: long }]);
    const cells = await cellsAsExcelReads(await exported(event, 'EXCEL'));
    const csv = await exported(event, 'CSV');
    expect(cells.get(`${columnOf(csv, 'additionalInfo')}2`)!.value).toBe(long.slice(0, 32_767));
    expect(csvRecords(csv)[0]!.additionalInfo).toBe(long);
  });
});

describe('sheet names', () => {
  it('are fixed, whatever the title: no title breaks Excel\'s 31 characters or its forbidden []:*?/\\', async () => {
    const title = 'Q1/Q2 [draft]: *all* guests? \\ a title far longer than thirty-one characters';
    const event = await newEventWith(title, [{ firstName: 'A' }]);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load((await exported(event, 'EXCEL')) as unknown as ArrayBuffer);
    expect(workbook.worksheets.map((sheet) => sheet.name)).toEqual(['Guests', 'Summary']);
    expect(workbook.getWorksheet('Summary')!.getCell('B1').value).toBe(title);
  });
});
