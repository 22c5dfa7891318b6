// Overview: device utilization, event types (CPU / GPU), model stages per step, top operators and kernels.
import { useMemo, useState } from "preact/hooks";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { Card, Notice, Segmented, SimpleTable, Stat } from "../components/ui";
import type { SimpleColumn } from "../components/ui";
import { timeText } from "../components/columns";
import type { TimeUnit } from "../format";
import { fmtBytes, fmtInt, fmtRatio, fmtTime, inUnit } from "../format";
import type { Summary } from "../gen/tb_paddle_profile/v1/summary_pb";
import type { StatRow, TypeRow, UtilRow } from "../summary";
import {
  deviceRows,
  distributedRows,
  hasGpu,
  kernelRows,
  modelRows,
  num,
  operatorRows,
  overviewRows,
  STAGES,
  stepStages,
} from "../summary";

export const STAGE_COLORS: Record<string, string> = {
  Dataloader: "#8e24aa",
  Forward: "#1976d2",
  Backward: "#f57c00",
  Optimization: "#43a047",
  Others: "#b0bec5",
};

const TOP_N = 10;

export function Overview({ summary, unit, onOpen }: { summary: Summary; unit: TimeUnit; onOpen: (view: "operators" | "kernels") => void }) {
  const gpu = hasGpu(summary);
  const totalTime = num(summary.meta?.totalTimeNs);
  return (
    <div class="panel overview" data-testid="panel-overview">
      <div class="grid two">
        <TraceCard summary={summary} unit={unit} />
        <DeviceCard rows={deviceRows(summary)} />
      </div>
      {totalTime === 0 ? (
        <Notice kind="info">
          This trace has no ProfileStep events, so (like Paddle) only the device summary is shown: the other views
          divide by the total step time.
        </Notice>
      ) : (
        <>
          <EventTypes summary={summary} unit={unit} />
          <ModelStages summary={summary} unit={unit} />
          <DistributedCard summary={summary} unit={unit} />
          <div class={`grid ${gpu ? "two" : "one"}`}>
            <TopOperators summary={summary} unit={unit} onOpen={() => onOpen("operators")} />
            {gpu ? <TopKernels summary={summary} unit={unit} onOpen={() => onOpen("kernels")} /> : null}
          </div>
        </>
      )}
    </div>
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

function DeviceCard({ rows }: { rows: UtilRow[] }) {
  return (
    <Card title="Device utilization" subtitle="Utilization (%)" testId="device-card">
      <div class="util-list" data-testid="device-utilization">
        {rows.map((r) => {
          const pct = r.utilization * 100;
          return (
            <div class="util-row" data-key={r.device}>
              <span class="util-name">{r.device}</span>
              <span class="util-bar">
                <span class={`util-fill ${r.device.startsWith("GPU") ? "gpu" : ""}`} style={{ width: `${Math.max(0, Math.min(100, pct))}%` }} />
              </span>
              <span class="util-value" data-col="utilization">
                {fmtRatio(r.utilization)}
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

function typeColumns(side: string, unit: TimeUnit): SimpleColumn<TypeRow>[] {
  return [
    { key: "type", title: "Event Type", align: "left", text: (r) => r.type },
    { key: "calls", title: "Calls", text: (r) => fmtInt(r.calls) },
    { key: "time", title: `${side} Time (${unit})`, text: (r) => fmtTime(r.time, unit) },
    { key: "ratio", title: "Ratio (%)", text: (r) => fmtRatio(r.ratio) },
  ];
}

function typeChart(rows: TypeRow[], unit: TimeUnit, color: string): ChartOption {
  const sorted = [...rows].reverse();
  return {
    grid: { left: 8, right: 56, top: 4, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number }) => {
        const r = sorted[p.dataIndex];
        return tooltipBox(r.type, [
          { color, name: `Time (${unit})`, value: fmtTime(r.time, unit) },
          { name: "Ratio (%)", value: fmtRatio(r.ratio) },
          { name: "Calls", value: fmtInt(r.calls) },
        ]);
      }) as never,
    },
    xAxis: { type: "value", axisLabel: { show: false }, splitLine: { lineStyle: { color: "#eee" } } },
    yAxis: { type: "category", data: sorted.map((r) => r.type), axisTick: { show: false }, axisLine: { lineStyle: { color: "#ccc" } } },
    series: [
      {
        type: "bar",
        data: sorted.map((r) => inUnit(r.time, unit)),
        itemStyle: { color, borderRadius: [0, 2, 2, 0] },
        barMaxWidth: 14,
        label: { show: true, position: "right", formatter: (p: { dataIndex: number }) => `${fmtRatio(sorted[p.dataIndex].ratio)}%`, fontSize: 10, color: "#616161" },
      },
    ],
  };
}

function EventTypes({ summary, unit }: { summary: Summary; unit: TimeUnit }) {
  const { cpu, gpu } = useMemo(() => overviewRows(summary), [summary]);
  const charts = useMemo(() => ({ cpu: typeChart(cpu, unit, "#1976d2"), gpu: typeChart(gpu, unit, "#f57c00") }), [cpu, gpu, unit]);
  const side = (title: string, rows: TypeRow[], option: ChartOption, testId: string) => (
    <Card title={title} subtitle={`ratio = time / total step time · unit ${unit}`} testId={`${testId}-card`}>
      <div class="split">
        <div class="split-chart">
          <Chart option={option} height={Math.max(120, rows.length * 24 + 16)} testId={`${testId}-chart`} />
        </div>
        <div class="split-table">
          <SimpleTable columns={typeColumns(title.startsWith("CPU") ? "CPU" : "GPU", unit)} rows={rows} rowKey={(r) => r.type} testId={testId} />
        </div>
      </div>
    </Card>
  );
  return (
    <>
      {side("CPU event types", cpu, charts.cpu, "overview-cpu")}
      {gpu.length ? side("GPU event types", gpu, charts.gpu, "overview-gpu") : null}
    </>
  );
}

function stepsOption(summary: Summary, side: "cpu" | "gpu", unit: TimeUnit): ChartOption {
  const steps = stepStages(summary.model?.steps ?? [], side);
  const names = [...STAGES, "Others"] as const;
  return {
    legend: { top: 0, itemWidth: 10, itemHeight: 10, textStyle: { fontSize: 11 } },
    grid: { left: 8, right: 16, top: 28, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: ((ps: { dataIndex: number }[]) => {
        const st = steps[ps[0].dataIndex];
        return tooltipBox(`Step ${st.step} · ${side === "cpu" ? "duration" : "kernel time"} ${fmtTime(st.duration, unit)} ${unit}`, [
          ...names.map((n) => ({ color: STAGE_COLORS[n], name: n, value: `${fmtTime(st.stages[n], unit)} ${unit}` })),
        ]);
      }) as never,
    },
    xAxis: { type: "category", data: steps.map((s) => `#${s.step}`), axisTick: { show: false }, axisLine: { lineStyle: { color: "#ccc" } } },
    yAxis: { type: "value", name: unit, nameTextStyle: { color: "#757575", align: "left" }, splitLine: { lineStyle: { color: "#eee" } } },
    series: names.map((n) => ({
      name: n,
      type: "bar" as const,
      stack: "steps",
      barMaxWidth: 48,
      itemStyle: { color: STAGE_COLORS[n] },
      emphasis: { focus: "series" as const },
      data: steps.map((s) => inUnit(Math.max(0, s.stages[n]), unit)),
    })),
  };
}

function pieOption(rows: StatRow[], side: "cpu" | "gpu", unit: TimeUnit): ChartOption {
  const parts = rows.filter((r) => r.name !== "ProfileStep");
  return {
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; color: string }) => {
        const r = parts[p.dataIndex];
        return tooltipBox(r.name, [
          { color: p.color, name: `${side.toUpperCase()} total (${unit})`, value: timeText(r[side], "total", unit) },
          { name: "Ratio (%)", value: timeText(r[side], "ratio", unit) },
        ]);
      }) as never,
    },
    series: [
      {
        type: "pie",
        radius: ["36%", "62%"],
        center: ["50%", "52%"],
        avoidLabelOverlap: true,
        itemStyle: { borderColor: "#fff", borderWidth: 1 },
        minShowLabelAngle: 3,
        label: {
          formatter: (p: { dataIndex: number }) => `${parts[p.dataIndex].name} ${timeText(parts[p.dataIndex][side], "ratio", unit)}%`,
          fontSize: 11,
          color: "#424242",
          overflow: "none",
        },
        data: parts.map((r) => ({ name: r.name, value: Math.max(0, r[side]?.total ?? 0), itemStyle: { color: STAGE_COLORS[r.name] } })),
      },
    ],
  };
}

const modelColumns = (unit: TimeUnit): SimpleColumn<StatRow>[] => [
  { key: "name", title: "Name", align: "left", text: (r) => r.name, swatch: (r) => STAGE_COLORS[r.name] },
  { key: "calls", title: "Calls", text: (r) => (r.calls === undefined ? "-" : fmtInt(r.calls)) },
  ...(["cpu", "gpu"] as const).flatMap((side) =>
    (["total", "avg", "max", "min", "ratio"] as const).map((part) => ({
      key: `${side}.${part}`,
      title: part === "ratio" ? "Ratio(%)" : part[0].toUpperCase() + part.slice(1),
      group: `${side.toUpperCase()} (${unit})`,
      text: (r: StatRow) => timeText(r[side], part, unit),
    })),
  ),
];

function ModelStages({ summary, unit }: { summary: Summary; unit: TimeUnit }) {
  const gpu = hasGpu(summary);
  const [side, setSide] = useState<"cpu" | "gpu">("cpu");
  const rows = useMemo(() => modelRows(summary), [summary]);
  const s = gpu ? side : "cpu";
  const charts = useMemo(() => ({ steps: stepsOption(summary, s, unit), pie: pieOption(rows, s, unit) }), [summary, rows, s, unit]);
  if (rows.length === 0) return null;
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
    <Card
      title="Model perspective"
      subtitle={s === "cpu" ? "CPU time per step; Others = the rest of the step" : "GPU kernel time per step; Others = kernels outside the stages"}
      tools={tools}
      testId="model-card"
    >
      <div class="split wide">
        <div class="split-chart grow">
          <Chart option={charts.steps} height={240} testId="model-steps-chart" />
        </div>
        <div class="split-chart pie">
          <Chart option={charts.pie} height={240} testId="model-pie-chart" />
        </div>
      </div>
      <SimpleTable columns={modelColumns(unit)} rows={rows} rowKey={(r) => r.name} testId="model-summary" rowClass={(r) => (r.name === "ProfileStep" ? "strong" : "")} />
      <p class="note">
        CPU ratio = time / total step time; GPU ratio = kernel time / ProfileStep kernel time. Stage times are plain
        sums of the outermost stage events, as in Paddle's Model Summary.
      </p>
    </Card>
  );
}

function DistributedCard({ summary, unit }: { summary: Summary; unit: TimeUnit }) {
  const rows = distributedRows(summary);
  if (!rows.length) return null;
  const d = summary.distributed!;
  return (
    <Card title="Distribution summary" subtitle="communication and computation on one timeline; ratio = time / total step time" testId="distributed-card">
      <SimpleTable
        columns={[
          { key: "name", title: "Name", align: "left", text: (r) => r.name },
          { key: "time", title: `Total Time (${unit})`, text: (r) => fmtTime(r.time, unit) },
          { key: "ratio", title: "Ratio (%)", text: (r) => fmtRatio(r.ratio) },
        ]}
        rows={rows}
        rowKey={(r) => r.name}
        testId="distributed-summary"
      />
      <p class="note">{`Communication calls: ${fmtInt(d.cpuCalls)} on CPU, ${fmtInt(d.gpuCalls)} on GPU.`}</p>
    </Card>
  );
}

function topColumns(unit: TimeUnit, side: "cpu" | "gpu", label: string): SimpleColumn<StatRow>[] {
  return [
    { key: "name", title: "Name", align: "left", text: (r) => r.name, cls: "name-cell" },
    { key: "calls", title: "Calls", text: (r) => (r.calls === undefined ? "-" : fmtInt(r.calls)) },
    { key: `${side}.total`, title: `${label} Total (${unit})`, text: (r) => timeText(r[side], "total", unit) },
    { key: `${side}.avg`, title: `Avg (${unit})`, text: (r) => timeText(r[side], "avg", unit) },
    { key: `${side}.ratio`, title: "Ratio(%)", text: (r) => timeText(r[side], "ratio", unit) },
  ];
}

function TopOperators({ summary, unit, onOpen }: { summary: Summary; unit: TimeUnit; onOpen: () => void }) {
  const gpu = hasGpu(summary);
  const rows = useMemo(() => operatorRows(summary.operators?.operators ?? [], "name"), [summary]);
  const [side, setSide] = useState<"cpu" | "gpu">("cpu");
  const s = gpu ? side : "cpu";
  const top = [...rows].sort((a, b) => (b[s]?.total ?? 0) - (a[s]?.total ?? 0)).slice(0, TOP_N);
  return (
    <Card
      title={`Top ${TOP_N} operators`}
      subtitle={`by ${s.toUpperCase()} total · ratio = op / all operators`}
      testId="top-operators-card"
      tools={
        <>
          {gpu ? (
            <Segmented value={s} options={[{ value: "cpu", label: "CPU" }, { value: "gpu", label: "GPU" }]} onChange={setSide} label="Top operators by" />
          ) : null}
          <button class="link" onClick={onOpen}>
            All operators →
          </button>
        </>
      }
    >
      {top.length ? (
        <SimpleTable columns={topColumns(unit, s, s.toUpperCase())} rows={top} rowKey={(r) => r.name} testId="top-operators" />
      ) : (
        <p class="muted">No operator events in this trace.</p>
      )}
    </Card>
  );
}

function TopKernels({ summary, unit, onOpen }: { summary: Summary; unit: TimeUnit; onOpen: () => void }) {
  const rows = useMemo(() => kernelRows(summary.kernels?.kernels ?? [], "kernel"), [summary]);
  const top = [...rows].sort((a, b) => (b.gpu?.total ?? 0) - (a.gpu?.total ?? 0)).slice(0, TOP_N);
  return (
    <Card
      title={`Top ${TOP_N} kernels`}
      subtitle="by GPU total · ratio = kernel / all kernels"
      testId="top-kernels-card"
      tools={
        <button class="link" onClick={onOpen}>
          All kernels →
        </button>
      }
    >
      <SimpleTable columns={topColumns(unit, "gpu", "GPU")} rows={top} rowKey={(r) => r.name} testId="top-kernels" />
    </Card>
  );
}

