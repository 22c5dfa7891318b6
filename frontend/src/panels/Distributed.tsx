// Distributed: every rank of a run and span side by side — computation, communication, overlap, the rest.
// The tables, the note and the charts' series are RunDistributed.display (view "distributed", built in
// Python by present/display/distributed.py): the charts draw its tables rank_parts and step_parts / step_means.
import { useEffect, useMemo, useState } from "preact/hooks";
import { csvUrl, fetchDistributed } from "../api";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { Card, Fold, Notice } from "../components/ui";
import type { TimeUnit } from "../display/cells";
import { formatCell } from "../display/cells";
import { DisplayTable } from "../display/DisplayTable";
import { cellOf, numberOf, runsOf, tableOf, textOf, viewOf } from "../display/model";
import { Sentence } from "../display/Sentence";
import { inUnit } from "../format";
import type { Row, Table } from "../gen/tb_paddle_profile/v1/display_pb";
import { LoadState } from "../gen/tb_paddle_profile/v1/plugin_pb";
import type { RunDistributed } from "../gen/tb_paddle_profile/v1/plugin_pb";
import type { LabelMap } from "../labels";
import { RANK_WINDOW, rankZoom, timeUnit } from "./parallel/charts";
import { useParallel } from "./parallel/data";
import { FOLD_RANKS, ParallelSection, ParallelSummary } from "./parallel/Parallel";

/** The parts a span splits into (the model's columns, in its order) and their colours. */
export const PARTS = [
  { key: "computation_ns", color: "#1976d2" },
  { key: "overlap_ns", color: "#8e24aa" },
  { key: "communication_ns", color: "#f57c00" },
  { key: "other_ns", color: "#b0bec5" },
] as const;

/** A part's name: its column's header in the model. */
function partName(t: Table, key: string): string {
  return t.columns.find((c) => c.key === key)?.header ?? key;
}

const share = (t: Table, r: Row, key: string) => {
  const k = key.replace(/_ns$/, "_share");
  const col = t.columns.find((c) => c.key === k);
  return col ? formatCell(col, cellOf(t, r, k)) : "-";
};

/** All steps per rank: the model's `rank_parts`, one stacked bar per rank. */
function perRankOption(t: Table, unit: TimeUnit): ChartOption {
  const rows = t.rows;
  return {
    ...rankZoom(rows.length),
    legend: { top: 0, itemWidth: 10, itemHeight: 10 },
    grid: { left: 8, right: 16, top: 28, bottom: rows.length > RANK_WINDOW ? 26 : 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const r = rows[ps[0].dataIndex];
        return tooltipBox(`${textOf(t, r, "label")} · steps ${timeUnit(numberOf(t, r, "total_ns"), unit)}`, [
          ...PARTS.map((p) => ({ color: p.color, name: partName(t, p.key), value: `${timeUnit(numberOf(t, r, p.key), unit)} (${share(t, r, p.key)})` })),
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: rows.map((r) => textOf(t, r, "name")), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: PARTS.map((p) => ({
      name: partName(t, p.key),
      type: "bar" as const,
      stack: "all",
      barMaxWidth: 56,
      itemStyle: { color: p.color },
      // a bar has no negative height (the tooltip gives the part as the model has it)
      data: rows.map((r) => inUnit(Math.max(0, numberOf(t, r, p.key)), unit)),
    })),
  };
}

/** Many ranks: the model's `step_means`, per step the ranks' mean split (stacked) and the slowest rank's step time (a line). */
function perStepManyOption(t: Table, unit: TimeUnit): ChartOption {
  const rows = t.rows;
  const slowest = t.columns.find((c) => c.key === "slowest")?.header ?? "";
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: [...PARTS.map((p) => partName(t, p.key)), slowest] },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const r = rows[ps[0].dataIndex];
        return tooltipBox(`Step ${numberOf(t, r, "step")} · mean of ${numberOf(t, r, "ranks")} ranks`, [
          ...PARTS.map((p) => ({ color: p.color, name: partName(t, p.key), value: `${timeUnit(numberOf(t, r, p.key), unit)}` })),
          { color: "#c62828", name: `Slowest: ${textOf(t, r, "slowest") || "-"}`, value: `${timeUnit(numberOf(t, r, "slowest_ns"), unit)}` },
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: rows.map((r) => `step ${numberOf(t, r, "step")}`), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: [
      ...PARTS.map((p) => ({
        name: partName(t, p.key),
        type: "bar" as const,
        stack: "mean",
        barMaxWidth: 56,
        itemStyle: { color: p.color },
        data: rows.map((r) => inUnit(numberOf(t, r, p.key), unit)),
      })),
      {
        name: slowest,
        type: "line" as const,
        symbol: "diamond",
        symbolSize: 9,
        itemStyle: { color: "#c62828" },
        lineStyle: { color: "#c62828", width: 1, type: "dashed" as const },
        data: rows.map((r) => inUnit(numberOf(t, r, "slowest_ns"), unit)),
      },
    ],
  };
}

/** The model's `step_parts` as (rank, its rows, one per step in the model's order). */
function stepRanks(t: Table): { worker: string; label: string; rows: Row[] }[] {
  return runsOf(t, "worker").map((x) => ({ worker: x.text, label: textOf(t, x.rows[0], "label"), rows: x.rows }));
}

/** A few ranks: the model's `step_parts`, per step one stacked bar per rank. */
function perStepOption(t: Table, unit: TimeUnit): ChartOption {
  const ranks = stepRanks(t);
  const steps = (ranks[0]?.rows ?? []).map((r) => numberOf(t, r, "step"));
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, data: PARTS.map((p) => partName(t, p.key)) },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; seriesIndex: number }) => {
        const x = ranks[Math.floor(p.seriesIndex / PARTS.length)];
        const r = x.rows[p.dataIndex];
        if (cellOf(t, r, "total_ns")?.missing) return tooltipBox(x.label, []);
        return tooltipBox(`Step ${steps[p.dataIndex]} · ${x.label} · ${timeUnit(numberOf(t, r, "total_ns"), unit)}`, [
          ...PARTS.map((part) => ({ color: part.color, name: partName(t, part.key), value: `${timeUnit(numberOf(t, r, part.key), unit)}` })),
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: steps.map((s) => `step ${s}`), axisTick: { show: false } },
    yAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    series: ranks.flatMap((x, ri) =>
      PARTS.map((part) => ({
        name: partName(t, part.key),
        type: "bar" as const,
        stack: `r${ri}`,
        barMaxWidth: 28,
        barGap: "20%",
        itemStyle: { color: part.color, opacity: ri % 2 ? 0.82 : 1 },
        data: x.rows.map((r) => inUnit(Math.max(0, numberOf(t, r, part.key)), unit)),
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
      {view?.sentences.filter((s) => s.key !== "missing" && s.key !== "partial").map((s) => (
        <Notice kind="info" testId={s.key === "no_communication" ? "no-communication" : "dist-sentence"}>
          <Sentence sentence={s} timeUnit={unit} />
        </Notice>
      ))}
      <Fold title="Step times and the ranks' tables" subtitle={`every rank, every step · ${unit}`} open={readyCount <= FOLD_RANKS} testId="dist-fold">
        <DistributedDetails data={data} unit={unit} current={current} open={open} />
      </Fold>
      <ParallelSection state={parallel} unit={unit} current={current} labels={labels} onOpenRank={open} whole={summaryOnly ? { run: data.run, span: data.span, key: parallelKey } : undefined} />
    </div>
  );
}

/** RunDistributed with its view's tables: `data` itself when it has them (or is a partial answer, whose
 * tables come once every rank is read), else (the summary part of a run of many ranks) the whole answer,
 * fetched once the details are shown. */
function useWhole(data: RunDistributed): RunDistributed | null {
  const has = (d: RunDistributed) => {
    const v = viewOf(d.display, "distributed");
    return !v || !!tableOf(v, "ranks") || v.sentences.some((s) => s.key === "partial");
  };
  const [whole, setWhole] = useState<RunDistributed | null>(null);
  const need = !has(data);
  useEffect(() => {
    if (!need) return;
    const ctl = new AbortController();
    fetchDistributed(data.run, data.span, ctl.signal, "details").then(
      (r) => r.kind === "ok" && window.setTimeout(() => !ctl.signal.aborted && setWhole(r.value), 0),
      () => undefined,
    );
    return () => ctl.abort();
  }, [data, need]);
  return need ? whole : data;
}

/** The charts and tables below the summary (computed only when the fold is open). */
function DistributedDetails({ data: summary, unit, current, open }: { data: RunDistributed; unit: TimeUnit; current: string; open: (worker: string) => void }) {
  const whole = useWhole(summary);
  const data = whole ?? summary;
  // the charts: the model's series of the ranks read (the summary part and a partial answer carry them)
  const shown = viewOf(data.display, "distributed");
  const rankParts = tableOf(shown, "rank_parts");
  const means = tableOf(shown, "step_means");
  const stepParts = tableOf(shown, "step_parts");
  const stepTable = means ?? stepParts;
  const charts = useMemo(
    () => ({
      steps: means ? perStepManyOption(means, unit) : stepParts ? perStepOption(stepParts, unit) : null,
      ranks: rankParts ? perRankOption(rankParts, unit) : null,
      stepRanks: stepParts ? stepRanks(stepParts) : [],
    }),
    [means, stepParts, rankParts, unit],
  );
  const nRanks = rankParts?.rows.length ?? 0;
  const view = whole ? viewOf(whole.display, "distributed") : undefined;
  const partial = view?.sentences.find((s) => s.key === "partial");
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
          title={stepTable?.title ?? ""}
          subtitle={means ? "stacked: the ranks' mean split of the step; line: the slowest rank's step time" : "one bar per rank, ranks in order; click a bar to open that rank"}
          testId="dist-steps-card"
        >
          {charts.steps ? (
            <Chart option={charts.steps} height={300} testId="dist-steps-chart" onClick={(p) => !means && p.seriesIndex !== undefined && open(charts.stepRanks[Math.floor(p.seriesIndex / PARTS.length)].worker)} />
          ) : null}
        </Card>
        <Card title={rankParts?.title ?? ""} subtitle={nRanks > RANK_WINDOW ? `${RANK_WINDOW} ranks at a time: drag the slider · click a bar to open that rank` : "click a bar to open that rank"} testId="dist-ranks-card">
          {charts.ranks && rankParts ? <Chart option={charts.ranks} height={300} testId="dist-ranks-chart" onClick={(p) => open(textOf(rankParts, rankParts.rows[p.dataIndex], "worker"))} /> : null}
        </Card>
      </div>
      {view && !partial ? (
        <>
          {table(tableOf(view, "ranks"), "dist-ranks", "dist-table-card", `times in ${unit} · click a row to open the rank`, 560)}
          {table(tableOf(view, "steps"), "dist-step-rows", "dist-step-rows-card", `times in ${unit} · click a row to open the rank`, 320)}
        </>
      ) : (
        <Notice kind="loading" testId="dist-table-pending">
          {partial ? <Sentence sentence={partial} timeUnit={unit} /> : "The table of the ranks comes once every rank is read."}
        </Notice>
      )}
    </>
  );
}
