/**
 * An answer already serialised to JSON (UTF-8). A query that keeps its answers as bytes
 * returns this, and `defineRoute` sends the bytes as they are instead of `res.json`.
 */
export class SerializedJson {
  constructor(readonly bytes: Buffer) {}

  static of(value: unknown): SerializedJson {
    return new SerializedJson(Buffer.from(JSON.stringify(value)));
  }
}
