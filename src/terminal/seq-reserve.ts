/**
 * The terminal object's one table: how far its output numbering has reserved. Seqs are handed out
 * in blocks written ahead, so an object that starts again (evicted, restarted) numbers from past any
 * seq it gave before, and a viewer's cursor from then is refused as evicted, never matched to other
 * output. One row, written once per block: no content.
 */
const BLOCK = 1024;

export class SeqReserve {
  private reserved: number;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS seq_reserve (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL)",
    );
    this.reserved = sql.exec<{ through: number }>("SELECT through FROM seq_reserve").toArray()[0]?.through ?? 0;
  }

  /** The first seq of a log started now: past every seq reserved before. */
  firstSeq(): number {
    const first = this.reserved + 1;
    this.reserveThrough(first);
    return first;
  }

  /** Makes sure `seq` is reserved (a block ahead) before it is given. */
  reserveThrough(seq: number): void {
    if (seq <= this.reserved) return;
    this.reserved = seq + BLOCK;
    this.sql.exec(
      "INSERT INTO seq_reserve (id, through) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET through = excluded.through",
      this.reserved,
    );
  }
}
