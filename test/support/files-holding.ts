/**
 * Where personal data still is (issue 14's grep test): the files under a DATA_DIR, and the
 * documents of a MongoDB database, whose bytes hold any of the needles (any case).
 */
import fs from 'node:fs';
import path from 'node:path';
import { MongoClient } from 'mongodb';

/** Every file under `dir`, SQLite databases and their -wal/-shm included. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : entry.isFile() ? [full] : [];
  });
}

/** The files under `dir` whose bytes contain any of `needles` (as UTF-8, any case), relative to `dir`. */
export function filesHolding(dir: string, needles: string[]): string[] {
  const lower = needles.map((n) => n.toLowerCase());
  return filesUnder(dir)
    .filter((file) => {
      // Read as UTF-8, the encoding every store here writes text in: a needle beyond ASCII ("Zoë")
      // is found as its UTF-8 bytes (read as latin1 it never matched, whatever the file held).
      // Bytes that are not UTF-8 (page headers, numbers) become U+FFFD and match nothing.
      const text = fs.readFileSync(file).toString('utf8').toLowerCase();
      return lower.some((n) => text.includes(n));
    })
    .map((file) => path.relative(dir, file));
}

/** Documents of the MongoDB database that contain any of `needles`, as `collection/_id`. */
export async function mongoDocsHolding(url: string, dbName: string, needles: string[]): Promise<string[]> {
  const client = new MongoClient(url);
  try {
    const db = client.db(dbName);
    const hits: string[] = [];
    for (const { name } of await db.listCollections().toArray()) {
      for (const doc of await db.collection(name).find({}).toArray()) {
        const text = JSON.stringify(doc).toLowerCase();
        if (needles.some((n) => text.includes(n.toLowerCase()))) hits.push(`${name}/${String(doc._id)}`);
      }
    }
    return hits;
  } finally {
    await client.close();
  }
}
