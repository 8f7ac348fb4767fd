/**
 * Issue 13, goal 6: Excel workbooks are written on a pool thread, the rows streamed to it in
 * chunks. The file is whole, the count right, and a failure while reading the rows ends the
 * export with that failure instead of leaving the thread waiting.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { quotePrefixedCells } from '../support/xlsx-quoted.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { Column } from '../../src/exports/columns.js';
import { writeExcel } from '../../src/exports/excel.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'excel-thread-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Row {
  n: number;
  at: string;
}
const columns: Column<Row>[] = [
  { name: 'n', kind: 'integer', width: 8, value: (row) => row.n },
  { name: 'at', kind: 'timestamp', width: 20, value: (row) => row.at },
  { name: 'text', kind: 'text', width: 20, value: (row) => (row.n % 2 ? '=SUM(A1)' : `row ${row.n}`) },
];

async function* rows(count: number, failAt?: number): AsyncGenerator<Row> {
  for (let n = 0; n < count; n++) {
    if (n === failAt) throw new Error('the read store went away');
    yield { n, at: '2026-07-01T10:00:00Z' };
  }
}

describe('Excel on a pool thread', () => {
  it('writes every row of more chunks than the thread may hold at once, and the summary sheet', async () => {
    const file = path.join(dir, 'whole.xlsx');
    const count = await writeExcel(rows(5_321), file, { columns, timeZone: 'Europe/Berlin', summary: (n) => [['Guests', n]] });
    expect(count).toBe(5_321);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.readFile(file);
    const sheet = workbook.getWorksheet('Guests')!;
    expect(sheet.rowCount).toBe(5_322);
    expect(sheet.getRow(5_322).getCell(1).value).toBe(5_320);
    // Wall time in Berlin (CEST), a date cell; formula-like text exact, in a quotePrefix cell.
    expect(sheet.getRow(2).getCell(2).value).toEqual(new Date('2026-07-01T12:00:00Z'));
    expect(sheet.getRow(3).getCell(3).value).toBe('=SUM(A1)');
    const quoted = await quotePrefixedCells(fs.readFileSync(file));
    expect(quoted).toContain('C3');
    expect(quoted).not.toContain('C2');
    expect(workbook.getWorksheet('Summary')!.getRow(1).values).toEqual([undefined, 'Guests', 5_321]);
  });

  it('ends with the error of the rows when reading them fails midway (the thread does not wait on)', async () => {
    const file = path.join(dir, 'failed.xlsx');
    await expect(writeExcel(rows(5_000, 1_234), file, { columns, timeZone: 'UTC', summary: () => [] })).rejects.toThrow('the read store went away');
    // The thread is free again: the next export goes through.
    expect(await writeExcel(rows(10), path.join(dir, 'after.xlsx'), { columns, timeZone: 'UTC', summary: () => [] })).toBe(10);
  });
});
