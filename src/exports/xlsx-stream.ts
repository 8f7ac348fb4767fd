/**
 * A streaming xlsx (SpreadsheetML) writer: each row becomes its XML text as it comes and goes
 * through yazl (a zip writer deflating with Node's zlib, off this thread) to the output, so
 * memory does not grow with the rows.
 *
 * Why not a spreadsheet library (issue 13, goal 4, measured in docs/benchmarks.md "Export"):
 * exceljs's streaming writer builds a row, cell and style model per cell and spends about 3 s
 * on 100,000 guest rows even with no styles at all; write-excel-file and excel4node hold the
 * whole sheet in memory (hundreds of MB) and take far longer; xlsx-write-stream has no styles.
 * The parts written here are the few the export needs (ECMA-376 Part 1, SpreadsheetML): typed
 * cells (inline text, numbers, booleans, dates as serial numbers with a date format), a bold
 * frozen header row, column widths, an autofilter, and several sheets.
 * yazl rather than archiver: the same deflate, and it loads in a tenth of the time (archiver
 * pulls in half a second of modules, paid by each new pool thread before its first export).
 */
import { once } from 'node:events';
import { PassThrough, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import { looksLikeFormula } from './columns.js';

/**
 * A cell: text, number, boolean, a wall-clock time (a Date read through its UTC fields), or empty
 * (null, undefined, ''; a number or Date that is not finite is left empty too).
 */
export type XlsxValue = string | number | boolean | Date | null | undefined;

export interface XlsxColumn {
  /** Width in characters. */
  width: number;
  /** The column's cells (and cells typed into it later) show dates with DATE_FORMAT. */
  date?: boolean;
}

export interface XlsxSheetOptions {
  columns: readonly XlsxColumn[];
  /** The first row is a header: bold, frozen while scrolling, and the autofilter's top. */
  header?: readonly string[];
  autoFilter?: boolean;
}

/** ISO-like, unambiguous in every locale. */
export const DATE_FORMAT = 'yyyy-mm-dd hh:mm:ss';

/** Style ids (cellXfs) in styles.xml below. */
const DATE_STYLE = 1;
const BOLD_STYLE = 2;
/** Text a spreadsheet could read as a formula: quotePrefix keeps it text, also when a user edits the cell, and shows it exactly as written. */
const QUOTED_STYLE = 3;

/**
 * deflate level 1 (what exceljs's archiver used too). zlib's default, 6, made a 100,000-row sheet
 * 12% smaller for 0.7 s more CPU (0.9 s against 1.6 s, measured here).
 */
const ZIP_LEVEL = 1;
/** XML text gathered before it is handed to the deflater. */
const FLUSH_CHARS = 64 * 1024;

const MAIN_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

/** A workbook written to `output`: sheets one after the other, then `finish()`. */
export class XlsxWorkbook {
  private readonly zip = new ZipFile();
  private readonly sheets: { name: string; filter?: string }[] = [];
  private readonly failure: Promise<never>;
  private open: { name: string; entry: PassThrough } | undefined;
  private readonly mtime = new Date();

  constructor(
    private readonly output: Writable,
    private readonly creator: string,
  ) {
    this.failure = new Promise<never>((_, reject) => {
      this.zip.once('error', reject);
      this.zip.outputStream.once('error', reject);
      output.once('error', reject);
    });
    this.failure.catch(() => {});
    this.zip.outputStream.pipe(output);
  }

  /** Starts the next sheet; the one before must have been ended. */
  addSheet(name: string, options: XlsxSheetOptions): XlsxSheet {
    if (this.open) throw new Error(`sheet "${this.open.name}" is not ended`);
    const entry = new PassThrough({ highWaterMark: 1024 * 1024 });
    this.zip.addReadStream(entry, `xl/worksheets/sheet${this.sheets.length + 1}.xml`, { compressionLevel: ZIP_LEVEL, mtime: this.mtime });
    const record: { name: string; filter?: string } = { name };
    this.sheets.push(record);
    this.open = { name, entry };
    return new XlsxSheet(entry, options, this.failure, (filter) => {
      if (filter) record.filter = filter;
      this.open = undefined;
    });
  }

  /** Writes the workbook's other parts and waits until the whole file is written. */
  async finish(): Promise<void> {
    if (this.open) throw new Error(`sheet "${this.open.name}" is not ended`);
    const parts: [string, string][] = [
      ['xl/workbook.xml', workbookXml(this.sheets)],
      ['xl/_rels/workbook.xml.rels', workbookRelsXml(this.sheets.length)],
      ['xl/styles.xml', STYLES_XML],
      ['docProps/core.xml', coreXml(this.creator, this.mtime)],
      ['docProps/app.xml', APP_XML],
      ['_rels/.rels', ROOT_RELS_XML],
      ['[Content_Types].xml', contentTypesXml(this.sheets.length)],
    ];
    for (const [name, xml] of parts) this.zip.addBuffer(Buffer.from(xml, 'utf8'), name, { compressionLevel: ZIP_LEVEL, mtime: this.mtime });
    this.zip.end();
    await Promise.race([finished(this.output), this.failure]);
  }

  /** Stops writing after a failure: the file is incomplete and is to be removed by the caller. */
  abort(): void {
    this.open?.entry.destroy();
    this.zip.outputStream.unpipe(this.output);
    this.output.destroy();
  }
}

/** One sheet being written: `addRow` for each row, then `end()`. */
export class XlsxSheet {
  private text: string;
  private rows = 0;
  private readonly letters: string[];
  private readonly styles: number[];

  constructor(
    private readonly entry: PassThrough,
    private readonly options: XlsxSheetOptions,
    private readonly failure: Promise<never>,
    private readonly onEnd: (filter: string | undefined) => void,
  ) {
    this.letters = options.columns.map((_, i) => columnLetters(i));
    this.styles = options.columns.map((column) => (column.date ? DATE_STYLE : 0));
    this.text = sheetStart(options);
    if (options.header) {
      this.rows = 1;
      let xml = `<row r="1" s="${BOLD_STYLE}" customFormat="1">`;
      options.header.forEach((name, i) => (xml += `<c r="${columnLetters(i)}1" s="${BOLD_STYLE}" t="inlineStr"><is><t${spaced(name)}>${textXml(name)}</t></is></c>`));
      this.text += `${xml}</row>`;
    }
  }

  /** Adds a row (one value per column); resolves at once unless the deflater is behind. */
  addRow(values: readonly XlsxValue[]): Promise<void> | undefined {
    const r = ++this.rows;
    let xml = `<row r="${r}">`;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      // An empty text is an empty cell, as spreadsheets read it.
      if (value === null || value === undefined || value === '') continue;
      const ref = `${this.letters[i] ?? columnLetters(i)}${r}`;
      const style = this.styles[i] ? ` s="${this.styles[i]}"` : '';
      if (typeof value === 'string') {
        const text = cellText(value);
        const textStyle = looksLikeFormula(text) ? ` s="${QUOTED_STYLE}"` : style;
        xml += `<c r="${ref}"${textStyle} t="inlineStr"><is><t${spaced(text)}>${textXml(text)}</t></is></c>`;
      }
      else if (typeof value === 'number') xml += Number.isFinite(value) ? `<c r="${ref}"${style}><v>${value}</v></c>` : '';
      else if (typeof value === 'boolean') xml += `<c r="${ref}"${style} t="b"><v>${value ? 1 : 0}</v></c>`;
      else if (Number.isFinite(value.getTime())) xml += `<c r="${ref}" s="${DATE_STYLE}"><v>${serial(value)}</v></c>`;
    }
    this.text += `${xml}</row>`;
    return this.text.length >= FLUSH_CHARS ? this.flush() : undefined;
  }

  /** Closes the sheet (with its autofilter over every row) once its XML is handed to the zip. */
  async end(): Promise<void> {
    const width = this.options.columns.length;
    const filter = this.options.autoFilter && width > 0 ? `A1:${columnLetters(width - 1)}${Math.max(1, this.rows)}` : undefined;
    this.text += `</sheetData>${filter ? `<autoFilter ref="${filter}"/>` : ''}<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/></worksheet>`;
    await this.flush();
    this.entry.end();
    this.onEnd(filter);
  }

  private async flush(): Promise<void> {
    const ready = this.entry.write(this.text);
    this.text = '';
    if (!ready) await Promise.race([once(this.entry, 'drain'), this.failure]);
  }
}

/** Column letters of a 0-based index: A … Z, AA … */
export function columnLetters(index: number): string {
  let letters = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(65 + ((n - 1) % 26)) + letters;
  return letters;
}

/** A spreadsheet date: days since 1899-12-30 of the Date's UTC fields (its wall-clock time). */
const serial = (date: Date): number => 25569 + date.getTime() / 86_400_000;

/** Characters XML 1.0 cannot hold at all (control characters, lone surrogates, U+FFFE/F): dropped, as exceljs does. */
const notXml = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const markup = /[&<>"]/g;
const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const needsWork = /[&<>"\x00-\x08\x0B\x0C\x0E-\x1F\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Excel's limit on a cell (guest fields may be longer: the spec types them string): longer text is cut, never inside a surrogate pair. */
const CELL_CHARACTERS = 32_767;
function cellText(text: string): string {
  if (text.length <= CELL_CHARACTERS) return text;
  const cut = text.slice(0, CELL_CHARACTERS);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/**
 * An underscore that would start `_xHHHH_` (ECMA-376 Part 1, 22.9.2.19 ST_Xstring): Excel,
 * LibreOffice and openpyxl read that as the character HHHH in a cell's text or a sheet name, so
 * `Table_x0041_` would show as `TableA`. Written `_x005F_` (the underscore's own escape), only
 * where needed: some Excel versions refuse underscores escaped where no escape follows.
 */
const escapeLike = /_(?=x[0-9a-fA-F]{4}_)/g;

/** Text for a cell, header or sheet name (ST_Xstring): XML-escaped, and `_xHHHH_` kept literal. */
function textXml(text: string): string {
  const xml = needsWork.test(text) ? text.replace(notXml, '').replace(markup, (c) => entities[c]!) : text;
  return xml.includes('_x') ? xml.replace(escapeLike, '_x005F_') : xml;
}

/** Plain XML text (document properties, which are not ST_Xstring). */
function plainXml(text: string): string {
  return needsWork.test(text) ? text.replace(notXml, '').replace(markup, (c) => entities[c]!) : text;
}

/** Leading or trailing white space (XML's: space, tab, CR, LF) is kept only when the text element says so. */
const spaced = (text: string): string =>
  text.length > 0 && (text.charCodeAt(0) <= 32 || text.charCodeAt(text.length - 1) <= 32) ? ' xml:space="preserve"' : '';

function sheetStart(options: XlsxSheetOptions): string {
  const pane = options.header
    ? '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/><selection pane="bottomLeft" activeCell="A2" sqref="A2"/>'
    : '';
  const cols = options.columns
    .map((column, i) => `<col min="${i + 1}" max="${i + 1}" width="${column.width}" customWidth="1"${column.date ? ` style="${DATE_STYLE}"` : ''}/>`)
    .join('');
  return (
    `${XML_DECLARATION}<worksheet xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">` +
    `<sheetViews><sheetView workbookViewId="0">${pane}</sheetView></sheetViews>` +
    `<sheetFormatPr defaultRowHeight="15"/>${cols ? `<cols>${cols}</cols>` : ''}<sheetData>`
  );
}

const attribute = (text: string): string => textXml(text).replace(/'/g, '&apos;');

function workbookXml(sheets: { name: string; filter?: string }[]): string {
  const list = sheets.map((sheet, i) => `<sheet name="${attribute(sheet.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('');
  // Excel keeps an autofilter's range as this hidden name too, and repairs a file without it.
  const names = sheets
    .map((sheet, i) => {
      if (!sheet.filter) return '';
      const [from, to] = sheet.filter.split(':').map((ref) => ref.replace(/^([A-Z]+)(\d+)$/, '$$$1$$$2'));
      return `<definedName name="_xlnm._FilterDatabase" localSheetId="${i}" hidden="1">'${attribute(sheet.name.replace(/'/g, "''"))}'!${from}:${to}</definedName>`;
    })
    .join('');
  return (
    `${XML_DECLARATION}<workbook xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">` +
    `<bookViews><workbookView/></bookViews><sheets>${list}</sheets>${names ? `<definedNames>${names}</definedNames>` : ''}</workbook>`
  );
}

function workbookRelsXml(sheetCount: number): string {
  let rels = '';
  for (let i = 1; i <= sheetCount; i++) {
    rels += `<Relationship Id="rId${i}" Type="${REL_NS}/worksheet" Target="worksheets/sheet${i}.xml"/>`;
  }
  rels += `<Relationship Id="rId${sheetCount + 1}" Type="${REL_NS}/styles" Target="styles.xml"/>`;
  return `${XML_DECLARATION}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels}</Relationships>`;
}

function contentTypesXml(sheetCount: number): string {
  let sheets = '';
  for (let i = 1; i <= sheetCount; i++) {
    sheets += `<Override PartName="/xl/worksheets/sheet${i}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`;
  }
  return (
    `${XML_DECLARATION}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
    '<Default Extension="xml" ContentType="application/xml"/>' +
    '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
    sheets +
    '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
    '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>' +
    '<Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>' +
    '</Types>'
  );
}

const ROOT_RELS_XML =
  `${XML_DECLARATION}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="${REL_NS}/officeDocument" Target="xl/workbook.xml"/>` +
  '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>' +
  `<Relationship Id="rId3" Type="${REL_NS}/extended-properties" Target="docProps/app.xml"/>` +
  '</Relationships>';

const APP_XML =
  `${XML_DECLARATION}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">` +
  '<Application>checkin-service</Application></Properties>';

function coreXml(creator: string, at: Date): string {
  const time = `${at.toISOString().slice(0, 19)}Z`;
  return (
    `${XML_DECLARATION}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
    'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">' +
    `<dc:creator>${plainXml(creator)}</dc:creator>` +
    `<dcterms:created xsi:type="dcterms:W3CDTF">${time}</dcterms:created><dcterms:modified xsi:type="dcterms:W3CDTF">${time}</dcterms:modified>` +
    '</cp:coreProperties>'
  );
}

/** Cell formats: 0 plain, 1 (DATE_STYLE) date and time, 2 (BOLD_STYLE) bold text, 3 (QUOTED_STYLE) text with quotePrefix. */
const STYLES_XML =
  `${XML_DECLARATION}<styleSheet xmlns="${MAIN_NS}">` +
  `<numFmts count="1"><numFmt numFmtId="164" formatCode="${DATE_FORMAT}"/></numFmts>` +
  '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>' +
  '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
  '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
  '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
  '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' +
  '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>' +
  '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" quotePrefix="1"/></cellXfs>' +
  '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
  '</styleSheet>';
