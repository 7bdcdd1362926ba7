/**
 * The terminal object's one table, one row: how far its output numbering has reserved, and when the
 * PTY expires as last proven. Seqs are handed out in blocks written ahead, so an object that starts
 * again (evicted, restarted) numbers from past any seq it gave before, and a viewer's cursor from
 * then is refused as evicted, never matched to other output. The expiry outlives the object's
 * memory, so the user's terminals are pruned by what the sandbox keeps (src/http/routes/terminals.ts).
 * Written once per block, per attach and per let-go: no content.
 */
const BLOCK = 1024;

export class TerminalState {
  private reserved: number;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS terminal_state (id INTEGER PRIMARY KEY CHECK (id = 1), seq_through INTEGER NOT NULL DEFAULT 0, expires_at INTEGER)",
    );
    sql.exec("INSERT OR IGNORE INTO terminal_state (id) VALUES (1)");
    this.reserved = sql.exec<{ seq_through: number }>("SELECT seq_through FROM terminal_state").one().seq_through;
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
    this.sql.exec("UPDATE terminal_state SET seq_through = ?", this.reserved);
  }

  /** When the PTY expires as last proven; null: never proven. */
  expiresAt(): number | null {
    return this.sql.exec<{ expires_at: number | null }>("SELECT expires_at FROM terminal_state").one().expires_at;
  }

  setExpiresAt(at: number): void {
    this.sql.exec("UPDATE terminal_state SET expires_at = ?", at);
  }
}
