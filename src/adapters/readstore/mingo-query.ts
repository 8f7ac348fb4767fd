/**
 * mingo's Query, with MongoDB's order where mingo's differs: `$gt`, `$gte`, `$lt` and `$lte`
 * on a string compare by code point, as MongoDB's simple binary collation does (mingo compares
 * UTF-16 code units, which puts an emoji before U+E000-U+FFFF); `$gte`/`$lte` null match what
 * equals null, a missing field too (mingo: only null), `$gt`/`$lt` null nothing. Every other
 * operator, and these on other types, is mingo's own: the context holds every kind of operator
 * that mingo's default Query has (expressions and accumulators for `$expr`, and the rest), as
 * the store had before this file.
 */
import { Context } from 'mingo/core';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';
import { Query as MingoQuery } from 'mingo/query';
import type { Options } from 'mingo/types';
import { resolve } from 'mingo/util';
import { compareStrings, rangeHolds, type RangeOperator } from '../../shared/text-order.js';


/** A range operator: by code point for a string bound (any element of an array value may match), else mingo's. */
function range(operator: RangeOperator) {
  const mingos = queryOperators[operator];
  return (selector: string, bound: unknown, options: Options) => {
    if (bound === null) return operator === '$gte' || operator === '$lte' ? queryOperators.$eq(selector, null, options) : () => false;
    if (typeof bound !== 'string') return mingos(selector, bound, options);
    return (doc: Record<string, unknown>): boolean => {
      const value: unknown = resolve(doc, selector, { unwrapArray: true });
      const test = (v: unknown) => typeof v === 'string' && rangeHolds[operator](compareStrings(v, bound));
      return Array.isArray(value) ? value.some(test) : test(value);
    };
  };
}

// As mingo's own default context (its index.js), with the four range query operators replaced.
const context = Context.init({
  accumulator: accumulatorOperators,
  expression: expressionOperators,
  pipeline: pipelineOperators,
  projection: projectionOperators,
  query: { ...queryOperators, $gt: range('$gt'), $gte: range('$gte'), $lt: range('$lt'), $lte: range('$lte') },
  window: windowOperators,
});

export class Query extends MingoQuery {
  constructor(filter: Record<string, unknown>) {
    super(filter as never, { context });
  }
}
