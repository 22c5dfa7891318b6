// Loading for the hybrid-parallel section: the run's RunParallel (retried while the route answers 202),
// and, for the per-step breakdown, each rank's ParallelSteps from its Summary.
import { useEffect, useRef, useState } from "preact/hooks";
import { fetchParallel, fetchSummary } from "../../api";
import type { RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { ParallelStep } from "../../gen/tb_paddle_profile/v1/summary_pb";

const RETRY_MS = 800;
const CACHE_SIZE = 4;
const SUMMARY_CONCURRENCY = 4;

export type ParallelState =
  | { status: "loading" }
  | { status: "pending"; note: string }
  | { status: "error"; message: string }
  | { status: "ok"; value: RunParallel };

const parallelCache = new Map<string, RunParallel>();

function remember<T>(cache: Map<string, T>, key: string, value: T): void {
  cache.set(key, value);
  while (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
}

/** RunParallel of `run`/`span`; `key` changes when the ranks' load states change (fetch again). */
export function useParallel(run: string, span: string, key: string): ParallelState {
  const [state, setState] = useState<{ key: string; s: ParallelState }>({ key: "", s: { status: "loading" } });
  useEffect(() => {
    const hit = parallelCache.get(key);
    if (hit) {
      setState({ key, s: { status: "ok", value: hit } });
      return;
    }
    let alive = true;
    let timer = 0;
    const ctl = new AbortController();
    setState({ key, s: { status: "loading" } });
    const attempt = async () => {
      let r;
      try {
        r = await fetchParallel(run, span, ctl.signal);
      } catch {
        return; // aborted
      }
      if (!alive) return;
      if (r.kind === "ok") {
        remember(parallelCache, key, r.value);
        setState({ key, s: { status: "ok", value: r.value } });
      } else if (r.kind === "pending") {
        setState({ key, s: { status: "pending", note: r.partial?.notes.join("; ") ?? "" } });
        timer = window.setTimeout(attempt, RETRY_MS);
      } else {
        setState({ key, s: { status: "error", message: r.message } });
      }
    };
    attempt();
    return () => {
      alive = false;
      ctl.abort();
      window.clearTimeout(timer);
    };
  }, [key]);
  return state.key === key ? state.s : { status: "loading" };
}

export interface RankSteps {
  /** worker → its ParallelSteps (only what the chart needs is kept, not the whole Summary). */
  steps: Map<string, ParallelStep[]>;
  done: number;
  total: number;
  errors: string[];
}

const stepsCache = new Map<string, RankSteps>();

/** Each rank's per-step breakdown, fetched from the summary route a few ranks at a time (when `enabled`). */
export function useRankSteps(run: string, span: string, workers: string[], key: string, enabled: boolean): RankSteps | null {
  const [state, setState] = useState<{ key: string; v: RankSteps } | null>(null);
  const latest = useRef(workers);
  latest.current = workers;
  useEffect(() => {
    if (!enabled) return;
    const hit = stepsCache.get(key);
    if (hit) {
      setState({ key, v: hit });
      return;
    }
    let alive = true;
    const ctl = new AbortController();
    const list = latest.current;
    const acc: RankSteps = { steps: new Map(), done: 0, total: list.length, errors: [] };
    setState({ key, v: { ...acc } });
    let next = 0;
    const worker = async () => {
      while (alive && next < list.length) {
        const w = list[next++];
        let r;
        try {
          r = await fetchSummary({ run, worker: w, span }, ctl.signal);
        } catch {
          return; // aborted
        }
        if (!alive) return;
        if (r.kind === "ok") acc.steps.set(w, r.value.parallel?.steps ?? []);
        else acc.errors.push(`${w}: ${r.kind === "error" ? r.message : "not ready"}`);
        acc.done++;
        setState({ key, v: { ...acc } });
      }
    };
    Promise.all(Array.from({ length: Math.min(SUMMARY_CONCURRENCY, list.length) }, worker)).then(() => {
      if (alive && acc.done === list.length && !acc.errors.length) remember(stepsCache, key, acc);
    });
    return () => {
      alive = false;
      ctl.abort();
    };
  }, [key, enabled]);
  return state && state.key === key ? state.v : null;
}
