import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { createWriteStream } from 'node:fs';
import type { GuestDoc } from '../projections/guests.js';
import { guestColumns, type Column } from './columns.js';
import { wallClock } from './wall-clock.js';
import type { ExcelMessage, ExcelTask } from './excel-task.js';
import { XlsxWorkbook, type XlsxValue } from './xlsx-stream.js';

export const XLSX_MEDIA_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** A value of the summary sheet; a Date is an instant, shown in the export's time zone. */
export type SummaryValue = string | number | boolean | Date;

export interface ExcelExportOptions<Row = GuestDoc> {
  /** Name of the data sheet (default "Guests") and its columns (default the guest columns). */
  sheetName?: string;
  columns?: readonly Column<Row>[];
  /** IANA zone the date cells are shown in. */
  timeZone: string;
  /** Rows of the "Summary" sheet, given the number of guests written. */
  summary(rowCount: number): [label: string, value: SummaryValue][];
  /** Data rows per sheet before the next sheet starts (default SHEET_ROWS; smaller in tests). */
  rowsPerSheet?: number;
}

/** Excel's last row is 1,048,576: the header and 1,048,575 data rows to a sheet; the rest go on further sheets. */
export const SHEET_ROWS = 1_048_575;

/**
 * Writes the guests as an xlsx workbook: sheet "Guests" (header row frozen, autofilter over
 * every row; integers, booleans and dates typed) and sheet "Summary". Rows are written as they
 * come, so memory stays flat. Returns the number of guest rows.
 */
export async function writeGuestsExcel(guests: AsyncIterable<GuestDoc>, file: string, options: ExcelExportOptions): Promise<number> {
  return writeExcel(guests, file, options);
}

/**
 * Any rows under `options.columns`, written as guests are (analytics exports). The workbook is
 * written on a pool thread (issue 13, goal 6: the XML and zip work is a second or more of CPU
 * for a large event, which on the main thread would stall the door): this thread reads the rows and
 * computes the column values, and sends them in chunks of CHUNK_ROWS, at most CHUNKS_AHEAD
 * ahead of the writer, so memory stays flat whatever the size.
 */
export async function writeExcel<Row>(
  rows: AsyncIterable<Row> | Iterable<Row>,
  file: string,
  options: ExcelExportOptions<Row>,
): Promise<number> {
  const columns = options.columns ?? (guestColumns as unknown as readonly Column<Row>[]);
  const { port1, port2 } = new MessageChannel();
  const task: ExcelTask = {
    file,
    columns: columns.map(({ name, kind, width }) => ({ name, kind, width })),
    timeZone: options.timeZone,
    ...(options.sheetName ? { sheetName: options.sheetName } : {}),
    port: port2,
  };
  const written = excelPool().run(task, { transferList: [port2] }) as Promise<number>;
  // A failed thread ends any wait for credit below; its error is the export's.
  const failed = written.then(() => new Promise<never>(() => {}));
  failed.catch(() => {});
  let credits = CHUNKS_AHEAD;
  let wake: (() => void) | undefined;
  port1.on('message', () => {
    credits += 1;
    wake?.();
  });
  const send = async (chunk: unknown[][]) => {
    while (credits === 0) await Promise.race([new Promise<void>((resolve) => (wake = resolve)), failed]);
    credits -= 1;
    port1.postMessage({ rows: chunk } satisfies ExcelMessage);
  };
  try {
    let chunk: unknown[][] = [];
    let count = 0;
    for await (const row of rows) {
      chunk.push(columns.map((column) => column.value(row)));
      count += 1;
      if (chunk.length === CHUNK_ROWS) {
        await send(chunk);
        chunk = [];
      }
    }
    if (chunk.length > 0) await send(chunk);
    port1.postMessage({ end: true, summary: options.summary(count) } satisfies ExcelMessage);
    return await written;
  } catch (error) {
    // The thread stops at its next read: nothing more comes on the port.
    port1.close();
    await written.catch(() => {});
    throw error;
  } finally {
    port1.close();
  }
}

const CHUNK_ROWS = 500;
const CHUNKS_AHEAD = 4;

let pool: Piscina | undefined;

/** One thread, made on the first export; idle threads do not keep the process up (piscina unrefs them). */
function excelPool(): Piscina {
  // Under tsx (npm start, tests) the task is TypeScript: the thread loads it through tsx too.
  const fromSource = import.meta.url.endsWith('.ts');
  pool ??= new Piscina({
    filename: new URL(fromSource ? './excel-task.ts' : './excel-task.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: 1,
    idleTimeout: 30_000,
    ...(fromSource ? { execArgv: ['--import', 'tsx'] } : {}),
  });
  return pool;
}

/** The same workbook written on this thread (the pool thread's own entry, and tests). */
export async function writeExcelInProcess<Row>(
  guests: AsyncIterable<Row> | Iterable<Row>,
  file: string,
  options: ExcelExportOptions<Row>,
): Promise<number> {
  const workbook = new XlsxWorkbook(createWriteStream(file), 'checkin-service');
  try {
    return await writeWorkbook(guests, workbook, options);
  } catch (error) {
    workbook.abort();
    throw error;
  }
}

/**
 * Sheet "Guests" (or `sheetName`): bold header row, frozen, autofilter over every row; integers,
 * booleans and dates typed. Then sheet "Summary". Rows are written as they come (see xlsx-stream.ts).
 */
async function writeWorkbook<Row>(
  guests: AsyncIterable<Row> | Iterable<Row>,
  workbook: XlsxWorkbook,
  options: ExcelExportOptions<Row>,
): Promise<number> {
  const columns = options.columns ?? (guestColumns as unknown as readonly Column<Row>[]);
  const name = options.sheetName ?? 'Guests';
  const perSheet = options.rowsPerSheet ?? SHEET_ROWS;
  const dataSheet = (n: number) =>
    workbook.addSheet(n === 1 ? name : `${name} (${n})`, {
      columns: columns.map((column) => ({ width: column.width, date: column.kind === 'timestamp' })),
      header: columns.map((column) => column.name),
      autoFilter: true,
    });
  let sheet = dataSheet(1);
  const toWall = wallClock(options.timeZone);
  const kinds = columns.map((column) => column.kind);
  let rows = 0;
  for await (const guest of guests) {
    // Excel holds no row past its last: the next sheet takes over.
    if (rows > 0 && rows % perSheet === 0) {
      await sheet.end();
      sheet = dataSheet(rows / perSheet + 1);
    }
    const values = new Array<XlsxValue>(columns.length);
    for (let i = 0; i < columns.length; i++) values[i] = cellValue(kinds[i]!, columns[i]!.value(guest), toWall);
    const behind = sheet.addRow(values);
    if (behind) await behind;
    rows += 1;
  }
  await sheet.end();

  const summary = workbook.addSheet('Summary', { columns: [{ width: 40 }, { width: 40 }] });
  for (const [label, value] of options.summary(rows)) {
    const behind = summary.addRow([label, summaryValue(value, toWall)]);
    if (behind) await behind;
  }
  await summary.end();
  await workbook.finish();
  return rows;
}

/**
 * The first wall time every spreadsheet reads alike. Excel counts 1900 as a leap year (Lotus
 * 1-2-3's error, kept for compatibility), so its serial numbers before 1 March 1900 are a day off
 * from everyone else's: 1900-01-01 would show as 1900-01-02 in Excel (and 28 February as a 29th
 * that never was), while LibreOffice and openpyxl read them otherwise. Dates run to 9999 (#### after).
 */
const FIRST_DATE = Date.UTC(1900, 2, 1);
const LAST_DATE = Date.UTC(10000, 0, 1);

/** A wall time a date cell shows the same in every spreadsheet, or undefined: the time is then written as text. */
function dateCell(wall: Date): Date | undefined {
  const time = wall.getTime();
  return time >= FIRST_DATE && time < LAST_DATE ? wall : undefined;
}

function cellValue(kind: string, value: string | number | boolean | undefined, toWall: (instant: Date) => Date): XlsxValue {
  if (value === undefined) return null;
  if (kind === 'timestamp' && typeof value === 'string') {
    const instant = new Date(value);
    if (Number.isNaN(instant.getTime())) return value;
    // Outside the dates every spreadsheet shows alike: ISO 8601 text, as the API answers it.
    return dateCell(toWall(instant)) ?? value;
  }
  return value;
}

function summaryValue(value: SummaryValue, toWall: (instant: Date) => Date): XlsxValue {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : (dateCell(toWall(value)) ?? value.toISOString());
  return value;
}
