// Lookups in a display model (display.proto): views, tables, a row's cell by column key. Nothing here
// computes a value; charts read the cells' raw numbers, tables draw the cells through cells.ts.
import { create } from "@bufbuild/protobuf";
import { TableSchema } from "../gen/tb_paddle_profile/v1/display_pb";
import type { Cell, Display, Row, Table, View } from "../gen/tb_paddle_profile/v1/display_pb";

export function viewOf(display: Display | undefined, key: string): View | undefined {
  return display?.views.find((v) => v.key === key);
}

export function tableOf(view: View | undefined, key: string): Table | undefined {
  return view?.tables.find((t) => t.key === key);
}

/** The tables of a view whose key starts with `prefix` (per-thread tables: "operators.thread."). */
export function tablesWithPrefix(view: View | undefined, prefix: string): Table[] {
  return view?.tables.filter((t) => t.key.startsWith(prefix)) ?? [];
}

export function columnIndex(table: Table, key: string): number {
  return table.columns.findIndex((c) => c.key === key);
}

export function cellOf(table: Table, row: Row, key: string): Cell | undefined {
  const i = columnIndex(table, key);
  return i < 0 ? undefined : row.cells[i];
}

/** A cell's raw number (0 when missing or absent): for chart geometry only. */
export function numberOf(table: Table, row: Row, key: string): number {
  const c = cellOf(table, row, key);
  return c && !c.missing ? c.number : 0;
}

export function textOf(table: Table, row: Row, key: string): string {
  return cellOf(table, row, key)?.text ?? "";
}

/** The table's rows in runs of the same text in column `key`, in the model's order (a chart's table of
 * rank × step rows, rank-major: one run per rank). */
export function runsOf(table: Table, key: string): { text: string; rows: Row[] }[] {
  const out: { text: string; rows: Row[] }[] = [];
  for (const r of table.rows) {
    const t = textOf(table, r, key);
    if (out[out.length - 1]?.text !== t) out.push({ text: t, rows: [] });
    out[out.length - 1].rows.push(r);
  }
  return out;
}

/** The columns of a column group, in order. */
export function groupColumns(table: Table, group: string): Table["columns"] {
  return table.columns.filter((c) => c.group === group);
}

/**
 * The same table with some of its columns (by key, in that order) and some of its rows: a card that
 * shows part of a table (the first ten operators) draws the model's own cells, nothing recomputed.
 */
export function partOf(table: Table, keys: string[], rows: Row[], key = table.key): Table {
  const idx = keys.map((k) => columnIndex(table, k)).filter((i) => i >= 0);
  const groups = new Set(idx.map((i) => table.columns[i].group).filter((g) => g));
  return create(TableSchema, {
    key,
    title: table.title,
    columns: idx.map((i) => table.columns[i]),
    groups: table.groups.filter((g) => groups.has(g.key)),
    rows: rows.map((r) => ({ ...r, depth: 0, cells: idx.map((i) => r.cells[i]) })),
    tree: false,
    empty: table.empty,
  });
}

/** The Row.link target of a "timeline:<name>" link, else "". */
export function timelineName(link: string): string {
  return link.startsWith("timeline:") ? link.slice("timeline:".length) : "";
}
