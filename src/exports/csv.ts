import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import type { GuestDoc } from '../projections/guests.js';
import { guestColumns, neutralise, type Column } from './columns.js';
import { isoInZone } from './wall-clock.js';

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

/** Any rows under the given columns, written as `writeGuestsCsv` writes guests (analytics exports). */
export async function writeCsv<Row>(
  source: AsyncIterable<Row> | Iterable<Row>,
  file: string,
  columns: readonly Column<Row>[],
  options: CsvOptions,
): Promise<number> {
  let rows = 0;
  const inZone = isoInZone(options.timeZone);
  async function* records(): AsyncGenerator<unknown[]> {
    for await (const row of source) {
      rows += 1;
      yield columns.map((column) => {
        const value = column.value(row);
        if (column.kind === 'timestamp' && typeof value === 'string') return inZone(new Date(value));
        return typeof value === 'string' ? neutralise(value) : value;
      });
    }
  }
  const csv = stringify({
    bom: true,
    header: true,
    columns: columns.map((c) => c.name),
    record_delimiter: 'windows',
    // csv-stringify quotes a field holding the record delimiter (CRLF) but not a lone LF or CR;
    // RFC 4180 parsers need those quoted too.
    quoted_match: /[\r\n]/,
    cast: { boolean: (value) => (value ? 'true' : 'false') },
  });
  await pipeline(Readable.from(records()), csv, createWriteStream(file));
  return rows;
}
