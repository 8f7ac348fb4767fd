import { describe, expect, it } from 'vitest';
import { guestColumns, neutralise, neutraliseForCsv, plusOnesLeft } from '../../src/exports/columns.js';
import { isTimeZone, isoInZone, wallClock } from '../../src/exports/wall-clock.js';
import type { GuestDoc } from '../../src/projections/guests.js';

describe('formula neutralisation for CSV read with semicolons', () => {
  it('puts an apostrophe after a semicolon that a formula character follows, past any quotes, and nowhere else', () => {
    expect(neutraliseForCsv('x;=1+1;')).toBe("x;'=1+1;");
    expect(neutraliseForCsv('x;"=1+1"')).toBe(`x;'"=1+1"`);
    expect(neutraliseForCsv('=a;@b;c')).toBe("'=a;'@b;c");
    expect(neutraliseForCsv('a;－b')).toBe("a;'－b");
    for (const text of ['a;b', 'a; =b', 'a;1-2', 'Zoë;Ada', ';']) expect(neutraliseForCsv(text)).toBe(text);
  });
});

describe('formula neutralisation', () => {
  it('prefixes an apostrophe to text a spreadsheet could evaluate, and to nothing else', () => {
    for (const text of ['=1+1', '+31 20 123', '-5', '@SUM(A1)', '\tx', '\rx', '＝1', '＋1', '－1', '＠x']) {
      expect(neutralise(text)).toBe(`'${text}`);
    }
    for (const text of ['', 'Ada', " 'quoted'", 'a=b', '1-2', 'Zoë', '"=x"']) expect(neutralise(text)).toBe(text);
  });
});

describe('wall-clock time of an IANA zone', () => {
  it('follows the zone offset, daylight saving and odd offsets included', () => {
    const at = (iso: string, zone: string) => wallClock(zone)(new Date(iso)).toISOString();
    expect(at('2026-07-01T10:00:00.250Z', 'Europe/Berlin')).toBe('2026-07-01T12:00:00.250Z');
    expect(at('2026-01-15T10:00:00Z', 'Europe/Berlin')).toBe('2026-01-15T11:00:00.000Z');
    expect(at('2026-01-15T10:00:00Z', 'Asia/Kathmandu')).toBe('2026-01-15T15:45:00.000Z');
    expect(at('2026-01-15T10:00:00Z', 'America/St_Johns')).toBe('2026-01-15T06:30:00.000Z');
    // New York falls back at 06:00Z on 2026-11-01: 01:30 happens twice.
    expect(at('2026-11-01T05:30:00Z', 'America/New_York')).toBe('2026-11-01T01:30:00.000Z');
    expect(at('2026-11-01T06:30:00Z', 'America/New_York')).toBe('2026-11-01T01:30:00.000Z');
    expect(at('2026-11-01T06:30:00Z', 'UTC')).toBe('2026-11-01T06:30:00.000Z');
  });

  it('knows IANA names only', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('W. Europe Standard Time')).toBe(false);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});

describe('columns', () => {
  const guest = (fields: Partial<GuestDoc>) => ({ _id: 'g', eventId: 'e', admittedPlusOnes: 0, inside: false, ...fields }) as GuestDoc;

  it('are every spec Guest field, plus plusOnesLeft, then ticketCode (issue 16) and image last', () => {
    expect(guestColumns).toHaveLength(25);
    expect(guestColumns.slice(-2).map((c) => c.name)).toEqual(['ticketCode', 'image']);
  });

  it('count plus ones left as the door does', () => {
    expect(plusOnesLeft(guest({ plusOnes: 3 }))).toBe(3);
    expect(plusOnesLeft(guest({ plusOnes: 3, inside: true, admittedPlusOnes: 1 }))).toBe(2);
    expect(plusOnesLeft(guest({ plusOnes: 1, inside: true, admittedPlusOnes: 4 }))).toBe(0);
    expect(plusOnesLeft(guest({}))).toBe(0);
  });
});

describe('CSV time text', () => {
  it('is ISO 8601 in the zone with its offset, the same clock time as the Excel cell', () => {
    expect(isoInZone('Europe/Berlin')(new Date('2026-07-01T10:00:00.250Z'))).toBe('2026-07-01T12:00:00.250+02:00');
    expect(isoInZone('America/St_Johns')(new Date('2026-01-15T10:00:00Z'))).toBe('2026-01-15T06:30:00.000-03:30');
    expect(isoInZone('UTC')(new Date('2026-01-15T10:00:00Z'))).toBe('2026-01-15T10:00:00.000+00:00');
  });
});
