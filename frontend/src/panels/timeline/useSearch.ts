// The timeline's search (timeline_search): the slices named like the text on the ranks shown, highlighted,
// the first occurrence on the current (or linked) rank opened, ‹ › to step through the matches.
import { useRef, useState } from "preact/hooks";
import type { TimelineSearch } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { useEvent } from "../../hooks";
import { pollOnce } from "../../poll";
import type { TimelineRefs } from "./core";
import { fetchSearch } from "./data";

export interface Search {
  /** the text in the box */
  query: string;
  setQuery: (q: string) => void;
  /** the text searched for (highlighted) */
  active: string;
  found: TimelineSearch | null;
  matchAt: number;
  /** searches `text`; `open`: selects the first occurrence on the rank `named` (a link's), else the current one */
  run: (text: string, open: boolean, named?: string) => Promise<void>;
  /** selects the next (+1) or previous (-1) match */
  step: (d: number) => void;
}

export interface SearchDeps {
  run: string;
  span: string;
  /** the current rank */
  worker: string;
  tlq: string;
  /** ranks whose index is still being built */
  building: () => number;
  update: (p: { tlq: string; tlfind: string }) => void;
  setError: (message: string) => void;
  select: (worker: string, id: number, focus?: boolean) => Promise<void>;
}

export function useSearch(t: TimelineRefs, deps: SearchDeps): Search {
  const [query, setQuery] = useState(deps.tlq);
  const [active, setActive] = useState(deps.tlq);
  const [found, setFound] = useState<TimelineSearch | null>(null);
  const [matchAt, setMatchAt] = useState(0);
  const last = useRef(0); // a newer search makes an older one's answer stale
  t.marks.current.query = active;

  /** The rank a link or a search lands on: the one the link names (tlfind = its worker), else the current one. */
  const targetRank = (named?: string): string => {
    if (named && named !== "1" && t.chosen.current.includes(named)) return named;
    return deps.worker;
  };
  /** The matches of `text` on `workers`: exact names first, else names that contain it. */
  const matches = async (workers: string[], text: string) => {
    const got = await fetchSearch(deps.run, deps.span, workers, text, true, t.base.current);
    return got.kind === "ok" && Number(got.value.total) === 0 ? fetchSearch(deps.run, deps.span, workers, text, false, t.base.current) : got;
  };

  const run = useEvent(async (text: string, open: boolean, named?: string) => {
    const q = text.trim();
    const me = ++last.current;
    setActive(q);
    t.marks.current.query = q;
    deps.update({ tlq: q, tlfind: "" });
    if (!q) {
      setFound(null);
      return;
    }
    // the indexes are still being built: asked once the first window has fixed the base and every rank is indexed
    const ready = await pollOnce(async () => t.base.current !== undefined && !deps.building(), (ok) => !ok, { tries: Infinity, stale: () => last.current !== me });
    if (!ready) return;
    const got = await matches(t.chosen.current, q);
    if (last.current !== me) return;
    if (got.kind === "error") {
      deps.setError(got.message);
      return;
    }
    const res = got.value;
    // the first occurrence on the current (or named) rank, never another rank's
    const target = targetRank(named);
    let at = res.matches.findIndex((m) => m.worker === target);
    if (at < 0 && open && t.chosen.current.includes(target)) {
      // its matches are beyond the first page of all the ranks' matches: ask for that rank alone
      const own = await matches([target], q);
      if (own.kind === "ok" && own.value.matches.length) {
        res.matches = [...own.value.matches, ...res.matches];
        at = 0;
      }
    }
    setFound(res);
    setMatchAt(Math.max(0, at));
    const m = res.matches[Math.max(0, at)];
    if (open && m) await deps.select(m.worker, Number(m.id), true);
  });

  const step = (d: number) => {
    if (!found || !found.matches.length) return;
    const i = (matchAt + d + found.matches.length) % found.matches.length;
    setMatchAt(i);
    const m = found.matches[i];
    deps.select(m.worker, Number(m.id), true);
  };

  return { query, setQuery, active, found, matchAt, run, step };
}
