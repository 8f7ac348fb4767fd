import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify, type Options } from 'csv-stringify/sync';
import type { GuestDoc } from '../projections/guests.js';
import { guestColumns, neutraliseForCsv, type Column } from './columns.js';
import { isoTextInZone } from './wall-clock.js';

export const CSV_MEDIA_TYPE = 'text/csv; charset=utf-8';

/**
 * Writes the guests as RFC 4180 CSV (UTF-8 with BOM so Excel reads accents, CRLF line ends,
 * a header row); timestamps in the export's time zone with their offset. Streams with backpressure: the read-store cursor is only pulled as fast as
 * the file takes the text. Returns the number of guest rows.
 */
export async function writeGuestsCsv(guests: AsyncIterable<GuestDoc>, file: string, options: CsvOptions): Promise<number> {
  return writeCsv(guests, file, guestColumns, options);
}

/** Where timestamps are shown: the event's zone, with the offset. */
export interface CsvOptions {
  timeZone: string;
}

/**
 * Rows turned into CSV text together (about 250 kB for guests): csv-stringify's stream takes one
 * record per write, and a stream step plus an await per row cost more than the CSV itself
 * (issue 13, goal 4; docs/benchmarks.md, "Export").
 */
const CHUNK_ROWS = 1000;

const csvOptions: Options = {
  record_delimiter: 'windows',
  // csv-stringify quotes a field holding the record delimiter (CRLF) but not a lone LF or CR;
  // RFC 4180 parsers need those quoted too.
  quoted_match: /[\r\n]/,
  cast: { boolean: (value) => (value ? 'true' : 'false') },
};

/** Any rows under the given columns, written as `writeGuestsCsv` writes guests (analytics exports). */
export async function writeCsv<Row>(
  source: AsyncIterable<Row> | Iterable<Row>,
  file: string,
  columns: readonly Column<Row>[],
  options: CsvOptions,
): Promise<number> {
  let rows = 0;
  const record = recordOf(columns, options.timeZone);
  // Chunks of CHUNK_ROWS records, each stringified in one call; the first carries the BOM and
  // the header (alone when there are no rows). Every record ends with CRLF, so chunks join as is.
  async function* text(): AsyncGenerator<string> {
    let chunk: unknown[][] = [];
    let first = true;
    const flush = () => {
      const csv = stringify(chunk, first ? { ...csvOptions, bom: true, header: true, columns: columns.map((c) => c.name) } : csvOptions);
      first = false;
      chunk = [];
      return csv;
    };
    for await (const row of source) {
      chunk.push(record(row));
      rows += 1;
      if (chunk.length === CHUNK_ROWS) yield flush();
    }
    if (chunk.length > 0 || first) yield flush();
  }
  await pipeline(Readable.from(text()), createWriteStream(file));
  return rows;
}

/**
 * A row's CSV fields: timestamps in the zone with their offset (a stored text that is not a time
 * stays text), other text neutralised against formulas (also after a semicolon: neutraliseForCsv).
 */
function recordOf<Row>(columns: readonly Column<Row>[], timeZone: string): (row: Row) => unknown[] {
  const inZone = isoTextInZone(timeZone);
  const timestamp = columns.map((column) => column.kind === 'timestamp');
  return (row) => {
    const fields = new Array<unknown>(columns.length);
    for (let i = 0; i < columns.length; i++) {
      const value = columns[i]!.value(row);
      fields[i] = typeof value !== 'string' ? value : timestamp[i] ? (inZone(value) ?? neutraliseForCsv(value)) : neutraliseForCsv(value);
    }
    return fields;
  };
}
