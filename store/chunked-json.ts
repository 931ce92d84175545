// ChunkedJsonWriter builds a large JSON file as UTF-8 pieces between pauses, so encoding a store of any size
// never holds the event loop in one long piece: rows are stringified a chunk at a time, and the final copy into
// one array is cut into pieces too. Used by the full snapshot (store.json) and its delta layers.

/** ENCODE_COPY_BYTES_PER_PAUSE: the final copy moves about this many bytes of the file between pauses. */
export const ENCODE_COPY_BYTES_PER_PAUSE = 4 * 1024 * 1024;

export class ChunkedJsonWriter {
  private readonly encoder = new TextEncoder();
  private readonly parts: Uint8Array[] = [];
  private startedRows = false;

  constructor(private readonly pause: () => Promise<void>) {}

  /** text appends literal JSON. */
  text(json: string): void {
    this.parts.push(this.encoder.encode(json));
  }

  /**
   * elements appends the elements of one JSON array (no brackets): `count` sources read `chunkCount` at a time
   * through `rowsOf`, which may return fewer rows than sources (an empty chunk writes nothing). A pause comes
   * before every chunk but the file's first.
   */
  async elements(
    count: number,
    chunkCount: number,
    rowsOf: (from: number, to: number) => readonly unknown[],
  ): Promise<void> {
    let first = true;
    for (let from = 0; from < count; from += chunkCount) {
      if (this.startedRows) await this.pause();
      this.startedRows = true;
      const rows = rowsOf(from, Math.min(count, from + chunkCount));
      if (rows.length === 0) continue;
      const json = JSON.stringify(rows).slice(1, -1);
      this.parts.push(this.encoder.encode(first ? json : `,${json}`));
      first = false;
    }
  }

  /** bytes joins the pieces into one array, ENCODE_COPY_BYTES_PER_PAUSE at a time between pauses. */
  async bytes(): Promise<Uint8Array> {
    const out = new Uint8Array(this.parts.reduce((sum, part) => sum + part.length, 0));
    let at = 0;
    let copiedSincePause = 0;
    for (const part of this.parts) {
      if (copiedSincePause >= ENCODE_COPY_BYTES_PER_PAUSE) {
        await this.pause();
        copiedSincePause = 0;
      }
      out.set(part, at);
      at += part.length;
      copiedSincePause += part.length;
    }
    return out;
  }
}
