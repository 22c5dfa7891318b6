// Loading for the hybrid-parallel section: the run's RunParallel (retried while the route answers 202);
// it carries every rank's per-step breakdown too.
import { useEffect, useState } from "preact/hooks";
import { fetchParallel } from "../../api";
import type { RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";

const RETRY_MS = 800;
const CACHE_SIZE = 4;

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

/** RunParallel of `run`/`span`; `key` changes when the ranks' load states or file versions change
 * (fetch again). */
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

