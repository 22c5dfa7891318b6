// Operators: Paddle's Operator Summary as a tree (operator → inner events → device events), grouped by
// name or by name + input shape, all threads or one. Every table is the display model's view
// "operators" (built in Python); the chart reads the cells' numbers and labels them with cells.ts.
import { useMemo, useState } from "preact/hooks";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { Card, Notice, Segmented } from "../components/ui";
import { formatCell } from "../display/cells";
import { DisplayCard, ViewSentences } from "../display/DisplayCard";
import type { TablePanelProps } from "../display/DisplayCard";
import { cellOf, columnIndex, numberOf, tableOf, tablesWithPrefix, textOf, timelineName, viewOf } from "../display/model";
import type { TimeUnit } from "../format";
import { inUnit } from "../format";
import { RowRole } from "../gen/tb_paddle_profile/v1/display_pb";
import { useUrlState } from "../state";
import type { Row, Table } from "../gen/tb_paddle_profile/v1/display_pb";

type Grouping = "name" | "shape";

/** A row's label in a chart: its name, with its input shapes in the by-shape table. */
function rowLabel(table: Table, r: Row): string {
  const shapes = columnIndex(table, "input_shapes") >= 0 ? textOf(table, r, "input_shapes") : "";
  return shapes ? `${textOf(table, r, "name")} (${shapes})` : textOf(table, r, "name");
}

/**
 * Bars of the `n` top-level rows with the largest total of `side` (the cells' numbers), labelled with
 * their ratio cells: the chart's own choice of what to draw, no row is made up.
 */
export function topBars(table: Table, side: "cpu" | "gpu", n: number, unit: TimeUnit, color: string): { option: ChartOption; rows: Row[] } {
  const key = `${side}_total_ns`;
  const data = table.rows.filter((r) => r.depth === 0 && r.role === RowRole.ROW_DATA && numberOf(table, r, key) > 0);
  const top = data
    .map((r, i) => [r, i] as const)
    .sort((a, b) => numberOf(table, b[0], key) - numberOf(table, a[0], key) || a[1] - b[1])
    .slice(0, n)
    .map((p) => p[0]);
  const shown = [...top].reverse();
  const text = (r: Row, k: string) => {
    const i = columnIndex(table, k);
    return i < 0 ? "-" : formatCell(table.columns[i], cellOf(table, r, k), unit);
  };
  const option: ChartOption = {
    grid: { left: 8, right: 64, top: 4, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; color: string }) => {
        const r = shown[p.dataIndex];
        return tooltipBox(rowLabel(table, r), [
          { color: p.color, name: `${side.toUpperCase()} total (${unit})`, value: text(r, key) },
          { name: "Ratio (%)", value: text(r, `${side}_ratio`) },
          { name: "Calls", value: text(r, "calls") },
        ]);
      }) as never,
    },
    xAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    yAxis: {
      type: "category",
      data: shown.map((r) => rowLabel(table, r)),
      axisTick: { show: false },
      axisLine: { lineStyle: { color: "#ccc" } },
      axisLabel: { width: 360, overflow: "truncate", fontSize: 11 },
    },
    series: [
      {
        type: "bar",
        data: shown.map((r) => inUnit(numberOf(table, r, key), unit)),
        itemStyle: { color, borderRadius: [0, 2, 2, 0] },
        barMaxWidth: 14,
        label: { show: true, position: "right", formatter: (p: { dataIndex: number }) => `${text(shown[p.dataIndex], `${side}_ratio`)}%`, fontSize: 10, color: "#616161" },
      },
    ],
  };
  return { option, rows: top };
}

export function Operators({ display, spanKey, unit, find, onTimeline }: TablePanelProps) {
  const view = viewOf(display, "operators");
  const byName = tableOf(view, "operators");
  const byShape = tableOf(view, "operators_by_shape");
  const threads = useMemo(() => tablesWithPrefix(view, "operators.thread.").map((t) => t.key.slice("operators.thread.".length)), [view]);
  const [search, setSearch] = useUrlState<string>("ops.q", find ?? "");
  const [picked, setPicked] = useState("");
  const [grouping, setGrouping] = useUrlState<Grouping>("ops.group", "name", (v) => v === "name" || v === "shape");
  const [thread, setThread] = useUrlState<string>("ops.thread", "all");
  const [topN, setTopN] = useState(10);
  const [side, setSide] = useUrlState<"cpu" | "gpu">("ops.side", "cpu", (v) => v === "cpu" || v === "gpu");

  const base = grouping === "shape" && byShape ? "operators_by_shape" : "operators";
  const table = (thread === "all" ? tableOf(view, base) : tableOf(view, `${base}.thread.${thread}`)) ?? byName;
  const gpu = !!table && table.columns.some((c) => c.key === "gpu_total_ns" && !c.panelHidden);
  const s = gpu ? side : "cpu";
  const bars = useMemo(() => (table ? topBars(table, s, topN, unit, s === "cpu" ? "#1976d2" : "#f57c00") : null), [table, s, topN, unit]);

  if (!table) {
    return (
      <div class="panel operators" data-testid="panel-operators">
        <ViewSentences sentences={view?.sentences ?? []} timeUnit={unit} />
        <Notice kind="info" testId="no-operators">
          No operator events in this trace.
        </Notice>
      </div>
    );
  }
  const operatorCount = table.rows.filter((r) => r.depth === 0 && r.role === RowRole.ROW_DATA).length;
  return (
    <div class="panel operators" data-testid="panel-operators">
      <ViewSentences sentences={view?.sentences ?? []} timeUnit={unit} />
      <Card
        title={`Top ${topN} operators`}
        subtitle={`by ${s.toUpperCase()} total, among ${thread === "all" ? "all" : `thread ${thread}`} operators`}
        testId="operators-top-card"
        tools={
          <>
            {gpu ? <Segmented value={s} options={[{ value: "cpu", label: "CPU" }, { value: "gpu", label: "GPU" }]} onChange={setSide} label="Chart side" testId="operators-side" /> : null}
            <Segmented
              value={String(topN)}
              options={[5, 10, 20].map((n) => ({ value: String(n), label: `Top ${n}` }))}
              onChange={(v) => setTopN(Number(v))}
              label="Top N"
              testId="operators-topn"
            />
          </>
        }
      >
        {bars && bars.rows.length ? (
          <Chart
            option={bars.option}
            height={bars.rows.length * 22 + 40}
            testId="operators-top-chart"
            onClick={(p) => {
              const r = [...bars.rows].reverse()[p.dataIndex];
              if (r) setSearch(textOf(table, r, "name"));
            }}
          />
        ) : (
          <p class="muted">{`No ${s.toUpperCase()} time in the operators.`}</p>
        )}
      </Card>
      <DisplayCard
        table={table}
        spanKey={spanKey}
        view="operators"
        timeUnit={unit}
        title="Operators"
        subtitle={`${operatorCount} ${base === "operators_by_shape" ? "rows" : "operators"}${thread === "all" ? "" : ` on thread ${thread}`}`}
        cardTestId="operators-card"
        testId="operator-table"
        filter={search}
        onFilter={setSearch}
        filterPlaceholder="Search operators, inner events, kernels"
        filterTestId="operators-search"
        maxHeight={620}
        nameWidth={280}
        onRowClick={onTimeline ? (r) => setPicked(timelineName(r.link)) : undefined}
        rowClass={(r) => (picked && timelineName(r.link) === picked ? "picked" : "")}
        cardTools={
          <>
            <Segmented
              value={byShape ? grouping : "name"}
              options={[
                { value: "name", label: "By name" },
                { value: "shape", label: "By name + input shape", title: byShape ? undefined : "This trace recorded no input shapes" },
              ]}
              onChange={(g) => setGrouping(byShape ? g : "name")}
              testId="operators-grouping"
              label="Group operators"
            />
            {threads.length > 1 ? (
              <select value={thread} onChange={(e) => setThread((e.target as HTMLSelectElement).value)} data-testid="operators-thread" aria-label="Thread">
                <option value="all">All threads merged</option>
                {threads.map((t) => (
                  <option value={t}>{`Thread ${t}`}</option>
                ))}
              </select>
            ) : null}
            {onTimeline ? (
              <button class="btn" disabled={!picked} onClick={() => onTimeline(picked)} data-testid="operators-to-timeline" title={picked ? `Open the timeline at the first occurrence of ${picked}` : "Click a row first"}>
                Show in timeline
              </button>
            ) : null}
          </>
        }
        after={
          <p class="note">
            {gpu
              ? "GPU columns count kernels, memcpy and memset (Paddle's general GPU time). Rows under an operator: inner events, then the device events of its own runtime calls."
              : "Rows under an operator: its inner events (infer_meta, compute, kernel launch, …)."}
          </p>
        }
      />
    </div>
  );
}
