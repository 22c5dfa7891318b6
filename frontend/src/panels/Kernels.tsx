// Kernels: Paddle's Kernel Summary with each kernel's launch configuration (several: one row each
// below it), or one row per kernel and launching operator. Both tables are the display model's view
// "kernels" (built in Python); the chart reads the cells' numbers.
import { useMemo, useState } from "preact/hooks";
import { Card, Notice, Segmented } from "../components/ui";
import { Chart } from "../components/Chart";
import { DisplayCard, ViewSentences } from "../display/DisplayCard";
import type { TablePanelProps } from "../display/DisplayCard";
import { tableOf, textOf, timelineName, viewOf } from "../display/model";
import { topBars } from "./Operators";
import { useUrlState } from "../state";

type Grouping = "kernel" | "operator";

/** The columns that make room when the table is wider than its box, the first first: the launch
 * configuration's details, then the minimum and maximum (the Columns menu brings any back). The totals,
 * the ratio and the efficiency columns stay. */
const FIT_HIDE = ["launches", "blocks_per_sm", "warps_per_sm", "shared_memory_bytes", "registers", "block", "grid", "occupancy_pct", "gpu_min_ns", "gpu_max_ns"];

export function Kernels({ display, spanKey, unit, find, onTimeline }: TablePanelProps) {
  const view = viewOf(display, "kernels");
  const kernels = tableOf(view, "kernels");
  const byOperator = tableOf(view, "kernels_by_operator");
  const [grouping, setGrouping] = useUrlState<Grouping>("kernels.group", "kernel", (v) => v === "kernel" || v === "operator");
  const [search, setSearch] = useState(find ?? "");
  const [picked, setPicked] = useState("");
  const [topN, setTopN] = useState(10);
  const table = grouping === "operator" && byOperator ? byOperator : kernels;
  const bars = useMemo(() => (table ? topBars(table, "gpu", topN, unit, "#f57c00") : null), [table, topN, unit]);

  if (!kernels || !table || !kernels.rows.length) {
    return (
      <div class="panel kernels" data-testid="panel-kernels">
        <ViewSentences sentences={view?.sentences ?? []} timeUnit={unit} />
        <Notice kind="info" testId="no-kernels">
          This trace has no GPU kernels (a CPU-only profile).
        </Notice>
      </div>
    );
  }
  const count = kernels.rows.filter((r) => r.depth === 0).length;
  return (
    <div class="panel kernels" data-testid="panel-kernels">
      <ViewSentences sentences={view?.sentences ?? []} timeUnit={unit} />
      <Card
        title={`Top ${topN} kernels`}
        subtitle={grouping === "kernel" ? "by GPU total time" : "by GPU total time, per launching operator"}
        testId="kernels-top-card"
        tools={
          <Segmented
            value={String(topN)}
            options={[5, 10, 20].map((n) => ({ value: String(n), label: `Top ${n}` }))}
            onChange={(v) => setTopN(Number(v))}
            label="Top N"
            testId="kernels-topn"
          />
        }
      >
        {bars ? (
          <Chart
            option={bars.option}
            height={Math.max(1, bars.rows.length) * 22 + 40}
            testId="kernels-top-chart"
            onClick={(p) => {
              const r = [...bars.rows].reverse()[p.dataIndex];
              if (r) setSearch(textOf(table, r, "name"));
            }}
          />
        ) : null}
      </Card>
      <DisplayCard
        table={table}
        spanKey={spanKey}
        view="kernels"
        timeUnit={unit}
        title="Kernels"
        subtitle={`${count} kernels · ratio = kernel / all kernels`}
        cardTestId="kernels-card"
        testId="kernel-table"
        filter={search}
        onFilter={setSearch}
        filterPlaceholder="Search kernels or operators"
        filterTestId="kernels-search"
        maxHeight={620}
        nameWidth={grouping === "kernel" ? 300 : 360}
        fitNameWidth={220}
        fitHide={FIT_HIDE}
        onRowClick={onTimeline ? (r) => setPicked(timelineName(r.link)) : undefined}
        rowClass={(r) => (picked && timelineName(r.link) === picked ? "picked" : "")}
        cardTools={
          <>
            {byOperator ? (
              <Segmented
                value={grouping}
                options={[
                  { value: "kernel", label: "By kernel" },
                  { value: "operator", label: "By kernel + operator" },
                ]}
                onChange={setGrouping}
                testId="kernels-grouping"
                label="Group kernels"
              />
            ) : null}
            {onTimeline ? (
              <button class="btn" disabled={!picked} onClick={() => onTimeline(picked)} data-testid="kernels-to-timeline" title={picked ? `Open the timeline at the first occurrence of ${picked}` : "Click a kernel row first"}>
                Show in timeline
              </button>
            ) : null}
          </>
        }
      />
    </div>
  );
}
