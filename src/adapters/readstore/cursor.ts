/**
 * Sorting, cursor paging and projection shared by the read-store adapters, so that
 * both order documents and resume pages the same way.
 *
 * Order follows MongoDB's for JSON values: an empty array < null and missing < numbers
 * < strings < objects < arrays < booleans < dates, strings by code point (compareStrings).
 * A field may hold values of different types in different documents, but an array should hold
 * elements of one type (plus null): the MongoDB adapter turns a cursor into range filters, and
 * MongoDB range operators only compare values of the same type.
 */
import { createHash } from 'node:crypto';
import type { Doc, Filter, Sort } from './port.js';
import { compareStrings } from '../../shared/text-order.js';

export { compareStrings };

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** A sort field and its direction; the last key is always `_id`, which breaks ties. */
export type SortKey = readonly [path: string, direction: 1 | -1];

/** A cursor did not come from a page of the same query (or was tampered with). */
export class InvalidCursorError extends Error {
  override readonly name = 'InvalidCursorError';
  constructor() {
    super('invalid cursor');
  }
}

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit) || limit < 1) return DEFAULT_LIMIT;
  return Math.min(Math.floor(limit), MAX_LIMIT);
}

/** The sort as keys in priority order, with `_id` ascending appended unless the sort names it. */
export function sortKeys(sort: Sort | undefined): SortKey[] {
  const keys: SortKey[] = [];
  for (const [path, direction] of Object.entries(sort ?? {})) {
    keys.push([path, direction === -1 ? -1 : 1]);
    if (path === '_id') return keys;
  }
  keys.push(['_id', 1]);
  return keys;
}

/** The value at a dotted path through nested objects, or undefined. */
export function valueAt(doc: unknown, path: string): unknown {
  // Most paths are one field: read it without splitting (this runs per document per sort key).
  if (!path.includes('.')) {
    return doc === null || typeof doc !== 'object' || Array.isArray(doc) ? undefined : (doc as Record<string, unknown>)[path];
  }
  let value: unknown = doc;
  for (const segment of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/**
 * The value a document sorts by: missing becomes null; an array sorts by its
 * smallest element ascending and its largest descending, and an empty array
 * (kept as `[]`) before null (as in MongoDB).
 */
function sortValue(doc: unknown, [path, direction]: SortKey): unknown {
  const value = valueAt(doc, path);
  if (value === undefined) return null;
  if (!Array.isArray(value)) return value;
  if (value.length === 0) return EMPTY_ARRAY;
  return value.reduce((best, v) => (compareValues(v, best) * direction < 0 ? v : best));
}

export function sortValues(doc: unknown, keys: SortKey[]): unknown[] {
  return keys.map((key) => sortValue(doc, key));
}

const EMPTY_ARRAY: readonly unknown[] = Object.freeze([]);

/** MongoDB's comparison order of types (docs: Comparison/Sort Order). */
function typeRank(value: unknown): number {
  if (value === null || value === undefined) return 1;
  if (typeof value === 'number' || typeof value === 'bigint') return 2;
  if (typeof value === 'string') return 3;
  if (Array.isArray(value)) return 5;
  if (typeof value === 'boolean') return 6;
  if (value instanceof Date) return 7;
  return 4;
}

/** Compares two values in MongoDB's order for JSON values: negative, zero or positive. */
export function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 1:
      return 0;
    case 2:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 3:
      return compareStrings(a as string, b as string);
    case 5:
      return compareLists(a as unknown[], b as unknown[]);
    case 6:
      return Number(a) - Number(b);
    case 7:
      return (a as Date).getTime() - (b as Date).getTime();
    default:
      return compareObjects(a as object, b as object);
  }
}

/** Objects compare field by field in their order: each field's type first, then its name, then its value (as MongoDB). */
function compareObjects(a: object, b: object): number {
  const x = Object.entries(a);
  const y = Object.entries(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const [nameA, valueA] = x[i]!;
    const [nameB, valueB] = y[i]!;
    const c = typeRank(valueA) - typeRank(valueB) || compareStrings(nameA, nameB) || compareValues(valueA, valueB);
    if (c !== 0) return c;
  }
  return x.length - y.length;
}

function compareLists(a: unknown[], b: unknown[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareValues(a[i], b[i]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

/** Compares two documents' sort values key by key, honouring each key's direction. */
export function compareSortValues(a: unknown[], b: unknown[], keys: SortKey[]): number {
  for (let i = 0; i < keys.length; i++) {
    const x = a[i];
    const y = b[i];
    // Two strings (names, ids: most sort keys) compare directly, without ranking their types.
    if (typeof x === 'string' && typeof y === 'string') {
      if (x !== y) return compareStrings(x, y) * keys[i][1];
      continue;
    }
    const c = compareSortValue(x, y);
    if (c !== 0) return c * keys[i][1];
  }
  return 0;
}

/** Two sort values: as compareValues, but an empty array (what an array field without elements sorts by) comes first. */
function compareSortValue(x: unknown, y: unknown): number {
  const emptyX = isEmptyArray(x);
  const emptyY = isEmptyArray(y);
  if (emptyX || emptyY) return emptyX === emptyY ? 0 : emptyX ? -1 : 1;
  return compareValues(x, y);
}

/**
 * What a cursor is bound to: the sort and, when given, the filter (a hash of it), so that a
 * cursor is accepted only by the query that returned it. Another event's, another client's or
 * another filter's cursor would otherwise page that other query from a position it never held.
 */
function signature(keys: SortKey[], filter?: Filter): string {
  const sort = keys.map(([path, direction]) => `${path}:${direction}`).join(',');
  if (filter === undefined) return sort;
  return `${sort}|${createHash('sha256').update(canonicalJson(filter)).digest('base64url').slice(0, 16)}`;
}

/** JSON with object keys sorted, so that equal filters built in any key order hash alike. */
function canonicalJson(value: unknown): string {
  if (value instanceof RegExp) return JSON.stringify(String(value));
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** An opaque cursor holding the last item's sort values (ending with its `_id`), bound to the sort and the filter. */
export function encodeCursor(values: unknown[], keys: SortKey[], filter?: Filter): string {
  return Buffer.from(JSON.stringify([signature(keys, filter), ...values]), 'utf8').toString('base64url');
}

/** The sort values a cursor holds; InvalidCursorError unless it was made for the same sort and filter. */
export function decodeCursor(cursor: string, keys: SortKey[], filter?: Filter): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (!Array.isArray(parsed) || parsed.length !== keys.length + 1 || parsed[0] !== signature(keys, filter)) {
    throw new InvalidCursorError();
  }
  return parsed.slice(1);
}

/**
 * A MongoDB filter matching the documents that sort strictly after `values`:
 * an `$or` over the keys, each branch equal on the keys before it and past the
 * cursor on its own key. Returns null when nothing can follow.
 */
export function afterCursorFilter(values: unknown[], keys: SortKey[]): Filter | null {
  const branches: Filter[] = [];
  const equalSoFar: Filter = {};
  keys.forEach(([path, direction], i) => {
    const value = values[i] ?? null;
    for (const past of pastCursor(path, value, direction)) branches.push({ ...equalSoFar, [path]: past });
    equalSoFar[path] = sortsAs(path, value, direction);
  });
  if (branches.length === 0) return null;
  return branches.length === 1 ? branches[0] : { $or: branches };
}

/*
 * A field may hold an array. MongoDB matches a range or an equality when any element does, but
 * sorts the document by its smallest element ascending and its largest descending, an empty
 * array before null (`sortValue`). So each condition also keeps out, with `$not` of the opposite
 * range, a document that another of its elements sorts elsewhere; for a scalar field the extra
 * conditions change nothing. `_id` is never an array nor null: its conditions stay plain, which
 * the server answers from its `_id` index.
 */

/** The condition on `path` of the documents that sort equal to `value`. */
function sortsAs(path: string, value: unknown, direction: 1 | -1): unknown {
  if (path === '_id') return value;
  if (isEmptyArray(value)) return { $size: 0 };
  // Descending, an array holding null and a value sorts by the value: only all-null arrays are null.
  if (value === null) return direction === 1 ? null : { $eq: null, $not: { $type: TYPES.map(([, type]) => type) } };
  return direction === 1 ? { $eq: value, $ne: null, $not: { $lt: value } } : { $eq: value, $not: { $gt: value } };
}

/** Conditions on `path`, any of which puts a document strictly after `value` in this direction. */
function pastCursor(path: string, value: unknown, direction: 1 | -1): unknown[] {
  if (path === '_id') return [direction === 1 ? { $gt: value } : { $lt: value }];
  const rank = typeRank(value);
  if (direction === 1) {
    if (isEmptyArray(value)) return [{ $not: { $size: 0 } }];
    // Null sorts first (after an empty array): past it is anything else.
    if (value === null) return [{ $ne: null, $not: { $size: 0 } }];
    // A range only matches values of its own type: the later types are a branch of their own.
    const later = TYPES.filter(([r]) => r > rank).map(([, type]) => type);
    const notLater = ['null', ...TYPES.filter(([r]) => r <= rank).map(([, type]) => type)];
    return [{ $gt: value, $ne: null, $not: { $lte: value } }, ...(later.length > 0 ? [{ $type: later, $not: { $type: notLater } }] : [])];
  }
  // Descending, the earlier types, null and then an empty array come last.
  if (isEmptyArray(value)) return [];
  if (value === null) return [{ $size: 0 }];
  return [{ $lt: value, $not: { $gte: value } }, { $not: { $type: TYPES.filter(([r]) => r >= rank).map(([, type]) => type) } }];
}

/** MongoDB's names of the types a sort value can have besides null (JSON values; dates on MongoDB), by typeRank. */
const TYPES: ReadonlyArray<readonly [rank: number, type: string]> = [
  [2, 'number'],
  [3, 'string'],
  [4, 'object'],
  [6, 'bool'],
  [7, 'date'],
];

function isEmptyArray(value: unknown): boolean {
  return Array.isArray(value) && value.length === 0;
}

/**
 * An inclusion projection (`{field: 1}`, dotted paths allowed) applied to a document;
 * `_id` is always kept. Through arrays of objects a dotted path keeps that field of
 * each object element, as MongoDB does.
 */
export function project<T extends Doc>(doc: T, projection: Record<string, 1> | undefined): T {
  if (!projection || Object.keys(projection).length === 0) return doc;
  const out: Record<string, unknown> = { _id: doc._id };
  for (const path of Object.keys(projection)) copyPath(doc, out, path.split('.'));
  return out as T;
}

function copyPath(source: Record<string, unknown>, target: Record<string, unknown>, segments: string[]): void {
  const [head, ...rest] = segments;
  if (!(head in source)) return;
  const value = source[head];
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  if (Array.isArray(value)) {
    const objects = value.filter(isPlainObject);
    const existing = target[head];
    const into = Array.isArray(existing) ? (existing as Record<string, unknown>[]) : objects.map(() => ({}));
    objects.forEach((element, i) => copyPath(element, into[i], rest));
    target[head] = into;
  } else if (isPlainObject(value)) {
    const existing = target[head];
    const into = isPlainObject(existing) ? existing : {};
    copyPath(value, into, rest);
    target[head] = into;
  }
}

/** An object literal (or JSON object): not an array, date, regular expression or class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * Paths to ask a server for so that both the requested fields and the sort keys
 * come back, without a path that is inside another (MongoDB rejects those).
 */
export function fetchPaths(projection: Record<string, 1>, keys: SortKey[]): Record<string, 1> {
  const paths = [...new Set([...Object.keys(projection), ...keys.map(([path]) => path)])];
  const kept = paths.filter((p) => !paths.some((q) => q !== p && p.startsWith(`${q}.`)));
  return Object.fromEntries(kept.map((p) => [p, 1 as const]));
}
