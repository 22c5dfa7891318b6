// What the timeline's hooks share: the canvas and its scroll box, the view, the decoded window, the
// layout and the marks drawn over it. They live in refs, not in state: a zoom, a pan or a mouse move
// redraws the canvas without a render. Timeline.tsx makes them once (useTimelineRefs) and hands them to
// the hooks: useWindow (the data), useViewport (the view and the canvas's height), useFolds, useSelection
// (a slice, a collective's instance, a box, the search) and usePointer (mouse, wheel, keys, hover).
import { useRef } from "preact/hooks";
import type { Decoded } from "./data";
import type { FoldedSummary, Marks, View } from "./draw";
import type { Layout } from "./layout";
import { LABEL_W, RULER_H } from "./layout";

/** A ref the hooks write into (preact's MutableRef, which it does not export). */
export interface Box<T> {
  current: T;
}

/** What the page exposes for tests (window.__tbppTimeline): requests, bytes and what the last frame drew. */
export interface Stats {
  frames: number;
  drawMs: number;
  requests: number;
  bytes: number;
  lastBytes: number;
  /** The largest window response so far, bytes. */
  maxBytes: number;
  firstDrawAt: number;
  items: number;
  /** launch → kernel arrows drawn in the last frame (the selected slice's) */
  arrows: number;
  /** flows drawn in the last frame between the members of the selected collective's instance */
  memberFlows: number;
  /** the ruler's labels in the last frame */
  ruler: string[];
  /** the folded ranks' summaries drawn in the last frame (draw.ts FoldedSummary) */
  folded: FoldedSummary[];
}

export interface TimelineRefs {
  canvas: Box<HTMLCanvasElement | null>;
  scroll: Box<HTMLDivElement | null>;
  /** the fold buttons over the label column */
  foldBox: Box<HTMLDivElement | null>;
  /** the hover readout, written directly (not a render per mouse move) */
  hover: Box<HTMLDivElement | null>;
  /** the details panel under the canvas, while something is selected */
  below: Box<HTMLDivElement | null>;
  /** the time window in view, ns from the run's base; null before the first window */
  view: Box<View | null>;
  /** The view is the whole span until the user (or a link) moves it: it grows as more ranks are ready. */
  autoView: Box<boolean>;
  data: Box<Decoded | null>;
  lay: Box<Layout>;
  marks: Box<Marks>;
  /** the run's base (unix ns, a decimal string) the first window fixed: every later request keeps it */
  base: Box<string | undefined>;
  /** the ranks shown */
  chosen: Box<string[]>;
  /** the canvas's height, px */
  viewH: Box<number>;
  /** A row to bring into the canvas once the layout has it: a selected slice's lane, or a rank's header. */
  scrollTo: Box<{ worker: string; track: number; depth: number } | null>;
  /** The rank whose header was brought into view when the timeline opened ("run|worker"). */
  openedOn: Box<string>;
  stats: Box<Stats>;
}

/** The view of the URL's `tl` ("start,end"), or null (the whole span). */
export function parseWindow(tl: string): View | null {
  const [a, b] = tl.split(",").map(Number);
  return Number.isFinite(a) && Number.isFinite(b) && b > a ? { start: a, end: b } : null;
}

/** The refs, made once: one object for the timeline's life. */
export function useTimelineRefs(tl: string, tlq: string): TimelineRefs {
  const refs = useRef<TimelineRefs | null>(null);
  if (!refs.current) {
    const view = parseWindow(tl);
    const box = <T,>(current: T): Box<T> => ({ current });
    refs.current = {
      canvas: box<HTMLCanvasElement | null>(null),
      scroll: box<HTMLDivElement | null>(null),
      foldBox: box<HTMLDivElement | null>(null),
      hover: box<HTMLDivElement | null>(null),
      below: box<HTMLDivElement | null>(null),
      view: box<View | null>(view),
      autoView: box(view === null),
      data: box<Decoded | null>(null),
      lay: box<Layout>({ rows: [], height: 0, key: "" }),
      marks: box<Marks>({ selected: null, box: null, hover: null, flows: false, query: tlq }),
      base: box<string | undefined>(undefined),
      chosen: box<string[]>([]),
      viewH: box(0),
      scrollTo: box<{ worker: string; track: number; depth: number } | null>(null),
      openedOn: box(""),
      stats: box<Stats>({ frames: 0, drawMs: 0, requests: 0, bytes: 0, lastBytes: 0, maxBytes: 0, firstDrawAt: 0, items: 0, arrows: 0, memberFlows: 0, ruler: [], folded: [] }),
    };
  }
  return refs.current;
}

/** The plot's width (the canvas less the label column), px, at least `least`. */
export function plotWidth(t: TimelineRefs, least = 1, fallback = 1): number {
  return Math.max(least, (t.canvas.current?.clientWidth ?? fallback) - LABEL_W);
}

/** The time under canvas x (px from the canvas's left). */
export function timeAt(t: TimelineRefs, x: number): number {
  const v = t.view.current!;
  return v.start + ((x - LABEL_W) / plotWidth(t)) * (v.end - v.start);
}

/** The layout's row under canvas y (px from the canvas's top), scrolled. */
export function rowAt(t: TimelineRefs, y: number) {
  const cy = y - RULER_H + (t.scroll.current?.scrollTop ?? 0);
  return t.lay.current.rows.find((r) => cy >= r.y && cy < r.y + r.h);
}
