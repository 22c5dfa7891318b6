// The one fetch-and-poll of the frontend: the routes answer HTTP 202 ("not ready yet") while ranks
// load, and the page asks again a little later. Every view fetches through usePolled (a hook: the
// answer of a key, fetched again when the key changes) or pollOnce (a promise: asked until it is ready).
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Fetched } from "./api";

/** How long the page waits before asking again a route that answered 202. */
export const RETRY_PENDING_MS = 700;

/** A key's answer: "loading" before the first one, "pending" (with the route's partial answer, if it
 * sends one) while the route answers 202. */
export type Polled<T> = { key: string } & (
  | { status: "loading" }
  | { status: "pending"; partial?: T }
  | { status: "error"; message: string }
  | { status: "ok"; value: T }
);

export interface PollOptions<T> {
  /** Wait between two 202s (RETRY_PENDING_MS unless told). */
  retryMs?: number;
  /** Answers kept by key, so switching back and forth does not fetch again: a map shared with other
   * users of the same route (a module's), else one of this hook's own. */
  cache?: Map<string, T>;
  /** The most answers the cache keeps (0: none kept). */
  cacheSize?: number;
}

/** Puts `value` in `cache`, dropping the oldest entries beyond `size`. */
export function remember<T>(cache: Map<string, T>, key: string, value: T, size: number): void {
  if (size <= 0) return;
  cache.set(key, value);
  while (cache.size > size) cache.delete(cache.keys().next().value!);
}

/**
 * Fetches `load()` whenever `key` changes (null: nothing to fetch, answers null), asking again while
 * the route answers 202. `load` is read when a request is made: only `key` decides when to fetch, so
 * everything `load` asks for must be part of the key.
 */
export function usePolled<T>(key: string | null, load: (signal: AbortSignal) => Promise<Fetched<T>>, options: PollOptions<T> = {}): Polled<T> | null {
  const own = useRef(new Map<string, T>());
  const loadRef = useRef(load);
  loadRef.current = load;
  const optRef = useRef(options);
  optRef.current = options;
  const [state, setState] = useState<Polled<T> | null>(null);
  useEffect(() => {
    if (key === null) {
      setState(null);
      return;
    }
    const { retryMs = RETRY_PENDING_MS, cache = own.current, cacheSize = 0 } = optRef.current;
    const hit = cacheSize > 0 ? cache.get(key) : undefined;
    if (hit !== undefined) {
      setState({ key, status: "ok", value: hit });
      return;
    }
    let alive = true;
    let timer = 0;
    const ctl = new AbortController();
    setState({ key, status: "loading" });
    const attempt = async () => {
      let r: Fetched<T>;
      try {
        r = await loadRef.current(ctl.signal);
      } catch {
        return; // aborted
      }
      if (!alive) return;
      if (r.kind === "ok") {
        // drawn in the task after the one that decoded it: no single long task for a large answer
        await new Promise((res) => window.setTimeout(res, 0));
        if (!alive) return;
        remember(cache, key, r.value, cacheSize);
        setState({ key, status: "ok", value: r.value });
      } else if (r.kind === "pending") {
        setState({ key, status: "pending", partial: r.partial });
        timer = window.setTimeout(attempt, retryMs);
      } else {
        setState({ key, status: "error", message: r.message });
      }
    };
    attempt();
    return () => {
      alive = false;
      ctl.abort();
      window.clearTimeout(timer);
    };
  }, [key]);
  if (key === null) return null;
  return state && state.key === key ? state : { key, status: "loading" };
}

/** A run view's answer: while the route answers 202, the notes of its partial answer, joined. */
export type Noted<T> =
  | { status: "loading" }
  | { status: "pending"; note: string }
  | { status: "error"; message: string }
  | { status: "ok"; value: T };

/** usePolled of a route whose partial answer carries notes (RunParallel, RunWhatIf), as a Noted. */
export function useNoted<T extends { notes: string[] }>(key: string, load: (signal: AbortSignal) => Promise<Fetched<T>>, options: PollOptions<T> = {}): Noted<T> {
  const got = usePolled(key, load, options)!;
  return useMemo((): Noted<T> => {
    if (got.status === "pending") return { status: "pending", note: got.partial?.notes.join("; ") ?? "" };
    if (got.status === "ok") return { status: "ok", value: got.value };
    if (got.status === "error") return { status: "error", message: got.message };
    return { status: "loading" };
  }, [got]);
}

export interface PollOnceOptions {
  /** Wait between two 202s. */
  retryMs?: number;
  /** Gives up (answers null) after this many 202s. */
  tries?: number;
  /** True once the answer is no longer wanted (another selection meanwhile): answers null at once. */
  stale?: () => boolean;
}

/**
 * Asks `load()` until it answers other than "pending" (a 202), giving every answer to `take` as it comes
 * (a partial one included: the timeline draws the ranks that are ready while the others load): the last
 * answer, or null when `load` throws (aborted), when `stale()` says the answer is no longer wanted, or
 * after `tries` 202s. `isPending` says what a 202 is for routes whose answer is not a Fetched (the
 * timeline's: a body with a pending flag).
 */
export async function pollEach<R>(
  load: () => Promise<R>,
  isPending: (r: R) => boolean,
  take: (r: R) => void,
  { retryMs = RETRY_PENDING_MS, tries = 150, stale = () => false }: PollOnceOptions = {},
): Promise<R | null> {
  for (let i = 0; i < tries; i++) {
    let r: R;
    try {
      r = await load();
    } catch {
      return null; // aborted
    }
    if (stale()) return null;
    take(r);
    if (!isPending(r)) return r;
    await new Promise((res) => window.setTimeout(res, retryMs));
    if (stale()) return null;
  }
  return null;
}

/** pollEach of an answer wanted only once it is ready: the first answer that is not a 202, or null
 * (aborted, stale, or still 202 after `tries`). */
export function pollOnce<R>(load: () => Promise<R>, isPending: (r: R) => boolean, options: PollOnceOptions = {}): Promise<R | null> {
  return pollEach(load, isPending, () => undefined, options);
}

/** pollOnce of a route answering Fetched: its last answer ("ok" or "error"), or null (aborted, stale, or
 * still 202 after `tries`). */
export function fetchOnce<T>(load: () => Promise<Fetched<T>>, options: PollOnceOptions = {}): Promise<Fetched<T> | null> {
  return pollOnce(load, (x) => x.kind === "pending", options);
}
