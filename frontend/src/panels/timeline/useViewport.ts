// The timeline's viewport: the time window in view (zoom, pan, fit, a slice brought into view) and the
// canvas's height (the window's, less the details panel while something is selected).
import { useEffect, useState } from "preact/hooks";
import { useEvent } from "../../hooks";
import type { TimelineRefs } from "./core";
import { plotWidth } from "./core";
import type { View } from "./draw";
import { LABEL_W } from "./layout";

/** The canvas fits the window: what the page leaves (above the details panel once there is one), at least MIN_VIEW_H. */
export const MIN_VIEW_H = 260;
/** The details panel under the canvas, there only while something is selected (a slice, a box): this tall,
 * so that it is on screen with the canvas. */
export const DETAILS_H = 230;
/** The narrowest view: 1 µs. */
const MIN_VIEW_NS = 1000;

export interface Viewport {
  /** moves the view (`auto`: it follows the span as ranks load, until the user moves it) */
  setView: (v: View, auto?: boolean) => void;
  /** zooms by `factor` about canvas x `atX` (the middle when not given) */
  zoom: (factor: number, atX?: number) => void;
  /** pans by a fraction of the view */
  pan: (fraction: number) => void;
  /** the whole span */
  reset: () => void;
  /** a view of about six times [start, end], at least 20 µs, centred on it */
  focusOn: (start: number, end: number) => void;
}

/**
 * The view's moves. Each redraws at once and asks for the window in view once the view settles
 * (`moved`); the view is kept within the span (and 5 % either side), at least 1 µs wide.
 */
export function useViewport(t: TimelineRefs, moved: () => void): Viewport {
  const setView = useEvent((v: View, auto?: boolean) => {
    t.autoView.current = auto ?? false;
    const d = t.data.current;
    let { start, end } = v;
    if (end - start < MIN_VIEW_NS) {
      const c = (start + end) / 2;
      start = c - MIN_VIEW_NS / 2;
      end = c + MIN_VIEW_NS / 2;
    }
    if (d) {
      const full = Math.max(1, d.rangeEnd - d.rangeStart);
      const lo = d.rangeStart - full * 0.05;
      const hi = d.rangeEnd + full * 0.05;
      if (end - start > hi - lo) {
        start = lo;
        end = hi;
      }
    }
    t.view.current = { start, end };
    moved();
  });
  const zoom = useEvent((factor: number, atX?: number) => {
    const v = t.view.current;
    if (!v || !t.canvas.current) return;
    const frac = atX === undefined ? 0.5 : Math.min(1, Math.max(0, (atX - LABEL_W) / plotWidth(t)));
    const at = v.start + (v.end - v.start) * frac;
    const w = (v.end - v.start) * factor;
    setView({ start: at - w * frac, end: at - w * frac + w });
  });
  const pan = useEvent((fraction: number) => {
    const v = t.view.current;
    if (!v) return;
    const d = (v.end - v.start) * fraction;
    setView({ start: v.start + d, end: v.end + d });
  });
  const reset = useEvent(() => {
    const d = t.data.current;
    if (d) setView({ start: d.rangeStart, end: Math.max(d.rangeEnd, d.rangeStart + 1) }, true);
  });
  const focusOn = useEvent((start: number, end: number) => {
    const w = Math.max((end - start) * 6, 20_000);
    const c = (start + end) / 2;
    setView({ start: c - w / 2, end: c + w / 2 });
  });
  return { setView, zoom, pan, reset, focusOn };
}

export interface CanvasHeight {
  viewH: number;
  /** the height the canvas is about to take (null before it is in the page) */
  fitH: () => number | null;
}

/**
 * The canvas takes the window's height, less the details panel while something is selected
 * (`hasDetails`); measured after every render (the notices and the rank bar above it come and go) and
 * when the window is resized, set only when it changes.
 */
export function useCanvasHeight(t: TimelineRefs, hasDetails: boolean): CanvasHeight {
  const [viewH, setViewH] = useState(MIN_VIEW_H * 2);
  t.viewH.current = viewH;
  const fitH = (): number | null => {
    const el = t.scroll.current;
    if (!el) return null;
    const box = el.getBoundingClientRect();
    const below = t.below.current?.getBoundingClientRect();
    const gap = below ? Math.max(0, below.top - box.bottom) : 10; // the margin between the two
    const details = hasDetails ? DETAILS_H + gap : 0;
    return Math.max(MIN_VIEW_H, Math.floor(window.innerHeight - (box.top + window.scrollY) - details - 14));
  };
  const fit = useEvent(() => {
    const h = fitH();
    if (h !== null && Math.abs(h - t.viewH.current) > 1) setViewH(h);
  });
  useEffect(() => {
    window.addEventListener("resize", fit);
    return () => window.removeEventListener("resize", fit);
  }, [fit]);
  useEffect(() => fit());
  return { viewH, fitH };
}
