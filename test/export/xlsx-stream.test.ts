/**
 * The hand-written streaming xlsx writer (src/exports/xlsx-stream.ts, issue 13 goal 4): what it
 * writes reads back, through exceljs, as the cells, styles, frozen header and autofilter it was
 * given, and the parts are well-formed XML whatever the text holds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { afterAll, describe, expect, it } from 'vitest';
import { columnLetters, XlsxWorkbook } from '../../src/exports/xlsx-stream.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'xlsx-stream-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function read(file: string): Promise<ExcelJS.Workbook> {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.readFile(file);
  return workbook;
}

describe('streaming xlsx writer', () => {
  it('names columns as spreadsheets do', () => {
    expect([0, 25, 26, 27, 51, 52, 701, 702].map(columnLetters)).toEqual(['A', 'Z', 'AA', 'AB', 'AZ', 'BA', 'ZZ', 'AAA']);
  });

  it('writes typed cells, a bold frozen header, column widths and an autofilter over every row', async () => {
    const file = path.join(dir, 'typed.xlsx');
    const workbook = new XlsxWorkbook(fs.createWriteStream(file), 'checkin-service');
    const sheet = workbook.addSheet("Guests' list", {
      columns: [{ width: 12 }, { width: 20, date: true }, { width: 8 }, { width: 30 }],
      header: ['n', 'at', 'flag', 'text'],
      autoFilter: true,
    });
    const texts = ['  padded  ', 'a & b <c> "d" \'e\'', 'two\nlines', 'bell\u0007 and lone \uD800 dropped, 😀 kept', '', 'Zoë'];
    for (let n = 0; n < 3_000; n++) {
      const behind = sheet.addRow([n, n % 2 ? new Date(Date.UTC(2026, 6, 1, 12, 30, 15)) : null, n % 3 === 0, texts[n % texts.length]]);
      if (behind) await behind;
    }
    await sheet.end();
    const summary = workbook.addSheet('Summary', { columns: [{ width: 40 }, { width: 40 }] });
    summary.addRow(['Starts', new Date(Date.UTC(2026, 0, 1, 19))]);
    summary.addRow(['Guests', 3_000]);
    await summary.end();
    await workbook.finish();

    const back = await read(file);
    expect(back.worksheets.map((s) => s.name)).toEqual(["Guests' list", 'Summary']);
    expect(back.creator).toBe('checkin-service');
    const guests = back.getWorksheet("Guests' list")!;
    expect(guests.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(guests.autoFilter).toBe('A1:D3001');
    expect(guests.rowCount).toBe(3_001);
    expect(guests.getRow(1).font?.bold).toBe(true);
    expect((guests.getRow(1).values as unknown[]).slice(1)).toEqual(['n', 'at', 'flag', 'text']);
    expect(guests.getColumn(2).width).toBe(20);
    for (let n = 0; n < 3_000; n++) {
      const row = guests.getRow(n + 2);
      expect(row.getCell(1).value).toBe(n);
      expect(row.getCell(3).value).toBe(n % 3 === 0);
      const text = texts[n % texts.length]!;
      expect(row.getCell(4).value).toBe(text === '' ? null : text.replace(/[\u0007]|\uD800/g, ''));
      if (n % 2) {
        expect(row.getCell(2).value).toEqual(new Date(Date.UTC(2026, 6, 1, 12, 30, 15)));
        expect(row.getCell(2).numFmt).toBe('yyyy-mm-dd hh:mm:ss');
      } else expect(row.getCell(2).value).toBeNull();
      expect(row.getCell(4).numFmt).toBeUndefined();
    }
    const sum = back.getWorksheet('Summary')!;
    expect(sum.getRow(1).getCell(2).value).toEqual(new Date(Date.UTC(2026, 0, 1, 19)));
    expect(sum.getRow(1).getCell(2).numFmt).toBe('yyyy-mm-dd hh:mm:ss');
    expect(sum.getRow(2).values).toEqual([undefined, 'Guests', 3_000]);
    expect(sum.autoFilter).toBeUndefined();
  });

  it('writes a sheet with only its header, the autofilter over that row', async () => {
    const file = path.join(dir, 'empty.xlsx');
    const workbook = new XlsxWorkbook(fs.createWriteStream(file), 'checkin-service');
    await workbook.addSheet('Guests', { columns: [{ width: 10 }, { width: 10 }], header: ['a', 'b'], autoFilter: true }).end();
    await workbook.finish();
    const sheet = (await read(file)).getWorksheet('Guests')!;
    expect(sheet.rowCount).toBe(1);
    expect(sheet.autoFilter).toBe('A1:B1');
  });

  it('leaves a number or date that is not finite empty rather than write a cell no program reads', async () => {
    const file = path.join(dir, 'odd.xlsx');
    const workbook = new XlsxWorkbook(fs.createWriteStream(file), 'checkin-service');
    const sheet = workbook.addSheet('Odd', { columns: [{ width: 10 }, { width: 10 }, { width: 10, date: true }, { width: 10 }] });
    sheet.addRow([NaN, Infinity, new Date('not a date'), 'kept']);
    await sheet.end();
    await workbook.finish();
    const row = (await read(file)).getWorksheet('Odd')!.getRow(1);
    expect([1, 2, 3, 4].map((c) => row.getCell(c).value)).toEqual([null, null, null, 'kept']);
  });

  it('refuses a second sheet while one is open, and reports a file that cannot be written', async () => {
    const workbook = new XlsxWorkbook(fs.createWriteStream(path.join(dir, 'open.xlsx')), 'checkin-service');
    workbook.addSheet('One', { columns: [{ width: 10 }] });
    expect(() => workbook.addSheet('Two', { columns: [{ width: 10 }] })).toThrow(/sheet "One" is not ended/);
    workbook.abort();

    const broken = new XlsxWorkbook(fs.createWriteStream(path.join(dir, 'no-such-dir', 'x.xlsx')), 'checkin-service');
    const sheet = broken.addSheet('One', { columns: [{ width: 10 }] });
    sheet.addRow(['x']);
    await expect(sheet.end().then(() => broken.finish())).rejects.toThrow(/ENOENT/);
  });

  it('cuts a text longer than a cell holds to Excel’s 32,767 characters, never inside a surrogate pair', async () => {
    const file = path.join(dir, 'long.xlsx');
    const workbook = new XlsxWorkbook(fs.createWriteStream(file), 'checkin-service');
    const sheet = workbook.addSheet('Guests', { columns: [{ width: 10 }, { width: 10 }] });
    sheet.addRow(['a'.repeat(40_000), `${'b'.repeat(32_766)}😀tail`]);
    await sheet.end();
    await workbook.finish();
    const row = (await read(file)).getWorksheet('Guests')!.getRow(1);
    expect(row.getCell(1).value).toBe('a'.repeat(32_767));
    expect(row.getCell(2).value).toBe('b'.repeat(32_766));
  });
});
