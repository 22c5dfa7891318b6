// Drawing the compact timeline's rows on its canvas: per rank a label (its role marked) and a bar per
// pixel bin, the GPU's compute below its communication, the step's edges, the critical path over the
// rows it passes through and the ruler (time from each row's alignment point).
import type { CompactRank, CompactRow, CompactSegment, TimelineCompact } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { DARK, fitText, LIGHT, niceStep, rulerLabel } from "./canvas";
import { CRIT_BAND, critColor } from "./critical";
import { RULER_H } from "./layout";

/** One row per rank: a bar of BAR_H px and a gap. */
export const ROW_H = 13;
export const BAR_H = 11;
export const LABEL_W = 170;

export const COMPACT_COLORS = {
  light: { compute: "#43a047", communication: "#fb8c00", idle: "#eceff1", step: "#546e7a" },
  dark: { compute: "#66bb6a", communication: "#ffa726", idle: "#30363a", step: "#90a4ae" },
};
const ROLE_COLORS: Record<string, string> = { straggler: "#d32f2f", peer: "#7b1fa2" };

export interface DrawnLabel {
  worker: string;
  text: string;
  full: string;
  width: number;
  room: number;
}


/** What the compact canvas draws: the route's rows (meta), scrolled by `top`, over `view` (null: the step). */
export interface CompactScene {
  meta: TimelineCompact | null;
  top: number;
  view: { start: number; end: number } | null;
  /** row index -> its bins and the window they cover */
  rows: Map<number, { row: CompactRow; ws: number; we: number }>;
  /** the critical path's segments by worker */
  segs: Map<string, CompactSegment[]>;
  /** the ranks whose lanes are shown under the rows */
  expanded: string[];
  dark: boolean;
  fullName: (o: CompactRank) => string;
  fullLabel: (o: CompactRank) => string;
}

/** What one frame drew (the page exposes it for tests). */
export interface CompactDrawn {
  rows: number;
  critical: number;
  labels: DrawnLabel[];
  ruler: string[];
}

export function drawCompact(canvas: HTMLCanvasElement, ctx: CanvasRenderingContext2D, w: number, h: number, s: CompactScene): CompactDrawn {
  const m = s.meta;
  const P = s.dark ? DARK : LIGHT;
  const C = s.dark ? COMPACT_COLORS.dark : COMPACT_COLORS.light;
  ctx.fillStyle = P.bg;
  ctx.fillRect(0, 0, w, h);
  const drawn: CompactDrawn = { rows: 0, critical: 0, labels: [], ruler: [] };
  if (!m) return drawn;
  const top = s.top;
  const plotW = Math.max(1, w - LABEL_W);
  const ws = s.view?.start ?? Number(m.windowStartNs);
  const we = s.view?.end ?? Number(m.windowEndNs);
  const X = (t: number) => LABEL_W + ((t - ws) / Math.max(1, we - ws)) * plotW;
  ctx.font = "10px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const first = Math.max(0, Math.floor(top / ROW_H));
  const last = Math.min(m.order.length - 1, Math.ceil((top + h) / ROW_H));
  const open = new Set(s.expanded);
  const marks: Record<string, { x: number; zero: string }> = {}; // align "instance": each member row's start of it, px
  for (let i = first; i <= last; i++) {
    const y = RULER_H + i * ROW_H - top;
    if (y + ROW_H < RULER_H || y > h) continue;
    const o = m.order[i];
    const got = s.rows.get(i);
    const r = got?.row;
    // label
    ctx.fillStyle = open.has(o.worker) ? P.header : P.bg;
    ctx.fillRect(0, y, LABEL_W, ROW_H);
    if (ROLE_COLORS[o.role]) {
      ctx.fillStyle = ROLE_COLORS[o.role];
      ctx.fillRect(0, y + 1, 3, BAR_H);
    }
    ctx.fillStyle = P.labelText;
    // a short label in the row ("rank 5 ★ straggler"); the full one on hover (the canvas's title)
    const text = fitText(ctx, `${open.has(o.worker) ? "▾ " : ""}${shortLabel(o, s.fullName(o))}`, LABEL_W - 10);
    ctx.fillText(text, 6, y + BAR_H / 2 + 1);
    drawn.labels.push({ worker: o.worker, text, full: s.fullLabel(o), width: ctx.measureText(text).width, room: LABEL_W - 10 });
    // bins
    ctx.fillStyle = C.idle;
    ctx.fillRect(LABEL_W, y, plotW, BAR_H);
    if (!r || r.state !== "" || !r.compute.length) {
      ctx.fillStyle = P.dimText;
      ctx.fillText(r?.state === "building" || !r ? "loading…" : r.state, LABEL_W + 6, y + BAR_H / 2 + 1);
      continue;
    }
    const n = r.compute.length;
    const x0 = X(got.ws);
    const bw = (X(got.we) - x0) / n;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, y, plotW, ROW_H);
    ctx.clip();
    for (let k = 0; k < n; k++) {
      const comp = r.compute[k];
      const comm = r.communication[k];
      if (comp < 0.005 && comm < 0.005) continue;
      const x = x0 + k * bw;
      if (x + bw < LABEL_W || x > w) continue;
      const hc = comp * BAR_H;
      const hm = comm * BAR_H;
      if (hc > 0.05) {
        ctx.fillStyle = C.compute;
        ctx.fillRect(x, y + BAR_H - hc, bw + 0.5, hc);
      }
      if (hm > 0.05) {
        ctx.fillStyle = C.communication;
        ctx.fillRect(x, y + BAR_H - hc - hm, bw + 0.5, hm);
      }
    }
    ctx.restore();
    // align "instance": the member's start of the instance (the row's time 0)
    if (m.align === "instance" && r.onCollective) {
      const xi = X(0);
      if (xi >= LABEL_W && xi <= w) {
        ctx.fillStyle = P.labelText;
        ctx.fillRect(Math.round(xi) - 1, y - 1, 2, BAR_H + 2);
      }
      marks[o.worker] = { x: Math.round(xi * 10) / 10, zero: String(r.zeroUnixNs) };
    }
    // the rank's end of the step
    ctx.fillStyle = C.step;
    for (const t of [Number(r.stepStartNs), Number(r.stepEndNs)]) if (X(t) >= LABEL_W && X(t) <= w) ctx.fillRect(Math.round(X(t)), y, 1, BAR_H);
    // the critical path over the row
    for (const seg of s.segs.get(o.worker) ?? []) {
      const x0 = Math.max(LABEL_W, X(Number(seg.startNs)));
      const x1 = Math.min(w, X(Number(seg.endNs)));
      if (x1 < LABEL_W || x0 > w) continue;
      ctx.globalAlpha = 0.3;
      ctx.fillStyle = CRIT_BAND;
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), BAR_H);
      ctx.globalAlpha = 1;
      ctx.fillStyle = critColor(seg.kind);
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), 2);
      drawn.critical++;
    }
    drawn.rows++;
  }
  // the members' starts drawn, for the page's tests and tools (px from the canvas's left, the row's time 0)
  canvas.dataset.instanceStarts = m.align === "instance" ? JSON.stringify(marks) : "";
  // ruler: time from each row's start of the step
  ctx.fillStyle = P.rulerBg;
  ctx.fillRect(0, 0, w, RULER_H);
  ctx.fillStyle = P.rulerText;
  const from =
    m.align === "clock"
      ? "from the first row's step start"
      : m.align === "collective" && m.alignKind
        ? `from each rank's first ${m.alignKind.replace(/_/g, " ")}`
        : m.align === "instance" && m.alignKind
          ? `from each member's ${m.alignKind.replace(/_/g, " ")}`
          : "from each rank's step start";
  ctx.fillText(fitText(ctx, from, LABEL_W - 8), 6, RULER_H / 2);
  const stepNs = niceStep((we - ws) / Math.max(1, plotW / 110));
  ctx.fillStyle = P.tick;
  for (let t = Math.ceil(ws / stepNs) * stepNs; t <= we; t += stepNs) {
    const x = Math.round(X(t));
    ctx.fillRect(x, RULER_H - 6, 1, 6);
    const label = rulerLabel(t, stepNs, Math.max(Math.abs(ws), Math.abs(we)));
    if (x + 3 + ctx.measureText(label).width > w) continue; // a label the canvas's edge would cut: its tick only
    drawn.ruler.push(label);
    ctx.fillStyle = P.rulerText;
    ctx.fillText(label, x + 3, RULER_H / 2);
    ctx.fillStyle = P.tick;
  }
  ctx.fillStyle = P.edge;
  ctx.fillRect(0, RULER_H - 1, w, 1);
  ctx.fillRect(LABEL_W - 1, RULER_H, 1, h - RULER_H);
  return drawn;
}

/** The label in a row: "rank 5 ★ straggler", "rank 1 · peer", "rank 7" (without a rank: the full label's first part). */
export function shortLabel(o: { rank: number; worker: string; role: string }, full = ""): string {
  const name = o.rank >= 0 ? `rank ${o.rank}` : (full.split(" · ")[0] || o.worker);
  return o.role === "straggler" ? `${name} ★ straggler` : o.role === "peer" ? `${name} · peer` : name;
}
