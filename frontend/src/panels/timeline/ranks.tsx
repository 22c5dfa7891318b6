// Which ranks the detailed timeline draws: the URL's set (tlranks), else the default set the server's
// order gives (useDefaultRanks), and the bar that pages through them and picks others (RankBar).
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Picker } from "../../components/Picker";
import type { PickItem } from "../../components/Picker";
import type { WorkerEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { workerLabel } from "../../labels";
import { pollOnce } from "../../poll";
import { fetchCompact } from "./data";

/** Ranks per page, and the most that can be chosen at once: a window never asks for every rank. */
export const RANK_PAGE = 16;
export const MAX_RANKS = 32;

export function parseRankSet(text: string): string[] {
  const out: string[] = [];
  for (const part of text.split(",")) {
    if (!part) continue;
    try {
      out.push(decodeURIComponent(part));
    } catch {
      /* a malformed escape: skip it */
    }
  }
  return out;
}

export function writeRankSet(workers: string[]): string {
  return workers.map(encodeURIComponent).join(",");
}

export interface RankDefault {
  workers: string[];
  /** Why these ranks, in words (the server's, for a run of more than RANK_PAGE ranks). */
  why: string;
  /** The rank the timeline opens on: the straggler, or the worker named. */
  focus?: string;
  /** The server's roles (worker -> "straggler", "peer" of the first one, or "named": the worker named). */
  roles?: Map<string, string>;
}

/**
 * The ranks shown when none are chosen: all of them up to RANK_PAGE; else those the server's order gives
 * a role (route timeline_compact with order_only=1, timeline/compact.py order_of: the straggler(s) the
 * verdict names and the first one's role peers, nearest rank numbers first; with a worker named, any but
 * the run's first rank, which the tab selects when none is named, that worker and its role peers in their
 * place), at most RANK_PAGE, in rank order, with the server's sentence saying why; the order's first
 * RANK_PAGE when none has a role (rank order: no straggler). null until the server answers; the page of
 * RANK_PAGE ranks that holds the current rank when it cannot.
 */
export function useDefaultRanks(run: string, span: string, all: string[], current: string): RankDefault | null {
  const many = all.length > RANK_PAGE;
  const ci = all.indexOf(current);
  const focus = many && ci > 0 ? current : "";
  const key = `${run}|${span}|${focus}|${all.length}`;
  const [got, setGot] = useState<{ key: string; value: RankDefault } | null>(null);
  const every = useMemo(() => ({ workers: all, why: "every rank" }), [all]);
  const allRef = useRef(all);
  allRef.current = all;
  useEffect(() => {
    if (!many) return;
    let alive = true;
    const load = () => fetchCompact({ run, span, bins: 1, offset: 0, limit: 0, focus: focus || undefined });
    pollOnce(load, (g) => g.kind === "ok" && g.pending && !g.value.order.length, { stale: () => !alive }).then((g) => {
      if (!alive) return;
      const names = allRef.current;
      const index = new Map(names.map((w, i) => [w, i]));
      if (g && g.kind === "ok" && g.value.order.length) {
        const order = g.value.order.filter((o) => index.has(o.worker));
        const roled = order.filter((o) => o.role); // the straggler(s) or the worker named, and the role peers
        const workers = (roled.length ? roled : order).slice(0, RANK_PAGE).map((o) => o.worker).sort((x, y) => index.get(x)! - index.get(y)!);
        const roles = new Map(roled.map((o) => [o.worker, o.role]));
        setGot({ key, value: { workers, why: g.value.why, focus: order[0]?.role ? order[0].worker : undefined, roles } });
      } else {
        const start = Math.floor(Math.max(0, names.indexOf(current)) / RANK_PAGE) * RANK_PAGE;
        const reason = g && g.kind === "error" ? g.message : "the server's order of the ranks is not known yet";
        setGot({ key, value: { workers: names.slice(start, start + RANK_PAGE), why: `the page of the current rank (${reason})` } });
      }
    });
    return () => {
      alive = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `current` matters through `focus` (in `key`); the fallback page reads it when the answer comes
  }, [key, many]);
  if (!many) return every;
  return got && got.key === key ? got.value : null;
}

export interface RankChoice {
  /** every worker of the run, in rank order */
  all: string[];
  /** the URL's ranks (tlranks), known ones, at most MAX_RANKS; empty: the default set */
  explicit: string[];
  /** the default set: null until the server answers */
  fallback: RankDefault | null;
  /** the ranks drawn: the URL's, else the default set (none until the server answers: no window is asked for before) */
  chosen: string[];
  /** the rank whose header the timeline opens on: the default set's focus (the straggler when no worker is
   * named), else the current rank */
  open: string;
}

export function useRankChoice(run: string, span: string, workers: WorkerEntry[], tlranks: string, current: string): RankChoice {
  const all = useMemo(() => workers.map((w) => w.worker), [workers]);
  const explicit = useMemo(() => {
    const known = new Set(all);
    return parseRankSet(tlranks).filter((w) => known.has(w)).slice(0, MAX_RANKS);
  }, [tlranks, all]);
  const fallback = useDefaultRanks(run, span, all, current);
  const chosen = useMemo(() => (explicit.length ? explicit : (fallback?.workers ?? [])), [explicit, fallback]);
  const open = !explicit.length && fallback?.focus && chosen.includes(fallback.focus) ? fallback.focus : current;
  return { all, explicit, fallback, chosen, open };
}

/**
 * Which ranks are drawn: "ranks 1–16 of 1,024" with ◂ ▸ to page through the rest in rank order, a
 * searchable picker to add or remove ranks (at most MAX_RANKS at once), and "Default" to go back to
 * the default set.
 */
export function RankBar(props: {
  workers: WorkerEntry[];
  all: string[];
  chosen: string[];
  explicit: boolean;
  why: string;
  labels: Map<string, string>;
  set: (workers: string[] | null) => void;
}) {
  const { all, chosen } = props;
  const index = useMemo(() => new Map(all.map((w, i) => [w, i])), [all]);
  const items = useMemo<PickItem[]>(() => props.workers.map((w) => ({ value: w.worker, label: workerLabel(w), search: `rank ${w.rank} ${w.hostname} ${w.worker}`, rank: w.rank })), [props.workers]);
  const selected = useMemo(() => new Set(chosen), [chosen]);
  const idx = chosen.map((w) => index.get(w) ?? 0).sort((a, b) => a - b);
  const lo = idx[0] ?? 0;
  const hi = idx[idx.length - 1] ?? 0;
  const contiguous = idx.length > 0 && hi - lo + 1 === idx.length;
  const n = all.length;
  const rankAt = (i: number) => (props.workers[i]?.rank ?? -1) >= 0 ? props.workers[i].rank : i;
  const text = contiguous ? `ranks ${rankAt(lo)}–${rankAt(hi)} of ${n.toLocaleString()}` : `${chosen.length} ranks of ${n.toLocaleString()}`;
  const [full, setFull] = useState(false);
  const toggle = (w: string) => {
    const next = new Set(chosen);
    if (next.has(w)) {
      if (next.size > 1) next.delete(w);
    } else if (next.size < MAX_RANKS) next.add(w);
    else {
      setFull(true);
      return;
    }
    setFull(false);
    props.set([...next].sort((a, b) => (index.get(a) ?? 0) - (index.get(b) ?? 0)));
  };
  return (
    <div class="tl-ranks" data-testid="timeline-ranks" data-shown={chosen.length} data-total={n} data-first={lo} data-last={hi}>
      <span class="tl-ranks-label">Ranks</span>
      <button class="btn small" onClick={() => props.set(all.slice(Math.max(0, lo - RANK_PAGE), Math.max(0, lo - RANK_PAGE) + RANK_PAGE))} disabled={lo === 0} data-testid="timeline-ranks-prev" title={`The ${RANK_PAGE} ranks before`}>
        ◂
      </button>
      <span class="tl-ranks-text" data-testid="timeline-ranks-text">{text}</span>
      <button class="btn small" onClick={() => props.set(all.slice(hi + 1, hi + 1 + RANK_PAGE))} disabled={hi >= n - 1} data-testid="timeline-ranks-next" title={`The next ${RANK_PAGE} ranks`}>
        ▸
      </button>
      <span class="tl-ranks-pick">
        <Picker items={items} selected={selected} onToggle={toggle} testId="timeline-rank-picker" buttonText={`Choose ranks (${chosen.length})`} placeholder="Filter by label, rank, host" title={`Add or remove ranks (at most ${MAX_RANKS})`} />
      </span>
      {props.explicit ? (
        <button class="btn small" onClick={() => props.set(null)} data-testid="timeline-ranks-default" title={`Back to the default: ${props.why}`}>
          Default
        </button>
      ) : (
        <span class="muted tl-ranks-why" data-testid="timeline-ranks-why">{`default: ${props.why}`}</span>
      )}
      {full ? <span class="tl-ranks-full" data-testid="timeline-ranks-full">{`At most ${MAX_RANKS} ranks at once: remove one first.`}</span> : null}
    </div>
  );
}
