// Decodes the large protobuf answers off the page's main thread: the page posts the bytes and the
// message's type name, and gets the decoded message back (a plain object, copied by structured clone,
// which costs the main thread a fraction of decoding it there).
import { createRegistry, fromBinary } from "@bufbuild/protobuf";
import { file_tb_paddle_profile_v1_diff } from "./gen/tb_paddle_profile/v1/diff_pb";
import { file_tb_paddle_profile_v1_display } from "./gen/tb_paddle_profile/v1/display_pb";
import { file_tb_paddle_profile_v1_plugin } from "./gen/tb_paddle_profile/v1/plugin_pb";
import { file_tb_paddle_profile_v1_summary } from "./gen/tb_paddle_profile/v1/summary_pb";
import { file_tb_paddle_profile_v1_whatif } from "./gen/tb_paddle_profile/v1/whatif_pb";

const registry = createRegistry(
  file_tb_paddle_profile_v1_plugin,
  file_tb_paddle_profile_v1_summary,
  file_tb_paddle_profile_v1_display,
  file_tb_paddle_profile_v1_whatif,
  file_tb_paddle_profile_v1_diff,
);

export interface DecodeRequest {
  id: number;
  typeName: string;
  bytes: Uint8Array;
}

self.onmessage = (e: MessageEvent<DecodeRequest>) => {
  const { id, typeName, bytes } = e.data;
  const desc = registry.getMessage(typeName);
  try {
    if (!desc) throw new Error(`unknown message ${typeName}`);
    self.postMessage({ id, value: fromBinary(desc, bytes) });
  } catch (err) {
    self.postMessage({ id, error: (err as Error).message });
  }
};
