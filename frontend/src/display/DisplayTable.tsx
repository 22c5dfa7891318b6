// One component draws any table of the display model (display.proto): the columns, rows, order, totals
// and notes all come from Python. This file only lays them out: every cell's text is formatCell's, the
// default order is the model's, a click on a header sorts by the column's raw value, a tree opens and
// closes by Row.id, and the CSV button links to the `csv` route (the CSV is built in Python).
import type { ComponentChildren } from "preact";
import { createContext } from "preact";
import { useContext, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Column as VColumn, FlatRow, SortDir, SortState } from "../components/VirtualTable";
import { comparator, stableSort, VirtualTable } from "../components/VirtualTable";
import { CellKind, RowRole } from "../gen/tb_paddle_profile/v1/display_pb";
import type { Column, Row, Table } from "../gen/tb_paddle_profile/v1/display_pb";
import type { TimeUnit } from "./cells";
import { fitUnit, formatCell, formatValue } from "./cells";
import { abbreviate, partingPoints, textWidth } from "./abbrev";

/**
 * True when the unit selector is on "auto": each duration column of a table (one without a fixed unit)
 * is printed in the unit that fits its largest value (cells.fitUnit), named in its header; sentences and
 * charts keep the panel's unit (ms). Provided by App.tsx.
 */
export const AutoUnits = createContext(false);

/** Per column of `table`: its unit under "auto" (a duration column without a fixed unit), else undefined. */
export function autoUnits(table: Table): (TimeUnit | undefined)[] {
  return table.columns.map((c, i) => {
    if (c.format?.kind !== CellKind.CELL_DURATION || c.format.unit || c.panelFormat) return undefined;
    let max = 0;
    for (const r of table.rows) {
      if (r.role === RowRole.ROW_HEADER || r.role === RowRole.ROW_SECTION) continue;
      const cell = r.cells[i];
      if (cell && !cell.missing) max = Math.max(max, Math.abs(cell.number));
    }
    return fitUnit(max);
  });
}
import { Sentence } from "./Sentence";
import { useUrlState } from "../state";

/** A row of the model with its formatted texts (one per model column), its place and its children. */
export interface DRow {
  row: Row;
  /** Index in Table.rows: the model's order. */
  index: number;
  id: string;
  texts: string[];
  children: DRow[];
}

const ROLE_CLASS: Record<number, string> = {
  [RowRole.ROW_DATA]: "",
  [RowRole.ROW_SECTION]: "role-section",
  [RowRole.ROW_HEADER]: "role-header",
  [RowRole.ROW_TOTAL]: "role-total",
};

const KIND_WIDTH: Record<number, number> = {
  [CellKind.CELL_DURATION]: 70,
  [CellKind.CELL_RATIO]: 72,
  [CellKind.CELL_PERCENT]: 72,
  [CellKind.CELL_COUNT]: 64,
  [CellKind.CELL_BYTES]: 96,
  [CellKind.CELL_NUMBER]: 84,
};

const CHAR_PX = 7;

/** A column's width: wide enough for its header and (text columns) its longest cell, within bounds. */
function columnWidth(col: Column, texts: string[], unit?: TimeUnit): number {
  // The header's text (12px, semibold; under "auto" with its unit) and room for the sort arrow.
  // Wide letters (m, w, M, W) count 1.5: "Memcpy" at 7.4 px a letter was cut.
  const text = col.header + (unit ? ` (${unit})` : "");
  const wide = (text.match(/[mwMW]/g) ?? []).length;
  const header = Math.ceil((text.length + wide * 0.5) * 7.4) + 26;
  const kind = col.format?.kind ?? CellKind.CELL_TEXT;
  if (kind !== CellKind.CELL_TEXT) {
    // Digits are wider than the average character (tabular figures, ~7.6 px at 12 px) plus 16 px of padding.
    const longest = Math.ceil(texts.reduce((a, t) => Math.max(a, t.length), 0) * 7.6) + 20;
    return Math.min(220, Math.max(KIND_WIDTH[kind] ?? 80, header, longest));
  }
  const longest = texts.reduce((a, t) => Math.max(a, t.length), 0) * CHAR_PX + 14;
  return Math.min(320, Math.max(60, header, longest));
}

/** Column widths the user dragged, per table (local storage "tbp.widths.<table key>": {column key: px}). */
const WIDTHS_PREFIX = "tbp.widths.";

function readWidths(tableKey: string): Record<string, number> {
  try {
    const parsed = JSON.parse(localStorage.getItem(WIDTHS_PREFIX + tableKey) ?? "{}");
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(parsed ?? {})) if (typeof v === "number" && v >= 40 && v <= 2000) out[k] = v;
    return out;
  } catch {
    return {};
  }
}

function writeWidth(tableKey: string, columnKey: string, width: number): void {
  try {
    localStorage.setItem(WIDTHS_PREFIX + tableKey, JSON.stringify({ ...readWidths(tableKey), [columnKey]: width }));
  } catch {
    // storage refused (private mode, quota): the width holds until the page reloads
  }
}

/** The raw value a column sorts by: numbers for numeric kinds, text for text; missing sorts last. */
function rawValue(col: Column, row: Row, i: number): number | string | undefined {
  const cell = row.cells[i];
  if (!cell || cell.missing) return undefined;
  const kind = col.format?.kind ?? CellKind.CELL_TEXT;
  return kind === CellKind.CELL_TEXT ? cell.text : cell.number;
}

/**
 * The printed texts of a row, one per column: formatCell's, except in a ROW_HEADER or ROW_SECTION row,
 * whose cells are labels (the GPU half's "Calls", "GPU Time", …) and print their text. A column with a
 * panel_format (the memory tables' bytes: "1.50 MB") prints with it here; the CLI and CSV keep `format`.
 */
export function rowTexts(table: Table, row: Row, timeUnit: TimeUnit, units?: (TimeUnit | undefined)[]): string[] {
  if (row.role === RowRole.ROW_HEADER || row.role === RowRole.ROW_SECTION) return table.columns.map((_c, i) => row.cells[i]?.text ?? "");
  return table.columns.map((c, i) => (c.panelFormat ? formatValue(c.panelFormat, row.cells[i], timeUnit) : formatCell(c, row.cells[i], units?.[i] ?? timeUnit)));
}

/** Builds the tree of the model's rows by depth: a row of depth d+1 belongs to the nearest row of depth d above it. */
export function buildRows(table: Table, timeUnit: TimeUnit, units?: (TimeUnit | undefined)[]): DRow[] {
  const roots: DRow[] = [];
  const stack: DRow[] = [];
  const seen = new Set<string>();
  table.rows.forEach((row, index) => {
    // Row ids are unique in the model; a repeated or empty one still gets a unique id here.
    let id = row.id || `#${index}`;
    if (seen.has(id)) id = `${id}#${index}`;
    seen.add(id);
    const node: DRow = {
      row,
      index,
      id,
      texts: rowTexts(table, row, timeUnit, units),
      children: [],
    };
    const depth = table.tree ? Math.max(0, row.depth) : 0;
    stack.length = Math.min(stack.length, depth);
    const parent = stack[stack.length - 1];
    if (parent && depth > 0) parent.children.push(node);
    else roots.push(node);
    stack.push(node);
  });
  return roots;
}

function isData(r: DRow): boolean {
  return r.row.role === RowRole.ROW_DATA;
}

/**
 * Sorts one level: data rows by the comparator (stable: ties keep the model's order); rows that are not
 * data (totals, "Others") keep their place before or after the data rows.
 */
function sortLevel(level: DRow[], compare: ((a: DRow, b: DRow) => number) | null): DRow[] {
  if (!compare) return level;
  const firstData = level.findIndex(isData);
  if (firstData < 0) return level;
  const lead = level.slice(0, firstData);
  const rest = level.slice(firstData);
  return [...lead, ...stableSort(rest.filter(isData), compare), ...rest.filter((r) => !isData(r))];
}

/**
 * The rows to draw: the model's tree, sorted level by level inside each section (a ROW_SECTION or
 * ROW_HEADER row starts one and stays in place), filtered by a text that keeps every branch leading
 * to a match, flattened over the expanded rows.
 */
export function flattenRows(
  roots: DRow[],
  expanded: Set<string>,
  compare: ((a: DRow, b: DRow) => number) | null,
  filter: string,
): FlatRow<DRow>[] {
  const q = filter.trim().toLowerCase();
  const matches = (r: DRow) => r.texts.some((t) => t.toLowerCase().includes(q)) || r.row.cells.some((c) => c.title && c.title.toLowerCase().includes(q));
  const keep = new Map<DRow, "self" | "path">();
  const mark = (r: DRow): boolean => {
    let below = false;
    for (const c of r.children) if (mark(c)) below = true;
    const self = matches(r);
    if (self) keep.set(r, "self");
    else if (below) keep.set(r, "path");
    return self || below;
  };
  if (q) roots.forEach(mark);

  const out: FlatRow<DRow>[] = [];
  const walk = (level: DRow[], insideMatch: boolean) => {
    for (const r of sortLevel(level, compare)) {
      const state = keep.get(r);
      if (q && !insideMatch && !state) continue;
      const kids = r.children;
      // A row on the path to a match opens by itself during a search; the user's toggle flips that.
      const auto = q && !insideMatch && state === "path";
      const open = auto ? !expanded.has(`!${r.id}`) : expanded.has(r.id);
      const toggleId = auto ? `!${r.id}` : r.id;
      out.push({ row: r, id: r.id, depth: Math.max(0, r.row.depth), expandable: kids.length > 0, expanded: kids.length > 0 && open, toggleId });
      if (kids.length && open) walk(kids, insideMatch || state === "self");
    }
  };
  // Sections: a ROW_SECTION / ROW_HEADER row at the top level starts one; it is drawn unless a filter
  // leaves nothing below it.
  let lead: DRow | null = null;
  let segment: DRow[] = [];
  const flush = () => {
    const at = out.length;
    walk(segment, !q);
    if (lead && (!q || out.length > at)) out.splice(at, 0, { row: lead, id: lead.id, depth: Math.max(0, lead.row.depth), expandable: false, expanded: false, toggleId: lead.id });
    segment = [];
  };
  for (const r of roots) {
    if (r.row.role === RowRole.ROW_SECTION || r.row.role === RowRole.ROW_HEADER) {
      flush();
      lead = r;
    } else segment.push(r);
  }
  flush();
  return out;
}

/** Every id of a row with children (for "Expand all"). */
function branchIds(roots: DRow[]): Set<string> {
  const ids = new Set<string>();
  const walk = (rs: DRow[]) => rs.forEach((r) => r.children.length && (ids.add(r.id), walk(r.children)));
  walk(roots);
  return ids;
}

export interface DisplayTableProps {
  table: Table;
  timeUnit: TimeUnit;
  /** data-testid of the table (default "dt-<table key>"); rows are "<id>-row", cells "<id>-cell". */
  testId?: string;
  /** The `csv` route of this table (api.ts csvUrl); no CSV button without it. */
  csvHref?: string;
  /** A click on a row that has a Row.link. */
  onLink?: (link: string, row: Row) => void;
  /** A click on any row (selection). */
  onRowClick?: (row: Row) => void;
  /** Controlled filter text; without it the table keeps its own. */
  filter?: string;
  onFilter?: (text: string) => void;
  /** Hide the filter box (the panel has its own). */
  noFilter?: boolean;
  filterPlaceholder?: string;
  /** data-testid of the filter box (default "<id>-filter"). */
  filterTestId?: string;
  maxHeight?: number;
  /** Minimum width of the first (name) column. */
  nameWidth?: number;
  /** Tools drawn before the table's own (filter, expand, CSV). */
  tools?: ComponentChildren;
  /** Initially expanded row ids. */
  initialExpanded?: string[];
  /** Extra class of a row (selection). */
  rowClass?: (row: Row) => string;
  /** Draw the title above the table (default false: the panel's card carries it). */
  showTitle?: boolean;
  /**
   * Columns that make room when the table is wider than its box, in the order they go (the first first),
   * down to the name column at `fitNameWidth`; a "Columns" menu shows and hides any column (the choice is
   * kept in the link, `dt.<table>.cols`). Without it the last columns go first (the menu is there once one
   * is hidden); `noFit`: every column is drawn and the table scrolls.
   */
  fitHide?: string[];
  noFit?: boolean;
  /** The name column's least width while columns are hidden to fit (default nameWidth). */
  fitNameWidth?: number;
}

/** The user's choices of the Columns menu: "+key" shown, "-key" hidden, comma-separated. */
function parseChoices(text: string): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const part of text.split(",")) if (part.length > 1 && (part[0] === "+" || part[0] === "-")) out.set(part.slice(1), part[0] === "+");
  return out;
}

function choicesText(choices: Map<string, boolean>): string {
  return [...choices].map(([k, on]) => `${on ? "+" : "-"}${k}`).join(",");
}

export function DisplayTable(props: DisplayTableProps) {
  const { table, timeUnit } = props;
  const testId = props.testId ?? `dt-${table.key}`;
  // The filter text (unless the panel holds it) and the sort live in the URL (state.ts: dt.<table>.*).
  const [ownFilter, setOwnFilter] = useUrlState<string>(`dt.${table.key}.q`, "");
  const filter = props.filter ?? ownFilter;
  const setFilter = (t: string) => (props.onFilter ? props.onFilter(t) : setOwnFilter(t));
  const [sortText, setSortText] = useUrlState<string>(`dt.${table.key}.s`, "", (v) => /:(asc|desc)$/.test(v));
  const sort = useMemo<SortState | undefined>(
    () => (sortText ? { key: sortText.slice(0, sortText.lastIndexOf(":")), dir: sortText.slice(sortText.lastIndexOf(":") + 1) as SortDir } : undefined),
    [sortText],
  );
  const setSort = (s: SortState | undefined) => setSortText(s ? `${s.key}:${s.dir}` : "");
  const [expanded, setExpanded] = useState<Set<string>>(() => new Set(props.initialExpanded ?? []));

  // Model columns that the panel draws, with their index in Row.cells.
  const shown = useMemo(
    () => table.columns.map((c, i) => ({ c, i })).filter(({ c }) => !c.panelHidden),
    [table],
  );
  const auto = useContext(AutoUnits);
  const units = useMemo(() => (auto ? autoUnits(table) : undefined), [table, auto]);
  const roots = useMemo(() => buildRows(table, timeUnit, units), [table, timeUnit, units]);
  const allTexts = useMemo(() => {
    const sample = table.rows.slice(0, 400);
    const texts = sample.map((r) => rowTexts(table, r, timeUnit, units));
    return shown.map(({ i }) => texts.map((t) => t[i]));
  }, [table, shown, timeUnit, units]);
  // A group's panel header ("CPU"), with the time unit when all its columns are durations in the panel's unit.
  const groupHeader = useMemo(() => {
    const out = new Map<string, string>();
    for (const g of table.groups) {
      const cols = table.columns.filter((c) => c.group === g.key && !c.panelHidden);
      const durations = cols.length > 0 && cols.every((c) => c.format?.kind === CellKind.CELL_DURATION || c.format?.kind === CellKind.CELL_RATIO) && cols.some((c) => c.format?.kind === CellKind.CELL_DURATION && !c.format.unit);
      const title = g.panelHeader || g.header;
      out.set(g.key, durations && !units ? `${title} (${timeUnit})` : title);
    }
    return out;
  }, [table, timeUnit, units]);

  const nameCol = shown[0];
  const rest = useMemo(() => shown.slice(1), [shown]);
  // Widths dragged by the user (a header's right edge), kept per table across reloads.
  const [widthsVersion, setWidthsVersion] = useState(0);
  // The widths live in localStorage, outside the component's state: widthsVersion counts the writes, so the
  // memo reads them again after a drag.
  // eslint-disable-next-line react-hooks/exhaustive-deps -- widthsVersion is the stored widths' version
  const widths = useMemo(() => readWidths(table.key), [table.key, widthsVersion]);
  const onResize = (key: string, width: number) => {
    writeWidth(table.key, key, width);
    setWidthsVersion((v) => v + 1);
  };
  const columns = useMemo<VColumn<DRow>[]>(
    () =>
      rest.map(({ c, i }, k) => ({
        key: c.key,
        title: units?.[i] ? `${c.header} (${units[i]})` : c.header,
        group: c.group ? (groupHeader.get(c.group) ?? c.group) : undefined,
        width: widths[c.key] ?? columnWidth(c, allTexts[k + 1] ?? [], units?.[i]),
        align: (c.format?.kind ?? CellKind.CELL_TEXT) === CellKind.CELL_TEXT ? "left" : "right",
        text: (r: DRow) => r.texts[i],
        sort: (r: DRow) => rawValue(c, r.row, i),
        firstDir: "desc" as SortDir,
        tooltip: c.description || undefined,
        // The full text on hover: the cell's title (kernel names), else a text cell's own text (it may be cut).
        cellTitle: (r: DRow) => r.row.cells[i]?.title || ((c.format?.kind ?? CellKind.CELL_TEXT) === CellKind.CELL_TEXT ? r.texts[i] || undefined : undefined),
        cellClass: c.format?.kind === CellKind.CELL_RATIO || c.format?.kind === CellKind.CELL_PERCENT ? () => "ratio" : undefined,
      })),
    [rest, units, allTexts, groupHeader, widths],
  );

  // Fitting: the box's width (the table's border and a scroll bar's room left out), the columns hidden to fit
  // (the panel's order, else the last column first).
  const fitHide = useMemo(() => (props.noFit ? undefined : (props.fitHide ?? columns.map((c) => c.key).reverse())), [props.noFit, props.fitHide, columns]);
  const fits = !!fitHide; // the box is measured while the table fits (not again when the columns change)
  const box = useRef<HTMLDivElement>(null);
  const [boxWidth, setBoxWidth] = useState(0);
  useLayoutEffect(() => {
    const node = box.current;
    if (!node || !fits) return;
    const measure = () => setBoxWidth(node.clientWidth);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(node);
    return () => observer.disconnect();
  }, [fits]);
  const [choiceText, setChoiceText] = useUrlState<string>(`dt.${table.key}.cols`, "");
  const choices = useMemo(() => parseChoices(choiceText), [choiceText]);
  const fitted = useMemo(() => {
    const hidden = new Set<string>();
    for (const c of columns) if (choices.get(c.key) === false) hidden.add(c.key);
    const auto = new Set<string>();
    if (fitHide && boxWidth > 0) {
      const room = boxWidth - 2 - 16 - (props.fitNameWidth ?? props.nameWidth ?? 160);
      let used = columns.reduce((a, c) => a + (hidden.has(c.key) ? 0 : c.width), 0);
      for (const key of fitHide) {
        if (used <= room) break;
        const c = columns.find((x) => x.key === key);
        if (!c || hidden.has(key) || choices.get(key) === true) continue;
        hidden.add(key);
        auto.add(key);
        used -= c.width;
      }
    }
    return { columns: columns.filter((c) => !hidden.has(c.key)), hidden, auto };
  }, [columns, choices, boxWidth, fitHide, props.fitNameWidth, props.nameWidth]);
  const choose = (key: string, on: boolean) => {
    const next = new Map(choices);
    next.set(key, on);
    setChoiceText(choicesText(next));
  };

  // Names too long for their cell are drawn shortened where they part from their look-alikes.
  const nameIndex = nameCol?.i;
  const parting = useMemo(() => (nameIndex !== undefined ? partingPoints(table.rows.map((r) => r.cells[nameIndex]?.text ?? "")) : new Map<string, number>()), [table, nameIndex]);
  const nameShort = (r: DRow, room: number) => {
    const text = r.texts[nameCol.i] ?? "";
    return abbreviate(text, parting.get(text) ?? 0, (t) => textWidth(t) <= room);
  };

  const compare = useMemo(() => {
    if (!sort || !nameCol) return null;
    // A sort by a column the table does not have (another grouping's) falls back to the model's order.
    const target = shown.find(({ c }) => c.key === sort.key);
    if (!target) return null;
    return comparator<DRow>((r) => rawValue(target.c, r.row, target.i), sort.dir);
  }, [sort, shown, nameCol]);

  const flat = useMemo(() => flattenRows(roots, expanded, compare, filter), [roots, expanded, compare, filter]);

  if (!nameCol) return <p class="note">{table.empty || "No columns"}</p>;

  const onSort = (key: string) => {
    // The model's order, then descending, then ascending, then the model's order again.
    if (sort?.key !== key) setSort({ key, dir: key === nameCol.c.key ? "asc" : "desc" });
    else if (sort.dir === (key === nameCol.c.key ? "asc" : "desc")) setSort({ key, dir: sort.dir === "asc" ? "desc" : "asc" });
    else setSort(undefined);
  };
  const toggle = (id: string) => {
    const next = new Set(expanded);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setExpanded(next);
  };
  const hasTree = table.tree && roots.some((r) => r.children.length > 0);
  const clickable = props.onLink || props.onRowClick;
  return (
    <div class="dt" ref={box} data-testid={`${testId}-wrap`} data-table={table.key}>
      {props.showTitle && table.title ? <h4 class="dt-title">{table.title}</h4> : null}
      <div class="dt-tools">
        {props.tools}
        {props.noFilter ? null : (
          <input
            class="search dt-filter"
            type="search"
            placeholder={props.filterPlaceholder ?? "Filter rows"}
            value={filter}
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
            data-testid={props.filterTestId ?? `${testId}-filter`}
            aria-label={`Filter ${table.title || table.key}`}
          />
        )}
        {hasTree ? (
          <>
            <button class="btn" onClick={() => setExpanded(branchIds(roots))} data-testid={`${testId}-expand-all`}>
              Expand all
            </button>
            <button class="btn" onClick={() => setExpanded(new Set())} data-testid={`${testId}-collapse-all`}>
              Collapse all
            </button>
          </>
        ) : null}
        {props.fitHide || fitted.auto.size || choices.size ? (
          <details class="dt-cols" data-testid={`${testId}-columns`}>
            <summary class="btn" title="Show or hide columns">{fitted.hidden.size ? `Columns · ${fitted.hidden.size} hidden` : "Columns"}</summary>
            <div class="dt-cols-menu">
              {columns.map((c) => (
                <label class="dt-cols-item" title={c.tooltip}>
                  <input type="checkbox" checked={!fitted.hidden.has(c.key)} data-col={c.key} onChange={(e) => choose(c.key, (e.target as HTMLInputElement).checked)} />
                  {c.group ? `${c.group.replace(/ \(.*\)$/, "")} · ${c.title}` : c.title}
                  {fitted.auto.has(c.key) ? <span class="muted"> (hidden to fit)</span> : null}
                </label>
              ))}
            </div>
          </details>
        ) : null}
        {props.csvHref ? (
          <a class="btn dt-csv" href={props.csvHref} download={`${table.key}.csv`} data-testid={`${testId}-csv`} title="Download this table as CSV (raw values: ns, fractions, counts)">
            CSV
          </a>
        ) : null}
      </div>
      <VirtualTable<DRow>
        rows={flat}
        columns={fitted.columns}
        name={(r) => r.texts[nameCol.i]}
        nameKey={nameCol.c.key}
        nameTitle={nameCol.c.header}
        nameTooltip={nameCol.c.description || undefined}
        nameCellTitle={(r) => r.row.cells[nameCol.i]?.title || r.texts[nameCol.i]}
        nameWidth={widths[nameCol.c.key] ?? (fitted.auto.size ? props.fitNameWidth : undefined) ?? props.nameWidth ?? ((nameCol.c.format?.kind ?? CellKind.CELL_TEXT) === CellKind.CELL_TEXT ? 160 : 70)}
        nameShort={nameShort}
        onResize={onResize}
        sort={sort}
        onSort={onSort}
        onToggle={toggle}
        onRowClick={
          clickable
            ? (r) => {
                props.onRowClick?.(r.row);
                if (r.row.link && props.onLink) props.onLink(r.row.link, r.row);
              }
            : undefined
        }
        rowClass={(r) => `${ROLE_CLASS[r.row.role] ?? ""} ${r.row.link ? "linked" : ""} ${props.rowClass?.(r.row) ?? ""}`}
        maxHeight={props.maxHeight ?? 560}
        testId={testId}
        cellTestId={testId}
        empty={filter ? `Nothing matches “${filter}”` : table.empty || "No rows"}
      />
      {table.note ? (
        <details class="dt-note-box">
          <summary>{table.paddleView ? "Paddle's note on this table" : "About this table"}</summary>
          <pre class="dt-note" data-testid={`${testId}-note`}>
            {table.note}
          </pre>
        </details>
      ) : null}
      {table.notes.map((s) => (
        <p class="note dt-notes" data-testid={`${testId}-notes`}>
          <Sentence sentence={s} timeUnit={timeUnit} />
        </p>
      ))}
    </div>
  );
}
