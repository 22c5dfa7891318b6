// The run list as the page reads it: a run's workers in rank order, its label, a selection made valid for
// the list, the states that are still busy.
import { LoadState } from "./gen/tb_paddle_profile/v1/plugin_pb";
import type { RunEntry, RunList, SpanEntry, WorkerEntry } from "./gen/tb_paddle_profile/v1/plugin_pb";
import type { Selection } from "./state";

/** The states of a file still being worked on (the page polls the run list faster while one is). */
export const BUSY = new Set([LoadState.QUEUED, LoadState.LOADING, LoadState.GROWING, LoadState.LOAD_STATE_UNSPECIFIED]);

export function allSpans(list: RunList | null): SpanEntry[] {
  return (list?.runs ?? []).flatMap((r) => r.workers.flatMap((w) => w.spans));
}

/** A run's line in the run picker: its name, and its number of workers when more than one. */
export function runLabel(r: { run: string; workers: unknown[] } | undefined): string {
  if (!r) return "";
  return r.workers.length > 1 ? `${r.run} · ${r.workers.length} workers` : r.run;
}

/** A run's workers in the runs route's order (rank order: the numbers it gives, Fleet's order for Paddle's
 * default worker names, whose hosts come in natural order); the tab sorts nothing of its own. */
export function sortedWorkers(run: RunEntry): WorkerEntry[] {
  return run.workers;
}

/** The selection made valid for the run list: unknown run, worker or span fall back to the first one. */
export function resolve(sel: Selection, list: RunList): Selection {
  const run = list.runs.find((r) => r.run === sel.run) ?? list.runs[0];
  if (!run) return sel;
  const workers = sortedWorkers(run);
  const worker = workers.find((w) => w.worker === sel.worker) ?? workers[0];
  const span = worker?.spans.find((s) => s.span === sel.span) ?? worker?.spans[0];
  return { ...sel, run: run.run, worker: worker?.worker ?? "", span: span?.span ?? "" };
}

export function stateName(s: LoadState): string {
  return (LoadState[s] ?? "UNKNOWN").toLowerCase();
}

/** A stable fingerprint of the run list, so a poll that changed nothing does not re-render the page. */
export function fingerprint(list: RunList): string {
  return JSON.stringify(list.runs, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
}


/**
 * When a file's parse began, in ms of this page's clock. The parse runs in a worker process that reports
 * no progress, so the sidebar and the pending panel show its size and how long it has been parsing
 * (from the server's `loadingSinceUnixS`; before a server said, from when this page first saw it
 * LOADING), never a made-up percentage.
 */
const LOADING_SINCE = new Map<string, number>();

export function loadingSince(s: SpanEntry): number {
  const server = Number(s.loadingSinceUnixS || 0);
  if (server > 0) return Math.min(server * 1000, Date.now());
  const key = `${s.fileName}\u0000${s.fileSize}`;
  let t = LOADING_SINCE.get(key);
  if (t === undefined) LOADING_SINCE.set(key, (t = Date.now()));
  return t;
}

export function fmtElapsed(since: number): string {
  const s = Math.max(0, Math.floor((Date.now() - since) / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}
