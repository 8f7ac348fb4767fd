/**
 * Compares two strings by code point, as MongoDB's simple binary collation (UTF-8 bytes) does.
 * JavaScript's `<` compares UTF-16 code units, which puts a character above U+FFFF (an emoji,
 * stored as a surrogate pair, D800-DFFF) before one in U+E000-U+FFFF; only that case differs.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length < b.length ? -1 : 1;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  if (x >= 0xd800 && y >= 0xd800 && x < 0xe000 !== y < 0xe000) return x < 0xe000 ? 1 : -1;
  return x < y ? -1 : 1;
}

export type RangeOperator = '$gt' | '$gte' | '$lt' | '$lte';

/** Whether a comparison's result (negative, 0, positive: value against bound) satisfies a range operator. */
export const rangeHolds: Record<RangeOperator, (order: number) => boolean> = {
  $gt: (order) => order > 0,
  $gte: (order) => order >= 0,
  $lt: (order) => order < 0,
  $lte: (order) => order <= 0,
};
