// One label per rank everywhere in the tab: WorkerEntry.label / RankParallel.label / Straggler.label
// (the analysis's "rank 5 · dp1 pp0 mp1 · gpunode1 GPU1 · pid 305113"), else one made from the
// worker name (rank, host, pid), else the worker name itself.
import type { WorkerEntry } from "./gen/tb_paddle_profile/v1/plugin_pb";

export function fallbackLabel(worker: string, rank: number, hostname = "", pid = 0n): string {
  if (rank >= 0) return worker === `rank${rank}` ? `rank ${rank}` : `rank ${rank} · ${worker}`;
  if (hostname || pid > 0n) return [hostname, pid > 0n ? `pid ${pid}` : ""].filter(Boolean).join(" · ");
  return worker;
}

export function workerLabel(w: WorkerEntry): string {
  return w.label || fallbackLabel(w.worker, w.rank, w.hostname, w.pid);
}

/** Labels of a run's workers by worker name (the run list knows them before any analysis). */
export type LabelMap = Map<string, string>;

export function labelOf(r: { worker: string; rank: number; label?: string; hostname?: string; pid?: bigint }, known?: LabelMap): string {
  return r.label || known?.get(r.worker) || fallbackLabel(r.worker, r.rank, r.hostname ?? "", r.pid ?? 0n);
}
