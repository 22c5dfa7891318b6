// A flat, sortable table over VirtualTable for per-rank lists: only the rows in view are DOM nodes,
// so 1,024 or 4,096 ranks cost the same as 20. The first column is the row's name (a rank's label).
import { useMemo, useState } from "preact/hooks";
import type { Column, FlatRow, SortState } from "./VirtualTable";
import { comparator, compareText, nextSort, stableSort, VirtualTable } from "./VirtualTable";

export interface RowColumn<R> {
  key: string;
  title: string;
  width: number;
  align?: "left" | "right";
  group?: string;
  text: (row: R) => string;
  /** Sort value (numbers sort numerically); without it the column cannot be sorted. */
  sort?: (row: R) => number | string | undefined;
  firstDir?: "asc" | "desc";
  tooltip?: string;
  cellClass?: (row: R) => string;
}

export function RowsTable<R>(props: {
  rows: R[];
  rowKey: (row: R) => string;
  name: (row: R) => string;
  nameTitle: string;
  nameWidth?: number;
  columns: RowColumn<R>[];
  testId: string;
  onRowClick?: (row: R) => void;
  rowClass?: (row: R) => string;
  maxHeight?: number;
  empty?: string;
}) {
  const [sort, setSort] = useState<SortState | undefined>(undefined);
  const columns = props.columns as Column<R>[];
  const flat = useMemo<FlatRow<R>[]>(() => {
    let rows = props.rows;
    if (sort) {
      const value = sort.key === "name" ? props.name : props.columns.find((c) => c.key === sort.key)?.sort;
      if (value) {
        const cmp = sort.key === "name" ? (a: R, b: R) => (sort.dir === "asc" ? 1 : -1) * compareText(props.name(a), props.name(b)) : comparator(value, sort.dir);
        rows = stableSort(rows, cmp);
      }
    }
    return rows.map((row) => ({ row, id: props.rowKey(row), depth: 0, expandable: false, expanded: false, toggleId: "" }));
  }, [props.rows, sort, props.columns]);
  return (
    <VirtualTable<R>
      rows={flat}
      columns={columns}
      name={props.name}
      nameWidth={props.nameWidth ?? 180}
      nameTitle={props.nameTitle}
      sort={sort}
      onSort={(key) => setSort(nextSort(sort, key, columns))}
      onRowClick={props.onRowClick}
      rowClass={props.rowClass ? (r) => props.rowClass!(r) : undefined}
      maxHeight={props.maxHeight ?? 360}
      testId={props.testId}
      empty={props.empty}
      overscan={4}
    />
  );
}
