// ECharts options of the hybrid-parallel section: step breakdown (rank × step), waits, rank × step heatmaps.
import type { ChartOption } from "../../components/Chart";
import { tooltipBox } from "../../components/Chart";
import { inkOn, scaleColor } from "../../components/color";
import { create } from "@bufbuild/protobuf";
import type { TimeUnit } from "../../display/cells";
import { formatValue } from "../../display/cells";
import { inUnit } from "../../format";
import { CellKind, CellSchema, FormatSchema } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { RankParallel, RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { CollectiveKind, ParallelStep } from "../../gen/tb_paddle_profile/v1/summary_pb";
import { KIND_COLORS, KIND_ORDER, kindLabel } from "./kinds";

/** A protobuf int64 (or a plain number) as a JavaScript number, for charts. */
export function num(x: bigint | number | undefined): number {
  return x === undefined ? 0 : Number(x);
}

// Chart labels and tooltips print their numbers with the display model's one formatter (cells.ts).
const DURATION = create(FormatSchema, { kind: CellKind.CELL_DURATION });
const DURATION_UNIT = create(FormatSchema, { kind: CellKind.CELL_DURATION, style: "unit" });
const PERCENT1 = create(FormatSchema, { kind: CellKind.CELL_PERCENT, digits: 1 });

/** A time in ns printed in `unit` ("12.34"). */
export function time(ns: number | bigint, unit: TimeUnit): string {
  return formatValue(DURATION, create(CellSchema, { number: num(ns) }), unit);
}

/** A time in ns printed in `unit` with the unit ("12.34 ms"). */
export function timeUnit(ns: number | bigint, unit: TimeUnit): string {
  return formatValue(DURATION_UNIT, create(CellSchema, { number: num(ns) }), unit);
}

/** A fraction as a percentage with one decimal ("12.5%"). */
export function pct1(fraction: number): string {
  return formatValue(PERCENT1, create(CellSchema, { number: fraction }));
}

export function parRankLabel(r: { rank: number; rankInferred?: boolean }): string {
  return `rank ${r.rank}${r.rankInferred ? "*" : ""}`;
}

/** A rank's one label (RankParallel.label, else the worker name's). */
export type RankLabel = (r: RankParallel) => string;

/** Above this many ranks a rank axis shows RANK_WINDOW ranks at a time, with a slider. */
export const RANK_WINDOW = 64;

export function rankZoom(n: number): Record<string, unknown> {
  if (n <= RANK_WINDOW) return {};
  return {
    dataZoom: [
      { type: "slider", xAxisIndex: 0, startValue: 0, endValue: RANK_WINDOW - 1, height: 16, bottom: 2, brushSelect: false },
      { type: "inside", xAxisIndex: 0, zoomOnMouseWheel: false, moveOnMouseWheel: false, moveOnMouseMove: true },
    ],
  };
}

/** One bar's parts: the step split exactly (compute only + hidden comm + exposed by kind + memcpy + idle = step). */
export interface Breakdown {
  step: number;
  computeOnly: number;
  hidden: number;
  exposed: number;
  /** Each kind's own exposed time (kinds can overlap each other). */
  kinds: Map<CollectiveKind, number>;
  memcpy: number;
  idle: number;
  total: number;
}

export const FIXED_PARTS = {
  compute: { name: "Compute", color: "#1976d2" },
  hidden: { name: "Hidden comm", color: "#90caf9" },
  memcpy: { name: "Exposed memcpy", color: "#00897b" },
  idle: { name: "Idle", color: "#cfd8dc" },
} as const;

export function exposedName(kind: CollectiveKind): string {
  return `Exposed ${kindLabel(kind)}`;
}

export function stepBreakdown(s: ParallelStep): Breakdown {
  const compute = num(s.computeNs);
  const hidden = num(s.hiddenCommunicationNs);
  const kinds = new Map<CollectiveKind, number>();
  for (const k of s.kinds) kinds.set(k.kind, num(k.exposedNs));
  return {
    step: num(s.step),
    computeOnly: compute - hidden,
    hidden,
    exposed: num(s.exposedCommunicationNs),
    kinds,
    memcpy: num(s.exposedMemoryNs),
    idle: num(s.idleNs),
    total: num(s.range?.endNs) - num(s.range?.startNs),
  };
}

export function meanBreakdown(r: RankParallel): Breakdown {
  const n = Math.max(1, r.steps);
  const kinds = new Map<CollectiveKind, number>();
  for (const k of r.kinds) kinds.set(k.kind, num(k.exposedNs) / n);
  const hidden = num(r.hiddenCommunicationNs);
  return {
    step: -1,
    computeOnly: num(r.computeNs) - hidden,
    hidden,
    exposed: num(r.exposedCommunicationNs),
    kinds,
    memcpy: num(r.exposedMemoryNs),
    idle: num(r.idleNs),
    total: num(r.stepTimeNs),
  };
}

/** Drawn heights: kinds stacked in order, each cut so the kinds together fill exactly the exposed total. */
function drawnKinds(b: Breakdown, kinds: CollectiveKind[]): Map<CollectiveKind, number> {
  const out = new Map<CollectiveKind, number>();
  let left = b.exposed;
  for (const k of kinds) {
    const v = Math.max(0, Math.min(b.kinds.get(k) ?? 0, left));
    out.set(k, v);
    left -= v;
  }
  // Exposed time no kind accounts for (should not happen): drawn with the last kind present.
  if (left > 0 && kinds.length) out.set(kinds[kinds.length - 1], (out.get(kinds[kinds.length - 1]) ?? 0) + left);
  return out;
}

export function kindsPresent(rp: RunParallel): CollectiveKind[] {
  const have = new Set(rp.kinds.map((k) => k.kind));
  return KIND_ORDER.filter((k) => have.has(k));
}

interface Part {
  name: string;
  color: string;
  value: (b: Breakdown, drawn: Map<CollectiveKind, number>) => number;
  own: (b: Breakdown) => number;
}

function parts(kinds: CollectiveKind[]): Part[] {
  return [
    { ...FIXED_PARTS.compute, value: (b) => b.computeOnly, own: (b) => b.computeOnly },
    { ...FIXED_PARTS.hidden, value: (b) => b.hidden, own: (b) => b.hidden },
    ...kinds.map((k) => ({
      name: exposedName(k),
      color: KIND_COLORS[k],
      value: (_b: Breakdown, d: Map<CollectiveKind, number>) => d.get(k) ?? 0,
      own: (b: Breakdown) => b.kinds.get(k) ?? 0,
    })),
    { ...FIXED_PARTS.memcpy, value: (b) => b.memcpy, own: (b) => b.memcpy },
    { ...FIXED_PARTS.idle, value: (b) => b.idle, own: (b) => b.idle },
  ];
}

function breakdownTip(title: string, b: Breakdown, ps: Part[], unit: TimeUnit): HTMLElement {
  return tooltipBox(`${title} · step time ${timeUnit(b.total, unit)}`, [
    ...ps.map((p) => ({ color: p.color, name: p.name, value: `${timeUnit(p.own(b), unit)} (${b.total ? pct1(p.own(b) / b.total) : "-"})` })),
    { name: "Exposed comm (all kinds)", value: `${timeUnit(b.exposed, unit)}` },
  ]);
}

/**
 * Stacked bars, x = rank; per rank one bar per step (`perStep`) or one bar of the means per step.
 * `cells[rank index][step index]` is null where the rank lacks the step.
 */
export function breakdownOption(
  ranks: RankParallel[],
  stepIds: number[],
  cells: (Breakdown | null)[][],
  kinds: CollectiveKind[],
  unit: TimeUnit,
  label: RankLabel = parRankLabel,
): ChartOption {
  const drawn = cells.map((row) => row.map((b) => (b ? drawnKinds(b, kinds) : null)));
  // Parts that are zero everywhere (no memcpy, nothing hidden on a host timeline) stay out of the legend.
  const ps = parts(kinds).filter((p) => cells.some((row, ri) => row.some((b, si) => b && p.value(b, drawn[ri][si]!) > 0)));
  const perStep = stepIds.length > 1 || stepIds[0] !== -1;
  const nBars = Math.max(1, stepIds.length);
  return {
    ...rankZoom(ranks.length),
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: ps.map((p) => p.name) },
    grid: { left: 8, right: 16, top: 34, bottom: ranks.length > RANK_WINDOW ? 26 : 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; seriesIndex: number }) => {
        const si = Math.floor(p.seriesIndex / ps.length);
        const b = cells[p.dataIndex][si];
        const r = ranks[p.dataIndex];
        if (!b) return tooltipBox(label(r), []);
        return breakdownTip(`${label(r)} · ${perStep ? `step ${stepIds[si]}` : "mean per step"}`, b, ps, unit);
      }) as never,
    },
    xAxis: { type: "category", data: ranks.map((r) => parRankLabel(r)), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: stepIds.flatMap((_s, si) =>
      ps.map((p) => ({
        name: p.name,
        type: "bar" as const,
        stack: `s${si}`,
        barMaxWidth: nBars > 1 ? 18 : 48,
        barGap: "15%",
        itemStyle: { color: p.color, borderColor: "#fff", borderWidth: 0 },
        emphasis: { focus: "none" as const },
        data: ranks.map((_r, ri) => {
          const b = cells[ri][si];
          return b ? inUnit(Math.max(0, p.value(b, drawn[ri][si]!)), unit) : 0;
        }),
      })),
    ),
  };
}

export const WAIT_COLORS = { waited: "#90a4ae", caused: "#c62828" };

/** Per rank: time it waited at collectives vs time its peers waited for it (per step). */
export function waitsOption(rp: RunParallel, unit: TimeUnit, named: Set<number>, label: RankLabel = parRankLabel): ChartOption {
  const ranks = rp.ranks;
  return {
    ...rankZoom(ranks.length),
    legend: { top: 0, itemWidth: 10, itemHeight: 10 },
    grid: { left: 8, right: 16, top: 34, bottom: ranks.length > RANK_WINDOW ? 26 : 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const r = ranks[ps[0].dataIndex];
        return tooltipBox(`${label(r)} · per step`, [
          { color: WAIT_COLORS.waited, name: "Waited for peers", value: `${timeUnit(num(r.waitNs), unit)}` },
          { color: WAIT_COLORS.caused, name: "Made peers wait", value: `${timeUnit(num(r.causedWaitNs), unit)}` },
          { name: "Arrived last", value: `${r.lastArrivals}/${r.matched}` },
        ]);
      }) as never,
    },
    xAxis: {
      type: "category",
      data: ranks.map((r) => parRankLabel(r)),
      axisTick: { show: false },
      axisLabel: { formatter: (v: string, i: number) => (named.has(ranks[i]?.rank) ? `{b|${v}}` : v), rich: { b: { fontWeight: "bold", color: "#c62828" } } },
    },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: [
      { name: "Waited for peers", type: "bar", barMaxWidth: 22, itemStyle: { color: WAIT_COLORS.waited }, data: ranks.map((r) => inUnit(num(r.waitNs), unit)) },
      { name: "Made peers wait", type: "bar", barMaxWidth: 22, itemStyle: { color: WAIT_COLORS.caused }, data: ranks.map((r) => inUnit(num(r.causedWaitNs), unit)) },
    ],
  };
}

/** At most this many rows in a heatmap: beyond, ranks are binned (consecutive ranks, the max of each bin). */
export const MAX_HEAT_ROWS = 128;

export interface HeatBins {
  /** Ranks per row (1: one row per rank). */
  size: number;
  /** Per row: first and last index into rp.ranks. */
  rows: [number, number][];
}

export function heatBins(n: number, maxRows = MAX_HEAT_ROWS): HeatBins {
  const size = Math.max(1, Math.ceil(n / maxRows));
  const rows: [number, number][] = [];
  for (let i = 0; i < n; i += size) rows.push([i, Math.min(n, i + size) - 1]);
  return { size, rows };
}

/** Heatmap cell data: [step index, row index, value, index of the worst rank in the row's bin]. */
export type HeatCell = [number, number, number, number];

/**
 * A rank × step heatmap (rows = ranks top to bottom, or bins of consecutive ranks holding each
 * bin's maximum when there are more than MAX_HEAT_ROWS ranks; columns = steps); -1 cells are left
 * empty. The tooltip names a bin's rank range and its worst rank.
 */
export function heatmapOption(rp: RunParallel, values: bigint[], unit: TimeUnit, colors: string[], label: string, rankLabel: RankLabel = parRankLabel): ChartOption {
  const steps = rp.steps.map((s) => num(s));
  const ranks = rp.ranks;
  const bins = heatBins(ranks.length);
  const data: HeatCell[] = [];
  let lo = Infinity;
  let hi = -Infinity;
  bins.rows.forEach(([a, b], bi) =>
    steps.forEach((_s, si) => {
      let best = -1;
      let worst = -1;
      for (let ri = a; ri <= b; ri++) {
        const v = num(values[ri * steps.length + si]);
        if (v >= 0 && v > best) {
          best = v;
          worst = ri;
        }
      }
      if (worst < 0) return;
      data.push([si, bi, best, worst]);
      lo = Math.min(lo, best);
      hi = Math.max(hi, best);
    }),
  );
  if (!data.length) {
    lo = 0;
    hi = 1;
  }
  if (hi === lo) hi = lo + 1;
  const nRows = bins.rows.length;
  const showLabels = steps.length <= 24 && nRows <= 32;
  const rowName = ([a, b]: [number, number]) => (a === b ? parRankLabel(ranks[a]) : `ranks ${ranks[a].rank}–${ranks[b].rank}`);
  return {
    grid: { left: 8, right: 70, top: 8, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { data: HeatCell }) => {
        const [si, bi, v, wi] = p.data;
        const [a, b] = bins.rows[bi];
        if (a === b) return tooltipBox(`${rankLabel(ranks[a])} · step ${steps[si]}`, [{ name: label, value: `${timeUnit(v, unit)}` }]);
        return tooltipBox(`ranks ${ranks[a].rank}–${ranks[b].rank} (${b - a + 1} ranks) · step ${steps[si]}`, [
          { name: `${label}, max of the bin`, value: `${timeUnit(v, unit)}` },
          { name: "worst rank", value: rankLabel(ranks[wi]) },
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: steps.map((s) => `#${s}`), splitArea: { show: false }, axisTick: { show: false } },
    yAxis: { type: "category", inverse: true, data: bins.rows.map(rowName), axisTick: { show: false } },
    visualMap: {
      type: "continuous",
      min: lo,
      max: hi,
      dimension: 2,
      calculable: false,
      orient: "vertical",
      right: 4,
      top: "middle",
      itemHeight: Math.max(60, Math.min(160, 26 * nRows - 40)),
      text: [time(hi, unit), time(lo, unit)],
      itemWidth: 10,
      inRange: { color: colors },
      textStyle: { fontSize: 10 },
    },
    series: [
      {
        type: "heatmap",
        data,
        // thin rows: no white border, which would cover them
        itemStyle: nRows > 48 ? { borderWidth: 0 } : { borderColor: "#fff", borderWidth: 1 },
        label: showLabels
          ? {
              show: true,
              // black or white, whichever reads better on the cell's own colour (the scale at its value; the
              // cells keep their colours in dark mode, and so do these)
              formatter: ((p: { data: HeatCell }) => `{${inkOn(scaleColor(colors, (p.data[2] - lo) / (hi - lo))) === "#000000" ? "ink" : "paper"}|${time(p.data[2], unit)}}`) as never,
              rich: { ink: { color: "#000000", fontSize: 10 }, paper: { color: "#ffffff", fontSize: 10 } },
            }
          : { show: false },
        emphasis: { itemStyle: { borderColor: "#212121", borderWidth: 1 } },
      },
    ],
  };
}
