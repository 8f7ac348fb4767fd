/**
 * A MONGO_URL whose read preference lets reads go to a secondary is warned about at start: the
 * api's answers after a write are read from the read models, and a secondary that has not caught
 * up answers without the write (docs/read-models.md, "Guards read the primary").
 */
import { describe, expect, it } from 'vitest';
import { secondaryReadPreference } from '../../src/main.js';

describe('MONGO_URL read preference', () => {
  it('names the read preferences that read from secondaries, and no other', () => {
    expect(secondaryReadPreference('mongodb://db-1,db-2/?replicaSet=rs0&readPreference=secondaryPreferred')).toBe('secondaryPreferred');
    expect(secondaryReadPreference('mongodb+srv://user:pw@cluster.example.net/checkin?readPreference=nearest&w=majority')).toBe('nearest');
    expect(secondaryReadPreference('mongodb://db-1/?readPreference=secondary')).toBe('secondary');
    expect(secondaryReadPreference('mongodb://db-1/?readPreference=primaryPreferred')).toBeUndefined();
    expect(secondaryReadPreference('mongodb://db-1/?readPreference=primary')).toBeUndefined();
    expect(secondaryReadPreference('mongodb://db-1/')).toBeUndefined();
  });
});
