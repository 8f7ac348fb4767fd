import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

/**
 * MongoDB's database names are at most 63 bytes (DatabaseName::kMaxDatabaseNameLength, counted on
 * the UTF-8 string: "db name must be at most 63 characters"), so `é` counts two. A name of 63
 * characters and more bytes passed the start's check and failed at the read store's first write.
 * FerretDB's SQLite backend is not the judge here, so the check is on the configuration.
 */
describe('MONGO_DB length in bytes', () => {
  it('refuses a name of at most 63 characters but more than 63 bytes, and takes one of 63 bytes', () => {
    expect(() => loadConfig({ MONGO_DB: 'é'.repeat(40) })).toThrow(/invalid configuration: MONGO_DB must be a MongoDB database name such as checkin \(at most 63 bytes/);
    expect(() => loadConfig({ MONGO_DB: `a${'é'.repeat(31)}x` })).toThrow(/MONGO_DB/);
    expect(loadConfig({ MONGO_DB: `a${'é'.repeat(31)}` }).mongoDb).toBe(`a${'é'.repeat(31)}`);
    expect(loadConfig({ MONGO_DB: 'x'.repeat(63) }).mongoDb).toBe('x'.repeat(63));
  });
});
