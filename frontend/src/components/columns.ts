// Column sets shared by the panels: Calls and the Total / Avg / Max / Min / Ratio(%) groups of Paddle's tables.
import type { TimeUnit } from "../format";
import { fmtInt, fmtRatio, fmtTime } from "../format";
import type { StatRow, TimeCol } from "../summary";
import type { Column } from "./VirtualTable";

export const callsColumn: Column<StatRow> = {
  key: "calls",
  title: "Calls",
  width: 62,
  text: (r) => (r.calls === undefined ? "-" : fmtInt(r.calls)),
  sort: (r) => r.calls,
};

type Part = "total" | "avg" | "max" | "min" | "ratio";
const PARTS: { part: Part; title: string; width: number }[] = [
  { part: "total", title: "Total", width: 80 },
  { part: "avg", title: "Avg", width: 70 },
  { part: "max", title: "Max", width: 70 },
  { part: "min", title: "Min", width: 70 },
  { part: "ratio", title: "Ratio(%)", width: 76 },
];

export function timeText(col: TimeCol | undefined, part: Part, unit: TimeUnit): string {
  if (!col) return "-";
  if (part === "ratio") return fmtRatio(col.ratio);
  return fmtTime(col[part], unit);
}

/** Five columns for one side; `pick` chooses the side's TimeCol of a row. */
export function timeColumns(
  side: "cpu" | "gpu",
  label: string,
  unit: TimeUnit,
  tooltips: Partial<Record<Part, string>> = {},
): Column<StatRow>[] {
  return PARTS.map(({ part, title, width }) => ({
    key: `${side}.${part}`,
    title,
    group: `${label} (${unit})`,
    width,
    text: (r: StatRow) => timeText(r[side], part, unit),
    sort: (r: StatRow) => {
      const col = r[side];
      if (!col) return undefined;
      return col[part];
    },
    firstDir: part === "min" ? ("asc" as const) : ("desc" as const),
    tooltip: tooltips[part],
    cellClass: part === "ratio" ? () => "ratio" : undefined,
  }));
}
