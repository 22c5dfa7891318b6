// Distributed: every rank of a run and span side by side — computation, communication, overlap, the rest.
import { useMemo } from "preact/hooks";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { Card, Notice, SimpleTable } from "../components/ui";
import type { SimpleColumn } from "../components/ui";
import type { TimeUnit } from "../format";
import { fmtInt, fmtRatio, fmtTime, inUnit, ratio } from "../format";
import { LoadState } from "../gen/tb_paddle_profile/v1/plugin_pb";
import type { RankDistributed, RunDistributed } from "../gen/tb_paddle_profile/v1/plugin_pb";
import { num } from "../summary";
import { useParallel } from "./parallel/data";
import { ParallelSection, VerdictBanner } from "./parallel/Parallel";

export const PARTS = ["Computation", "Overlap", "Communication", "Other"] as const;
type Part = (typeof PARTS)[number];
export const PART_COLORS: Record<Part, string> = {
  Computation: "#1976d2",
  Overlap: "#8e24aa",
  Communication: "#f57c00",
  Other: "#b0bec5",
};

/** Splits a span of `duration` into computation only, overlap, communication only and the rest. */
function split(duration: number, comm: number, comp: number, overlap: number): Record<Part, number> {
  return {
    Computation: comp - overlap,
    Overlap: overlap,
    Communication: comm - overlap,
    Other: duration - (comp + comm - overlap),
  };
}

export function rankLabel(r: { worker: string; rank: number }): string {
  return r.rank >= 0 ? `rank ${r.rank}` : r.worker;
}

interface RankRow {
  r: RankDistributed;
  ready: boolean;
  total: number;
  comm: number;
  comp: number;
  overlap: number;
  other: number;
}

function rankRows(data: RunDistributed): RankRow[] {
  return data.ranks.map((r) => {
    const d = r.distributed;
    const total = num(r.totalTimeNs);
    const comm = num(d?.communicationNs);
    const comp = num(d?.computationNs);
    const overlap = num(d?.overlapNs);
    return { r, ready: r.state === LoadState.READY, total, comm, comp, overlap, other: total - (comp + comm - overlap) };
  });
}

function stateText(s: LoadState): string {
  return LoadState[s]?.toLowerCase() ?? "unknown";
}

function perRankOption(rows: RankRow[], unit: TimeUnit): ChartOption {
  const ready = rows.filter((x) => x.ready);
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10 },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const x = ready[ps[0].dataIndex];
        const parts = split(x.total, x.comm, x.comp, x.overlap);
        return tooltipBox(`${rankLabel(x.r)} · ${x.r.worker} · steps ${fmtTime(x.total, unit)} ${unit}`, [
          ...PARTS.map((p) => ({ color: PART_COLORS[p], name: p, value: `${fmtTime(parts[p], unit)} ${unit} (${fmtRatio(ratio(parts[p], x.total))}%)` })),
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: ready.map((x) => rankLabel(x.r)), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: PARTS.map((p) => ({
      name: p,
      type: "bar" as const,
      stack: "all",
      barMaxWidth: 56,
      itemStyle: { color: PART_COLORS[p] },
      data: ready.map((x) => inUnit(Math.max(0, split(x.total, x.comm, x.comp, x.overlap)[p]), unit)),
    })),
  };
}

function perStepOption(rows: RankRow[], unit: TimeUnit): ChartOption {
  const ready = rows.filter((x) => x.ready);
  const stepIds = [...new Set(ready.flatMap((x) => (x.r.distributed?.steps ?? []).map((s) => num(s.step))))].sort((a, b) => a - b);
  const cell = (x: RankRow, step: number) => {
    const s = (x.r.distributed?.steps ?? []).find((st) => num(st.step) === step);
    if (!s) return null;
    const dur = num(s.range?.endNs) - num(s.range?.startNs);
    return { dur, parts: split(dur, num(s.communicationNs), num(s.computationNs), num(s.overlapNs)) };
  };
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: [...PARTS] },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; seriesIndex: number }) => {
        const x = ready[Math.floor(p.seriesIndex / PARTS.length)];
        const c = cell(x, stepIds[p.dataIndex]);
        if (!c) return tooltipBox(rankLabel(x.r), []);
        return tooltipBox(`Step ${stepIds[p.dataIndex]} · ${rankLabel(x.r)} · ${fmtTime(c.dur, unit)} ${unit}`, [
          ...PARTS.map((part) => ({ color: PART_COLORS[part], name: part, value: `${fmtTime(c.parts[part], unit)} ${unit}` })),
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: stepIds.map((s) => `step ${s}`), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: ready.flatMap((x, ri) =>
      PARTS.map((part) => ({
        name: part,
        type: "bar" as const,
        stack: `r${ri}`,
        barMaxWidth: 28,
        barGap: "20%",
        itemStyle: { color: PART_COLORS[part], opacity: ri % 2 ? 0.82 : 1 },
        data: stepIds.map((s) => {
          const c = cell(x, s);
          return c ? inUnit(Math.max(0, c.parts[part]), unit) : 0;
        }),
      })),
    ),
  };
}

export function Distributed({
  data,
  unit,
  current,
  onOpenRank,
}: {
  data: RunDistributed;
  unit: TimeUnit;
  current: string;
  onOpenRank: (worker: string) => void;
}) {
  const rows = useMemo(() => rankRows(data), [data]);
  const ready = rows.filter((x) => x.ready);
  const charts = useMemo(() => ({ steps: perStepOption(rows, unit), ranks: perRankOption(rows, unit) }), [rows, unit]);
  const anyComm = ready.some((x) => x.r.distributed?.present);
  const columns: SimpleColumn<RankRow>[] = [
    { key: "rank", title: "Rank", align: "left", text: (x) => (x.r.rank >= 0 ? String(x.r.rank) : "-") },
    { key: "worker", title: "Worker", align: "left", text: (x) => x.r.worker },
    { key: "state", title: "State", align: "left", text: (x) => (x.r.error ? `${stateText(x.r.state)}: ${x.r.error}` : stateText(x.r.state)) },
    { key: "total", title: `ProfileStep (${unit})`, text: (x) => (x.ready ? fmtTime(x.total, unit) : "-") },
    { key: "comm", title: `Communication (${unit})`, group: "", text: (x) => (x.ready ? fmtTime(x.comm, unit) : "-"), swatch: () => PART_COLORS.Communication },
    { key: "comm_ratio", title: "Ratio (%)", text: (x) => (x.ready ? fmtRatio(ratio(x.comm, x.total)) : "-") },
    { key: "comp", title: `Computation (${unit})`, text: (x) => (x.ready ? fmtTime(x.comp, unit) : "-"), swatch: () => PART_COLORS.Computation },
    { key: "comp_ratio", title: "Ratio (%)", text: (x) => (x.ready ? fmtRatio(ratio(x.comp, x.total)) : "-") },
    { key: "overlap", title: `Overlap (${unit})`, text: (x) => (x.ready ? fmtTime(x.overlap, unit) : "-"), swatch: () => PART_COLORS.Overlap },
    { key: "overlap_ratio", title: "Ratio (%)", text: (x) => (x.ready ? fmtRatio(ratio(x.overlap, x.total)) : "-") },
    { key: "other", title: `Other (${unit})`, text: (x) => (x.ready ? fmtTime(x.other, unit) : "-"), swatch: () => PART_COLORS.Other },
    { key: "steps", title: "Steps", text: (x) => (x.ready ? fmtInt(x.r.steps.length) : "-") },
  ];
  const open = (worker: string) => onOpenRank(worker);
  const parallelKey = `${data.run}\u0000${data.span}\u0000${data.ranks.map((r) => `${r.worker}:${r.state}:${r.fileVersion}`).join(",")}`;
  const parallel = useParallel(data.run, data.span, parallelKey);
  const jump = () => document.getElementById("tbpp-parallel")?.scrollIntoView({ behavior: "smooth", block: "start" });
  return (
    <div class="panel distributed" data-testid="panel-distributed">
      <VerdictBanner state={parallel} unit={unit} onJump={jump} />
      {!anyComm && ready.length ? (
        <Notice kind="info" testId="no-communication">
          No rank of this span recorded communication (Paddle prints no Distribution Summary): every step is
          computation or the rest.
        </Notice>
      ) : null}
      <div class="grid two-one">
        <Card title="Per step, every rank" subtitle="one bar per rank, ranks in order; click a bar to open that rank" testId="dist-steps-card">
          <Chart option={charts.steps} height={300} testId="dist-steps-chart" onClick={(p) => p.seriesIndex !== undefined && open(ready[Math.floor(p.seriesIndex / PARTS.length)].r.worker)} />
        </Card>
        <Card title="All steps, per rank" subtitle="click a bar to open that rank" testId="dist-ranks-card">
          <Chart option={charts.ranks} height={300} testId="dist-ranks-chart" onClick={(p) => open(ready[p.dataIndex].r.worker)} />
        </Card>
      </div>
      <Card
        title="Ranks"
        subtitle="ratio = time / total step time of the rank · Other = step time − (communication ∪ computation) · click a row to open the rank"
        testId="dist-table-card"
      >
        <SimpleTable
          columns={columns}
          rows={rows}
          rowKey={(x) => x.r.worker}
          testId="dist-ranks"
          onRowClick={(x) => open(x.r.worker)}
          rowClass={(x) => `${x.r.worker === current ? "current" : ""} ${x.r.state === LoadState.FAILED ? "failed" : ""}`}
        />
      </Card>
      <ParallelSection state={parallel} unit={unit} current={current} onOpenRank={open} />
    </div>
  );
}
