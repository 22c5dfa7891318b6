// Loading for the hybrid-parallel section: the run's RunParallel (retried while the route answers 202), in
// the parts the page draws (the summary, the details, a table the details leave out).
import { fetchParallel } from "../../api";
import type { RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { tableOf, viewOf } from "../../display/model";
import type { Table } from "../../gen/tb_paddle_profile/v1/display_pb";
import { fetchOnce, remember, useNoted, usePolled } from "../../poll";
import type { Noted } from "../../poll";

const RETRY_MS = 800;
const CACHE_SIZE = 4;

export type ParallelState = Noted<RunParallel>;

const parallelCache = new Map<string, RunParallel>();

/** RunParallel of `run`/`span` (`part` "summary": its summary part only, "details": what the page draws);
 * `key` changes when the ranks' load states or file versions change (fetch again). */
export function useParallel(run: string, span: string, baseKey: string, part = ""): ParallelState {
  const key = `${baseKey}\u0000${part}`;
  return useNoted(key, (signal) => fetchParallel(run, span, signal, part), { retryMs: RETRY_MS, cache: parallelCache, cacheSize: CACHE_SIZE });
}

/** The table `key` of the parallel view from its own part of the route (a table the details part leaves out:
 * "breakdown_steps"), asked for once `wanted`; undefined until it comes. */
export function useParallelTable(rp: RunParallel, key: string, wanted: boolean): Table | undefined {
  const got = usePolled(wanted ? `${rp.run}\u0000${rp.span}\u0000${rp.analysisKey}\u0000${key}` : null, (signal) => fetchParallel(rp.run, rp.span, signal, key), {
    retryMs: RETRY_MS,
    cache: parallelCache,
    cacheSize: CACHE_SIZE,
  });
  return got?.status === "ok" ? tableOf(viewOf(got.value.display, "parallel"), key) : undefined;
}

const onceCache = new Map<string, Promise<RunParallel | null>>();
const ONCE_TRIES = 150; // 150 × RETRY_MS = 2 minutes of 202s

/**
 * RunParallel of run/span for views that only want a hint from it (the timeline's default ranks):
 * fetched once per run and span, retried while the route answers 202; null when it fails or takes
 * too long. The Distributed view's cache is used when it holds the run and span.
 */
export function parallelOnce(run: string, span: string): Promise<RunParallel | null> {
  // any part the Distributed view holds but a single table's (no ranks)
  for (const v of [...parallelCache.values()].reverse()) if (v.run === run && v.span === span && v.ranks.length) return Promise.resolve(v);
  const key = `${run}\u0000${span}`;
  let p = onceCache.get(key);
  if (!p) {
    p = fetchOnce(() => fetchParallel(run, span, undefined, "summary"), { retryMs: RETRY_MS, tries: ONCE_TRIES }).then((r) => (r?.kind === "ok" ? r.value : null));
    remember(onceCache, key, p, CACHE_SIZE);
  }
  return p;
}
