// Loading for the hybrid-parallel section: the run's RunParallel (retried while the route answers 202);
// it carries every rank's per-step breakdown too.
import { fetchParallel } from "../../api";
import type { RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { fetchOnce, remember, useNoted } from "../../poll";
import type { Noted } from "../../poll";

const RETRY_MS = 800;
const CACHE_SIZE = 4;

export type ParallelState = Noted<RunParallel>;

const parallelCache = new Map<string, RunParallel>();

/** RunParallel of `run`/`span` (`part` "summary": its summary part only); `key` changes when the
 * ranks' load states or file versions change (fetch again). */
export function useParallel(run: string, span: string, baseKey: string, part = ""): ParallelState {
  const key = `${baseKey}\u0000${part}`;
  return useNoted(key, (signal) => fetchParallel(run, span, signal, part), { retryMs: RETRY_MS, cache: parallelCache, cacheSize: CACHE_SIZE });
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
    p = fetchOnce(() => fetchParallel(run, span), { retryMs: RETRY_MS, tries: ONCE_TRIES }).then((r) => (r?.kind === "ok" ? r.value : null));
    remember(onceCache, key, p, CACHE_SIZE);
  }
  return p;
}
