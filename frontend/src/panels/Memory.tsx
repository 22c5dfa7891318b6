// Memory: allocated / reserved bytes over time per place with peaks, the per-event allocation table,
// and Paddle's Memory Manipulation and User Defined tables.
import { useMemo, useState } from "preact/hooks";
import type { ChartOption } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import { callsColumn, timeColumns } from "../components/columns";
import { Card, Notice, Segmented, Stat } from "../components/ui";
import type { Column, SortState } from "../components/VirtualTable";
import { comparator, flattenTree, nextSort, sortValue, VirtualTable } from "../components/VirtualTable";
import type { TimeUnit } from "../format";
import { fmtBytes, fmtInt, fmtTime, inUnit } from "../format";
import type { MemoryPlace, Summary } from "../gen/tb_paddle_profile/v1/summary_pb";
import type { MemRow, StatRow } from "../summary";
import { hasGpu, itemRows, memoryRows, num } from "../summary";

const MEM_COLUMNS: Column<MemRow>[] = [
  { key: "type", title: "Type", width: 84, align: "left", text: (r) => r.type, sort: (r) => r.type, firstDir: "asc" },
  { key: "allocationCount", title: "Allocation Count", width: 128, text: (r) => fmtInt(r.allocationCount), sort: (r) => r.allocationCount },
  { key: "freeCount", title: "Free Count", width: 90, text: (r) => fmtInt(r.freeCount), sort: (r) => r.freeCount },
  { key: "allocationSize", title: "Allocation Size", width: 120, text: (r) => fmtInt(r.allocationSize), sort: (r) => r.allocationSize },
  { key: "freeSize", title: "Free Size", width: 110, text: (r) => fmtInt(r.freeSize), sort: (r) => r.freeSize },
  { key: "increasedSize", title: "Increased Size", width: 116, text: (r) => fmtInt(r.increasedSize), sort: (r) => r.increasedSize },
];

function curveOption(place: MemoryPlace, unit: TimeUnit, range: [number, number]): ChartOption {
  const c = place.curve;
  const t = c?.timeNs ?? [];
  const alloc = c?.allocated ?? [];
  const reserved = c?.reserved ?? [];
  // The y axis in the binary unit of the peak, so that its ticks are round numbers of that unit.
  const peak = Math.max(num(place.peakAllocated), num(place.peakReserved), 1);
  const [scale, scaleName] = peak >= 2 ** 30 ? [2 ** 30, "GiB"] : peak >= 2 ** 20 ? [2 ** 20, "MiB"] : peak >= 2 ** 10 ? [2 ** 10, "KiB"] : [1, "B"];
  const pts = (ys: bigint[]) => t.map((x, i) => [inUnit(num(x), unit), num(ys[i]) / scale]);
  const peakAt = (ys: bigint[]) => {
    let best = -1;
    for (let i = 0; i < ys.length; i++) if (best < 0 || ys[i] > ys[best]) best = i;
    return best;
  };
  const mark = (ys: bigint[], color: string, name: string) => {
    const i = peakAt(ys);
    if (i < 0) return undefined;
    return {
      symbol: "pin",
      symbolSize: 30,
      itemStyle: { color },
      label: { show: true, position: "top" as const, fontSize: 10, color, formatter: () => `peak ${fmtBytes(num(ys[i]))}` },
      data: [{ name, coord: [inUnit(num(t[i]), unit), num(ys[i]) / scale], value: num(ys[i]) }],
    };
  };
  return {
    legend: { top: 0, itemWidth: 14, itemHeight: 8 },
    grid: { left: 8, right: 24, top: 34, bottom: 42, containLabel: true },
    tooltip: {
      trigger: "axis",
      formatter: ((ps: { dataIndex: number }[]) => {
        const i = ps[0].dataIndex;
        return tooltipBox(`${fmtTime(num(t[i]), unit)} ${unit}`, [
          { color: "#1976d2", name: "Allocated", value: `${fmtInt(alloc[i] ?? 0n)} B (${fmtBytes(num(alloc[i]))})` },
          { color: "#f57c00", name: "Reserved", value: `${fmtInt(reserved[i] ?? 0n)} B (${fmtBytes(num(reserved[i]))})` },
        ]);
      }) as never,
    },
    dataZoom: [
      { type: "inside", filterMode: "none" },
      { type: "slider", height: 18, bottom: 6, filterMode: "none" },
    ],
    // The whole trace on the x axis (relative to its start), so places and ranks line up.
    xAxis: { type: "value", name: unit, min: range[0], max: range[1], splitLine: { show: false }, axisLabel: { formatter: (v: number) => String(+v.toPrecision(6)) } },
    yAxis: { type: "value", name: scaleName, nameTextStyle: { color: "#757575", align: "right" }, splitLine: { lineStyle: { color: "#eee" } } },
    series: [
      { name: "Allocated", type: "line", step: "end", showSymbol: false, lineStyle: { width: 1.5, color: "#1976d2" }, itemStyle: { color: "#1976d2" }, areaStyle: { color: "rgba(25,118,210,0.08)" }, data: pts(alloc), markPoint: mark(alloc, "#1976d2", "peak allocated") },
      { name: "Reserved", type: "line", step: "end", showSymbol: false, lineStyle: { width: 1.5, color: "#f57c00" }, itemStyle: { color: "#f57c00" }, data: pts(reserved), markPoint: mark(reserved, "#f57c00", "peak reserved") },
    ],
  };
}

function StatsTable({ rows, unit, gpu, testId, initialSort, empty }: { rows: StatRow[]; unit: TimeUnit; gpu: boolean; testId: string; initialSort?: SortState; empty: string }) {
  const [sort, setSort] = useState<SortState | undefined>(initialSort);
  const columns = useMemo(() => {
    const cols: Column<StatRow>[] = [callsColumn, ...timeColumns("cpu", "CPU", unit, { ratio: "CPU time / total step time" })];
    if (gpu) cols.push(...timeColumns("gpu", "GPU", unit, { ratio: "All device time / ProfileStep's device time" }));
    return cols;
  }, [unit, gpu]);
  const flat = useMemo(() => flattenTree(rows, new Set(), sort ? comparator(sortValue(columns, sort.key), sort.dir) : null, ""), [rows, columns, sort]);
  return (
    <VirtualTable
      rows={flat}
      columns={columns}
      name={(r) => r.name}
      nameWidth={260}
      nameTitle="Name"
      sort={sort}
      onSort={(key) => setSort(nextSort(sort, key, columns))}
      maxHeight={360}
      testId={testId}
      empty={empty}
    />
  );
}

export function Memory({ summary, unit }: { summary: Summary; unit: TimeUnit }) {
  const places = summary.memory?.places ?? [];
  const [placeName, setPlaceName] = useState(places[0]?.place ?? "");
  const [sort, setSort] = useState<SortState | undefined>(undefined);
  const place = places.find((p) => p.place === placeName) ?? places[0];
  const gpu = hasGpu(summary);
  const memRows = useMemo(() => (place ? memoryRows(place) : []), [place]);
  const flat = useMemo(() => {
    return flattenTree(memRows, new Set(), sort ? comparator(sortValue(MEM_COLUMNS, sort.key), sort.dir) : null, "");
  }, [memRows, sort]);
  const curve = useMemo(() => {
    if (!place) return null;
    const t = place.curve?.timeNs ?? [];
    const lo = Math.min(num(summary.meta?.startNs), t.length ? num(t[0]) : 0);
    const hi = Math.max(num(summary.meta?.endNs), t.length ? num(t[t.length - 1]) : 0);
    return curveOption(place, unit, [inUnit(lo, unit), inUnit(hi, unit)]);
  }, [place, unit, summary]);
  const manip = useMemo(() => itemRows(summary.memoryManipulation, summary, "mm"), [summary]);
  const udf = useMemo(() => itemRows(summary.userDefined?.items ?? [], summary, "udf"), [summary]);

  return (
    <div class="panel memory" data-testid="panel-memory">
      {places.length === 0 ? (
        <Notice kind="info" testId="no-memory">
          No memory events in this trace (record with <code>profile_memory=True</code> to see allocations).
        </Notice>
      ) : (
        <>
          <Card
            title="Memory over time"
            subtitle={place?.curve?.decimated ? `thinned to local extremes of ${fmtInt(place.curve.events)} events` : "bytes after each memory event"}
            testId="memory-curve-card"
            tools={
              places.length > 1 ? (
                <Segmented value={place?.place ?? ""} options={places.map((p) => ({ value: p.place, label: p.place }))} onChange={setPlaceName} testId="memory-place" label="Memory place" />
              ) : null
            }
          >
            <div class="stats">
              <Stat label="Place" value={place?.place ?? "-"} />
              <Stat label="Peak allocated (B)" value={fmtInt(place?.peakAllocated ?? 0n)} sub={fmtBytes(num(place?.peakAllocated))} testId="peak-allocated" />
              <Stat label="Peak reserved (B)" value={fmtInt(place?.peakReserved ?? 0n)} sub={fmtBytes(num(place?.peakReserved))} testId="peak-reserved" />
              <Stat label="Memory events" value={fmtInt(place?.curve?.events ?? 0n)} />
            </div>
            {place && (place.curve?.timeNs.length ?? 0) > 0 ? (
              <Chart option={curve!} height={280} testId="memory-curve" />
            ) : (
              <p class="muted">No curve for this place.</p>
            )}
          </Card>
          <Card title={`Memory summary · ${place?.place ?? ""}`} subtitle="bytes; allocated rows by increased size, then reserved rows" testId="memory-table-card">
            <VirtualTable
              rows={flat}
              columns={MEM_COLUMNS}
              name={(r) => r.name}
              nameWidth={300}
              nameTitle="Name"
              sort={sort}
              onSort={(key) => setSort(nextSort(sort, key, MEM_COLUMNS))}
              maxHeight={420}
              testId="memory-table"
              rowClass={(r) => (r.type === "Reserved" ? "muted-row" : "")}
              empty="No allocation events at this place"
            />
          </Card>
        </>
      )}
      <Card title="Memory manipulation" subtitle="memcpy / memset host events, in the order met" testId="memmanip-card">
        <StatsTable rows={manip} unit={unit} gpu={gpu} testId="memmanip-table" empty="No memory manipulation events" />
      </Card>
      <Card title="User defined" subtitle="RecordEvent ranges from Python" testId="udf-card">
        <StatsTable rows={udf} unit={unit} gpu={gpu} testId="udf-table" initialSort={{ key: "cpu.total", dir: "desc" }} empty="No user-defined events" />
      </Card>
    </div>
  );
}
