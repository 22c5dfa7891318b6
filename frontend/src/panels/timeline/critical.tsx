// The critical path on the timeline: the segments of one step's longest path (from the `whatif` route,
// built in Python by analysis/crossrank/critical_path.py) drawn over each rank they pass through, as a
// translucent band across the rank's rows and a bar in the segment's kind colour on its header. Nothing
// here decides what is on the path; the segments' times are converted to the timeline's clock only.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { WorkerEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { CriticalSegment, RunWhatIf } from "../../gen/tb_paddle_profile/v1/whatif_pb";
import { PathKind } from "../../gen/tb_paddle_profile/v1/whatif_pb";
import { parallelOnce } from "../parallel/data";
import { whatIfOnce } from "../whatif/data";
import type { View } from "./draw";
import type { Layout } from "./layout";
import { LABEL_W, RULER_H } from "./layout";

/** A segment on the timeline's clock: ns relative to the window's base (like every slice). */
export interface CritSegment {
  worker: string;
  rank: number;
  start: number;
  end: number;
  kind: string;
  name: string;
  /** index of the segment in the step's list (the link from the What-if view names it) */
  index: number;
}

/** The band across the rows of the critical path: one blue, a hue no kind of work uses (the amber it was
 * could not be told from communication's orange in the dark theme). */
export const CRIT_BAND = "#1e88e5";

/** Kind colours of the critical path (the header bar). */
export const CRIT_COLORS: Record<string, string> = {
  compute: "#d32f2f",
  communication: "#f57c00",
  memcpy: "#00897b",
  host: "#7b1fa2",
  waiting: "#9e9e9e",
};

export function critColor(kind: string): string {
  if (CRIT_COLORS[kind]) return CRIT_COLORS[kind];
  for (const [k, c] of Object.entries(CRIT_COLORS)) if (kind.startsWith(k)) return c;
  return kind.includes("comm") || kind.includes("all_") || kind.includes("send") || kind.includes("broadcast") ? CRIT_COLORS.communication : "#d32f2f";
}

export interface CritDrawn {
  /** segments drawn in this frame (in view and on a shown rank) */
  drawn: number;
  /** the workers they were drawn on */
  workers: string[];
}

/**
 * Draws the segments over the rows of the ranks that are shown. A rank's extent is its header row down
 * to its last row; a segment of under a pixel is drawn one pixel wide (the path's short hops stay visible).
 */
export function drawCritical(ctx: CanvasRenderingContext2D, width: number, height: number, scrollTop: number, lay: Layout, view: View, segments: CritSegment[], focus: number): CritDrawn {
  const plotW = Math.max(1, width - LABEL_W);
  const scale = plotW / Math.max(1, view.end - view.start);
  const X = (t: number) => LABEL_W + (t - view.start) * scale;
  const extent = new Map<string, { top: number; bottom: number; header: number; headerH: number }>();
  for (const r of lay.rows) {
    const e = extent.get(r.worker);
    if (r.kind === "rank") extent.set(r.worker, { top: r.y, bottom: r.y + r.h, header: r.y, headerH: r.h });
    else if (e) e.bottom = Math.max(e.bottom, r.y + r.h);
  }
  const top = RULER_H - scrollTop;
  const workers = new Set<string>();
  let drawn = 0;
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_W, RULER_H, plotW, height - RULER_H);
  ctx.clip();
  for (const s of segments) {
    const e = extent.get(s.worker);
    if (!e || s.end < view.start || s.start > view.end) continue;
    const x0 = Math.max(LABEL_W - 1, X(s.start));
    const x1 = Math.min(width + 1, X(s.end));
    const w = Math.max(1, x1 - x0);
    const color = critColor(s.kind);
    ctx.globalAlpha = s.index === focus ? 0.28 : 0.16;
    ctx.fillStyle = CRIT_BAND;
    ctx.fillRect(x0, top + e.top, w, e.bottom - e.top);
    ctx.globalAlpha = 1;
    ctx.fillStyle = color;
    ctx.fillRect(x0, top + e.header + e.headerH - 5, w, 4);
    if (s.index === focus) {
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, top + e.top + 1, w, e.bottom - e.top - 2);
    }
    drawn++;
    workers.add(s.worker);
  }
  ctx.restore();
  return { drawn, workers: [...workers] };
}

// ---------------------------------------------------------------- the state: which step, its segments

/** What the page exposes for tests: the chosen step's segments on the timeline's clock and the last frame. */
export interface CritExposed {
  status: "off" | "loading" | "none" | "ok";
  step: number;
  steps: number[];
  segments: CritSegment[];
  drawn: number;
  drawnWorkers: string[];
}

declare global {
  interface Window {
    __tbppCritical?: CritExposed;
  }
}

export interface Crit {
  on: boolean;
  status: CritExposed["status"];
  steps: number[];
  step: number;
  /** the segment the link named (index into CriticalPath.segments), -1 none */
  focus: number;
  /** the workers the chosen step's path passes through, in path order of first visit */
  workers: string[];
  /** the step's segments on the timeline's clock (base: the window's base_unix_ns) */
  segments: (base: string) => CritSegment[];
  /** a worker's rank number (-1 unknown): the order of a rank set */
  rankOf: (worker: string) => number;
}

const PATH_KINDS: Record<number, string> = {
  [PathKind.PATH_COMPUTE]: "compute",
  [PathKind.PATH_COMMUNICATION]: "communication",
  [PathKind.PATH_MEMCPY]: "memcpy",
  [PathKind.PATH_HOST]: "host",
  [PathKind.PATH_WAITING]: "waiting",
};

/**
 * The critical path of the step `tlcp` names ("" off; "<step>", "<step>:<segment index>", anything else:
 * the first step): RunWhatIf's segments (on each rank's own clock) moved to the timeline's by the
 * rank's clock correction (RankParallel.clock_offset_ns, what the timeline subtracts) and its base.
 */
export function useCriticalPath(run: string, span: string, tlcp: string, workers: WorkerEntry[]): Crit {
  const on = tlcp !== "";
  const [w, setW] = useState<RunWhatIf | null | undefined>(undefined);
  const [offsets, setOffsets] = useState<Map<number, bigint>>(new Map());
  useEffect(() => {
    setW(undefined);
    if (!on) return;
    let alive = true;
    whatIfOnce(run, span).then((x) => alive && setW(x));
    parallelOnce(run, span).then((rp) => alive && rp && setOffsets(new Map(rp.ranks.map((r) => [r.rank, r.clockOffsetNs]))));
    return () => {
      alive = false;
    };
  }, [run, span, on]);
  const byRank = useMemo(() => new Map(workers.filter((x) => x.rank >= 0).map((x) => [x.rank, x.worker])), [workers]);
  const steps = useMemo(() => (w?.criticalPath?.steps ?? []).map((s) => Number(s.step)), [w]);
  const m = /^(-?\d+)(?::(\d+))?$/.exec(tlcp);
  const step = m && steps.includes(Number(m[1])) ? Number(m[1]) : steps[0] ?? -1;
  const focus = m && m[2] !== undefined && Number(m[1]) === step ? Number(m[2]) : -1;
  const own = useMemo(() => {
    const out: { seg: CriticalSegment; index: number }[] = [];
    (w?.criticalPath?.segments ?? []).forEach((seg, index) => Number(seg.step) === step && out.push({ seg, index }));
    return out;
  }, [w, step]);
  const memo = useRef<{ key: string; value: CritSegment[] }>({ key: "", value: [] });
  const segments = (base: string): CritSegment[] => {
    const key = `${base}|${step}|${own.length}|${offsets.size}|${w ? 1 : 0}`;
    if (memo.current.key === key) return memo.current.value;
    let b: bigint;
    try {
      b = BigInt(base);
    } catch {
      return [];
    }
    const value = own.map(({ seg, index }) => {
      const off = (offsets.get(seg.rank) ?? 0n) + b;
      return {
        worker: seg.worker || byRank.get(seg.rank) || "",
        rank: seg.rank,
        start: Number(seg.startUnixNs - off),
        end: Number(seg.endUnixNs - off),
        kind: PATH_KINDS[seg.kind] ?? "compute",
        name: seg.name,
        index,
      };
    });
    memo.current = { key, value };
    return value;
  };
  const seen = new Set<string>();
  const pathWorkers: string[] = [];
  for (const { seg } of own) {
    const wk = seg.worker || byRank.get(seg.rank);
    if (wk && !seen.has(wk)) {
      seen.add(wk);
      pathWorkers.push(wk);
    }
  }
  const status: CritExposed["status"] = !on ? "off" : w === undefined ? "loading" : !w || !own.length ? "none" : "ok";
  const rankOf = (worker: string) => workers.find((x) => x.worker === worker)?.rank ?? -1;
  return { on, status, steps, step, focus, workers: pathWorkers, segments, rankOf };
}

/** The view that shows a segment (with some context), or the whole path of the step. */
export function critView(segs: CritSegment[], focus: number): { start: number; end: number } | null {
  const chosen = focus >= 0 ? segs.filter((s) => s.index === focus) : segs;
  if (!chosen.length) return null;
  const lo = Math.min(...chosen.map((s) => s.start));
  const hi = Math.max(...chosen.map((s) => s.end));
  const w = Math.max(hi - lo, 1000);
  const pad = focus >= 0 ? w * 2.5 : w * 0.04;
  return { start: lo - pad, end: hi + pad };
}

/**
 * The toolbar's control: a check box that draws the critical path, the step it is drawn for, and, when
 * the path passes through ranks that are not shown, a button that shows them (at most `max`).
 */
export function CriticalBar(props: { crit: Crit; shown: string[]; max: number; onTlcp: (tlcp: string) => void; onShowRanks: (workers: string[]) => void }) {
  const { crit } = props;
  const shown = new Set(props.shown);
  const missing = crit.workers.filter((w) => !shown.has(w));
  // the path's ranks first, then the others shown, at most `max`, in rank order
  const withPath = () => {
    const keep = [...crit.workers, ...props.shown.filter((w) => !crit.workers.includes(w))].slice(0, props.max);
    return keep.sort((a, b) => crit.rankOf(a) - crit.rankOf(b));
  };
  return (
    <span class="tl-crit" data-testid="timeline-critical" data-status={crit.status} data-step={crit.step}>
      <label class="tl-check">
        <input type="checkbox" checked={crit.on} onChange={(e) => props.onTlcp((e.target as HTMLInputElement).checked ? "on" : "")} data-testid="timeline-critical-toggle" />
        critical path
      </label>
      {crit.on && crit.steps.length ? (
        <select value={String(crit.step)} onChange={(e) => props.onTlcp((e.target as HTMLSelectElement).value)} data-testid="timeline-critical-step" aria-label="The step whose critical path is drawn" title="The step whose critical path is drawn">
          {crit.steps.map((s) => (
            <option value={String(s)}>{`step ${s}`}</option>
          ))}
        </select>
      ) : null}
      {crit.on && crit.status === "loading" ? <span class="muted">loading…</span> : null}
      {crit.on && crit.status === "none" ? <span class="muted" data-testid="timeline-critical-none">no critical path for this run</span> : null}
      {crit.on && missing.length ? (
        <button class="btn small" data-testid="timeline-critical-ranks" onClick={() => props.onShowRanks(withPath())} title={`The path of step ${crit.step} also passes through ${missing.length} rank${missing.length > 1 ? "s" : ""} not shown`}>
          {`show its ${missing.length} other rank${missing.length > 1 ? "s" : ""}`}
        </button>
      ) : null}
    </span>
  );
}
