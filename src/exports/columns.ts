import { shownGuestId, type GuestDoc } from '../projections/guests.js';

/** How a column's values are typed in Excel (CSV writes them all as text). */
export type ColumnKind = 'text' | 'integer' | 'boolean' | 'timestamp';

export interface Column<Row = GuestDoc> {
  /** Header text: the spec's Guest field name, so a file can be mapped back onto the API. */
  name: string;
  kind: ColumnKind;
  /** Excel column width in characters. */
  width: number;
  value(row: Row): string | number | boolean | undefined;
}

const field =
  (name: keyof GuestDoc, kind: ColumnKind = 'text', width = 18): Column =>
  ({ name, kind, width, value: (guest) => guest[name] as string | number | boolean | undefined });

/** As at the door (commands/door.ts): once inside, what is left of the allowance; before, all of it. */
export const plusOnesLeft = (guest: GuestDoc): number => {
  const allowed = guest.plusOnes ?? 0;
  return guest.inside ? Math.max(0, allowed - (guest.admittedPlusOnes ?? 0)) : allowed;
};

/**
 * The export's columns, in the order of the spec's Guest table, with `plusOnesLeft` after
 * `admittedPlusOnes`, then `ticketCode` and `image`. The order is part of the interface (docs/export.md).
 */
export const guestColumns: readonly Column[] = [
  { name: 'id', kind: 'text', width: 38, value: (guest) => shownGuestId(guest) },
  field('firstName'),
  field('otherNames'),
  field('lastName'),
  field('email', 'text', 28),
  // Not set, plus ones and isGroup are 0 and false, as the guest answers show them (docs/api.md, Answers).
  { name: 'plusOnes', kind: 'integer', width: 10, value: (guest) => guest.plusOnes ?? 0 },
  { name: 'admittedPlusOnes', kind: 'integer', width: 10, value: (guest) => guest.admittedPlusOnes ?? 0 },
  { name: 'plusOnesLeft', kind: 'integer', width: 10, value: plusOnesLeft },
  field('additionalInfo', 'text', 30),
  field('barcode'),
  field('tags', 'text', 20),
  field('createdBy', 'text', 38),
  field('admitted', 'timestamp', 20),
  field('blockedDate', 'timestamp', 20),
  field('blockedReason', 'text', 20),
  field('eventId', 'text', 38),
  field('validFrom', 'timestamp', 20),
  field('validTo', 'timestamp', 20),
  { name: 'isGroup', kind: 'boolean', width: 9, value: (guest) => guest.isGroup ?? false },
  field('discharged', 'timestamp', 20),
  field('customId'),
  field('commsTemplateId', 'text', 38),
  field('correlationId'),
  // Issue 16: the signed ticket the service issued to a guest without a barcode (docs/tickets.md); last, so the columns before keep their places.
  // An erased guest's ticket admits no one (GET .../ticket is no_ticket): its row shows none.
  { name: 'ticketCode', kind: 'text', width: 40, value: (guest) => (guest.erased ? undefined : guest.ticketCode) },
  // Every field of the spec's Guest is in the file; the image last, so the columns before keep their places.
  field('image', 'text', 30),
];

/**
 * CSV/formula injection (OWASP): text a spreadsheet could read as a formula. The same characters
 * as csv-stringify's `escape_formulas`, including the full-width forms Apple Numbers folds.
 */
const formulaStart = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;

/** Whether a spreadsheet could read the text as a formula (the xlsx writer marks such cells text: quotePrefix). */
export const looksLikeFormula = (text: string): boolean => formulaStart.test(text);

/** For CSV, which has no cell types: a leading apostrophe, so the text is shown as typed and never evaluated. */
export const neutralise = (text: string): string => (looksLikeFormula(text) ? `'${text}` : text);

/**
 * A semicolon followed (past any quotes) by a formula's first character. A spreadsheet whose list
 * separator is the semicolon (Excel in most of Europe) splits a comma-separated line there, and a
 * double quote only opens a quoted cell at a cell's start, so quoting the field does not keep
 * the part after the semicolon from being a cell of its own, read as a formula.
 */
const formulaAfterSemicolon = /;(?=["\uFF02]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20])/g;

/** `neutralise` for CSV: also an apostrophe after each semicolon that would start a formula in such a spreadsheet. */
export const neutraliseForCsv = (text: string): string => {
  const start = neutralise(text);
  return text.includes(';') ? start.replace(formulaAfterSemicolon, ";'") : start;
};
