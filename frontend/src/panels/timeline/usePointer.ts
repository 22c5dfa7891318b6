// The timeline's pointer and keys: drag to pan, Shift+drag to sum a box, click to select (or fold a rank,
// or zoom into a merged block), Ctrl+wheel to zoom, W/A/S/D, 0 and Esc, and the hover readout (a DOM
// node written directly, not a render per mouse move).
import { useEffect, useRef } from "preact/hooks";
import { humanBytes } from "../../display/cells";
import { useEvent } from "../../hooks";
import type { TimelineRefs } from "./core";
import { plotWidth, rowAt, timeAt } from "./core";
import type { Decoded } from "./data";
import { counterAt, fmtDur } from "./data";
import type { View } from "./draw";
import { hitLane } from "./lanes";
import type { Row } from "./layout";
import { LABEL_W, RULER_H } from "./layout";
import type { Viewport } from "./useViewport";

export interface PointerDeps {
  viewport: Viewport;
  redraw: () => void;
  toggleRank: (worker: string) => void;
  select: (worker: string, id: number) => void;
  deselect: () => void;
  sumBox: (x0: number, y0: number, x1: number, y1: number) => void;
  /** whether a box's sums or a slice's details are shown (Esc takes the box first, then the slice) */
  shown: () => { range: boolean; detail: boolean };
  clearRange: () => void;
  /** "rank 5": the hover readout's name of a worker */
  rankName: (worker: string) => string;
}

export interface Pointer {
  onMouseDown: (e: MouseEvent) => void;
  onMouseMove: (e: MouseEvent) => void;
  onMouseLeave: () => void;
}

export function usePointer(t: TimelineRefs, deps: PointerDeps): Pointer {
  const { viewport, redraw } = deps;
  const drag = useRef<{ x: number; y: number; v: View; top: number; box: boolean; moved: boolean } | null>(null);
  const local = (e: MouseEvent) => {
    const r = t.canvas.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };
  /** the slice of `row` under canvas x (its index in the row's lane), -1 none: within a pixel either side */
  const laneAt = (d: Decoded, row: Row | undefined) => (row && row.kind === "lane" ? d.ranks[row.rank]?.lanes.get(`${row.track}:${row.depth}`) : undefined);
  const hitAt = (lane: NonNullable<ReturnType<typeof laneAt>>, x: number) => {
    const v = t.view.current!;
    return hitLane(lane, timeAt(t, x), (2 * (v.end - v.start)) / plotWidth(t));
  };

  const click = (x: number, y: number) => {
    const d = t.data.current;
    if (!d || x < LABEL_W) return;
    const row = rowAt(t, y);
    if (row && row.kind === "rank") {
      deps.toggleRank(row.worker); // a rank's header folds or unfolds it
      return;
    }
    if (!row) return;
    // nothing in a folded track can be selected: a click there is a click on empty space
    const lane = laneAt(d, row);
    if (row.kind === "lane" && !lane) return;
    const i = lane ? hitAt(lane, x) : -1;
    if (i < 0) {
      deps.deselect();
      return;
    }
    if (!lane) return;
    if (lane.count[i] > 1) {
      viewport.focusOn(lane.start[i], lane.start[i] + lane.dur[i]); // a merged block: zoom into it
      return;
    }
    deps.select(row.worker, lane.id[i]);
  };

  const onMouseDown = (e: MouseEvent) => {
    if (e.button !== 0 || !t.view.current) return;
    const p = local(e);
    (e.currentTarget as HTMLElement).focus();
    drag.current = { x: p.x, y: p.y, v: { ...t.view.current }, top: t.scroll.current?.scrollTop ?? 0, box: e.shiftKey, moved: false };
    const move = (ev: MouseEvent) => {
      const g = drag.current;
      if (!g) return;
      const q = local(ev);
      if (Math.abs(q.x - g.x) + Math.abs(q.y - g.y) > 3) g.moved = true;
      if (g.box) {
        const top = t.scroll.current?.scrollTop ?? 0;
        t.marks.current.box = { t0: timeAt(t, Math.max(g.x, LABEL_W)), t1: timeAt(t, Math.max(q.x, LABEL_W)), y0: g.y - RULER_H + top, y1: q.y - RULER_H + top };
        redraw();
      } else if (g.moved) {
        const dt = ((q.x - g.x) / plotWidth(t)) * (g.v.end - g.v.start);
        viewport.setView({ start: g.v.start - dt, end: g.v.end - dt });
        hideHover();
        if (t.scroll.current) t.scroll.current.scrollTop = g.top - (q.y - g.y);
      }
    };
    const up = (ev: MouseEvent) => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      const g = drag.current;
      drag.current = null;
      if (!g) return;
      const q = local(ev);
      if (g.box && g.moved) {
        deps.sumBox(g.x, g.y, q.x, q.y);
      } else if (!g.moved) {
        t.marks.current.box = null;
        click(q.x, q.y);
      }
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  };

  const onWheel = useEvent((e: WheelEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey) {
      e.preventDefault();
      viewport.zoom(Math.pow(1.0018, e.deltaY), local(e).x);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      viewport.pan((e.shiftKey ? e.deltaY : e.deltaX) / 800);
    }
  });
  useEffect(() => {
    const c = t.canvas.current;
    if (!c) return;
    c.addEventListener("wheel", onWheel, { passive: false });
    return () => c.removeEventListener("wheel", onWheel);
  });

  const onKey = useEvent((e: KeyboardEvent) => {
    const k = e.key.toLowerCase();
    if (k === "w") viewport.zoom(0.8);
    else if (k === "s") viewport.zoom(1.25);
    else if (k === "a") viewport.pan(-0.15);
    else if (k === "d") viewport.pan(0.15);
    else if (k === "0") viewport.reset();
    else if (k === "escape") {
      // the box first (and its sums), else the selected slice
      const shown = deps.shown();
      if (t.marks.current.box || shown.range) {
        t.marks.current.box = null;
        deps.clearRange();
        redraw();
      } else if (t.marks.current.selected || shown.detail) deps.deselect();
      else return;
    } else return;
    e.preventDefault();
  });
  // W/A/S/D, 0 and Esc work on the page, not only once the canvas has the focus (never while typing)
  useEffect(() => {
    const keys = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const target = e.target as HTMLElement | null;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
      onKey(e);
    };
    window.addEventListener("keydown", keys);
    return () => window.removeEventListener("keydown", keys);
  }, [onKey]);

  // ------------------------------------------------------------------ the hover readout
  const hideHover = () => {
    if (t.hover.current) t.hover.current.style.display = "none";
  };
  /** The readout at (x, y): a bold first line and a line of details. */
  const showHover = (el: HTMLDivElement, x: number, y: number, name: string, meta: string) => {
    el.replaceChildren();
    const b = document.createElement("b");
    b.textContent = name;
    b.dataset.key = "name";
    const m = document.createElement("span");
    m.dataset.key = "meta";
    m.textContent = meta;
    el.append(b, m);
    el.style.display = "block";
    const w = t.canvas.current?.clientWidth ?? 0;
    el.style.left = `${Math.min(x + 14, Math.max(LABEL_W, w - 360))}px`;
    el.style.top = `${Math.min(y + 16, t.viewH.current - 44)}px`;
  };
  /** the slice under the pointer: its name, duration and start; a counter lane: its value in the pixel */
  const hoverAt = (x: number, y: number) => {
    const el = t.hover.current;
    const d = t.data.current;
    if (!el) return;
    if (!d || !t.view.current || drag.current || x < LABEL_W || y < RULER_H) return hideHover();
    const row = rowAt(t, y);
    if (row && row.kind === "counter") return counterHover(el, d, row, x, y);
    const lane = laneAt(d, row);
    if (!row || !lane) return hideHover();
    const i = hitAt(lane, x);
    if (i < 0) return hideHover();
    const n = lane.count[i];
    const name = n > 1 ? `${n.toLocaleString()} slices (click to zoom in)` : d.names[lane.name[i]] ?? "";
    showHover(el, x, y, name, `${fmtDur(lane.dur[i])} · start ${fmtDur(lane.start[i])} · ${deps.rankName(row.worker)}`);
  };
  // a counter lane: its value in the pixel under the pointer (memory: the highest in it)
  const counterHover = (el: HTMLDivElement, d: Decoded, row: Row, x: number, y: number) => {
    const c = d.ranks[row.rank]?.counters[row.counter ?? 0];
    const at = timeAt(t, x);
    const v = c ? counterAt(c, d.windowStart, d.resolution, at) : null;
    if (!c || v === null) return hideHover();
    const bytes = c.unit === "bytes";
    showHover(el, x, y, `${c.label}: ${bytes ? humanBytes(v) : `${(v * 100).toFixed(1)} %`}`, `at ${fmtDur(at)} · ${deps.rankName(row.worker)}${bytes ? " · highest in this pixel" : " · kernel time in this pixel"}`);
  };

  const onMouseMove = (e: MouseEvent) => {
    const p = local(e);
    t.marks.current.hover = p;
    hoverAt(p.x, p.y);
    redraw();
  };
  const onMouseLeave = () => {
    t.marks.current.hover = null;
    hideHover();
    redraw();
  };
  return { onMouseDown, onMouseMove, onMouseLeave };
}
