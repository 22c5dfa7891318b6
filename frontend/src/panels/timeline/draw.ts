// Drawing the timeline on a 2D canvas: ruler, rank headers, track labels, slices, merged blocks,
// search matches, the selected slice, launch→kernel arrows and the box selection.
import { DARK, fitText, LIGHT, niceStep, rulerLabel, triangle, truncate } from "./canvas";
import type { Decoded, RankData } from "./data";
import { fmtDur, maybeCommunication } from "./data";
import { COUNTER_COLOR, drawCounter, drawLane, drawMarks } from "./lanes";
import type { Layout, Row } from "./layout";
import { LABEL_W, RANK_H, RULER_H } from "./layout";

export interface View {
  start: number;
  end: number;
}

export interface Marks {
  selected: { worker: string; id: number; track: number; depth: number; start: number; end: number } | null;
  /** A box selection in time (t0, t1: ns) and content height (y0, y1: px from the first row, not the screen):
   * it stays on the same slices after a zoom, a pan or a scroll. */
  box: { t0: number; t1: number; y0: number; y1: number } | null;
  hover: { x: number; y: number } | null;
  flows: boolean;
  query: string;
  /** TensorBoard's dark mode: the canvas is drawn with the DARK palette. */
  dark?: boolean;
  /** The members of the selected collective's instance (timeline_instance): outlined on their rows, with
   * flows from the last arrival to every other member. */
  members?: MemberMark[] | null;
}

/** One member of a collective instance on its row: its slice, and whether it arrived last. */
export interface MemberMark {
  worker: string;
  track: number;
  depth: number;
  start: number;
  end: number;
  last: boolean;
}

/** What one frame drew: launch → kernel arrows (of the selected slice), the flows between the members of
 * the selected collective (last arrival → each other member shown) and the ruler's labels. */
export interface Drawn {
  arrows: number;
  memberFlows: number;
  ruler: string[];
  /** the folded ranks' headers drawn: their GPU's shares of the view and the line that says them */
  folded: FoldedSummary[];
}

/** A folded rank's summary over the view: the fractions of it during which a communication kernel ran
 * (a kernel named as one: NCCL/XCCL/RCCL, send/recv, all-reduce, …) and during which another kernel ran
 * and none of those (compute); null fractions for a rank without a GPU stream. */
export interface FoldedSummary {
  worker: string;
  compute: number | null;
  communication: number | null;
  text: string;
  /** the rank's label as drawn in the label column (ellipsised to what fits, measured in its font) */
  label: string;
}

/** The length of the union of intervals [s[i], e[i]). */
function unionLength(iv: [number, number][]): number {
  iv.sort((a, b) => a[0] - b[0]);
  let total = 0;
  let cs = -Infinity;
  let ce = -Infinity;
  for (const [a, b] of iv) {
    if (a > ce) {
      if (ce > cs) total += ce - cs;
      cs = a;
      ce = b;
    } else if (b > ce) ce = b;
  }
  if (ce > cs) total += ce - cs;
  return total;
}

/** A rank's GPU over [view.start, view.end] from the kernels fetched (every lane of its GPU streams):
 * communication = the union of its communication kernels, compute = the union of all its kernels less
 * that (a merged block of sub-pixel kernels of mixed names counts as compute). */
export function gpuShares(r: RankData, view: View, names: string[], types: string[]): { compute: number; communication: number } | null {
  const gpu = r.tracks.filter((t) => t.kind === 2);
  if (!gpu.length) return null;
  const w = Math.max(1, view.end - view.start);
  const comm: [number, number][] = [];
  const all: [number, number][] = [];
  for (const t of gpu) {
    for (let d = 0; d < Math.max(1, t.depth); d++) {
      const lane = r.lanes.get(`${t.id}:${d}`);
      if (!lane) continue;
      for (let i = 0; i < lane.start.length; i++) {
        if (types[lane.type[i]] !== "Kernel") continue;
        const a = Math.max(lane.start[i], view.start);
        const b = Math.min(lane.start[i] + lane.dur[i], view.end);
        if (b <= a) continue;
        all.push([a, b]);
        if (maybeCommunication(names[lane.name[i]] ?? "", "Kernel")) comm.push([a, b]);
      }
    }
  }
  const c = unionLength(comm);
  return { compute: (unionLength(all) - c) / w, communication: c / w };
}

const pct = (f: number) => `${(100 * f).toFixed(1)} %`;



export function drawTimeline(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  scrollTop: number,
  data: Decoded | null,
  lay: Layout,
  view: View,
  marks: Marks,
): Drawn {
  let arrows = 0;
  let memberFlows = 0;
  const ruler: string[] = [];
  const folded: FoldedSummary[] = [];
  const P = marks.dark ? DARK : LIGHT;
  ctx.save();
  ctx.clearRect(0, 0, width, height);
  ctx.fillStyle = P.bg;
  ctx.fillRect(0, 0, width, height);
  const plotW = Math.max(1, width - LABEL_W);
  const scale = plotW / Math.max(1, view.end - view.start);
  const X = (t: number) => LABEL_W + (t - view.start) * scale;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";

  // rows
  const top = RULER_H - scrollTop;
  const rowOf = new Map<string, Row>(); // the lanes drawn (not those of folded ranks or tracks)
  for (const row of lay.rows) if (row.kind === "lane") rowOf.set(`${row.rank}:${row.track}:${row.depth}`, row);
  const names = data?.names ?? [];
  const types = data?.types ?? [];
  const hasQuery = marks.query !== "";
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_W, RULER_H, plotW, height - RULER_H);
  ctx.clip();
  for (const row of lay.rows) {
    const y = top + row.y;
    if (y + row.h < RULER_H || y > height) continue;
    if (row.kind === "rank") {
      ctx.fillStyle = P.header;
      ctx.fillRect(LABEL_W, y, plotW, row.h);
      const r = data?.ranks[row.rank];
      if (row.folded && r) {
        // where the rank was busy: its threads' top rows above, its streams' below (communication
        // kernels orange, other kernels green, memcpy/memset grey); its GPU's shares in the label column
        for (const pass of hasQuery ? [false, true] : [false]) {
          for (const t of r.tracks) {
            const lane = r.lanes.get(`${t.id}:0`);
            if (!lane) continue;
            if (t.kind === 2) drawMarks(ctx, lane, y + 15, 15, X, view, names, types, null, hasQuery, LABEL_W, width, pass, P, true);
            else drawMarks(ctx, lane, y + 5, 7, X, view, names, types, "#78909c", hasQuery, LABEL_W, width, pass, P);
          }
        }
        const sh = gpuShares(r, view, names, types);
        folded.push({
          worker: r.worker,
          compute: sh ? sh.compute : null,
          communication: sh ? sh.communication : null,
          text: sh ? `compute ${pct(sh.compute)} · comm ${pct(sh.communication)}` : "no GPU stream",
          label: "",
        });
      }
      continue;
    }
    if (row.kind === "fold") {
      ctx.fillStyle = P.fold;
      ctx.fillRect(LABEL_W, y, plotW, row.h);
      const r = data?.ranks[row.rank];
      for (const pass of hasQuery ? [false, true] : [false]) {
        for (let d = 0; r && d < row.lanes; d++) {
          const lane = r.lanes.get(`${row.track}:${d}`);
          if (lane) drawMarks(ctx, lane, y + 1, row.h - 2, X, view, names, types, null, hasQuery, LABEL_W, width, pass, P);
        }
      }
      continue;
    }
    if (row.kind === "counter") {
      const c = data?.ranks[row.rank]?.counters[row.counter ?? 0];
      if (c && data) drawCounter(ctx, c, y, row.h, X, data.windowStart, data.resolution, LABEL_W, width, P);
      continue;
    }
    if (row.depth === 0) {
      ctx.fillStyle = P.laneTop;
      ctx.fillRect(LABEL_W, y - 1, plotW, 1);
    }
    const lane = data?.ranks[row.rank]?.lanes.get(`${row.track}:${row.depth}`);
    if (lane) drawLane(ctx, lane, y, row.h, X, scale, view, names, types, hasQuery, LABEL_W, width, P);
  }
  // launch → kernel arrows: those of the selected slice only (its launch, or the kernels it launched)
  const sel = marks.selected;
  const selRank = sel && data ? data.ranks.findIndex((r) => r.worker === sel.worker) : -1;
  if (marks.flows && data && sel && selRank >= 0) {
    ctx.strokeStyle = P.arrow;
    ctx.fillStyle = P.arrowHead;
    ctx.lineWidth = 1;
    for (const f of data.flows) {
      if (f.rank !== selRank) continue;
      const isSrc = f.srcTrack === sel.track && f.srcDepth === sel.depth && f.srcStart === sel.start;
      const isDst = f.dstTrack === sel.track && f.dstDepth === sel.depth && f.dstStart === sel.start;
      if (!isSrc && !isDst) continue;
      const a = rowOf.get(`${f.rank}:${f.srcTrack}:${f.srcDepth}`);
      const b = rowOf.get(`${f.rank}:${f.dstTrack}:${f.dstDepth}`);
      if (!a || !b) continue; // an end in a folded rank or track: no arrow
      const x0 = X(f.srcStart);
      const y0 = top + a.y + a.h - 2;
      const x1 = X(f.dstStart);
      const y1 = top + b.y + 2;
      if ((x0 < LABEL_W && x1 < LABEL_W) || (x0 > width && x1 > width)) continue;
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      const my = (y0 + y1) / 2;
      ctx.bezierCurveTo(x0, my, x1, my, x1, y1);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 3, y1 - 5);
      ctx.lineTo(x1 + 3, y1 - 5);
      ctx.fill();
      arrows++;
    }
  }
  // the selected collective's instance: each member's slice outlined, its wait (from its arrival to the
  // last member's) shaded, and a flow from the last arrival down (or up) to every other member shown
  if (marks.members && marks.members.length && data) {
    const ms = marks.members;
    const rowFor = (m: MemberMark) => rowOf.get(`${data.ranks.findIndex((r) => r.worker === m.worker)}:${m.track}:${m.depth}`);
    const last = ms.find((m) => m.last);
    const lastRow = last ? rowFor(last) : undefined;
    ctx.lineWidth = 2;
    for (const m of ms) {
      const row = rowFor(m);
      if (!row) continue;
      const y = top + row.y;
      if (last && !m.last && last.start > m.start) {
        ctx.fillStyle = P.memberWait;
        ctx.fillRect(X(m.start), y + 1, Math.max(1, (last.start - m.start) * scale), row.h - 2);
      }
      ctx.strokeStyle = P.member;
      ctx.strokeRect(X(m.start) - 1, y, Math.max(2, (m.end - m.start) * scale) + 2, row.h - 1);
    }
    if (last && lastRow) {
      const x = Math.round(X(last.start)) + 0.5;
      if (x >= LABEL_W && x <= width) {
        ctx.strokeStyle = P.member;
        ctx.fillStyle = P.member;
        ctx.lineWidth = 1.5;
        const y0 = top + lastRow.y + lastRow.h / 2;
        for (const m of ms) {
          if (m === last) continue;
          const row = rowFor(m);
          if (!row) continue;
          const down = row.y > lastRow.y;
          const y1 = top + row.y + (down ? 1 : row.h - 1);
          ctx.beginPath();
          ctx.moveTo(x, y0);
          ctx.lineTo(x, y1);
          ctx.stroke();
          ctx.beginPath();
          ctx.moveTo(x, y1);
          ctx.lineTo(x - 4, y1 + (down ? -6 : 6));
          ctx.lineTo(x + 4, y1 + (down ? -6 : 6));
          ctx.fill();
          memberFlows++;
        }
        ctx.beginPath();
        ctx.arc(x, y0, 3, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
  }
  // the selected slice, last: on top of its collective's member outline
  if (marks.selected && data) {
    const s = marks.selected;
    const ri = data.ranks.findIndex((r) => r.worker === s.worker);
    const row = rowOf.get(`${ri}:${s.track}:${s.depth}`);
    if (row) {
      const x0 = X(s.start);
      const w = Math.max(2, (s.end - s.start) * scale);
      ctx.strokeStyle = P.selected;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 - 1, top + row.y, w + 2, row.h - 1);
    }
  }
  // box selection
  if (marks.box) {
    const b = marks.box;
    ctx.fillStyle = "rgba(25,118,210,0.12)";
    ctx.strokeStyle = "#1976d2";
    ctx.lineWidth = 1;
    const xa = Math.max(LABEL_W, X(Math.min(b.t0, b.t1)));
    const xb = Math.min(width, X(Math.max(b.t0, b.t1)));
    const y = top + Math.min(b.y0, b.y1);
    const h = Math.abs(b.y1 - b.y0);
    if (xb > xa) {
      ctx.fillRect(xa, y, xb - xa, h);
      ctx.strokeRect(Math.round(xa) + 0.5, Math.round(y) + 0.5, Math.round(xb - xa), Math.round(h)); // crisp: whole pixels
    }
  }
  ctx.restore();

  // labels
  ctx.fillStyle = P.bg;
  ctx.fillRect(0, RULER_H, LABEL_W, height - RULER_H);
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, RULER_H, LABEL_W, height - RULER_H);
  ctx.clip();
  for (const row of lay.rows) {
    const y = top + row.y;
    if (y + row.h < RULER_H || y > height) continue;
    if (row.kind === "rank") {
      ctx.fillStyle = P.header;
      ctx.fillRect(0, y, LABEL_W, row.h);
      ctx.fillStyle = P.headerText;
      triangle(ctx, 8, y + RANK_H / 2, !row.folded, 4);
      ctx.font = "bold 12px system-ui, sans-serif";
      // an unfolded rank's header row is empty across the plot: its label runs over it (below)
      const sum = row.folded ? folded.find((f) => f.worker === row.worker) : undefined;
      if (row.folded) {
        const text = fitText(ctx, row.label, LABEL_W - 22);
        ctx.fillText(text, 16, y + RANK_H / 2);
        if (sum) sum.label = text;
      }
      ctx.font = "11px system-ui, sans-serif";
      if (sum) {
        ctx.fillStyle = P.labelText;
        ctx.fillText(truncate(sum.text, LABEL_W - 22), 16, y + RANK_H + (row.h - RANK_H) / 2 - 3);
      }
    } else if (row.kind === "fold") {
      ctx.fillStyle = P.foldText;
      triangle(ctx, 8, y + row.h / 2, false, 3);
      ctx.font = "9px system-ui, sans-serif";
      ctx.fillText(truncate(row.label, LABEL_W - 10), 14, y + row.h / 2);
      ctx.font = "11px system-ui, sans-serif";
    } else if (row.kind === "counter") {
      ctx.fillStyle = COUNTER_COLOR[data?.ranks[row.rank]?.counters[row.counter ?? 0]?.kind ?? ""] ?? "#607d8b";
      ctx.fillRect(6, y + row.h / 2 - 4, 6, 8);
      ctx.fillStyle = P.labelText;
      ctx.fillText(truncate(row.label, LABEL_W - 20), 16, y + row.h / 2);
    } else if (row.first) {
      ctx.fillStyle = P.trackMark;
      triangle(ctx, 8, y + row.h / 2, true, 3);
      ctx.fillStyle = P.labelText;
      ctx.fillText(truncate(row.label, LABEL_W - 20), 14, y + row.h / 2);
    }
  }
  ctx.restore();
  ctx.fillStyle = P.edge;
  ctx.fillRect(LABEL_W - 1, RULER_H, 1, height - RULER_H);
  // the whole label of each unfolded rank, along its header row
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, RULER_H, width, height - RULER_H);
  ctx.clip();
  ctx.font = "bold 12px system-ui, sans-serif";
  ctx.fillStyle = P.headerText;
  for (const row of lay.rows) {
    const y = top + row.y;
    if (row.kind !== "rank" || row.folded || y + row.h < RULER_H || y > height) continue;
    ctx.fillStyle = P.header; // the header row runs across the label column's edge
    ctx.fillRect(LABEL_W - 1, y, 1, row.h);
    ctx.fillStyle = P.headerText;
    ctx.fillText(truncate(row.label, width - 30), 16, y + row.h / 2);
  }
  ctx.font = "11px system-ui, sans-serif";
  ctx.restore();

  // ruler
  ctx.fillStyle = P.rulerBg;
  ctx.fillRect(0, 0, width, RULER_H);
  ctx.fillStyle = P.edge;
  ctx.fillRect(0, RULER_H - 1, width, 1);
  const span = view.end - view.start;
  const step = niceStep(span / Math.max(1, plotW / 110));
  ctx.fillStyle = P.rulerText;
  ctx.strokeStyle = P.tick;
  ctx.textBaseline = "middle";
  const first = Math.ceil(view.start / step);
  const far = Math.max(Math.abs(view.start), Math.abs(view.end));
  for (let i = first; i * step <= view.end; i++) {
    const t = i * step; // not a running sum: no drift at deep zoom
    const x = Math.round(X(t)) + 0.5;
    if (x < LABEL_W) continue;
    ctx.beginPath();
    ctx.moveTo(x, RULER_H - 8);
    ctx.lineTo(x, RULER_H);
    ctx.stroke();
    const label = rulerLabel(t, step, far);
    if (x + 3 + ctx.measureText(label).width > width) continue; // a label the canvas's edge would cut: its tick only
    ruler.push(label);
    ctx.fillText(label, x + 3, RULER_H / 2 - 2);
  }
  ctx.fillStyle = P.windowText;
  ctx.fillText(`window ${fmtDur(span)}`, 8, RULER_H / 2);
  if (marks.hover && marks.hover.x > LABEL_W) {
    const x = Math.round(marks.hover.x) + 0.5;
    ctx.strokeStyle = P.hoverLine;
    ctx.beginPath();
    ctx.moveTo(x, RULER_H);
    ctx.lineTo(x, height);
    ctx.stroke();
  }
  ctx.restore();
  return { arrows, memberFlows, ruler, folded };
}

