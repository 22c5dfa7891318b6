// A table (or tree table) that renders only the rows in view, so 10,000+ rows scroll smoothly.
// Every cell is text: names are never parsed as HTML.
import { Component } from "preact";
import type { ComponentChildren, JSX } from "preact";
import { useCallback, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { textWidth } from "../display/abbrev";

export type SortDir = "asc" | "desc";
export interface SortState {
  key: string;
  dir: SortDir;
}

export interface Column<R> {
  key: string;
  title: string;
  /** Group header above the column ("CPU (ms)"); neighbouring columns with the same group share it. */
  group?: string;
  width: number;
  align?: "left" | "right";
  text: (row: R) => string;
  /** Value for sorting; undefined sorts last. Columns without it cannot be sorted. */
  sort?: (row: R) => number | string | undefined;
  /** Direction of the first click on the header. */
  firstDir?: SortDir;
  tooltip?: string;
  /** Extra class for the cells (e.g. a bar showing a ratio). */
  cellClass?: (row: R) => string;
  /** Hover text of a cell (the full text where the cell shows a display form). */
  cellTitle?: (row: R) => string | undefined;
}

export interface FlatRow<R> {
  row: R;
  id: string;
  depth: number;
  expandable: boolean;
  expanded: boolean;
  /** The key that onToggle flips in the set of expanded ids. */
  toggleId: string;
}

interface Props<R> {
  rows: FlatRow<R>[];
  columns: Column<R>[];
  /** The first column shows the tree: indentation, expander, name, detail. */
  name: (row: R) => string;
  detail?: (row: R) => string | undefined;
  nameWidth: number;
  nameTitle: string;
  sort?: SortState;
  onSort?: (key: string) => void;
  onToggle?: (id: string) => void;
  onRowClick?: (row: R) => void;
  maxHeight: number;
  testId: string;
  empty?: ComponentChildren;
  rowClass?: (row: R, depth: number) => string;
  /** Rows rendered beyond the view on each side (default 12). */
  overscan?: number;
  /** Key of the first (name) column: its header's data-col and its sort key (default "name"). */
  nameKey?: string;
  /** Whether the name column sorts (default true). */
  nameSortable?: boolean;
  nameTooltip?: string;
  /** Hover text of the name cell (default: the name, then the detail). */
  nameCellTitle?: (row: R) => string | undefined;
  /** data-testid prefix of rows and cells ("<prefix>-row", "<prefix>-cell"); none without it. */
  cellTestId?: string;
  /** A drag of a header's right edge: the column's new width (px). No resize handles without it. */
  onResize?: (key: string, width: number) => void;
  /** The name as drawn in `room` px, when it does not fit (display/abbrev.ts); the cell's text stays the whole name. */
  nameShort?: (row: R, room: number) => string | undefined;
}

/** Follows a drag that starts on a header's resize handle: reports width + the pointer's travel. */
function startResize(e: PointerEvent, key: string, width: number, onResize: (key: string, width: number) => void) {
  e.preventDefault();
  e.stopPropagation();
  const x0 = e.clientX;
  const move = (m: PointerEvent) => onResize(key, Math.max(40, Math.round(width + m.clientX - x0)));
  const up = () => {
    window.removeEventListener("pointermove", move);
    window.removeEventListener("pointerup", up);
  };
  window.addEventListener("pointermove", move);
  window.addEventListener("pointerup", up);
}

export const ROW_HEIGHT = 24;
const OVERSCAN = 6; // rows drawn beyond each edge of the viewport (144 px): smooth scrolling, a bounded DOM

export function VirtualTable<R>(props: Props<R>) {
  const { rows, columns, maxHeight, sort } = props;
  const scroller = useRef<HTMLDivElement>(null);
  // Only the index of the first row in view is state: scrolling within a row re-renders nothing.
  const [top, setTop] = useState(0);
  const [viewport, setViewport] = useState(maxHeight);
  const [clientWidth, setClientWidth] = useState(0);
  const columnsWidth = columns.reduce((a, c) => a + c.width, 0);
  // The name column takes the room the other columns leave (at least props.nameWidth).
  const nameWidth = Math.max(props.nameWidth, clientWidth - columnsWidth);
  const hasGroups = columns.some((c) => c.group);
  const headerHeight = hasGroups ? 2 * ROW_HEIGHT + 2 : ROW_HEIGHT + 4;
  const bodyHeight = rows.length * ROW_HEIGHT;
  const height = Math.min(maxHeight, headerHeight + Math.max(bodyHeight, ROW_HEIGHT * 2) + 2);
  const totalWidth = nameWidth + columnsWidth;

  useLayoutEffect(() => {
    const node = scroller.current;
    if (!node) return;
    const measure = () => setClientWidth(node.clientWidth);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(node);
    return () => observer.disconnect();
  }, []);

  useLayoutEffect(() => {
    const node = scroller.current;
    if (!node) return;
    setViewport(node.clientHeight);
    // Keep the scroll position valid when the rows shrink (search, collapse).
    if (node.scrollTop > bodyHeight) node.scrollTop = Math.max(0, bodyHeight - node.clientHeight);
    setTop(Math.floor(node.scrollTop / ROW_HEIGHT));
  }, [height, bodyHeight]);

  const onScroll = useCallback(() => {
    const node = scroller.current;
    if (node) setTop(Math.floor(node.scrollTop / ROW_HEIGHT));
  }, []);

  // A fixed number of row slots; row i always lands in slot i % slots. While scrolling, a slot's DOM
  // nodes are kept and only their text changes (no nodes created or moved), the cheapest update there is.
  const overscan = props.overscan ?? OVERSCAN;
  const slots = Math.ceil(viewport / ROW_HEIGHT) + 2 * overscan + 1;
  const first = Math.max(0, top - overscan);
  const last = Math.min(rows.length, first + slots);

  const groups = useMemo(() => {
    const out: { title: string; width: number }[] = [];
    for (const c of columns) {
      const title = c.group ?? "";
      const prev = out[out.length - 1];
      if (prev && prev.title === title) prev.width += c.width;
      else out.push({ title, width: c.width });
    }
    return out;
  }, [columns]);

  const headerCell = (key: string, title: string, width: number, align: string, sortable: boolean, tooltip?: string) => {
    const active = sort?.key === key;
    return (
      <div
        class={`vt-th ${align} ${sortable ? "sortable" : ""} ${active ? "sorted" : ""}`}
        style={{ width: `${width}px` }}
        title={tooltip ?? (sortable ? `Sort by ${title}` : undefined)}
        data-col={key}
        role="columnheader"
        aria-sort={active ? (sort!.dir === "asc" ? "ascending" : "descending") : undefined}
        onClick={sortable && props.onSort ? () => props.onSort!(key) : undefined}
      >
        <span class="vt-th-text">{title}</span>
        {active ? <span class="vt-sort">{sort!.dir === "asc" ? "▲" : "▼"}</span> : null}
        {props.onResize ? (
          <span
            class="vt-resize"
            title={`Drag to resize ${title}`}
            data-resize={key}
            onPointerDown={(e) => startResize(e, key, width, props.onResize!)}
            onClick={(e) => e.stopPropagation()}
          />
        ) : null}
      </div>
    );
  };

  const visible: (JSX.Element | null)[] = new Array(Math.min(slots, rows.length)).fill(null);
  for (let i = first; i < last; i++) {
    const r = rows[i];
    visible[i % slots] = (
      <Row
        key={i % slots}
        flat={r}
        index={i}
        columns={columns}
        nameWidth={nameWidth}
        name={props.name}
        detail={props.detail}
        rowClass={props.rowClass}
        onToggle={props.onToggle}
        onRowClick={props.onRowClick}
        nameKey={props.nameKey}
        nameCellTitle={props.nameCellTitle}
        cellTestId={props.cellTestId}
        nameShort={props.nameShort}
      />
    );
  }
  return (
    <div
      class="vt"
      ref={scroller}
      onScroll={onScroll}
      style={{ height: `${height}px` }}
      data-testid={props.testId}
      data-rows={rows.length}
      role="table"
    >
      <div class="vt-inner" style={{ width: `${totalWidth}px`, height: `${headerHeight + bodyHeight}px` }}>
        <div class="vt-head" style={{ width: `${totalWidth}px` }}>
          {hasGroups ? (
            <div class="vt-hrow groups">
              <div class="vt-th left group" style={{ width: `${nameWidth}px` }} />
              {groups.map((g) => (
                <div class="vt-th group" style={{ width: `${g.width}px` }} title={g.title || undefined}>
                  {fitGroupTitle(g.title, g.width)}
                </div>
              ))}
            </div>
          ) : null}
          <div class="vt-hrow" role="row">
            {headerCell(props.nameKey ?? "name", props.nameTitle, nameWidth, "left", props.nameSortable ?? true, props.nameTooltip)}
            {columns.map((c) => headerCell(c.key, c.title, c.width, c.align ?? "right", !!c.sort, c.tooltip))}
          </div>
        </div>
        {rows.length === 0 ? <div class="vt-empty">{props.empty ?? "No rows"}</div> : null}
        <div class="vt-body" style={{ top: `${headerHeight}px` }}>
          {visible}
        </div>
      </div>
    </div>
  );
}

interface RowProps<R> {
  flat: FlatRow<R>;
  index: number;
  columns: Column<R>[];
  nameWidth: number;
  name: (row: R) => string;
  detail?: (row: R) => string | undefined;
  rowClass?: (row: R, depth: number) => string;
  onToggle?: (id: string) => void;
  onRowClick?: (row: R) => void;
  nameKey?: string;
  nameCellTitle?: (row: R) => string | undefined;
  cellTestId?: string;
  nameShort?: (row: R, room: number) => string | undefined;
}

/** The name cell's own room besides its text: left padding 6 (and 16 a level), the toggle 18, the gap 2,
 * the right padding 8, and 4 to spare (the canvas that measures has no tabular figures). */
const NAME_CHROME = 6 + 18 + 2 + 8 + 4;

/**
 * One row, placed at its index. It re-renders only when its row, index, columns or width change: rows
 * that stay in view while the table scrolls are not touched.
 */
class Row<R> extends Component<RowProps<R>> {
  shouldComponentUpdate(next: RowProps<R>): boolean {
    const p = this.props;
    return next.flat !== p.flat || next.index !== p.index || next.columns !== p.columns || next.nameWidth !== p.nameWidth;
  }

  render() {
    const { flat: r, index, columns, nameWidth, onToggle, onRowClick } = this.props;
    const name = this.props.name(r.row);
    const detail = this.props.detail?.(r.row);
    const tid = this.props.cellTestId;
    const nameTitle = this.props.nameCellTitle ? this.props.nameCellTitle(r.row) : detail ? `${name}\n${detail}` : name;
    return (
      <div
        class={`vt-row depth-${Math.min(r.depth, 3)} ${index % 2 ? "odd" : ""} ${this.props.rowClass?.(r.row, r.depth) ?? ""} ${onRowClick ? "clickable" : ""}`}
        style={{ transform: `translateY(${index * ROW_HEIGHT}px)` }}
        data-id={r.id}
        data-index={index}
        data-depth={r.depth}
        role="row"
        data-testid={tid ? `${tid}-row` : undefined}
        onClick={onRowClick ? () => onRowClick(r.row) : undefined}
      >
        <div
          class="vt-td left name"
          style={{ width: `${nameWidth}px`, paddingLeft: `${6 + r.depth * 16}px` }}
          title={nameTitle}
          data-col={this.props.nameKey}
          data-testid={tid ? `${tid}-cell` : undefined}
        >
          {r.expandable ? (
            <button
              class="vt-toggle"
              aria-label={r.expanded ? "Collapse" : "Expand"}
              aria-expanded={r.expanded}
              onClick={(e) => {
                e.stopPropagation();
                onToggle?.(r.toggleId);
              }}
            >
              {/* the glyph is CSS (::before), so a cell's text is its name only */}
            </button>
          ) : (
            <span class="vt-toggle-space" />
          )}
          {(() => {
            // a name too long for its cell is drawn shortened (::before, from data-short); its text stays whole
            const short = !detail && this.props.nameShort ? this.props.nameShort(r.row, nameWidth - NAME_CHROME - r.depth * 16) : undefined;
            return short !== undefined && short !== name ? (
              <span class="vt-name short" data-short={short}>
                {name}
              </span>
            ) : (
              <span class="vt-name">{name}</span>
            );
          })()}
          {detail ? <span class="vt-detail">{detail}</span> : null}
        </div>
        {columns.map((c) => (
          <div
            class={`vt-td ${c.align ?? "right"} ${c.cellClass?.(r.row) ?? ""}`}
            style={{ width: `${c.width}px` }}
            data-col={c.key}
            title={c.cellTitle?.(r.row)}
            data-testid={tid ? `${tid}-cell` : undefined}
          >
            {c.text(r.row)}
          </div>
        ))}
      </div>
    );
  }
}

// ------------------------------------------------------------------ sorting helpers

export function stableSort<T>(items: T[], compare: (a: T, b: T) => number): T[] {
  return items
    .map((v, i) => [v, i] as const)
    .sort((a, b) => compare(a[0], b[0]) || a[1] - b[1])
    .map((p) => p[0]);
}

/** Text order that does not depend on the browser's locale: case-insensitive, then by code unit. */
export function compareText(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  if (x !== y) return x < y ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A comparator from a column's sort value: undefined last, numbers numerically, text by compareText. */
export function comparator<R>(value: (r: R) => number | string | undefined, dir: SortDir): (a: R, b: R) => number {
  const sign = dir === "asc" ? 1 : -1;
  return (a, b) => {
    const x = value(a);
    const y = value(b);
    if (x === undefined && y === undefined) return 0;
    if (x === undefined) return 1;
    if (y === undefined) return -1;
    if (typeof x === "number" && typeof y === "number") return sign * (x - y);
    return sign * compareText(String(x), String(y));
  };
}

/** A column group's title within its width (columns of the group hidden to fit the box leave it
 * narrower than its words): whole words from the start and "…", or nothing; the full title on hover. */
function fitGroupTitle(title: string, width: number): string {
  const room = width - 17; // 8 px padding each side and the 1 px border
  const fits = (t: string) => textWidth(t) * 1.05 <= room;
  if (!title || fits(title)) return title;
  const words = title.split(" ");
  for (let n = words.length - 1; n >= 1; n--) {
    const t = words.slice(0, n).join(" ") + "…";
    if (fits(t)) return t;
  }
  return "";
}
