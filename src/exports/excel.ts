import { once } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { createWriteStream, type WriteStream } from 'node:fs';
import ExcelJS from 'exceljs';
import type { GuestDoc } from '../projections/guests.js';
import { guestColumns, neutralise, type Column } from './columns.js';
import { wallClock } from './wall-clock.js';
import type { ExcelMessage, ExcelTask } from './excel-task.js';

export const XLSX_MEDIA_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** ISO-like, unambiguous in every locale. */
export const DATE_TIME_FORMAT = 'yyyy-mm-dd hh:mm:ss';

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
}

const DATE_STYLE: Partial<ExcelJS.Style> = Object.freeze({ numFmt: DATE_TIME_FORMAT });
const PLAIN_STYLE: Partial<ExcelJS.Style> = Object.freeze({});

/** How many rows are written between checks of backpressure. */
const ROWS_PER_CHECK = 200;
/** Uncompressed XML allowed to wait for the deflater. */
const PENDING_BYTES_LIMIT = 1024 * 1024;

/**
 * Writes the guests as an xlsx workbook with exceljs's streaming writer: sheet "Guests"
 * (header row frozen, autofilter over every row; integers, booleans and dates typed) and
 * sheet "Summary". Rows are committed as they are written, so memory stays flat.
 * Returns the number of guest rows.
 */
export async function writeGuestsExcel(guests: AsyncIterable<GuestDoc>, file: string, options: ExcelExportOptions): Promise<number> {
  return writeExcel(guests, file, options);
}

/**
 * Any rows under `options.columns`, written as guests are (analytics exports). The workbook is
 * written on a pool thread (issue 13, goal 6: exceljs's XML and zip work is seconds of CPU for a
 * large event, which on the main thread would stall the door): this thread reads the rows and
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
  const output = createWriteStream(file);
  // A failed file write ends any wait for backpressure (workbook.commit reports it too).
  const failed = new Promise<never>((_, reject) => output.once('error', reject));
  failed.catch(() => {});
  try {
    return await writeWorkbook(guests, output, failed, options);
  } catch (error) {
    output.destroy();
    throw error;
  }
}

async function writeWorkbook<Row>(
  guests: AsyncIterable<Row> | Iterable<Row>,
  output: WriteStream,
  failed: Promise<never>,
  options: ExcelExportOptions<Row>,
): Promise<number> {
  const columns = options.columns ?? (guestColumns as unknown as readonly Column<Row>[]);
  // Shared strings would keep every distinct text in memory until the end (inline strings instead);
  // styles are needed for the date format.
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: output, useStyles: true, useSharedStrings: false });
  workbook.creator = 'checkin-service';
  const sheet = workbook.addWorksheet(options.sheetName ?? 'Guests', { views: [{ state: 'frozen', ySplit: 1, topLeftCell: 'A2', activeCell: 'A2' }] });
  sheet.columns = columns.map((column) => ({
    key: column.name,
    width: column.width,
    ...(column.kind === 'timestamp' ? { style: { numFmt: DATE_TIME_FORMAT } } : {}),
  }));
  const header = sheet.addRow(columns.map((column) => column.name));
  header.font = { bold: true };
  header.commit();

  // One style object per column kind, shared by every cell: exceljs remembers the style id of a
  // style object it has seen (a WeakMap), while the fresh object each new cell gets would be
  // rendered and looked up again, cell by cell (most of its time on a large sheet).
  const styles = columns.map((column) => (column.kind === 'timestamp' ? DATE_STYLE : PLAIN_STYLE));
  const toWall = wallClock(options.timeZone);
  let rows = 0;
  for await (const guest of guests) {
    const row = sheet.addRow(columns.map((column) => cellValue(column.kind, column.value(guest), toWall)));
    row.eachCell({ includeEmpty: true }, (cell, column) => {
      cell.style = styles[column - 1]!;
    });
    row.commit();
    rows += 1;
    if (rows % ROWS_PER_CHECK === 0) await Promise.race([drained(sheet, output), failed]);
  }
  sheet.autoFilter = { from: { row: 1, column: 1 }, to: { row: rows + 1, column: columns.length } };
  sheet.commit();

  const summary = workbook.addWorksheet('Summary');
  summary.columns = [{ width: 40 }, { width: 40 }];
  for (const [label, value] of options.summary(rows)) {
    const row = summary.addRow([neutralise(label), summaryValue(value, toWall)]);
    if (value instanceof Date) row.getCell(2).numFmt = DATE_TIME_FORMAT;
    row.commit();
  }
  summary.commit();
  await workbook.commit();
  return rows;
}

/**
 * exceljs hands each sheet to the zip archive through a stream whose write() result it
 * ignores, so without this the XML of every row piles up in memory ahead of the deflater
 * (about 75 MB per 100,000 rows). Waiting for that stream's 'drain' (and the file's) gives
 * the event loop to the compression. The pipe is internal to exceljs 4.4; if its shape
 * changes, this stops waiting and memory grows instead of the export failing.
 */
async function drained(sheet: ExcelJS.Worksheet, output: WriteStream): Promise<void> {
  const zipEntry = (sheet as unknown as { stream?: { pipes?: { _writableState?: { length?: number } }[] } }).stream?.pipes?.[0];
  const pending = zipEntry?._writableState?.length ?? 0;
  if (pending > PENDING_BYTES_LIMIT) await once(zipEntry as unknown as NodeJS.EventEmitter, 'drain');
  if (output.writableNeedDrain) await once(output, 'drain');
}

function cellValue(kind: string, value: string | number | boolean | undefined, toWall: (instant: Date) => Date): ExcelJS.CellValue {
  if (value === undefined) return null;
  if (kind === 'timestamp' && typeof value === 'string') {
    const instant = new Date(value);
    if (Number.isNaN(instant.getTime())) return neutralise(value);
    const wall = toWall(instant);
    // Spreadsheet dates start in 1900: an earlier time stays ISO 8601 text rather than show as ####.
    return wall.getUTCFullYear() < 1900 ? neutralise(value) : wall;
  }
  return typeof value === 'string' ? neutralise(value) : value;
}

function summaryValue(value: SummaryValue, toWall: (instant: Date) => Date): ExcelJS.CellValue {
  if (value instanceof Date) return toWall(value);
  return typeof value === 'string' ? neutralise(value) : value;
}
