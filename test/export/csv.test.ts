import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import type { Column } from '../../src/exports/columns.js';
import { writeCsv } from '../../src/exports/csv.js';
import { isoInZone, isoTextInZone } from '../../src/exports/wall-clock.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csv-test-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const columns: Column<number>[] = [
  { name: 'n', kind: 'integer', width: 5, value: (i) => i },
  { name: 'text', kind: 'text', width: 5, value: (i) => (i % 3 === 0 ? `=row ${i}, "a"\nb` : `row ${i}`) },
  { name: 'at', kind: 'timestamp', width: 5, value: (i) => (i % 7 === 0 ? 'not a time' : i % 2 ? '2026-07-01T10:00:00Z' : undefined) },
  { name: 'flag', kind: 'boolean', width: 5, value: (i) => i % 2 === 0 },
];

describe('CSV writer', () => {
  it('writes rows across its internal chunks as one file: BOM and header once, every row in order, CRLF after each', async () => {
    const file = path.join(dir, 'many.csv');
    const rows = Array.from({ length: 2_345 }, (_, i) => i);
    expect(await writeCsv(rows, file, columns, { timeZone: 'Europe/Berlin' })).toBe(rows.length);
    const text = fs.readFileSync(file, 'utf8');
    expect(text.startsWith('\uFEFFn,text,at,flag\r\n')).toBe(true);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(text.match(/n,text,at,flag/g)).toHaveLength(1);
    const records = parse(text, { bom: true, columns: true }) as Record<string, string>[];
    expect(records).toHaveLength(rows.length);
    for (const i of [0, 1, 7, 999, 1000, 1001, 2344]) {
      expect(records[i]).toEqual({
        n: String(i),
        text: i % 3 === 0 ? `'=row ${i}, "a"\nb` : `row ${i}`,
        at: i % 7 === 0 ? 'not a time' : i % 2 ? '2026-07-01T12:00:00.000+02:00' : '',
        flag: String(i % 2 === 0),
      });
    }
  });

  it('writes the header alone for no rows', async () => {
    const file = path.join(dir, 'none.csv');
    expect(await writeCsv([], file, columns, { timeZone: 'UTC' })).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe('\uFEFFn,text,at,flag\r\n');
  });

  it('gives a stored time the same text as isoInZone, and leaves a text that is not a time alone', () => {
    const inZone = isoTextInZone('America/St_Johns');
    for (const text of ['2026-01-15T10:00:00Z', '2026-07-01T10:00:00.250Z', '2026-01-15T10:00:00Z']) {
      expect(inZone(text)).toBe(isoInZone('America/St_Johns')(new Date(text)));
    }
    expect(inZone('soon')).toBeUndefined();
    expect(inZone('soon')).toBeUndefined();
  });
});
