// Collective kinds in the charts of the run views: their names (collectives.KIND_LABELS, to find a kind's
// part among a chart table's columns) and colours. The parts, their names and their order are the display
// model's (present/display/parallel_charts.py).
import { CollectiveKind } from "../../gen/tb_paddle_profile/v1/summary_pb";

export const KIND_LABELS: Record<number, string> = {
  [CollectiveKind.ALL_REDUCE]: "all_reduce",
  [CollectiveKind.ALL_GATHER]: "all_gather",
  [CollectiveKind.REDUCE_SCATTER]: "reduce_scatter",
  [CollectiveKind.BROADCAST]: "broadcast",
  [CollectiveKind.SEND_RECV]: "send_recv",
  [CollectiveKind.ALL_TO_ALL]: "all_to_all",
  [CollectiveKind.OTHER]: "other",
};

/** One colour per collective kind, used by every chart of the view. */
export const KIND_COLORS: Record<number, string> = {
  [CollectiveKind.ALL_REDUCE]: "#f57c00",
  [CollectiveKind.ALL_GATHER]: "#e53935",
  [CollectiveKind.REDUCE_SCATTER]: "#d81b60",
  [CollectiveKind.BROADCAST]: "#8e24aa",
  [CollectiveKind.SEND_RECV]: "#fbc02d",
  [CollectiveKind.ALL_TO_ALL]: "#6d4c41",
  [CollectiveKind.OTHER]: "#78909c",
};
