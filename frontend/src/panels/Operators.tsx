// Operator tree: operator → inner events → device events, sortable, searchable, grouped by name or shape.
import { useMemo, useState } from "preact/hooks";
import type { ChartOption } from "../components/Chart";
import { Chart, PALETTE, tooltipBox } from "../components/Chart";
import { callsColumn, timeColumns, timeText } from "../components/columns";
import { Card, Segmented } from "../components/ui";
import type { Column, SortState } from "../components/VirtualTable";
import { comparator, flattenTree, nextSort, sortValue, VirtualTable } from "../components/VirtualTable";
import type { TimeUnit } from "../format";
import { fmtInt, fmtRatio } from "../format";
import type { Summary } from "../gen/tb_paddle_profile/v1/summary_pb";
import type { OperatorGrouping, StatRow } from "../summary";
import { hasGpu, operatorRows } from "../summary";

/** A pie of the top `n` rows by total time of `side`, the rest as "Others"; also returns the top rows. */
export function topPie(rows: StatRow[], side: "cpu" | "gpu", n: number, unit: TimeUnit, what: string): { option: ChartOption; top: StatRow[] } {
  const sorted = [...rows].sort((a, b) => (b[side]?.total ?? 0) - (a[side]?.total ?? 0));
  const top = sorted.slice(0, n).filter((r) => (r[side]?.total ?? 0) > 0);
  const rest = sorted.slice(top.length).reduce((a, r) => a + (r[side]?.total ?? 0), 0);
  const restRatio = sorted.slice(top.length).reduce((a, r) => a + (r[side]?.ratio ?? 0), 0);
  const label = (r: StatRow) => (r.kind === "shape" && r.detail ? `${r.name} (${r.detail})` : r.name);
  const ratioOf = new Map(top.map((r) => [label(r), timeText(r[side], "ratio", unit)]));
  ratioOf.set("Others", fmtRatio(restRatio));
  const data = top.map((r, i) => ({ name: label(r), value: r[side]?.total ?? 0, itemStyle: { color: PALETTE[i % PALETTE.length] } }));
  if (rest > 0) data.push({ name: "Others", value: rest, itemStyle: { color: "#cfd8dc" } });
  const option: ChartOption = {
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number; color: string }) => {
        const r = top[p.dataIndex];
        if (!r) return tooltipBox(`Other ${what}`, [{ color: p.color, name: "Ratio (%)", value: fmtRatio(restRatio) }]);
        return tooltipBox(label(r), [
          { color: p.color, name: `${side.toUpperCase()} total (${unit})`, value: timeText(r[side], "total", unit) },
          { name: "Ratio (%)", value: timeText(r[side], "ratio", unit) },
          { name: "Calls", value: r.calls === undefined ? "-" : fmtInt(r.calls) },
        ]);
      }) as never,
    },
    legend: {
      type: "scroll",
      orient: "vertical",
      left: "50%",
      top: 8,
      bottom: 8,
      width: "52%",
      itemWidth: 10,
      itemHeight: 10,
      textStyle: { fontSize: 11, width: 300, overflow: "truncate" },
      formatter: (name: string) => `${name}  ${ratioOf.get(name) ?? ""}%`,
    },
    series: [
      {
        type: "pie",
        radius: ["38%", "74%"],
        center: ["24%", "50%"],
        label: { show: false },
        itemStyle: { borderColor: "#fff", borderWidth: 1 },
        data,
      },
    ],
  };
  return { option, top };
}

export function Operators({ summary, unit, find, onTimeline }: { summary: Summary; unit: TimeUnit; find?: string; onTimeline?: (name: string) => void }) {
  const gpu = hasGpu(summary);
  const threads = summary.operators?.threads ?? [];
  const [search, setSearch] = useState(find ?? "");
  const [picked, setPicked] = useState("");
  const [grouping, setGrouping] = useState<OperatorGrouping>("name");
  const [thread, setThread] = useState("all");
  const [sort, setSort] = useState<SortState>({ key: "cpu.total", dir: "desc" });
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [topN, setTopN] = useState(10);
  const [pieSide, setPieSide] = useState<"cpu" | "gpu">("cpu");

  const ops = useMemo(() => {
    if (thread === "all") return summary.operators?.operators ?? [];
    return threads.find((t) => String(t.threadId) === thread)?.operators ?? [];
  }, [summary, thread]);
  const rows = useMemo(() => operatorRows(ops, grouping), [ops, grouping]);
  const anyShapes = useMemo(() => (summary.operators?.operators ?? []).some((o) => o.shapes.length > 0), [summary]);
  const anyFlops = useMemo(() => rows.some((r) => (r.flops ?? 0) > 0), [rows]);

  const columns = useMemo(() => {
    const cols: Column<StatRow>[] = [
      callsColumn,
      ...timeColumns("cpu", "CPU", unit, { ratio: "Operator: op / all operators. Inner: inner / its operator." }),
    ];
    if (gpu) cols.push(...timeColumns("gpu", "GPU", unit, { ratio: "All device time (kernels, memcpy, memset). Operator: op / all operators. Below: row / its parent." }));
    if (anyFlops) cols.push({ key: "flops", title: "FLOPs", width: 90, text: (r) => (r.kind === "op" || r.kind === "shape" ? fmtInt(r.flops ?? 0) : "-"), sort: (r) => r.flops });
    return cols;
  }, [unit, gpu, anyFlops]);

  const flat = useMemo(
    () => flattenTree(rows, expanded, comparator(sortValue(columns, sort.key), sort.dir), search),
    [rows, expanded, columns, sort, search],
  );

  const toggle = (id: string) => {
    const next = new Set(expanded);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setExpanded(next);
  };
  const expandAll = () => {
    const ids = new Set<string>();
    const walk = (rs: StatRow[]) => rs.forEach((r) => r.children && (ids.add(r.id), walk(r.children)));
    walk(rows);
    setExpanded(ids);
  };

  const side = gpu ? pieSide : "cpu";
  const pie = useMemo(() => topPie(rows, side, topN, unit, "operators"), [rows, side, topN, unit]);
  const totalOps = rows.length;
  return (
    <div class="panel operators" data-testid="panel-operators">
      <Card
        title={`Top ${topN} operators`}
        subtitle={`share of ${side.toUpperCase()} time among ${thread === "all" ? "all" : `thread ${thread}`} operators`}
        testId="operators-pie-card"
        tools={
          <>
            {gpu ? <Segmented value={side} options={[{ value: "cpu", label: "CPU" }, { value: "gpu", label: "GPU" }]} onChange={setPieSide} label="Pie side" /> : null}
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
        <Chart option={pie.option} height={230} testId="operators-pie" onClick={(p) => pie.top[p.dataIndex] && setSearch(pie.top[p.dataIndex].name)} />
      </Card>
      <Card
        title="Operators"
        subtitle={`${totalOps} ${grouping === "shape" ? "rows" : "operators"}${thread === "all" ? "" : ` on thread ${thread}`}`}
        testId="operators-card"
        tools={
          <>
            <input
              class="search"
              type="search"
              placeholder="Search operators, inner events, kernels"
              value={search}
              onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
              data-testid="operators-search"
              aria-label="Search operators"
            />
            <Segmented
              value={grouping}
              options={[
                { value: "name", label: "By name" },
                { value: "shape", label: "By name + input shape", title: anyShapes ? undefined : "This trace recorded no input shapes" },
              ]}
              onChange={setGrouping}
              testId="operators-grouping"
              label="Group operators"
            />
            {threads.length > 1 ? (
              <select value={thread} onChange={(e) => setThread((e.target as HTMLSelectElement).value)} data-testid="operators-thread" aria-label="Thread">
                <option value="all">All threads merged</option>
                {threads.map((t) => (
                  <option value={String(t.threadId)}>{`Thread ${t.threadId}`}</option>
                ))}
              </select>
            ) : null}
            {onTimeline ? (
              <button class="btn" disabled={!picked} onClick={() => onTimeline(picked)} data-testid="operators-to-timeline" title={picked ? `Open the timeline at the first occurrence of ${picked}` : "Click a row first"}>
                Show in timeline
              </button>
            ) : null}
            <button class="btn" onClick={expandAll} data-testid="operators-expand-all">
              Expand all
            </button>
            <button class="btn" onClick={() => setExpanded(new Set())} data-testid="operators-collapse-all">
              Collapse all
            </button>
          </>
        }
      >
        <VirtualTable
          rows={flat}
          columns={columns}
          name={(r) => r.name}
          detail={(r) => r.detail}
          nameWidth={280}
          nameTitle="Name"
          sort={sort}
          onSort={(key) => setSort(nextSort(sort, key, columns))}
          onToggle={toggle}
          maxHeight={620}
          testId="operator-table"
          onRowClick={onTimeline ? (r) => setPicked(r.kind === "op" || r.kind === "shape" || r.kind === "inner" || r.kind === "kernel" || r.kind === "device" ? r.name : "") : undefined}
          rowClass={(r) => `kind-${r.kind}`}
          empty={search ? `Nothing matches “${search}”` : "No operator events in this trace"}
        />
        <p class="note">
          {gpu
            ? "GPU columns count kernels, memcpy and memset (Paddle's general GPU time). Rows under an operator: inner events, then the device events of its own runtime calls."
            : "Rows under an operator: its inner events (infer_meta, compute, kernel launch, …)."}
        </p>
      </Card>
    </div>
  );
}
