// Memory: allocated / reserved bytes over time per place with peaks (the Summary's raw curve), and the
// display model's view "memory": Paddle's Memory Summary of each place, the memory insights (growth per
// step and leak suspicion, reserved − allocated, what is alive at the peak: tables and sentences built in
// Python, analysis/memory.py), Memory Manipulation and User Defined tables.
import { useMemo } from "preact/hooks";
import type { SpanKey } from "../api";
import type { ChartOption, EChart } from "../components/Chart";
import { Chart, tooltipBox } from "../components/Chart";
import type { PinLabel, StepLine } from "../components/markLabels";
import { placePinLabels } from "../components/markLabels";
import { Card, Notice, Segmented, Stat } from "../components/ui";
import { byteUnit } from "../display/cells";
import { DisplayCard, ViewSentences } from "../display/DisplayCard";
import { numberOf, tableOf, tablesWithPrefix, viewOf } from "../display/model";
import type { TimeUnit } from "../format";
import { fmtBytes, fmtInt, fmtTime, inUnit } from "../format";
import type { Display, Table } from "../gen/tb_paddle_profile/v1/display_pb";
import type { MemoryPlace, Summary } from "../gen/tb_paddle_profile/v1/summary_pb";
import { useUrlState } from "../state";

const num = (v: bigint | number | undefined): number => (v === undefined ? 0 : Number(v));

/** The curve's chart: its option and where its peaks' labels go once drawn (beside their pins, clear of each
 * other and of both lines: components/markLabels.ts). */
function curveChart(place: MemoryPlace, unit: TimeUnit, range: [number, number]): { option: ChartOption; arrange: (chart: EChart) => ChartOption | null } {
  const c = place.curve;
  const t = c?.timeNs ?? [];
  const alloc = c?.allocated ?? [];
  const reserved = c?.reserved ?? [];
  // The y axis in the unit the peak prints in (the one formatter's ladder, display/cells.ts byteUnit), so
  // that its ticks are round numbers of that unit and the peak's label names the axis's unit.
  const peak = Math.max(num(place.peakAllocated), num(place.peakReserved), 1);
  const [scaleName, scale] = byteUnit(peak);
  const xs = t.map((x) => inUnit(num(x), unit));
  const values = (ys: bigint[]) => ys.map((y) => num(y) / scale);
  const pts = (ys: bigint[]) => xs.map((x, i) => [x, num(ys[i]) / scale]);
  const peakAt = (ys: bigint[]) => {
    let best = -1;
    for (let i = 0; i < ys.length; i++) if (best < 0 || ys[i] > ys[best]) best = i;
    return best;
  };
  const pins: PinLabel[] = [];
  const mark = (series: number, ys: bigint[], color: string, name: string) => {
    const i = peakAt(ys);
    if (i < 0) return undefined;
    const text = `peak ${fmtBytes(num(ys[i]))}`;
    pins.push({ series, text, coord: [xs[i], num(ys[i]) / scale] });
    return {
      symbol: "pin",
      symbolSize: 30,
      itemStyle: { color },
      label: { show: true, fontSize: 10, color, formatter: () => text },
      data: [{ name, coord: [xs[i], num(ys[i]) / scale], value: num(ys[i]) }],
    };
  };
  const series = [
    { name: "Allocated", type: "line" as const, step: "end" as const, showSymbol: false, lineStyle: { width: 1.5, color: "#1976d2" }, itemStyle: { color: "#1976d2" }, areaStyle: { color: "rgba(25,118,210,0.08)" }, data: pts(alloc), markPoint: mark(0, alloc, "#1976d2", "peak allocated") },
    { name: "Reserved", type: "line" as const, step: "end" as const, showSymbol: false, lineStyle: { width: 1.5, color: "#f57c00" }, itemStyle: { color: "#f57c00" }, data: pts(reserved), markPoint: mark(1, reserved, "#f57c00", "peak reserved") },
  ];
  const lines: StepLine[] = [{ xs, ys: values(alloc) }, { xs, ys: values(reserved) }];
  const option: ChartOption = {
    legend: { top: 0, itemWidth: 14, itemHeight: 8 },
    grid: { left: 40, right: 40, top: 34, bottom: 42, containLabel: true }, // right: room for the x-axis name (the unit) at its end
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
    xAxis: { type: "value", name: unit, min: range[0], max: range[1], splitLine: { show: false }, axisLabel: { showMaxLabel: false, formatter: (v: number) => String(+v.toPrecision(6)) } },
    // room over the highest peak for its pin (and a label beside it), below the axis's name
    yAxis: { type: "value", name: scaleName, boundaryGap: [0, "20%"], nameTextStyle: { color: "#757575", align: "right" }, splitLine: { lineStyle: { color: "#eee" } } },
    series,
  };
  const arrange = (chart: EChart): ChartOption | null => {
    if (!pins.length) return null;
    const labels = placePinLabels(chart, pins, lines);
    return { series: series.map((_, i) => (labels[i] ? { markPoint: { label: labels[i] } } : {})) } as ChartOption;
  };
  return { option, arrange };
}

/** Per step: allocated and reserved at the step's end, the step's allocated peak and floor (the cells' raw
 * numbers of the model's `memory_steps.<place>` table). */
function stepsOption(table: Table): ChartOption {
  const rows = table.rows;
  const series = [
    { key: "allocated_end", name: "Allocated at end", color: "#1976d2", dash: "solid" },
    { key: "reserved_end", name: "Reserved at end", color: "#f57c00", dash: "solid" },
    { key: "allocated_peak", name: "Allocated peak", color: "#1976d2", dash: "dashed" },
    { key: "allocated_floor", name: "Allocated floor", color: "#64b5f6", dash: "dotted" },
  ];
  const values = series.map((sr) => rows.map((r) => numberOf(table, r, sr.key)));
  const top = Math.max(1, ...values.flat());
  const [scaleName, scale] = byteUnit(top);
  const steps = rows.map((r) => String(numberOf(table, r, "step")));
  return {
    legend: { top: 0, itemWidth: 14, itemHeight: 8 },
    grid: { left: 40, right: 24, top: 34, bottom: 28, containLabel: true },
    tooltip: {
      trigger: "axis",
      formatter: ((ps: { dataIndex: number }[]) => {
        const i = ps[0].dataIndex;
        return tooltipBox(`step ${steps[i]}`, series.map((sr, j) => ({ color: sr.color, name: sr.name, value: fmtBytes(values[j][i]) })));
      }) as never,
    },
    // ProfileStep numbers ("#3"); no axis name (at the right end it ran out of the chart)
    xAxis: { type: "category", data: steps.map((x) => `#${x}`) },
    yAxis: { type: "value", name: scaleName, nameTextStyle: { color: "#757575", align: "right" }, splitLine: { lineStyle: { color: "#eee" } } },
    series: series.map((sr, j) => ({
      name: sr.name,
      type: "line",
      symbolSize: 5,
      lineStyle: { width: 1.5, color: sr.color, type: sr.dash },
      itemStyle: { color: sr.color },
      data: values[j].map((v) => v / scale),
    })),
  } as ChartOption;
}

// Columns hidden, in this order, while a table does not fit its card (the Columns menu shows them again)
const INSIGHTS_FIT_HIDE = ["fragmentation_max_ns", "reserved_slope", "floor_growth_min"];
const STEPS_FIT_HIDE = ["events", "fragmentation_end", "reserved_peak", "floor_growth"];
const ITEM_FIT_HIDE = ["gpu_min_ns", "cpu_min_ns", "gpu_max_ns", "cpu_max_ns", "gpu_avg_ns", "cpu_avg_ns"];

export function Memory({ summary, display, spanKey, unit }: { summary: Summary; display: Display; spanKey: SpanKey; unit: TimeUnit }) {
  const places = summary.memory?.places ?? [];
  const view = viewOf(display, "memory");
  const [placeName, setPlaceName] = useUrlState<string>("mem.place", places[0]?.place ?? "");
  const [thread, setThread] = useUrlState<string>("mem.thread", "all");
  const place = places.find((p) => p.place === placeName) ?? places[0];
  const placeTable = place ? tableOf(view, `memory.${place.place}`) : undefined;
  const insights = tableOf(view, "memory_insights");
  const stepsTable = place ? tableOf(view, `memory_steps.${place.place}`) : undefined;
  const aliveTable = place ? tableOf(view, `memory_alive.${place.place}`) : undefined;
  const stepsChart = useMemo(() => (stepsTable && stepsTable.rows.length > 1 ? stepsOption(stepsTable) : null), [stepsTable]);
  const manip = tableOf(view, "memory_manipulation");
  const udfThreads = useMemo(() => tablesWithPrefix(view, "user_defined.thread.").map((t) => t.key.slice("user_defined.thread.".length)), [view]);
  const udf = (thread === "all" ? undefined : tableOf(view, `user_defined.thread.${thread}`)) ?? tableOf(view, "user_defined");
  const curve = useMemo(() => {
    if (!place) return null;
    const t = place.curve?.timeNs ?? [];
    const lo = Math.min(num(summary.meta?.startNs), t.length ? num(t[0]) : 0);
    const hi = Math.max(num(summary.meta?.endNs), t.length ? num(t[t.length - 1]) : 0);
    return curveChart(place, unit, [inUnit(lo, unit), inUnit(hi, unit)]);
  }, [place, unit, summary]);
  const card = { spanKey, view: "memory", timeUnit: unit };

  return (
    <div class="panel memory" data-testid="panel-memory">
      <ViewSentences sentences={view?.sentences ?? []} timeUnit={unit} />
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
              <Chart option={curve!.option} arrange={curve!.arrange} height={280} testId="memory-curve" />
            ) : (
              <p class="muted">No curve for this place.</p>
            )}
          </Card>
          {placeTable ? (
            <DisplayCard
              {...card}
              table={placeTable}
              title={`Memory summary · ${place?.place ?? ""}`}
              subtitle="bytes; allocated rows by increased size, then reserved rows (Paddle's order)"
              cardTestId="memory-table-card"
              testId="memory-table"
              maxHeight={420}
              nameWidth={200}
              rowClass={(r) => (r.id.startsWith("Reserved:") ? "muted-row" : "")}
            />
          ) : null}
          {insights ? (
            <DisplayCard
              {...card}
              table={insights}
              title="Memory insights"
              subtitle={`per place: growth per step and leak suspicion, reserved − allocated (fragmentation) · times in ${unit}`}
              cardTestId="memory-insights-card"
              testId="memory-insights"
              maxHeight={220}
              nameWidth={130}
              fitHide={INSIGHTS_FIT_HIDE}
            />
          ) : null}
          {stepsTable ? (
            <DisplayCard
              {...card}
              table={stepsTable}
              title={`Memory per step · ${place?.place ?? ""}`}
              subtitle="at each ProfileStep's end, with the step's peak and floor (the lowest allocated in it)"
              cardTestId="memory-steps-card"
              testId="memory-steps"
              maxHeight={300}
              fitHide={STEPS_FIT_HIDE}
            >
              {stepsChart ? <Chart option={stepsChart} height={220} testId="memory-steps-chart" /> : null}
            </DisplayCard>
          ) : null}
          {aliveTable ? (
            <DisplayCard
              {...card}
              table={aliveTable}
              title={`Alive at the allocated peak · ${place?.place ?? ""}`}
              subtitle="allocations not yet freed at the peak, by operator and outermost layer, largest first"
              cardTestId="memory-alive-card"
              testId="memory-alive"
              maxHeight={420}
              nameWidth={220}
            />
          ) : null}
        </>
      )}
      {manip ? (
        <DisplayCard {...card} table={manip} title="Memory manipulation" subtitle="memcpy / memset host events, in the order met" cardTestId="memmanip-card" testId="memmanip-table" maxHeight={360} nameWidth={260} fitHide={ITEM_FIT_HIDE} fitNameWidth={200} />
      ) : null}
      {udf ? (
        <DisplayCard
          {...card}
          table={udf}
          title="User defined"
          subtitle={`RecordEvent ranges from Python${thread === "all" ? "" : ` on thread ${thread}`}`}
          cardTestId="udf-card"
          testId="udf-table"
          maxHeight={360}
          nameWidth={260}
          fitHide={ITEM_FIT_HIDE}
          fitNameWidth={200}
          cardTools={
            udfThreads.length > 1 ? (
              <select value={thread} onChange={(e) => setThread((e.target as HTMLSelectElement).value)} data-testid="udf-thread" aria-label="Thread">
                <option value="all">All threads merged</option>
                {udfThreads.map((t) => (
                  <option value={t}>{`Thread ${t}`}</option>
                ))}
              </select>
            ) : null
          }
        />
      ) : null}
    </div>
  );
}
