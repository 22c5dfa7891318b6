// ECharts options of the hybrid-parallel section: step breakdown (rank × step), waits, rank × step heatmaps.
import type { ChartOption } from "../../components/Chart";
import { tooltipBox } from "../../components/Chart";
import { inkOn, scaleColor } from "../../components/color";
import { create } from "@bufbuild/protobuf";
import type { TimeUnit } from "../../display/cells";
import { formatCell, formatValue } from "../../display/cells";
import { cellOf, groupColumns, numberOf, runsOf, textOf } from "../../display/model";
import { inUnit } from "../../format";
import { CellKind, CellSchema, FormatSchema } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { Column, Row, Table } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { RankParallel, RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { CollectiveKind } from "../../gen/tb_paddle_profile/v1/summary_pb";
import { KIND_COLORS, KIND_LABELS } from "./kinds";

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

export const FIXED_COLORS: Record<string, string> = {
  compute_ns: "#1976d2",
  hidden_comm_ns: "#90caf9",
  exposed_memcpy_ns: "#00897b",
  idle_ns: "#cfd8dc",
};

/** A part's colour by its column key (the kinds': `exposed_<kind>_ns`, the kind's colour). */
export function partColor(key: string): string {
  if (key in FIXED_COLORS) return FIXED_COLORS[key];
  for (const [kind, label] of Object.entries(KIND_LABELS)) if (key === `exposed_${label}_ns`) return KIND_COLORS[Number(kind)];
  return KIND_COLORS[CollectiveKind.OTHER];
}

/**
 * The step breakdown as stacked bars, x = rank: the model's `breakdown_steps` (per rank one bar per step;
 * rows rank-major) or `breakdown_mean` (one bar of the means per rank). Its parts are the columns of group
 * "part" (each part's own time, in the tooltip with its "share" of the step), drawn with the heights of
 * group "bar" (display/parallel_charts.py).
 */
export function breakdownOption(t: Table, unit: TimeUnit): ChartOption {
  const ranks = runsOf(t, "worker");
  const perStep = t.key === "breakdown_steps";
  const steps = (ranks[0]?.rows ?? []).map((r) => numberOf(t, r, "step"));
  const parts = groupColumns(t, "part");
  const bars = groupColumns(t, "bar");
  const shares = groupColumns(t, "share");
  const nBars = Math.max(1, steps.length);
  const cell = (r: Row, c: Column) => cellOf(t, r, c.key);
  const tip = (r: Row) =>
    tooltipBox(`${textOf(t, r, "label")} · ${perStep ? `step ${numberOf(t, r, "step")}` : "mean per step"} · step time ${timeUnit(numberOf(t, r, "total_ns"), unit)}`, [
      ...parts.map((p, i) => ({ color: partColor(p.key), name: p.header, value: `${timeUnit(cell(r, p)?.number ?? 0, unit)} (${formatCell(shares[i], cell(r, shares[i]))})` })),
      { name: "Exposed comm (all kinds)", value: `${timeUnit(numberOf(t, r, "exposed_comm_ns"), unit)}` },
    ]);
  return {
    ...rankZoom(ranks.length),
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: parts.map((p) => p.header) },
    grid: { left: 8, right: 16, top: 34, bottom: ranks.length > RANK_WINDOW ? 26 : 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; seriesIndex: number }) => {
        const r = ranks[p.dataIndex].rows[Math.floor(p.seriesIndex / Math.max(1, parts.length))];
        if (cellOf(t, r, "total_ns")?.missing) return tooltipBox(textOf(t, r, "label"), []);
        return tip(r);
      }) as never,
    },
    xAxis: { type: "category", data: ranks.map((x) => textOf(t, x.rows[0], "name")), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: (perStep ? steps : [0]).flatMap((_s, si) =>
      parts.map((p, pi) => ({
        name: p.header,
        type: "bar" as const,
        stack: `s${si}`,
        barMaxWidth: nBars > 1 ? 18 : 48,
        barGap: "15%",
        itemStyle: { color: partColor(p.key), borderColor: "#fff", borderWidth: 0 },
        emphasis: { focus: "none" as const },
        data: ranks.map((x) => inUnit(Math.max(0, cell(x.rows[si], bars[pi])?.number ?? 0), unit)),
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

/** Heatmap cell data: [step index, row index, value]. */
export type HeatCell = [number, number, number];

/**
 * A rank × step heatmap of the model's heat table (display/parallel_charts.py heat_table): a row per bin of
 * consecutive ranks (one rank each unless there are many), columns = steps, each cell the bin's largest value
 * (a missing cell is left empty), coloured over the table's scale. The tooltip names a bin's ranks and its
 * worst rank.
 */
export function heatmapOption(t: Table, unit: TimeUnit, colors: string[], label: string): ChartOption {
  const values = groupColumns(t, "value");
  const worst = groupColumns(t, "worst");
  const data: HeatCell[] = [];
  t.rows.forEach((r, bi) =>
    values.forEach((c, si) => {
      const cell = cellOf(t, r, c.key);
      if (cell && !cell.missing) data.push([si, bi, cell.number]);
    }),
  );
  const lo = t.scale?.min ?? 0;
  const hi = t.scale?.max ?? 1;
  const nRows = t.rows.length;
  const showLabels = values.length <= 24 && nRows <= 32;
  return {
    grid: { left: 8, right: 70, top: 8, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { data: HeatCell }) => {
        const [si, bi, v] = p.data;
        const r = t.rows[bi];
        const step = values[si].header.slice(1);
        if (numberOf(t, r, "ranks") === 1) return tooltipBox(`${textOf(t, r, "title")} · step ${step}`, [{ name: label, value: `${timeUnit(v, unit)}` }]);
        return tooltipBox(`${textOf(t, r, "title")} · step ${step}`, [
          { name: `${label}, max of the bin`, value: `${timeUnit(v, unit)}` },
          { name: "worst rank", value: textOf(t, r, worst[si].key) },
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: values.map((c) => c.header), splitArea: { show: false }, axisTick: { show: false } },
    yAxis: { type: "category", inverse: true, data: t.rows.map((r) => textOf(t, r, "name")), axisTick: { show: false } },
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

/** The worker of a heatmap cell's worst rank (a click opens it). */
export function heatWorker(t: Table, cell: HeatCell): string {
  const c = groupColumns(t, "worker")[cell[0]];
  const r = t.rows[cell[1]];
  return c && r ? textOf(t, r, c.key) : "";
}
