// Distributed: every rank of a run and span side by side — computation, communication, overlap, the rest.
// The tables and the note are RunDistributed.display (view "distributed", built in Python by
// display/parallel.py); the charts read RunDistributed's raw fields.
import { useEffect, useMemo, useState } from "preact/hooks";
import { csvUrl, fetchDistributed } from "../api";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { Card, Fold, Notice } from "../components/ui";
import type { TimeUnit } from "../display/cells";
import { DisplayTable } from "../display/DisplayTable";
import { tableOf, viewOf } from "../display/model";
import { Sentence } from "../display/Sentence";
import { inUnit } from "../format";
import type { Row, Table } from "../gen/tb_paddle_profile/v1/display_pb";
import { LoadState } from "../gen/tb_paddle_profile/v1/plugin_pb";
import type { RankDistributed, RunDistributed } from "../gen/tb_paddle_profile/v1/plugin_pb";
import type { LabelMap } from "../labels";
import { labelOf } from "../labels";
import { num, RANK_WINDOW, rankZoom, share2, timeUnit } from "./parallel/charts";
import { useParallel } from "./parallel/data";
import { FOLD_RANKS, ParallelSection, ParallelSummary } from "./parallel/Parallel";

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

/** Above this many ranks the per-step chart shows the ranks' mean and the slowest rank. */
export const MANY_RANKS = 16;

interface RankRow {
  r: RankDistributed;
  label: string;
  ready: boolean;
  total: number;
  comm: number;
  comp: number;
  overlap: number;
  other: number;
}

function rankRows(data: RunDistributed, labels?: LabelMap): RankRow[] {
  return data.ranks.map((r) => {
    const d = r.distributed;
    const total = num(r.totalTimeNs);
    const comm = num(d?.communicationNs);
    const comp = num(d?.computationNs);
    const overlap = num(d?.overlapNs);
    return { r, label: labelOf(r, labels), ready: r.state === LoadState.READY, total, comm, comp, overlap, other: total - (comp + comm - overlap) };
  });
}

function perRankOption(rows: RankRow[], unit: TimeUnit): ChartOption {
  const ready = rows.filter((x) => x.ready);
  return {
    ...rankZoom(ready.length),
    legend: { top: 0, itemWidth: 10, itemHeight: 10 },
    grid: { left: 8, right: 16, top: 28, bottom: ready.length > RANK_WINDOW ? 26 : 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const x = ready[ps[0].dataIndex];
        const parts = split(x.total, x.comm, x.comp, x.overlap);
        return tooltipBox(`${x.label} · steps ${timeUnit(x.total, unit)}`, [
          ...PARTS.map((p) => ({ color: PART_COLORS[p], name: p, value: `${timeUnit(parts[p], unit)} (${share2(parts[p], x.total)})` })),
        ]);
      }) as never,
    },
    // a rank the route could not number: its label (the display model's, else host and pid), never the raw worker name
    xAxis: { type: "category", data: ready.map((x) => (x.r.rank >= 0 ? `rank ${x.r.rank}` : x.label)), axisTick: { show: false } },
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

function stepCell(x: RankRow, step: number) {
  const s = (x.r.distributed?.steps ?? []).find((st) => num(st.step) === step);
  if (!s) return null;
  const dur = num(s.range?.endNs) - num(s.range?.startNs);
  return { dur, parts: split(dur, num(s.communicationNs), num(s.computationNs), num(s.overlapNs)) };
}

/** Many ranks: per step the ranks' mean split (stacked) and the slowest rank's step time (a line). */
function perStepManyOption(ready: RankRow[], stepIds: number[], unit: TimeUnit): ChartOption {
  const stats = stepIds.map((step) => {
    const sum: Record<Part, number> = { Computation: 0, Overlap: 0, Communication: 0, Other: 0 };
    let n = 0;
    let worst: { x: RankRow; dur: number } | null = null;
    for (const x of ready) {
      const c = stepCell(x, step);
      if (!c) continue;
      n++;
      for (const p of PARTS) sum[p] += Math.max(0, c.parts[p]);
      if (!worst || c.dur > worst.dur) worst = { x, dur: c.dur };
    }
    const mean = Object.fromEntries(PARTS.map((p) => [p, n ? sum[p] / n : 0])) as Record<Part, number>;
    return { n, mean, worst };
  });
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: [...PARTS, "Slowest rank"] },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const st = stats[ps[0].dataIndex];
        return tooltipBox(`Step ${stepIds[ps[0].dataIndex]} · mean of ${st.n} ranks`, [
          ...PARTS.map((p) => ({ color: PART_COLORS[p], name: p, value: `${timeUnit(st.mean[p], unit)}` })),
          { color: "#c62828", name: `Slowest: ${st.worst?.x.label ?? "-"}`, value: st.worst ? `${timeUnit(st.worst.dur, unit)}` : "-" },
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: stepIds.map((s) => `step ${s}`), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: [
      ...PARTS.map((part) => ({
        name: part,
        type: "bar" as const,
        stack: "mean",
        barMaxWidth: 56,
        itemStyle: { color: PART_COLORS[part] },
        data: stats.map((st) => inUnit(st.mean[part], unit)),
      })),
      {
        name: "Slowest rank",
        type: "line" as const,
        symbol: "diamond",
        symbolSize: 9,
        itemStyle: { color: "#c62828" },
        lineStyle: { color: "#c62828", width: 1, type: "dashed" as const },
        data: stats.map((st) => (st.worst ? inUnit(st.worst.dur, unit) : null)),
      },
    ],
  };
}

function perStepOption(rows: RankRow[], unit: TimeUnit): ChartOption {
  const ready = rows.filter((x) => x.ready);
  const stepIds = [...new Set(ready.flatMap((x) => (x.r.distributed?.steps ?? []).map((s) => num(s.step))))].sort((a, b) => a - b);
  if (ready.length > MANY_RANKS) return perStepManyOption(ready, stepIds, unit);
  const cell = stepCell;
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: [...PARTS] },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; seriesIndex: number }) => {
        const x = ready[Math.floor(p.seriesIndex / PARTS.length)];
        const c = cell(x, stepIds[p.dataIndex]);
        if (!c) return tooltipBox(x.label, []);
        return tooltipBox(`Step ${stepIds[p.dataIndex]} · ${x.label} · ${timeUnit(c.dur, unit)}`, [
          ...PARTS.map((part) => ({ color: PART_COLORS[part], name: part, value: `${timeUnit(c.parts[part], unit)}` })),
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
  labels,
  onOpenRank,
}: {
  data: RunDistributed;
  unit: TimeUnit;
  current: string;
  labels?: LabelMap;
  onOpenRank: (worker: string) => void;
}) {
  const open = (worker: string) => onOpenRank(worker);
  const view = viewOf(data.display, "distributed");
  const readyCount = useMemo(() => data.ranks.filter((r) => r.state === LoadState.READY).length, [data]);
  const parallelKey = `${data.run}\u0000${data.span}\u0000${data.ranks.map((r) => `${r.worker}:${r.state}:${r.fileVersion}`).join(",")}`;
  // at scale the summary part first (a tenth of the answer); the whole analysis once the details are opened
  const summaryOnly = data.ranks.length > FOLD_RANKS;
  const parallel = useParallel(data.run, data.span, parallelKey, summaryOnly ? "summary" : "");
  return (
    <div class="panel distributed" data-testid="panel-distributed">
      {/* ranks that failed to load: named with the reason, above everything the other ranks' analysis shows */}
      {view?.sentences
        .filter((s) => s.key === "missing")
        .map((s) => (
          <Notice kind="error" testId="missing-ranks">
            <Sentence sentence={s} timeUnit={unit} />
          </Notice>
        ))}
      <ParallelSummary state={parallel} unit={unit} current={current} labels={labels} onOpenRank={open} />
      {view?.sentences.filter((s) => s.key !== "missing").map((s) => (
        <Notice kind="info" testId={s.key === "no_communication" ? "no-communication" : "dist-sentence"}>
          <Sentence sentence={s} timeUnit={unit} />
        </Notice>
      ))}
      <Fold title="Step times and the ranks' tables" subtitle={`every rank, every step · ${unit}`} open={readyCount <= FOLD_RANKS} testId="dist-fold">
        <DistributedDetails data={data} unit={unit} current={current} labels={labels} open={open} />
      </Fold>
      <ParallelSection state={parallel} unit={unit} current={current} labels={labels} onOpenRank={open} whole={summaryOnly ? { run: data.run, span: data.span, key: parallelKey } : undefined} />
    </div>
  );
}

/** RunDistributed with its view's tables: `data` itself when it has them, else (the summary part of a
 * run of many ranks) the whole answer, fetched once the details are shown. */
function useWhole(data: RunDistributed): RunDistributed | null {
  const has = (d: RunDistributed) => (viewOf(d.display, "distributed")?.tables.length ?? 0) > 0 || !d.display;
  const [whole, setWhole] = useState<RunDistributed | null>(null);
  const need = !has(data);
  useEffect(() => {
    if (!need) return;
    const ctl = new AbortController();
    fetchDistributed(data.run, data.span, ctl.signal).then(
      (r) => r.kind === "ok" && window.setTimeout(() => !ctl.signal.aborted && setWhole(r.value), 0),
      () => undefined,
    );
    return () => ctl.abort();
  }, [data, need]);
  return need ? whole : data;
}

/** The charts and tables below the summary (computed only when the fold is open). */
function DistributedDetails({ data: summary, unit, current, labels, open }: { data: RunDistributed; unit: TimeUnit; current: string; labels?: LabelMap; open: (worker: string) => void }) {
  const whole = useWhole(summary);
  const data = whole ?? summary;
  const rows = useMemo(() => rankRows(data, labels), [data, labels]);
  const ready = rows.filter((x) => x.ready);
  const charts = useMemo(() => ({ steps: perStepOption(rows, unit), ranks: perRankOption(rows, unit) }), [rows, unit]);
  const many = ready.length > MANY_RANKS;
  const view = whole ? viewOf(whole.display, "distributed") : undefined;
  const byRank = useMemo(() => new Map(data.ranks.map((r) => [r.rank, r.worker])), [data]);
  const onLink = (link: string) => {
    const w = link.startsWith("rank:") ? byRank.get(Number(link.slice(5))) : undefined;
    if (w) open(w);
  };
  const failed = useMemo(() => new Set(data.ranks.filter((r) => r.state === LoadState.FAILED).map((r) => r.worker)), [data]);
  const rowClass = (row: Row) => `${row.id === current ? "current" : ""} ${failed.has(row.id) ? "failed" : ""}`;
  const table = (t: Table | undefined, testId: string, cardTestId: string, subtitle: string, maxHeight: number) =>
    t ? (
      <Card title={t.title} subtitle={subtitle} testId={cardTestId}>
        <DisplayTable
          table={t}
          timeUnit={unit}
          testId={testId}
          csvHref={csvUrl({ run: data.run, span: data.span }, "distributed", t.key)}
          onLink={onLink}
          rowClass={rowClass}
          noFilter={t.rows.length < 20}
          maxHeight={maxHeight}
          nameWidth={64}
        />
      </Card>
    ) : null;
  return (
    <>
      <div class="grid two-one">
        <Card
          title={many ? `Per step, mean of ${ready.length} ranks` : "Per step, every rank"}
          subtitle={many ? "stacked: the ranks' mean split of the step; line: the slowest rank's step time" : "one bar per rank, ranks in order; click a bar to open that rank"}
          testId="dist-steps-card"
        >
          <Chart option={charts.steps} height={300} testId="dist-steps-chart" onClick={(p) => !many && p.seriesIndex !== undefined && open(ready[Math.floor(p.seriesIndex / PARTS.length)].r.worker)} />
        </Card>
        <Card title="All steps, per rank" subtitle={ready.length > RANK_WINDOW ? `${RANK_WINDOW} ranks at a time: drag the slider · click a bar to open that rank` : "click a bar to open that rank"} testId="dist-ranks-card">
          <Chart option={charts.ranks} height={300} testId="dist-ranks-chart" onClick={(p) => open(ready[p.dataIndex].r.worker)} />
        </Card>
      </div>
      {view ? (
        <>
          {table(tableOf(view, "ranks"), "dist-ranks", "dist-table-card", `times in ${unit} · click a row to open the rank`, 560)}
          {table(tableOf(view, "steps"), "dist-step-rows", "dist-step-rows-card", `times in ${unit} · click a row to open the rank`, 320)}
        </>
      ) : (
        <Notice kind="loading" testId="dist-table-pending">
          The table of the ranks comes once every rank is read.
        </Notice>
      )}
    </>
  );
}
