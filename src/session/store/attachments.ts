/**
 * `attachments`: the files this conversation's uploads wrote into the workspace (issue 40,
 * docs/api.md#attachments), by the id each upload answered. A turn names them by id; an id this
 * table does not hold is no attachment of this conversation.
 */
import type { Attachment } from "../../schemas/workspace";

interface Row extends Record<string, SqlStorageValue> {
  id: string;
  path: string;
  name: string;
  size: number;
  media_type: string;
}

export class AttachmentStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM attachments").toArray()[0]?.n ?? 0;
  }

  put(attachment: Attachment, now: number): void {
    this.sql.exec(
      "INSERT INTO attachments (id, path, name, size, media_type, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      attachment.id,
      attachment.path,
      attachment.name,
      attachment.size,
      attachment.mediaType,
      now,
    );
  }

  /** The attachments of `ids` this conversation holds, in the order asked (an id it does not hold is left out). */
  byIds(ids: readonly string[]): Attachment[] {
    const out: Attachment[] = [];
    for (const id of ids) {
      const row = this.sql
        .exec<Row>("SELECT id, path, name, size, media_type FROM attachments WHERE id = ?", id)
        .toArray()[0];
      if (row) out.push({ id: row.id, path: row.path, name: row.name, size: row.size, mediaType: row.media_type });
    }
    return out;
  }
}
