// The decomposition of the change (the display model's table "decomposition": one row per part, a
// ROW_TOTAL row for the whole change) as a waterfall: each part a bar that starts where the parts above it
// ended, so the bars visibly add up to the total drawn last. Values are the cells' raw numbers; every label
// is the cell's text (cells.ts), so the chart prints what the table prints.
import { useMemo } from "preact/hooks";
import type { ChartOption } from "../../components/Chart";
import { Chart, tooltipBox } from "../../components/Chart";
import { CellKind, RowRole } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { Row, Table } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { TimeUnit } from "../../display/cells";
import { formatCell } from "../../display/cells";
import { cellOf, columnIndex } from "../../display/model";
import { inUnit } from "../../format";

/** Slower (more time) and faster (less time): the same hues as the tables' delta cells. */
export const SLOWER = "#e53935";
export const FASTER = "#43a047";
const TOTAL = "#546e7a";

/** The column that holds each part's change: "delta_ns", else the first duration column whose key holds "delta". */
export function deltaColumn(table: Table): number {
  const exact = columnIndex(table, "delta_ns");
  if (exact >= 0) return exact;
  return table.columns.findIndex((c) => c.key.includes("delta") && c.format?.kind === CellKind.CELL_DURATION);
}

export function decompositionOption(table: Table, unit: TimeUnit): ChartOption | null {
  const di = deltaColumn(table);
  if (di < 0) return null;
  const col = table.columns[di];
  const parts = table.rows.filter((r) => r.role === RowRole.ROW_DATA);
  const total = table.rows.find((r) => r.role === RowRole.ROW_TOTAL);
  const rows: Row[] = total ? [...parts, total] : parts;
  if (!rows.length) return null;
  const value = (r: Row) => {
    const c = r.cells[di];
    return c && !c.missing ? c.number : 0;
  };
  // Waterfall: an invisible base bar up to the lower end, then the visible part from the running sum before
  // it to the sum after it (stacked whatever their signs: stackStrategy "all").
  let run = 0;
  const base: number[] = [];
  const size: { value: number; itemStyle: { color: string } }[] = [];
  for (const r of rows) {
    const v = value(r);
    const isTotal = r === total;
    const from = isTotal ? 0 : run;
    const to = isTotal ? v : run + v;
    if (!isTotal) run = to;
    base.push(inUnit(Math.min(from, to), unit));
    size.push({ value: inUnit(Math.abs(to - from), unit), itemStyle: { color: isTotal ? TOTAL : v > 0 ? SLOWER : FASTER } });
  }
  const names = rows.map((r) => r.cells[0]?.text ?? "");
  const text = (r: Row, key: string) => {
    const i = columnIndex(table, key);
    return i < 0 ? "" : formatCell(table.columns[i], r.cells[i], unit);
  };
  const extra = table.columns
    .map((c, i) => ({ c, i }))
    .filter(({ c, i }) => i !== 0 && i !== di && !c.panelHidden && c.format?.kind !== CellKind.CELL_TEXT);
  return {
    grid: { left: 8, right: 72, top: 8, bottom: 24, containLabel: true },
    tooltip: {
      trigger: "item",
      formatter: ((p: { dataIndex: number }) => {
        const r = rows[p.dataIndex];
        return tooltipBox(names[p.dataIndex], [
          { color: size[p.dataIndex].itemStyle.color, name: col.header, value: formatCell(col, cellOf(table, r, col.key), unit) },
          ...extra.map(({ c }) => ({ name: c.header, value: text(r, c.key) })),
        ]);
      }) as never,
    },
    xAxis: {
      type: "value",
      name: unit,
      nameTextStyle: { color: "#757575" },
      axisLabel: { color: "#616161" },
      splitLine: { lineStyle: { color: "#eee" } },
    },
    yAxis: {
      type: "category",
      inverse: true,
      data: names,
      axisTick: { show: false },
      axisLine: { lineStyle: { color: "#ccc" } },
      axisLabel: { color: "#424242", width: 220, overflow: "truncate" },
    },
    series: [
      {
        type: "bar",
        stack: "w",
        stackStrategy: "all",
        silent: true,
        data: base,
        itemStyle: { color: "transparent" },
        barMaxWidth: 18,
      },
      {
        type: "bar",
        stack: "w",
        stackStrategy: "all",
        data: size,
        barMaxWidth: 18,
        barMinHeight: 2,
        label: {
          show: true,
          position: "right",
          fontSize: 11,
          color: "#424242",
          formatter: ((p: { dataIndex: number }) => `${formatCell(col, rows[p.dataIndex].cells[di], unit)} ${unit}`) as never,
        },
      },
    ],
  } as ChartOption;
}

export function DiffChart({ table, unit }: { table: Table; unit: TimeUnit }) {
  const option = useMemo(() => decompositionOption(table, unit), [table, unit]);
  if (!option) return null;
  const bars = table.rows.filter((r) => r.role === RowRole.ROW_DATA || r.role === RowRole.ROW_TOTAL);
  // the bars' names in the DOM (tests read what the chart draws)
  return (
    <div class="cmp-waterfall" data-bars={JSON.stringify(bars.map((r) => r.cells[0]?.text ?? ""))}>
      <Chart option={option} height={Math.max(120, 34 + bars.length * 30)} testId="cmp-decomposition-chart" />
    </div>
  );
}
