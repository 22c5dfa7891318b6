// Overview: the trace's facts, device utilization, event types (CPU / GPU), model stages per step, the
// distribution summary and the top operators and kernels. Every table is the display model's view
// "overview" (built in Python); charts read the cells' raw numbers and print their labels with cells.ts.
import { useMemo, useState } from "preact/hooks";
import type { SpanKey } from "../api";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { Card, Segmented, Stat } from "../components/ui";
import { formatCell } from "../display/cells";
import { DisplayCard, ViewSentences } from "../display/DisplayCard";
import { cellOf, columnIndex, numberOf, partOf, tableOf, textOf, viewOf } from "../display/model";
import type { TimeUnit } from "../format";
import { fmtBytes, fmtInt, fmtTime, inUnit } from "../format";
import { RowRole } from "../gen/tb_paddle_profile/v1/display_pb";
import type { Display, Row, Table } from "../gen/tb_paddle_profile/v1/display_pb";
import type { Summary } from "../gen/tb_paddle_profile/v1/summary_pb";

export const STAGE_COLORS: Record<string, string> = {
  Dataloader: "#8e24aa",
  Forward: "#1976d2",
  Backward: "#f57c00",
  Optimization: "#43a047",
  Others: "#b0bec5",
};
const STAGES = ["Dataloader", "Forward", "Backward", "Optimization", "Others"] as const;

const TOP_ROWS = 10;
/** Tables of the view that this panel draws in their own cards (or, for "model_steps", inside another). */
const DRAWN_APART = new Set(["device", "overview", "model", "model_steps", "distributed", "kernel_efficiency", "launch_queue"]);

const num = (v: bigint | number | undefined): number => (v === undefined ? 0 : Number(v));

interface Props {
  summary: Summary;
  display: Display;
  spanKey: SpanKey;
  unit: TimeUnit;
  onOpen: (view: "operators" | "kernels") => void;
}

export function Overview({ summary, display, spanKey, unit, onOpen }: Props) {
  const view = viewOf(display, "overview");
  const device = tableOf(view, "device");
  const overview = tableOf(view, "overview");
  const model = tableOf(view, "model");
  const modelSteps = tableOf(view, "model_steps");
  const distributed = tableOf(view, "distributed");
  const kernelEfficiency = tableOf(view, "kernel_efficiency");
  const launchQueue = tableOf(view, "launch_queue");
  // The view's other tables (communication per communicator, launch latency, host stalls, FLOPs, …), each
  // a card in the model's order: the panel draws whatever the model adds.
  const others = (view?.tables ?? []).filter((t) => !DRAWN_APART.has(t.key) && !t.key.includes(".thread."));
  const operators = tableOf(viewOf(display, "operators"), "operators");
  const kernels = tableOf(viewOf(display, "kernels"), "kernels");
  const card = { spanKey, view: "overview", timeUnit: unit };
  return (
    <div class="panel overview" data-testid="panel-overview">
      <div class="grid two">
        <TraceCard summary={summary} unit={unit} />
        {device ? <DeviceCard table={device} unit={unit} /> : null}
      </div>
      <ViewSentences sentences={view?.sentences ?? []} timeUnit={unit} />
      {overview ? <EventTypes table={overview} {...card} /> : null}
      {model ? <ModelStages table={model} steps={modelSteps} {...card} /> : null}
      {distributed ? (
        <DisplayCard
          {...card}
          table={distributed}
          subtitle="communication and computation on one timeline; ratio = time / total step time"
          cardTestId="distributed-card"
          testId="dt-distributed"
          noFilter
        />
      ) : null}
      {kernelEfficiency ? (
        <DisplayCard
          {...card}
          table={kernelEfficiency}
          subtitle="estimates from the kernels' names and launch configurations (docs/kernel-efficiency.md)"
          cardTestId="kernel-efficiency-card"
          testId="dt-kernel-efficiency"
          noFilter
        />
      ) : null}
      {launchQueue && launchQueue.rows.length ? <QueueCard table={launchQueue} unit={unit} /> : null}
      {others.map((t) => (
        <DisplayCard {...card} table={t} cardTestId={`card-${t.key}`} testId={`dt-${t.key.replace(/[._]/g, "-")}`} noFilter />
      ))}
      {overview && (operators || kernels) ? (
        <div class={`grid ${operators && kernels ? "two" : "one"}`}>
          {operators ? (
            <TopRows table={operators} what="operators" side="cpu" {...card} view="operators" onOpen={() => onOpen("operators")} />
          ) : null}
          {kernels ? <TopRows table={kernels} what="kernels" side="gpu" {...card} view="kernels" onOpen={() => onOpen("kernels")} /> : null}
        </div>
      ) : null}
    </div>
  );
}

/** The launch queue of each stream over time: the model's `launch_queue` points (series, time, depth), one
 * step line per series, named as the model names it. */
function QueueCard({ table, unit }: { table: Table; unit: TimeUnit }) {
  const option = useMemo((): ChartOption => {
    const series = new Map<string, [number, number][]>();
    for (const r of table.rows) {
      const name = textOf(table, r, "series");
      if (!series.has(name)) series.set(name, []);
      series.get(name)!.push([inUnit(numberOf(table, r, "time_ns"), unit), numberOf(table, r, "depth")]);
    }
    return {
      legend: { top: 0, itemWidth: 14, itemHeight: 8, type: "scroll" },
      grid: { left: 40, right: 40, top: 34, bottom: 42, containLabel: true },
      tooltip: { trigger: "axis" },
      dataZoom: [
        { type: "inside", filterMode: "none" },
        { type: "slider", height: 18, bottom: 6, filterMode: "none" },
      ],
      xAxis: { type: "value", name: unit, scale: true, splitLine: { show: false }, axisLabel: { showMaxLabel: false, formatter: (v: number) => String(+v.toPrecision(6)) } },
      yAxis: { type: "value", name: "queued", minInterval: 1, splitLine: { lineStyle: { color: "#eee" } } },
      series: [...series].map(([name, data]) => ({ name, type: "line" as const, step: "end" as const, showSymbol: false, lineStyle: { width: 1.2 }, data })),
    };
  }, [table, unit]);
  return (
    <Card title={table.title} subtitle={`launched, not yet started on the GPU · ${unit} from the trace's start`} testId="launch-queue-card">
      <Chart option={option} height={220} testId="launch-queue-chart" />
    </Card>
  );
}

function TraceCard({ summary, unit }: { summary: Summary; unit: TimeUnit }) {
  const m = summary.meta;
  const c = m?.counts;
  const steps = summary.model?.steps.length ?? 0;
  const dev = m?.devices ?? [];
  return (
    <Card title="Trace" subtitle={m?.fileName} testId="trace-card">
      <div class="stats">
        <Stat label={`Total step time (${unit})`} value={fmtTime(num(m?.totalTimeNs), unit)} sub={`${steps} step${steps === 1 ? "" : "s"}`} testId="stat-total" />
        <Stat label="Worker" value={m?.worker || "-"} sub={m && m.rank >= 0 ? `rank ${m.rank}` : m?.hostname ? `host ${m.hostname}` : undefined} />
        <Stat label="Span" value={m?.span || "-"} sub={m?.schemaVersion ? `schema ${m.schemaVersion}` : undefined} />
        <Stat label="Host events" value={fmtInt(c?.host ?? 0n)} sub={`${fmtInt(c?.runtime ?? 0n)} runtime`} />
        <Stat label="Device events" value={fmtInt(c?.device ?? 0n)} sub={`${fmtInt(c?.kernels ?? 0n)} kernels`} />
        <Stat label="Memory events" value={fmtInt(c?.memory ?? 0n)} sub={m ? fmtBytes(num(m.fileSize)) + " file" : undefined} />
      </div>
      {dev.length ? (
        <div class="devices">
          {dev.map((d) => (
            <div class="device-line">
              <span class="device-name">{`GPU${num(d.id)}: ${d.name}`}</span>
              <span class="muted">{` sm_${d.computeMajor}${d.computeMinor} · ${d.smCount} SMs · ${fmtBytes(num(d.totalGlobalMem))}`}</span>
            </div>
          ))}
        </div>
      ) : null}
    </Card>
  );
}

/** Paddle's Device Summary as bars: each row's utilization cell, its bar the cell's number. */
function DeviceCard({ table, unit }: { table: Table; unit: TimeUnit }) {
  const ci = columnIndex(table, "utilization");
  const ni = columnIndex(table, "device");
  return (
    <Card title={table.title || "Device utilization"} subtitle={table.columns[ci]?.header} testId="device-card">
      <div class="util-list" data-testid="dt-device">
        {table.rows.map((r) => {
          const pct = (r.cells[ci]?.number ?? 0) * 100;
          const name = formatCell(table.columns[ni], r.cells[ni], unit);
          return (
            <div class="util-row" data-key={name} data-testid="dt-device-row" data-id={r.id}>
              <span class="util-name" data-col="device" data-testid="dt-device-cell">
                {name}
              </span>
              <span class="util-bar">
                <span class={`util-fill ${name.startsWith("GPU") ? "gpu" : ""}`} style={{ width: `${Math.max(0, Math.min(100, pct))}%` }} />
              </span>
              <span class="util-value" data-col="utilization" data-testid="dt-device-cell">
                {formatCell(table.columns[ci], r.cells[ci], unit)}
              </span>
            </div>
          );
        })}
      </div>
      <p class="note">
        CPU(Process) is the process's CPU time over all cores (can exceed 100%); GPU is merged kernel time over the
        total step time.
      </p>
    </Card>
  );
}

/** Bars of the data rows of one side of the Overview Summary (the cells' numbers), labelled with the ratio cells. */
function typeChart(table: Table, rows: Row[], unit: TimeUnit, color: string): ChartOption {
  const sorted = [...rows].reverse();
  const col = (k: string) => table.columns[columnIndex(table, k)];
  const text = (r: Row, k: string) => formatCell(col(k), cellOf(table, r, k), unit);
  return {
    grid: { left: 8, right: 56, top: 4, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number }) => {
        const r = sorted[p.dataIndex];
        return tooltipBox(text(r, "event_type"), [
          { color, name: `Time (${unit})`, value: text(r, "time_ns") },
          { name: "Ratio (%)", value: text(r, "ratio") },
          { name: "Calls", value: text(r, "calls") },
        ]);
      }) as never,
    },
    xAxis: { type: "value", axisLabel: { show: false }, splitLine: { lineStyle: { color: "#eee" } } },
    yAxis: { type: "category", data: sorted.map((r) => textOf(table, r, "event_type")), axisTick: { show: false }, axisLine: { lineStyle: { color: "#ccc" } } },
    series: [
      {
        type: "bar",
        data: sorted.map((r) => inUnit(numberOf(table, r, "time_ns"), unit)),
        itemStyle: { color, borderRadius: [0, 2, 2, 0] },
        barMaxWidth: 14,
        label: { show: true, position: "right", formatter: (p: { dataIndex: number }) => `${text(sorted[p.dataIndex], "ratio")}%`, fontSize: 10, color: "#616161" },
      },
    ],
  };
}

function EventTypes({ table, spanKey, view, timeUnit }: { table: Table; spanKey: SpanKey; view: string; timeUnit: TimeUnit }) {
  const sides = useMemo(() => {
    const data = table.rows.filter((r) => r.role === RowRole.ROW_DATA);
    return {
      cpu: data.filter((r) => textOf(table, r, "side") !== "GPU"),
      gpu: data.filter((r) => textOf(table, r, "side") === "GPU"),
    };
  }, [table]);
  const charts = useMemo(
    () => ({ cpu: typeChart(table, sides.cpu, timeUnit, "#1976d2"), gpu: typeChart(table, sides.gpu, timeUnit, "#f57c00") }),
    [table, sides, timeUnit],
  );
  return (
    <DisplayCard
      table={table}
      spanKey={spanKey}
      view={view}
      timeUnit={timeUnit}
      title="Event types"
      subtitle={`ratio = time / total step time · unit ${timeUnit}`}
      cardTestId="overview-card"
      testId="dt-overview"
      noFilter
      maxHeight={2000}
    >
      <div class={`grid ${sides.gpu.length ? "two" : "one"}`}>
        <div>
          <div class="chart-caption">CPU</div>
          <Chart option={charts.cpu} height={Math.max(120, sides.cpu.length * 24 + 16)} testId="overview-cpu-chart" />
        </div>
        {sides.gpu.length ? (
          <div>
            <div class="chart-caption">GPU</div>
            <Chart option={charts.gpu} height={Math.max(120, sides.gpu.length * 24 + 16)} testId="overview-gpu-chart" />
          </div>
        ) : null}
      </div>
    </DisplayCard>
  );
}

/** Stage times per step, stacked: the `model_steps` table's cells. */
function stepsOption(table: Table, side: "cpu" | "gpu", unit: TimeUnit): ChartOption {
  const rows = table.rows;
  const key = (stage: string) => `${stage.toLowerCase()}_${side}_ns`;
  const text = (r: Row, k: string) => formatCell(table.columns[columnIndex(table, k)], cellOf(table, r, k), unit);
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, textStyle: { fontSize: 11 } },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const r = rows[ps[0].dataIndex];
        return tooltipBox(`Step ${text(r, "step")} · ${side === "cpu" ? "duration" : "kernel time"} ${text(r, `${side}_ns`)} ${unit}`, [
          ...STAGES.map((n) => ({ color: STAGE_COLORS[n], name: n, value: `${text(r, key(n))} ${unit}` })),
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: rows.map((r) => `#${text(r, "step")}`), axisTick: { show: false }, axisLine: { lineStyle: { color: "#ccc" } } },
    yAxis: { type: "value", name: unit, nameTextStyle: { color: "#757575", align: "left" }, splitLine: { lineStyle: { color: "#eee" } } },
    series: STAGES.map((n) => ({
      name: n,
      type: "bar" as const,
      stack: "steps",
      barMaxWidth: 48,
      itemStyle: { color: STAGE_COLORS[n] },
      emphasis: { focus: "series" as const },
      data: rows.map((r) => inUnit(Math.max(0, numberOf(table, r, key(n))), unit)),
    })),
  };
}

/** The stages' shares: the Model Summary's rows below ProfileStep, labelled with their ratio cells. */
function pieOption(table: Table, side: "cpu" | "gpu", unit: TimeUnit): ChartOption {
  const parts = table.rows.filter((r) => r.depth > 0);
  const text = (r: Row, k: string) => formatCell(table.columns[columnIndex(table, k)], cellOf(table, r, k), unit);
  return {
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; color: string }) => {
        const r = parts[p.dataIndex];
        return tooltipBox(textOf(table, r, "name"), [
          { color: p.color, name: `${side.toUpperCase()} total (${unit})`, value: text(r, `${side}_total_ns`) },
          { name: "Ratio (%)", value: text(r, `${side}_ratio`) },
        ]);
      }) as never,
    },
    series: [
      {
        type: "pie",
        radius: ["30%", "54%"],
        center: ["50%", "52%"],
        avoidLabelOverlap: true,
        itemStyle: { borderColor: "#fff", borderWidth: 1 },
        minShowLabelAngle: 3,
        label: {
          formatter: (p: { dataIndex: number }) => `${textOf(table, parts[p.dataIndex], "name")} ${text(parts[p.dataIndex], `${side}_ratio`)}%`,
          fontSize: 11,
          color: "#424242",
          // labels at the chart's edges, inside it: none is cut however narrow the card
          alignTo: "edge",
          edgeDistance: 4,
          overflow: "break",
        },
        labelLine: { length: 8, length2: 0 },
        data: parts.map((r) => ({
          name: textOf(table, r, "name"),
          value: Math.max(0, numberOf(table, r, `${side}_total_ns`)),
          itemStyle: { color: STAGE_COLORS[textOf(table, r, "name")] },
        })),
      },
    ],
  };
}

function ModelStages({ table, steps, spanKey, view, timeUnit }: { table: Table; steps?: Table; spanKey: SpanKey; view: string; timeUnit: TimeUnit }) {
  const gpu = table.columns.some((c) => c.key === "gpu_total_ns" && !c.panelHidden);
  const [side, setSide] = useState<"cpu" | "gpu">("cpu");
  const s = gpu ? side : "cpu";
  const charts = useMemo(
    () => ({ steps: steps && steps.rows.length ? stepsOption(steps, s, timeUnit) : null, pie: pieOption(table, s, timeUnit) }),
    [table, steps, s, timeUnit],
  );
  const tools = gpu ? (
    <Segmented
      value={s}
      options={[
        { value: "cpu", label: "CPU" },
        { value: "gpu", label: "GPU" },
      ]}
      onChange={setSide}
      testId="model-side"
      label="Model stages side"
    />
  ) : null;
  return (
    <>
      <DisplayCard
        table={table}
        spanKey={spanKey}
        view={view}
        timeUnit={timeUnit}
        title="Model perspective"
        subtitle={s === "cpu" ? "CPU time per step; Others = the rest of the step" : "GPU kernel time per step; Others = kernels outside the stages"}
        cardTools={tools}
        cardTestId="model-card"
        testId="dt-model"
        noFilter
      >
        <div class="split wide">
          <div class="split-chart grow">{charts.steps ? <Chart option={charts.steps} height={240} testId="model-steps-chart" /> : null}</div>
          <div class="split-chart pie">
            <Chart option={charts.pie} height={240} testId="model-pie-chart" />
          </div>
        </div>
      </DisplayCard>
      {steps && steps.rows.length ? (
        <DisplayCard table={steps} spanKey={spanKey} view={view} timeUnit={timeUnit} subtitle="stage times of each step (the chart above)" cardTestId="model-steps-card" testId="dt-model_steps" noFilter maxHeight={300} />
      ) : null}
    </>
  );
}

/**
 * The top-level rows of the operators' or kernels' table in the model's order (Paddle's: by CPU total for
 * operators, GPU total for kernels), a few columns, about ten rows in view; a header click sorts them.
 */
function TopRows({ table, what, side, spanKey, view, timeUnit, onOpen }: { table: Table; what: string; side: "cpu" | "gpu"; spanKey: SpanKey; view: string; timeUnit: TimeUnit; onOpen: () => void }) {
  const part = useMemo(
    () => partOf(table, ["name", "calls", `${side}_total_ns`, `${side}_avg_ns`, `${side}_ratio`], table.rows.filter((r) => r.depth === 0 && r.role === RowRole.ROW_DATA), `${table.key}.top`),
    [table, side],
  );
  return (
    <DisplayCard
      table={part}
      spanKey={spanKey}
      view={view}
      csvTable={table.key}
      timeUnit={timeUnit}
      title={`Top ${what}`}
      subtitle={`in Paddle's order (${side.toUpperCase()} total); click a header to sort`}
      cardTestId={`top-${what}-card`}
      testId={`dt-top-${what}`}
      noFilter
      maxHeight={24 * TOP_ROWS + 56}
      nameWidth={150}
      cardTools={
        <button class="link" onClick={onOpen}>
          {`All ${what} →`}
        </button>
      }
    />
  );
}
