// Drawing the timeline on a 2D canvas: ruler, rank headers, track labels, slices, merged blocks,
// search matches, the selected slice, launch→kernel arrows and the box selection.
import type { Counter, Decoded, Lane, RankData } from "./data";
import { fmtDur, maybeCommunication } from "./data";
import { humanBytes } from "../../display/cells";

export const LABEL_W = 200;
export const RULER_H = 26;
export const LANE_H = 17;
export const RANK_H = 22;
/** A folded rank's header: its label and its GPU's shares of the view on two lines at the left, where its
 * threads and streams were busy across the plot (communication kernels orange, other kernels green). */
export const FOLDED_RANK_H = 36;
export const TRACK_GAP = 5;

export const FOLD_H = 10; // a folded track: where its slices are, no names
export const COUNTER_H = 28; // a counter lane: an area chart of the counter's value per pixel

export interface Row {
  /** rank: the header of a rank (its tracks follow unless folded); lane: one row of a track's slices;
   * fold: a folded track, one thin row (nothing in it can be selected); counter: a counter lane (memory,
   * GPU utilization) of the rank, its `counter`-th. */
  kind: "rank" | "lane" | "fold" | "counter";
  y: number; // content y (below the ruler, before scrolling)
  h: number;
  rank: number;
  worker: string;
  track: number; // -1 for a rank header
  depth: number; // -1 for a rank header or a folded track
  label: string;
  first: boolean; // the first lane of its track (draws the track label), a fold row, a rank header
  folded: boolean; // a folded rank's header or a fold row
  lanes: number; // the lanes of the track (fold rows), the tracks of the rank (rank headers)
  counter?: number; // counter rows: the index into the rank's counters
}

export interface Layout {
  rows: Row[];
  height: number;
  key: string;
}

/** Folded ranks (by worker) and folded tracks ("worker:track"). Kept in the URL as `tlfold`. */
export interface Folds {
  ranks: Set<string>;
  tracks: Set<string>;
}

/** `tlfold`: comma-separated "worker:*" (a rank) and "worker:track" (a track); the worker is
 * URI-encoded so that a comma or colon in it stays inside its part. Malformed parts are ignored. */
export function parseFolds(s: string): Folds {
  const out: Folds = { ranks: new Set(), tracks: new Set() };
  for (const part of s.split(",")) {
    const i = part.lastIndexOf(":");
    if (i <= 0) continue;
    let worker: string;
    try {
      worker = decodeURIComponent(part.slice(0, i));
    } catch {
      continue;
    }
    const what = part.slice(i + 1);
    if (what === "*") out.ranks.add(worker);
    else if (/^\d+$/.test(what)) out.tracks.add(`${worker}:${Number(what)}`);
  }
  return out;
}

export function writeFolds(f: Folds): string {
  const parts: string[] = [];
  for (const w of [...f.ranks].sort()) parts.push(`${encodeURIComponent(w)}:*`);
  const tracks = [...f.tracks].map((k) => {
    const i = k.lastIndexOf(":");
    return [k.slice(0, i), Number(k.slice(i + 1))] as const;
  });
  tracks.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  for (const [w, t] of tracks) parts.push(`${encodeURIComponent(w)}:${t}`);
  return parts.join(",");
}

/** Rows for every rank's tracks; depends only on the tracks and the folds, so it stays put while zooming.
 * A folded rank is its header alone; a folded track is one thin row. */
export function layout(data: Decoded | null, folds: Folds, labels?: Map<string, string>): Layout {
  const rows: Row[] = [];
  let y = 0;
  const keyParts: string[] = [];
  (data?.ranks ?? []).forEach((r, ri) => {
    const title = labels?.get(r.worker) || (r.rank >= 0 ? `rank ${r.rank}` : r.worker);
    const rankFolded = folds.ranks.has(r.worker);
    const n = r.tracks.length;
    const label = `${title}${r.state ? ` · ${r.state}` : ""}${rankFolded && n ? ` · ${n} track${n > 1 ? "s" : ""}` : ""}`;
    const h = rankFolded ? FOLDED_RANK_H : RANK_H;
    rows.push({ kind: "rank", y, h, rank: ri, worker: r.worker, track: -1, depth: -1, label, first: true, folded: rankFolded, lanes: n });
    y += h;
    if (rankFolded) {
      y += TRACK_GAP;
      keyParts.push(`${r.worker}:*`);
      return;
    }
    for (const t of r.tracks) {
      const depth = Math.max(1, t.depth);
      if (folds.tracks.has(`${r.worker}:${t.id}`)) {
        rows.push({ kind: "fold", y, h: FOLD_H, rank: ri, worker: r.worker, track: t.id, depth: -1, label: t.label, first: true, folded: true, lanes: depth });
        y += FOLD_H + TRACK_GAP;
        keyParts.push(`${r.worker}:${t.id}:f`);
        continue;
      }
      for (let d = 0; d < depth; d++) {
        rows.push({ kind: "lane", y, h: LANE_H, rank: ri, worker: r.worker, track: t.id, depth: d, label: t.label, first: d === 0, folded: false, lanes: depth });
        y += LANE_H;
      }
      y += TRACK_GAP;
      keyParts.push(`${r.worker}:${t.id}:${depth}`);
    }
    (r.counters ?? []).forEach((c, ci) => {
      rows.push({ kind: "counter", y, h: COUNTER_H, rank: ri, worker: r.worker, track: -1, depth: -1, label: c.label, first: false, folded: false, lanes: 0, counter: ci });
      y += COUNTER_H;
    });
    if (r.counters?.length) {
      y += TRACK_GAP;
      keyParts.push(`${r.worker}:c${r.counters.length}`);
    }
  });
  return { rows, height: y, key: keyParts.join("|") };
}

const colorCache = new Map<string, string>();
export function colorOf(name: string, type: string): string {
  const key = `${type}\u0000${name}`;
  let c = colorCache.get(key);
  if (c) return c;
  if (type === "CudaRuntime") c = "#b0bec5";
  else if (type === "ProfileStep") c = "#cfd8dc";
  else if (type === "Memcpy") c = "#66bb6a";
  else if (type === "Memset") c = "#26a69a";
  else {
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    const hue = ((h >>> 0) % 360);
    const sat = type === "Kernel" ? 65 : 45;
    const light = type === "Kernel" ? 55 : 68;
    c = `hsl(${hue},${sat}%,${light}%)`;
  }
  if (colorCache.size > 5000) colorCache.clear();
  colorCache.set(key, c);
  return c;
}

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

/** The canvas's colours (slices keep their hues in both). */
export interface Palette {
  bg: string;
  header: string;
  headerText: string;
  fold: string;
  laneTop: string;
  labelText: string;
  foldText: string;
  trackMark: string;
  edge: string;
  rulerBg: string;
  rulerText: string;
  tick: string;
  windowText: string;
  hoverLine: string;
  dim: string;
  dimMerged: string;
  dimText: string;
  /** a folded rank's kernels: the compact timeline's colours */
  compute: string;
  communication: string;
  sliceText: string;
  selected: string;
  arrow: string;
  arrowHead: string;
  counterBg: string;
  counterBase: string;
  counterAxis: string;
  member: string;
  memberWait: string;
}

export const LIGHT: Palette = {
  bg: "#fff", header: "#eceff1", headerText: "#212121", fold: "#f5f5f5", laneTop: "#fafafa", labelText: "#424242",
  foldText: "#9e9e9e", trackMark: "#bdbdbd", edge: "#e0e0e0", rulerBg: "#fafafa", rulerText: "#616161", tick: "#bdbdbd",
  windowText: "#424242", hoverLine: "rgba(0,0,0,0.25)", dim: "#eeeeee", dimMerged: "#e0e0e0", dimText: "#9e9e9e", compute: "#43a047", communication: "#fb8c00",
  sliceText: "#111", selected: "#0d47a1", arrow: "rgba(33,33,33,0.55)", arrowHead: "rgba(33,33,33,0.7)",
  counterBg: "#fbfbfb", counterBase: "#eeeeee", counterAxis: "#757575", member: "#e65100", memberWait: "rgba(230,81,0,0.22)",
};

export const DARK: Palette = {
  bg: "#1e1e1e", header: "#2d3236", headerText: "#e8eaed", fold: "#262626", laneTop: "#2a2a2a", labelText: "#c8ccd0",
  foldText: "#8a8f94", trackMark: "#6b7075", edge: "#3c4043", rulerBg: "#252526", rulerText: "#b0b4b8", tick: "#5f6368",
  windowText: "#c8ccd0", hoverLine: "rgba(255,255,255,0.3)", dim: "#3a3a3a", dimMerged: "#444", dimText: "#777", compute: "#66bb6a", communication: "#ffa726",
  sliceText: "#111", selected: "#8ab4f8", arrow: "rgba(232,234,237,0.6)", arrowHead: "rgba(232,234,237,0.8)",
  counterBg: "#232323", counterBase: "#3a3a3a", counterAxis: "#9aa0a6", member: "#ffab40", memberWait: "rgba(255,171,64,0.28)",
};

/**
 * A ruler label: the unit of the view's largest time, with as many decimals as the tick step needs
 * (so that two ticks never read the same: "10.541 2 s" at deep zoom, not "10.541 s" twice).
 */
export function rulerLabel(t: number, step: number, far: number): string {
  const a = Math.abs(far);
  const [unit, sym] = a >= 1e9 ? [1e9, "s"] : a >= 1e6 ? [1e6, "ms"] : a >= 1e3 ? [1e3, "µs"] : [1, "ns"];
  const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit / step) - 1e-9)));
  return `${(t / unit).toFixed(decimals)} ${sym}`;
}

/** The canvas's 2D context drawing in CSS pixels at the device's pixel ratio, its backing store sized to
 * its box (only when that changed); null without a context. */
export function fitCanvas(canvas: HTMLCanvasElement): { ctx: CanvasRenderingContext2D; w: number; h: number } | null {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, w, h };
}

export function niceStep(ns: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(ns)));
  for (const m of [1, 2, 5, 10]) if (m * p >= ns) return m * p;
  return 10 * p;
}

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

const COUNTER_COLOR: Record<string, string> = { allocated: "#43a047", reserved: "#fb8c00", utilization: "#7e57c2" };

/** A counter lane's scale: its bottom and top values (counterScale) and their labels (bytes humanised,
 * a ratio in %), as the lane's axis shows them. */
export function counterScale(c: Counter): { lo: number; hi: number; loText: string; hiText: string } {
  const ratio = c.unit === "ratio";
  let lo = ratio ? 0 : Math.max(0, c.min || 0);
  const top = ratio ? 1 : Math.max(0, c.max || 0);
  if (!(top > lo)) lo = 0; // a constant counter: drawn from 0
  const hi = top > lo ? top : lo + 1; // (a counter that stays at 0: an empty lane)
  const text = (v: number) => (ratio ? `${Math.round(v * 100)} %` : v ? humanBytes(v) : "0 B");
  return { lo, hi, loText: text(lo), hiText: text(top) };
}

/** A counter lane: its values per pixel bin of the fetched window as an area from the lane's bottom,
 * scaled from the counter's lowest to its highest value over the whole trace (a ratio: 0 to 1), with
 * those two values labelled at the plot's left edge; bins without a value (NaN) are left empty. */
function drawCounter(ctx: CanvasRenderingContext2D, c: Counter, y: number, h: number, X: (t: number) => number,
  windowStart: number, resolution: number, left: number, right: number, P: Palette): void {
  ctx.fillStyle = P.counterBg;
  ctx.fillRect(left, y, right - left, h - 1);
  ctx.fillStyle = P.counterBase;
  ctx.fillRect(left, y + h - 1, right - left, 1);
  const sc = counterScale(c);
  const top = sc.hi - sc.lo;
  const base = y + h - 1;
  const inner = h - 4;
  const color = COUNTER_COLOR[c.kind] ?? "#607d8b";
  ctx.fillStyle = color + "99";
  ctx.strokeStyle = color;
  ctx.lineWidth = 1;
  let open = false;
  let lastX = 0;
  const close = () => {
    if (!open) return;
    ctx.lineTo(lastX, base);
    ctx.closePath();
    ctx.fill();
    open = false;
  };
  for (let k = 0; k < c.values.length; k++) {
    const v = c.values[k];
    const x0 = X(windowStart + k * resolution);
    const x1 = X(windowStart + (k + 1) * resolution);
    if (x1 < left || x0 > right) {
      close();
      continue;
    }
    if (Number.isNaN(v)) {
      close();
      continue;
    }
    const yv = base - (Math.max(0, Math.min(v - sc.lo, top)) / top) * inner;
    if (!open) {
      ctx.beginPath();
      ctx.moveTo(x0, base);
      open = true;
    }
    ctx.lineTo(x0, yv);
    ctx.lineTo(x1, yv);
    lastX = x1;
  }
  close();
  // the axis: the top and bottom values, over the plot's left edge
  ctx.save();
  ctx.font = "9px system-ui, sans-serif";
  ctx.textBaseline = "top";
  const hiW = ctx.measureText(sc.hiText).width;
  const loW = ctx.measureText(sc.loText).width;
  ctx.fillStyle = P.counterBg;
  ctx.globalAlpha = 0.8;
  ctx.fillRect(left + 1, y + 1, hiW + 4, 10);
  ctx.fillRect(left + 1, y + h - 11, loW + 4, 10);
  ctx.globalAlpha = 1;
  ctx.fillStyle = P.counterAxis;
  ctx.fillText(sc.hiText, left + 3, y + 1);
  ctx.textBaseline = "bottom";
  ctx.fillText(sc.loText, left + 3, y + h - 1);
  ctx.restore();
}

/** ▾ (open) or ▸ (folded), centred on (x, y). */
function triangle(ctx: CanvasRenderingContext2D, x: number, y: number, open: boolean, r: number): void {
  ctx.beginPath();
  if (open) {
    ctx.moveTo(x - r, y - r / 2);
    ctx.lineTo(x + r, y - r / 2);
    ctx.lineTo(x, y + r * 0.8);
  } else {
    ctx.moveTo(x - r / 2, y - r);
    ctx.lineTo(x - r / 2, y + r);
    ctx.lineTo(x + r * 0.8, y);
  }
  ctx.closePath();
  ctx.fill();
}

/** Where a lane's slices are, as blocks without names (folded tracks, folded ranks): adjacent blocks of
 * one colour are drawn as one rectangle. `color` null: each slice's colour. With a query, the matches
 * are red and the rest grey; `matchesOnly` draws the matches alone (a second pass, so that no grey
 * slice of another lane covers them). */
function drawMarks(
  ctx: CanvasRenderingContext2D,
  lane: Lane,
  y: number,
  h: number,
  X: (t: number) => number,
  view: View,
  names: string[],
  types: string[],
  color: string | null,
  hasQuery: boolean,
  left: number,
  right: number,
  matchesOnly = false,
  P: Palette = LIGHT,
  kinds = false,
): void {
  const n = lane.start.length;
  if (matchesOnly && !lane.match) return;
  const lo = firstEndingAfter(lane, view.start);
  let runColor = "";
  let run0 = 0;
  let run1 = -Infinity;
  const flush = () => {
    if (run1 > run0) {
      ctx.fillStyle = runColor;
      ctx.fillRect(run0, y, run1 - run0, h);
    }
  };
  for (let i = Math.max(0, lo - 64); i < n; i++) {
    const s = lane.start[i];
    if (s > view.end) break;
    const e = s + lane.dur[i];
    if (e < view.start) continue;
    if (matchesOnly && lane.match![i] !== 1) continue;
    const x0 = Math.max(X(s), left);
    const x1 = Math.min(Math.max(X(e), X(s) + 1), right);
    if (x1 <= x0) continue;
    let c: string;
    if (hasQuery) c = lane.match && lane.match[i] === 1 ? "#d50000" : P.dimMerged;
    else if (kinds) {
      // a folded rank's streams: communication or compute, as on the compact timeline
      if (types[lane.type[i]] !== "Kernel") c = P.trackMark;
      else c = maybeCommunication(names[lane.name[i]] ?? "", "Kernel") ? P.communication : P.compute;
    } else if (color) c = color;
    else {
      const nm = names[lane.name[i]] ?? "";
      c = lane.count[i] > 1 && !nm ? "#9e9e9e" : colorOf(nm, types[lane.type[i]] ?? "");
    }
    if (c === runColor && x0 <= run1 + 0.5) {
      run1 = Math.max(run1, x1);
      continue;
    }
    flush();
    runColor = c;
    run0 = x0;
    run1 = x1;
  }
  flush();
}

/** Binary search: the first item of the lane whose end is at or after t (items sorted by start). */
function firstEndingAfter(lane: Lane, t: number): number {
  let lo = 0;
  let hi = lane.start.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (lane.start[mid] + lane.dur[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `text` cut to what fits in `px` in the context's font, with an ellipsis (measured, not estimated). */
export function fitText(ctx: CanvasRenderingContext2D, text: string, px: number): string {
  if (ctx.measureText(text).width <= px) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= px) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}…`;
}

function truncate(text: string, px: number): string {
  const max = Math.floor(px / 6.2);
  return text.length > max ? `${text.slice(0, Math.max(0, max - 1))}…` : text;
}

function drawLane(
  ctx: CanvasRenderingContext2D,
  lane: Lane,
  y: number,
  h: number,
  X: (t: number) => number,
  scale: number,
  view: View,
  names: string[],
  types: string[],
  hasQuery: boolean,
  left: number,
  right: number,
  P: Palette = LIGHT,
): void {
  const n = lane.start.length;
  // first item that may be visible
  const lo = firstEndingAfter(lane, view.start);
  // items are sorted by start; a long item before `lo` may still cover the view: look back a little
  const i0 = Math.max(0, lo - 64);
  let lastX = -Infinity;
  for (let i = i0; i < n; i++) {
    const s = lane.start[i];
    if (s > view.end) break;
    const e = s + lane.dur[i];
    if (e < view.start) continue;
    let x0 = X(s);
    let x1 = X(e);
    if (x1 - x0 < 1) x1 = x0 + 1;
    if (x1 < lastX + 0.3 && lane.count[i] === 1 && x1 - x0 <= 1) continue; // sub-pixel overdraw
    lastX = x1;
    x0 = Math.max(x0, left - 2);
    x1 = Math.min(x1, right + 2);
    const nm = names[lane.name[i]] ?? "";
    const type = types[lane.type[i]] ?? "";
    const merged = lane.count[i] > 1;
    const matched = lane.match ? lane.match[i] === 1 : false;
    let color = merged && !nm ? "#9e9e9e" : colorOf(nm, type);
    if (hasQuery && !matched) color = merged ? P.dimMerged : P.dim;
    ctx.fillStyle = color;
    ctx.fillRect(x0, y + 1, x1 - x0, h - 2);
    if (merged) {
      ctx.fillStyle = "rgba(255,255,255,0.35)";
      ctx.fillRect(x0, y + h / 2, x1 - x0, 1);
    }
    if (hasQuery && matched) {
      ctx.strokeStyle = "#d50000";
      ctx.lineWidth = 1.5;
      ctx.strokeRect(x0 + 0.5, y + 1.5, Math.max(1, x1 - x0 - 1), h - 3);
    }
    const w = x1 - x0;
    if (w > 36) {
      const label = merged ? (nm ? `${nm} ×${lane.count[i]}` : `${lane.count[i]} events`) : nm;
      ctx.fillStyle = hasQuery && !matched ? P.dimText : P.sliceText;
      ctx.fillText(truncate(label, w - 6), Math.max(x0, left) + 3, y + h / 2);
    }
  }
  void scale;
  void i0;
}

/** The item of `lane` under time `t` (± `tol` ns), or -1. */
export function hitLane(lane: Lane, t: number, tol: number): number {
  const n = lane.start.length;
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (lane.start[mid] <= t + tol) lo = mid + 1;
    else hi = mid;
  }
  let best = -1;
  let bestDist = Infinity;
  for (let i = lo - 1; i >= 0 && i >= lo - 64; i--) {
    const s = lane.start[i];
    const e = s + lane.dur[i];
    const d = t < s ? s - t : t > e ? t - e : 0;
    if (d <= tol && d < bestDist) {
      best = i;
      bestDist = d;
      if (d === 0) break;
    }
  }
  return best;
}
