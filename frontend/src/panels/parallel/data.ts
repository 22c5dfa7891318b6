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

/** RunParallel of `run`/`span` (`part` "summary": its summary part only); `key` changes when the
 * ranks' load states or file versions change (fetch again). */
export function useParallel(run: string, span: string, baseKey: string, part = ""): ParallelState {
  const key = `${baseKey}\u0000${part}`;
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
        r = await fetchParallel(run, span, ctl.signal, part);
      } catch {
        return; // aborted
      }
      if (!alive) return;
      if (r.kind === "ok") {
        // drawn in a task after the one that decoded it (a long analysis decodes in ~100 ms at 1,024 ranks)
        await new Promise((res) => window.setTimeout(res, 0));
        if (!alive) return;
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


const onceCache = new Map<string, Promise<RunParallel | null>>();
const ONCE_TRIES = 150; // 150 × RETRY_MS = 2 minutes of 202s

/**
 * RunParallel of run/span for views that only want a hint from it (the timeline's default ranks):
 * fetched once per run and span, retried while the route answers 202; null when it fails or takes
 * too long. The Distributed view's cache is used when it holds the run and span.
 */
export function parallelOnce(run: string, span: string): Promise<RunParallel | null> {
  for (const v of [...parallelCache.values()].reverse()) if (v.run === run && v.span === span) return Promise.resolve(v);
  const key = `${run}\u0000${span}`;
  let p = onceCache.get(key);
  if (!p) {
    p = (async () => {
      for (let i = 0; i < ONCE_TRIES; i++) {
        let r;
        try {
          r = await fetchParallel(run, span);
        } catch {
          return null;
        }
        if (r.kind === "ok") return r.value;
        if (r.kind === "error") return null;
        await new Promise((res) => window.setTimeout(res, RETRY_MS));
      }
      return null;
    })();
    onceCache.set(key, p);
    while (onceCache.size > CACHE_SIZE) onceCache.delete(onceCache.keys().next().value!);
  }
  return p;
}
