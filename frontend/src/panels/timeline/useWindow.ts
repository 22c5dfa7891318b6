// The timeline's data: the decoded window of the ranks shown, asked for after each zoom or pan settles
// (scheduleFetch) when the view needs more (needsFetch). The route answers a page of the ranks asked for
// (at most 32 ranks, 2 MB): the pages are asked one after the other and merged into one window. While
// ranks are still being indexed the route answers 202 with the ranks that are ready; poll.ts's pollEach
// draws each such answer and asks again until every rank is there.
import { useEffect, useRef, useState } from "preact/hooks";
import { useEvent } from "../../hooks";
import { pollEach } from "../../poll";
import type { TimelineRefs } from "./core";
import { plotWidth } from "./core";
import type { Decoded } from "./data";
import { decodeWindow, fetchWindow, mergeWindows, nextRankOffset } from "./data";
import type { View } from "./draw";

/** A zoom or pan is this long settled before the window in view is asked for. */
const FETCH_DELAY_MS = 60;
/** The URL's window (tl) follows the view this long after it settled. */
const HASH_DELAY_MS = 400;
/** A window is asked for at most this many pages of ranks. */
const MAX_PAGES = 64;

type Answer = { kind: "ok"; d: Decoded; pending: boolean } | { kind: "error"; message: string };

export interface TimelineWindow {
  data: Decoded | null;
  error: string;
  setError: (message: string) => void;
  /** ranks whose timeline index is still being built */
  building: number;
  /** the same, read outside a render */
  buildingNow: () => number;
  /** asks for the window in view now (every page of the ranks shown) */
  load: () => void;
  /** asks for the window in view once the view settles, if it needs more detail (`force`: whatever it has) */
  scheduleFetch: (force?: boolean) => void;
  /** forgets the window and its base (another run or span) */
  clear: () => void;
}

export function useWindow(t: TimelineRefs, run: string, span: string, update: (p: { tl: string }) => void, redraw: () => void): TimelineWindow {
  const [data, setData] = useState<Decoded | null>(null);
  const [error, setError] = useState("");
  const [building, setBuildingState] = useState(0);
  const buildingRef = useRef(0);
  const inflight = useRef<AbortController | null>(null);
  const fetchTimer = useRef(0);
  const hashTimer = useRef(0);

  /** The window of view `v` (null: the whole span): its pages of ranks asked one after the other, merged. */
  const fetchPages = async (v: View | null, signal: AbortSignal): Promise<Answer> => {
    const plot = plotWidth(t, 200, 1200);
    let start: number | undefined;
    let end: number | undefined;
    if (v) {
      const w = v.end - v.start;
      start = v.start - w * 0.5;
      end = v.end + w * 0.5;
    }
    let d: Decoded | null = null;
    let pending = false;
    let offset = 0;
    const s = t.stats.current;
    for (let page = 0; page < MAX_PAGES && offset >= 0; page++) {
      s.requests++;
      const got = await fetchWindow({ run, span, workers: t.chosen.current, rankOffset: offset, start, end, px: v ? plot * 2 : plot, base: t.base.current ?? d?.base, q: t.marks.current.query, flows: t.marks.current.flows }, signal);
      if (got.kind === "error") return got;
      s.bytes += got.bytes;
      s.lastBytes = got.bytes;
      s.maxBytes = Math.max(s.maxBytes, got.bytes);
      const part = decodeWindow(got.value, got.bytes);
      d = d ? mergeWindows(d, part) : part;
      pending = pending || got.pending;
      offset = nextRankOffset(got.value);
    }
    return { kind: "ok", d: d!, pending };
  };

  const show = (r: Answer) => {
    if (r.kind === "error") {
      setError(r.message);
      return;
    }
    const d = r.d;
    setError("");
    t.stats.current.items = d.items;
    if (d.ranks.some((x) => x.state === "" && x.tracks.length > 0)) {
      t.base.current = d.base;
      // the whole span until the user moves: it grows as ranks finish loading
      if (!t.view.current || t.autoView.current) t.view.current = { start: d.rangeStart, end: Math.max(d.rangeEnd, d.rangeStart + 1) };
    }
    t.data.current = d;
    setData(d);
    buildingRef.current = d.ranks.filter((x) => x.state === "building").length;
    setBuildingState(buildingRef.current);
    redraw();
  };

  const load = useEvent(() => {
    if (!t.chosen.current.length) return; // the default ranks are not known yet: asked for once they are
    inflight.current?.abort();
    const ctl = new AbortController();
    inflight.current = ctl;
    // asked again (for the view as it is then) while ranks are being indexed, until another load starts
    pollEach(() => fetchPages(t.view.current, ctl.signal), (r) => r.kind === "ok" && r.pending, show, {
      tries: Infinity,
      stale: () => inflight.current !== ctl,
    }).then(() => {
      if (inflight.current === ctl) inflight.current = null;
    });
  });

  const needsFetch = (): boolean => {
    const d = t.data.current;
    const v = t.view.current;
    if (!d || !v) return true;
    if (d.query !== t.marks.current.query) return true;
    if (v.start < d.windowStart || v.end > d.windowEnd) return true;
    return d.resolution > (2 * (v.end - v.start)) / plotWidth(t, 200, 1200); // the data is coarser than half a pixel
  };

  const scheduleFetch = useEvent((force?: boolean) => {
    window.clearTimeout(fetchTimer.current);
    fetchTimer.current = window.setTimeout(() => {
      if (force || needsFetch()) load();
    }, FETCH_DELAY_MS);
    window.clearTimeout(hashTimer.current);
    hashTimer.current = window.setTimeout(() => {
      const v = t.view.current;
      if (v) update({ tl: `${Math.round(v.start)},${Math.round(v.end)}` });
    }, HASH_DELAY_MS);
  });

  const clear = useEvent(() => {
    t.base.current = undefined;
    t.data.current = null;
    setData(null);
  });

  useEffect(
    () => () => {
      inflight.current?.abort();
      inflight.current = null;
      window.clearTimeout(fetchTimer.current);
      window.clearTimeout(hashTimer.current);
    },
    [],
  );

  return { data, error, setError, building, buildingNow: () => buildingRef.current, load, scheduleFetch, clear };
}
