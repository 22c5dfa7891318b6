// The Compare view's choice: a baseline and a candidate, each a run, a worker ("*": every rank, the whole
// run) and a span, kept in the URL (state.ts COMPARE_KEYS). Nothing here computes a result: it makes the
// choice valid for the run list, turns it into the `diff` route's parameters, and reads the display
// model's row links ("diff:b=<worker>&c=<worker>&q=<name>").
import type { DiffChoice } from "../../api";
import type { RunEntry, RunList, WorkerEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { Selection } from "../../state";

/** The worker value that stands for every rank of the run (the across-ranks comparison). */
export const ALL_RANKS = "*";
/** The baseline worker that stands for the median of the candidate rank's role peers (the diff route's
 * "~peers": the same run and span as the candidate, its operators and kernels per step). */
export const PEERS = "~peers";

export interface Side {
  run: string;
  worker: string;
  span: string;
}

export type Mode = "rank" | "run" | "peers";

/** A run's workers in the runs route's order (rank order); nothing re-sorted here. */
export function sortedWorkers(run: RunEntry): WorkerEntry[] {
  return run.workers;
}

/** The spans a side can choose: the worker's, or for the whole run every span any worker recorded. */
export function spansOf(run: RunEntry | undefined, worker: string): string[] {
  if (!run) return [];
  if (worker === ALL_RANKS) {
    const seen: string[] = [];
    for (const w of run.workers) for (const s of w.spans) if (!seen.includes(s.span)) seen.push(s.span);
    return seen;
  }
  return run.workers.find((w) => w.worker === worker)?.spans.map((s) => s.span) ?? [];
}

export function modeOf(sel: Pick<Selection, "bworker" | "cworker">): Mode {
  if (sel.bworker === PEERS) return "peers";
  return sel.bworker === ALL_RANKS || sel.cworker === ALL_RANKS ? "run" : "rank";
}

/** Compare opened on the page's rank (the candidate) against the median of its role peers (the baseline). */
export function peersChoice(sel: Selection): Partial<Selection> {
  return { view: "compare", brun: sel.run, bworker: PEERS, bspan: sel.span, crun: sel.run, cworker: sel.worker, cspan: sel.span };
}

/**
 * The choice made valid for the run list. The baseline defaults to the page's own run, worker and span;
 * the candidate to the next run (the same rank where it has one: by worker name, else rank number), else
 * another rank of the same run. Both sides are in the same mode: one rank each, or the whole runs.
 */
export function resolveChoice(sel: Selection, list: RunList): Selection {
  const runs = list.runs;
  if (!runs.length) return sel;
  const mode = modeOf(sel);
  const find = (name: string) => runs.find((r) => r.run === name);
  if (mode === "peers") {
    // one rank (the candidate: as chosen, else the page's) and the median of its role peers, of its run and span
    const pRun = find(sel.crun) ?? find(sel.run) ?? runs[0];
    const pWorkers = sortedWorkers(pRun);
    const pWorker = (pWorkers.find((w) => w.worker === sel.cworker) ?? pWorkers.find((w) => w.worker === sel.worker) ?? pWorkers[0])?.worker ?? "";
    const pSpans = spansOf(pRun, pWorker);
    const pSpan = pSpans.includes(sel.cspan) ? sel.cspan : pSpans.includes(sel.span) ? sel.span : (pSpans[0] ?? "");
    return { ...sel, brun: pRun.run, bworker: PEERS, bspan: pSpan, crun: pRun.run, cworker: pWorker, cspan: pSpan };
  }

  const bRun = find(sel.brun) ?? find(sel.run) ?? runs[0];
  const bWorkers = sortedWorkers(bRun);
  const bWorker = mode === "run" ? ALL_RANKS : ((bWorkers.find((w) => w.worker === sel.bworker) ?? bWorkers.find((w) => w.worker === sel.worker) ?? bWorkers[0])?.worker ?? "");
  const bSpans = spansOf(bRun, bWorker);
  const bSpan = bSpans.includes(sel.bspan) ? sel.bspan : bSpans.includes(sel.span) ? sel.span : (bSpans[0] ?? "");

  // The candidate: as chosen, else the next run (one that has the baseline's worker first), else the same run.
  const at = runs.indexOf(bRun);
  const after = [...runs.slice(at + 1), ...runs.slice(0, at)];
  // the same rank: its worker name, else its rank number (default worker names hold the pid, which
  // differs from run to run)
  const bRank = bWorkers.find((w) => w.worker === bWorker)?.rank ?? -1;
  const same = (ws: WorkerEntry[]) => ws.find((w) => w.worker === bWorker) ?? (bRank >= 0 ? ws.find((w) => w.rank === bRank) : undefined);
  const next = (mode === "rank" ? after.find((r) => same(r.workers)) : undefined) ?? after[0];
  const cRun = find(sel.crun) ?? next ?? bRun;
  const cWorkers = sortedWorkers(cRun);
  let cWorker: string;
  if (mode === "run") cWorker = ALL_RANKS;
  else {
    const fallback =
      cRun.run === bRun.run
        ? (cWorkers.find((w) => w.worker !== bWorker) ?? cWorkers[0])
        : (same(cWorkers) ?? cWorkers[0]);
    cWorker = (cWorkers.find((w) => w.worker === sel.cworker) ?? fallback)?.worker ?? "";
  }
  const cSpans = spansOf(cRun, cWorker);
  const cSpan = cSpans.includes(sel.cspan) ? sel.cspan : cSpans.includes(bSpan) ? bSpan : (cSpans[0] ?? "");
  return { ...sel, brun: bRun.run, bworker: bWorker, bspan: bSpan, crun: cRun.run, cworker: cWorker, cspan: cSpan };
}

export function baselineOf(sel: Selection): Side {
  return { run: sel.brun, worker: sel.bworker, span: sel.bspan };
}

export function candidateOf(sel: Selection): Side {
  return { run: sel.crun, worker: sel.cworker, span: sel.cspan };
}

/** The `diff` route's choice: a worker of "*" is sent empty (the whole run); PEERS as it is. */
export function diffChoice(sel: Selection): DiffChoice {
  const side = (s: Side) => ({ run: s.run, worker: s.worker === ALL_RANKS ? "" : s.worker, span: s.span });
  return { baseline: side(baselineOf(sel)), candidate: side(candidateOf(sel)) };
}

/** The choice with baseline and candidate exchanged. */
export function swapped(sel: Selection): Partial<Selection> {
  return { brun: sel.crun, bworker: sel.cworker, bspan: sel.cspan, crun: sel.brun, cworker: sel.bworker, cspan: sel.bspan };
}

/** Where a delta row leads: the baseline's and the candidate's worker (empty: the row is not on that side) and the name to search. */
export interface DiffLink {
  baseline: string;
  candidate: string;
  name: string;
}

export function parseDiffLink(link: string): DiffLink | null {
  if (!link.startsWith("diff:")) return null;
  const q = new URLSearchParams(link.slice("diff:".length));
  return { baseline: q.get("b") ?? "", candidate: q.get("c") ?? "", name: q.get("q") ?? "" };
}

/** The selection that opens a side's timeline on `worker` with `name` searched (as "Show in timeline" does). */
export function timelineAt(side: { run: string; span: string }, worker: string, name: string): Partial<Selection> {
  return { view: "timeline", run: side.run, worker, span: side.span, tlq: name, tlfind: name ? worker : "", tl: "", tlsel: "", tlranks: "", tlfold: "", tlcp: "" };
}
