import { Query } from 'mingo';
import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/adapters/readstore/fast-filter.js';

/** Deterministic pseudo-random numbers, so a failure can be reproduced. */
function random(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) % 2 ** 32;
    return seed / 2 ** 32;
  };
}

const values = [null, 0, 1, 2.5, -3, '', 'a', 'Ab', 'b.c', '2026-01-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', true, false];
const fields = ['x', 'y', 'tags'];

function docs(rand: () => number): Record<string, unknown>[] {
  return Array.from({ length: 200 }, (_, i) => {
    const doc: Record<string, unknown> = { _id: `d${i}` };
    for (const field of fields) {
      const r = rand();
      if (r < 0.2) continue; // missing
      if (r < 0.35) doc[field] = [values[Math.floor(rand() * values.length)], values[Math.floor(rand() * values.length)]];
      else doc[field] = values[Math.floor(rand() * values.length)];
    }
    return doc;
  });
}

function condition(rand: () => number): unknown {
  const v = () => values[Math.floor(rand() * values.length)];
  const scalarOrder = () => (rand() < 0.5 ? ['a', 'b', '2026-03-01T00:00:00.000Z'][Math.floor(rand() * 3)] : [0, 1, 2][Math.floor(rand() * 3)]);
  switch (Math.floor(rand() * 9)) {
    case 0:
      return v();
    case 1:
      return { $eq: v() };
    case 2:
      return { $ne: v() };
    case 3:
      return { $in: [v(), v()] };
    case 4:
      return { $nin: [v(), v()] };
    case 5:
      return { [['$gt', '$gte', '$lt', '$lte'][Math.floor(rand() * 4)]!]: scalarOrder() };
    case 6:
      return { $exists: rand() < 0.5 };
    case 7:
      return { $regex: ['a', '^A', 'b\\.c', '2026'][Math.floor(rand() * 4)], ...(rand() < 0.5 ? { $options: 'i' } : {}) };
    default:
      return { $gte: scalarOrder(), $lt: 'z' };
  }
}

function filter(rand: () => number, depth = 0): Record<string, unknown> {
  const f: Record<string, unknown> = {};
  const n = 1 + Math.floor(rand() * 2);
  for (let i = 0; i < n; i++) f[fields[Math.floor(rand() * fields.length)]!] = condition(rand);
  if (depth === 0 && rand() < 0.4) f[['$and', '$or', '$nor'][Math.floor(rand() * 3)]!] = [filter(rand, 1), filter(rand, 1)];
  return f;
}

describe('fast filter', () => {
  it('matches exactly what mingo matches on 2,000 random filters', () => {
    const rand = random(42);
    const collection = docs(rand);
    let compiled = 0;
    for (let i = 0; i < 2000; i++) {
      const f = filter(rand);
      const fast = compileFilter(f);
      if (!fast) continue;
      compiled++;
      const query = new Query(f as never, {});
      const expected = collection.filter((d) => query.test(d)).map((d) => d._id);
      const actual = collection.filter((d) => fast(d)).map((d) => d._id);
      expect(actual, JSON.stringify(f)).toEqual(expected);
    }
    expect(compiled).toBeGreaterThan(1500);
  });

  it('leaves dotted paths and unknown operators to mingo', () => {
    expect(compileFilter({ 'a.b': 1 })).toBeUndefined();
    expect(compileFilter({ a: { $elemMatch: { b: 1 } } })).toBeUndefined();
    expect(compileFilter({ a: { b: 1 } })).toBeUndefined();
    expect(compileFilter({ $where: 'x' })).toBeUndefined();
  });
});
