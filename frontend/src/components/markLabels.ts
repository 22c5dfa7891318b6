// Where a chart's pin labels go ("peak 187.39 MiB"): beside their pin where the box meets no other label, no
// pin and no line of the chart, inside the plot. ECharts lays out series labels against each other
// (labelLayout) but not a markPoint's, and a fixed side ran into the line above (the allocated peak's label
// on the reserved line) or over the y axis.
import type * as echarts from "echarts/core";

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A pin's label: its series, its text and its point (in the axes' units). */
export interface PinLabel {
  series: number;
  text: string;
  coord: [number, number];
}

/** A series' line as drawn with step "end" (across to the next point's x, then up or down to it), in the axes' units. */
export interface StepLine {
  xs: number[];
  ys: number[];
}

const FONT = "10px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const TEXT_H = 13;
const GAP = 4;
// A "pin" of symbolSize 30 (echarts' symbol.ts: width 3/5 of the size, its head's circle 9 px across from
// 17 px above the point, its top 26 px above it), with a pixel of border.
const PIN_HALF_W = 10;
const PIN_TOP = 27;
const PIN_HEAD = 17;
// the legend's row over the plot
const LEGEND_BOTTOM = 18;

let measure: CanvasRenderingContext2D | null = null;
function textWidth(text: string): number {
  measure ??= document.createElement("canvas").getContext("2d");
  if (!measure) return text.length * 6;
  measure.font = FONT;
  return Math.ceil(measure.measureText(text).width);
}

function meets(a: Box, b: Box, pad = 2): boolean {
  return a.x < b.x + b.w + pad && b.x < a.x + a.w + pad && a.y < b.y + b.h + pad && b.y < a.y + a.h + pad;
}

/** First index whose x is >= x (xs ascending). */
function lowerBound(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether a stepped line crosses the box (pixels; px, py map the axes' units to pixels, both linear). */
function crosses(line: StepLine, box: Box, px: (x: number) => number, py: (y: number) => number, toX: (p: number) => number): boolean {
  const { xs, ys } = line;
  if (!xs.length) return false;
  // the points whose segments can reach the box: from the last one left of it to the first one right of it
  const a = Math.max(0, lowerBound(xs, toX(box.x - 2)) - 1);
  const b = Math.min(xs.length - 1, lowerBound(xs, toX(box.x + box.w + 2)));
  for (let i = a; i <= b; i++) {
    const x0 = px(xs[i]);
    const y0 = py(ys[i]);
    const x1 = i + 1 < xs.length ? px(xs[i + 1]) : x0;
    const y1 = i + 1 < xs.length ? py(ys[i + 1]) : y0;
    if (meets(box, { x: Math.min(x0, x1), y: y0, w: Math.abs(x1 - x0), h: 0 })) return true;
    if (i + 1 < xs.length && meets(box, { x: x1, y: Math.min(y0, y1), w: 0, h: Math.abs(y1 - y0) })) return true;
  }
  return false;
}

/**
 * The label option of each pin (ECharts' `markPoint.label` to merge: its anchor the pin's point, its offset the
 * place chosen), by series index; the first of these places beside the pin whose box stays in the plot and
 * meets no label placed before, no pin and no line: above, right, left, above right, above left, below, below
 * right, below left; where none is free, the one that meets the fewest.
 */
export function placePinLabels(chart: echarts.ECharts, pins: PinLabel[], lines: StepLine[]): Record<number, object> {
  const grid = (chart as unknown as { getModel(): { getComponent(t: string, i: number): { coordinateSystem?: { getRect(): Box & { width: number; height: number } } } } })
    .getModel().getComponent("grid", 0)?.coordinateSystem?.getRect();
  if (!grid) return {};
  const area: Box = { x: grid.x + 2, y: LEGEND_BOTTOM, w: grid.width - 4, h: grid.y + grid.height - LEGEND_BOTTOM };
  // the axes are linear: two points give each mapping
  const p0 = chart.convertToPixel({ gridIndex: 0 }, [0, 0]) as number[];
  const p1 = chart.convertToPixel({ gridIndex: 0 }, [1, 1]) as number[];
  const sx = p1[0] - p0[0];
  const sy = p1[1] - p0[1];
  const px = (x: number) => p0[0] + x * sx;
  const py = (y: number) => p0[1] + y * sy;
  const toX = (p: number) => (sx ? (p - p0[0]) / sx : 0);
  const at = pins.map((p) => ({ ...p, x: px(p.coord[0]), y: py(p.coord[1]) }));
  const pinBoxes: Box[] = at.map((p) => ({ x: p.x - PIN_HALF_W, y: p.y - PIN_TOP, w: 2 * PIN_HALF_W, h: PIN_TOP + 1 }));
  const placed: Box[] = [];
  const out: Record<number, object> = {};
  for (const p of at) {
    const w = textWidth(p.text) + 2;
    const h = TEXT_H;
    const head = p.y - PIN_HEAD - h / 2;
    const above = p.y - PIN_TOP - GAP - h;
    const right = p.x + PIN_HALF_W + GAP;
    const left = p.x - PIN_HALF_W - GAP - w;
    const candidates: Box[] = [
      { x: p.x - w / 2, y: above, w, h },
      { x: right, y: head, w, h },
      { x: left, y: head, w, h },
      { x: right, y: above, w, h },
      { x: left, y: above, w, h },
      { x: p.x - w / 2, y: p.y + GAP, w, h },
      { x: p.x + GAP, y: p.y + GAP, w, h },
      { x: p.x - GAP - w, y: p.y + GAP, w, h },
    ];
    let best: Box | null = null;
    let bestHits = Infinity;
    for (const c of candidates) {
      const inside = c.x >= area.x && c.x + c.w <= area.x + area.w && c.y >= area.y && c.y + c.h <= area.y + area.h;
      if (!inside) continue;
      const hits =
        placed.filter((b) => meets(c, b)).length * 2 + pinBoxes.filter((b) => meets(c, b)).length * 2 + lines.filter((l) => crosses(l, c, px, py, toX)).length;
      if (hits < bestHits) {
        best = c;
        bestHits = hits;
        if (!hits) break;
      }
    }
    best ??= candidates[0];
    placed.push(best);
    // anchored on the pin's point (its box's bottom middle), the text's top left corner at the offset
    out[p.series] = { position: ["50%", "100%"], offset: [Math.round(best.x - p.x), Math.round(best.y - p.y)], align: "left", verticalAlign: "top", distance: 0 };
  }
  return out;
}
