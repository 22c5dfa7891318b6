// Kernels: GPU time per kernel with its launch configuration; grouped by kernel or by kernel and operator.
import { useMemo, useState } from "preact/hooks";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { callsColumn, timeColumns, timeText } from "../components/columns";
import { Card, Notice, Segmented } from "../components/ui";
import type { Column, SortState } from "../components/VirtualTable";
import { comparator, flattenTree, nextSort, sortValue, VirtualTable } from "../components/VirtualTable";
import type { TimeUnit } from "../format";
import { fixed2, fmtInt, inUnit } from "../format";
import type { Summary } from "../gen/tb_paddle_profile/v1/summary_pb";
import type { KernelGrouping, LaunchCols, StatRow } from "../summary";
import { kernelRows } from "../summary";

function launchColumn(key: keyof LaunchCols, title: string, width: number, fmt: (v: LaunchCols) => string, tooltip?: string): Column<StatRow> {
  return {
    key: `launch.${key}`,
    title,
    group: "Launch configuration",
    width,
    text: (r) => (r.launch ? fmt(r.launch) : r.children ? "…" : "-"),
    sort: (r) => (r.launch ? (r.launch[key] as number | string) : undefined),
    tooltip,
  };
}

const LAUNCH_COLUMNS: Column<StatRow>[] = [
  launchColumn("grid", "Grid", 92, (l) => l.grid),
  launchColumn("block", "Block", 84, (l) => l.block),
  launchColumn("registers", "Regs", 52, (l) => String(l.registers), "Registers per thread"),
  launchColumn("sharedMemory", "Smem (B)", 76, (l) => String(l.sharedMemory), "Shared memory per block (static + dynamic), bytes"),
  launchColumn("blocksPerSm", "Blocks/SM", 78, (l) => fixed2(l.blocksPerSm)),
  launchColumn("warpsPerSm", "Warps/SM", 76, (l) => fixed2(l.warpsPerSm)),
  launchColumn("occupancy", "Occ. (%)", 68, (l) => fixed2(l.occupancy), "Theoretical achieved occupancy (%)"),
];

function topBars(rows: StatRow[], n: number, unit: TimeUnit): ChartOption {
  const top = [...rows].sort((a, b) => (b.gpu?.total ?? 0) - (a.gpu?.total ?? 0)).slice(0, n).reverse();
  const label = (r: StatRow) => (r.detail ? `${r.name} ← ${r.detail}` : r.name);
  return {
    grid: { left: 8, right: 64, top: 4, bottom: 4, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; color: string }) => {
        const r = top[p.dataIndex];
        return tooltipBox(label(r), [
          { color: p.color, name: `GPU total (${unit})`, value: timeText(r.gpu, "total", unit) },
          { name: "Ratio (%)", value: timeText(r.gpu, "ratio", unit) },
          { name: "Calls", value: r.calls === undefined ? "-" : fmtInt(r.calls) },
        ]);
      }) as never,
    },
    xAxis: { type: "value", name: unit, splitLine: { lineStyle: { color: "#eee" } } },
    yAxis: {
      type: "category",
      data: top.map(label),
      axisTick: { show: false },
      axisLine: { lineStyle: { color: "#ccc" } },
      axisLabel: { width: 360, overflow: "truncate", fontSize: 11 },
    },
    series: [
      {
        type: "bar",
        data: top.map((r) => inUnit(r.gpu?.total ?? 0, unit)),
        itemStyle: { color: "#f57c00", borderRadius: [0, 2, 2, 0] },
        barMaxWidth: 14,
        label: { show: true, position: "right", formatter: (p: { dataIndex: number }) => `${timeText(top[p.dataIndex].gpu, "ratio", unit)}%`, fontSize: 10, color: "#616161" },
      },
    ],
  };
}

export function Kernels({ summary, unit, find, onTimeline }: { summary: Summary; unit: TimeUnit; find?: string; onTimeline?: (name: string) => void }) {
  const kernels = summary.kernels?.kernels ?? [];
  const [grouping, setGrouping] = useState<KernelGrouping>("kernel");
  const [search, setSearch] = useState(find ?? "");
  const [picked, setPicked] = useState("");
  const [sort, setSort] = useState<SortState>({ key: "gpu.total", dir: "desc" });
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [topN, setTopN] = useState(10);

  const rows = useMemo(() => kernelRows(kernels, grouping), [kernels, grouping]);
  const columns = useMemo(() => {
    const cols: Column<StatRow>[] = [callsColumn, ...timeColumns("gpu", "GPU", unit, { ratio: "Kernel time / all kernels' time (launch rows: / the kernel)" })];
    if (grouping === "kernel") cols.push(...LAUNCH_COLUMNS);
    return cols;
  }, [unit, grouping]);
  const bars = useMemo(() => topBars(rows, topN, unit), [rows, topN, unit]);
  const flat = useMemo(
    () => flattenTree(rows, expanded, comparator(sortValue(columns, sort.key), sort.dir), search),
    [rows, expanded, columns, sort, search],
  );

  if (!kernels.length) {
    return (
      <div class="panel kernels" data-testid="panel-kernels">
        <Notice kind="info" testId="no-kernels">
          This trace has no GPU kernels (a CPU-only profile).
        </Notice>
      </div>
    );
  }
  const toggle = (id: string) => {
    const next = new Set(expanded);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setExpanded(next);
  };

  return (
    <div class="panel kernels" data-testid="panel-kernels">
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
        <Chart option={bars} height={Math.min(topN, rows.length) * 22 + 40} testId="kernels-top-chart" onClick={(p) => setSearch(p.name.split(" ← ")[0])} />
      </Card>
      <Card
        title="Kernels"
        subtitle={`${kernels.length} kernels · ratio = kernel / all kernels`}
        testId="kernels-card"
        tools={
          <>
            <input
              class="search"
              type="search"
              placeholder="Search kernels or operators"
              value={search}
              onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
              data-testid="kernels-search"
              aria-label="Search kernels"
            />
            <Segmented
              value={grouping}
              options={[
                { value: "kernel", label: "By kernel" },
                { value: "operator", label: "By kernel + operator" },
              ]}
              onChange={(g) => {
                setGrouping(g);
                if (g === "operator" && sort.key.startsWith("launch.")) setSort({ key: "gpu.total", dir: "desc" });
              }}
              testId="kernels-grouping"
              label="Group kernels"
            />
            {onTimeline ? (
              <button class="btn" disabled={!picked} onClick={() => onTimeline(picked)} data-testid="kernels-to-timeline" title={picked ? `Open the timeline at the first occurrence of ${picked}` : "Click a kernel row first"}>
                Show in timeline
              </button>
            ) : null}
          </>
        }
      >
        <VirtualTable
          rows={flat}
          columns={columns}
          name={(r) => r.name}
          detail={(r) => r.detail}
          nameWidth={grouping === "kernel" ? 260 : 420}
          nameTitle={grouping === "kernel" ? "Kernel" : "Kernel ← operator"}
          sort={sort}
          onSort={(key) => setSort(nextSort(sort, key, columns))}
          onToggle={toggle}
          maxHeight={620}
          testId="kernel-table"
          onRowClick={onTimeline ? (r) => setPicked(r.kind === "kernel" ? r.name : "") : undefined}
          rowClass={(r) => `kind-${r.kind}`}
          empty={`Nothing matches “${search}”`}
        />
      </Card>
    </div>
  );
}
