/**
 * A turn's file changes undone and redone (docs/api.md "The workspace"): the workspace restored in
 * place to the turn's checkpoint, or to how it was before the undo; retry-safe under an operation
 * id; refused while a turn runs. Mounted at `/v1/conversations`; declared once
 * (../route-declaration.ts). The workspace's files themselves are read at `/v1/environment/files`.
 */

import { RestoreAck, RestoreRequest } from "../../schemas/checkpoints";
import { ConversationId, TurnId } from "../../schemas/common";
import { knownSession } from "../app-context";
import { invalid } from "../body";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

export const undoRoutes = new DeclaredRoutes();

for (const direction of ["undo", "redo"] as const) {
  undoRoutes.serve(
    {
      method: "post",
      path: `/:cid/turns/:turnId/${direction}`,
      summary:
        direction === "undo"
          ? "Undo a turn's file changes: the workspace restored to the checkpoint taken before the turn (retry-safe under operationId)"
          : "Redo a turn's file changes: the workspace restored to how it was before the turn's latest undo (retry-safe under operationId)",
      params: { cid: ConversationId, turnId: TurnId },
      body: RestoreRequest,
      answers: { 200: json(RestoreAck, "restored, or replayed (this operationId was acknowledged before)") },
      errors: [400, 401, 404, 409, 501, 502],
    },
    async (c, readBody) => {
      const turnId = TurnId.safeParse(c.req.param("turnId"));
      if (!turnId.success) throw invalid("turn id", turnId.error);
      const { stub, conversationId } = await knownSession(c);
      const body = await readBody(4 * 1024);
      return c.json(unwrapRpc(await stub.restoreWorkspace(conversationId, turnId.data, direction, body.operationId)));
    },
  );
}
