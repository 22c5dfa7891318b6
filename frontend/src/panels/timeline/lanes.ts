// Drawing one row of the timeline: a lane's slices (named, merged blocks, search matches), a folded
// track's marks, a counter lane's area; and which slice of a lane is under a time (hitLane).
import { humanBytes } from "../../display/cells";
import type { Counter, Lane } from "./data";
import { maybeCommunication } from "./data";
import type { Palette } from "./canvas";
import { colorOf, LIGHT, truncate } from "./canvas";
import type { View } from "./draw";

export const COUNTER_COLOR: Record<string, string> = { allocated: "#43a047", reserved: "#fb8c00", utilization: "#7e57c2" };

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
export function drawCounter(ctx: CanvasRenderingContext2D, c: Counter, y: number, h: number, X: (t: number) => number,
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


/** Where a lane's slices are, as blocks without names (folded tracks, folded ranks): adjacent blocks of
 * one colour are drawn as one rectangle. `color` null: each slice's colour. With a query, the matches
 * are red and the rest grey; `matchesOnly` draws the matches alone (a second pass, so that no grey
 * slice of another lane covers them). */
export function drawMarks(
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



export function drawLane(
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

