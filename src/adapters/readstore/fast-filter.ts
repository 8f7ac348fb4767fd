/**
 * A plain-JavaScript predicate for the common shapes of MongoDB filters on top-level fields
 * (equality, $eq/$ne/$in/$nin, ranges, $exists, $regex, $and/$or/$nor). mingo's general
 * interpreter costs microseconds per document; this costs tens of nanoseconds, which is what
 * lets a search scan 100,000 guests within a request. Anything else returns undefined and
 * the caller falls back to mingo, so semantics never depend on this file being complete.
 */
import { compareStrings, rangeHolds, type RangeOperator } from '../../shared/text-order.js';

type Doc = Record<string, unknown>;
export type Predicate = (doc: Doc) => boolean;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

const isScalar = (v: unknown): v is string | number | boolean | null =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** MongoDB equality on a field: a scalar equals the value or an element of an array value; null matches missing. */
function equals(value: unknown, expected: string | number | boolean | null): boolean {
  if (expected === null) return value === null || value === undefined || (Array.isArray(value) && value.includes(null));
  if (value === expected) return true;
  return Array.isArray(value) && value.includes(expected);
}

/** Range comparison only between values of one type, as MongoDB compares within a type class; strings by code point. */
function compare(value: unknown, op: string, bound: string | number): boolean {
  const test = (v: unknown) => {
    if (typeof v !== typeof bound || (typeof v !== 'string' && typeof v !== 'number')) return false;
    const [a, b] = [v as number, bound as number];
    // NaN when either is NaN: no operator holds, as with < and >.
    const order = typeof v === 'string' ? compareStrings(v, bound as string) : a < b ? -1 : a > b ? 1 : a === b ? 0 : NaN;
    return rangeHolds[op as RangeOperator](order);
  };
  return Array.isArray(value) ? value.some(test) : test(value);
}

function compileCondition(field: string, condition: unknown): Predicate | undefined {
  if (isScalar(condition)) return (doc) => equals(doc[field], condition);
  if (!isPlainObject(condition)) return undefined;
  const keys = Object.keys(condition);
  if (keys.length === 0 || !keys.every((k) => k.startsWith('$'))) return undefined;
  const parts: Predicate[] = [];
  for (const op of keys) {
    const arg = condition[op];
    switch (op) {
      case '$eq':
        if (!isScalar(arg)) return undefined;
        parts.push((doc) => equals(doc[field], arg));
        break;
      case '$ne':
        if (!isScalar(arg)) return undefined;
        parts.push((doc) => !equals(doc[field], arg));
        break;
      case '$in':
      case '$nin': {
        if (!Array.isArray(arg) || !arg.every(isScalar)) return undefined;
        const values = arg as (string | number | boolean | null)[];
        const any = (doc: Doc) => values.some((v) => equals(doc[field], v));
        parts.push(op === '$in' ? any : (doc) => !any(doc));
        break;
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        // As MongoDB: $gte/$lte null match what equals null (missing too), $gt/$lt null nothing.
        if (arg === null) parts.push(op === '$gte' || op === '$lte' ? (doc) => equals(doc[field], null) : () => false);
        else if (typeof arg !== 'string' && typeof arg !== 'number') return undefined;
        else parts.push((doc) => compare(doc[field], op, arg));
        break;
      case '$exists':
        if (typeof arg !== 'boolean') return undefined;
        parts.push(arg ? (doc) => doc[field] !== undefined : (doc) => doc[field] === undefined);
        break;
      case '$regex': {
        const options = condition.$options;
        if (typeof arg !== 'string' || (options !== undefined && (typeof options !== 'string' || !/^[imsx]*$/.test(options)))) {
          return undefined;
        }
        if (typeof options === 'string' && options.includes('x')) return undefined;
        const pattern = new RegExp(arg, typeof options === 'string' ? options.replace('x', '') : '');
        const test = (v: unknown) => typeof v === 'string' && pattern.test(v);
        parts.push((doc) => {
          const value = doc[field];
          return Array.isArray(value) ? value.some(test) : test(value);
        });
        break;
      }
      case '$options':
        if (!('$regex' in condition)) return undefined;
        break;
      default:
        return undefined;
    }
  }
  return allOf(parts);
}

export function compileFilter(filter: Record<string, unknown>): Predicate | undefined {
  const parts: Predicate[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(condition) || condition.length === 0 || !condition.every(isPlainObject)) return undefined;
      const clauses = condition.map((c) => compileFilter(c as Record<string, unknown>));
      if (clauses.some((c) => c === undefined)) return undefined;
      const compiled = clauses as Predicate[];
      parts.push(
        key === '$and'
          ? allOf(compiled)
          : key === '$or'
            ? (doc) => compiled.some((c) => c(doc))
            : (doc) => !compiled.some((c) => c(doc)),
      );
      continue;
    }
    // Dotted paths fan out over arrays in MongoDB: left to mingo.
    if (key.startsWith('$') || key.includes('.')) return undefined;
    const predicate = compileCondition(key, condition);
    if (!predicate) return undefined;
    parts.push(predicate);
  }
  return allOf(parts);
}

/** A predicate true when every part is: a plain loop, since it runs per document of a query. */
function allOf(parts: Predicate[]): Predicate {
  if (parts.length === 0) return () => true;
  if (parts.length === 1) return parts[0]!;
  return (doc) => {
    for (let i = 0; i < parts.length; i++) if (!parts[i]!(doc)) return false;
    return true;
  };
}
