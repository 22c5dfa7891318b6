// The timeline view: every rank of a run on one canvas, its level of detail chosen by the server.
//
// The page keeps one decoded window (a little wider than the view, at ~2 samples per pixel) and
// draws it at whatever zoom the view is at; after each zoom or pan settles it asks for the window
// that is in view. Nothing here is a DOM node per slice.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Picker } from "../../components/Picker";
import type { PickItem } from "../../components/Picker";
import { Notice } from "../../components/ui";
import type { WorkerEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { workerLabel } from "../../labels";
import type { TimelineEvent, TimelineInstance, TimelineRange, TimelineSearch } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { isDark, onDarkChange } from "../../host";
import type { Decoded } from "./data";
import { humanBytes } from "../../display/cells";
import { checkWindowTrace, counterAt, decodeWindow, fetchCompact, fetchEvent, fetchInstance, fetchRange, fetchSearch, fetchWindow, fmtDur, maybeCommunication, mergeWindows, nextRankOffset, windowTraceUrl } from "./data";
import type { FoldedSummary, Folds, Layout, Marks, MemberMark, Row, View } from "./draw";
import "./timeline.css";
import { counterScale, drawTimeline, fitCanvas, hitLane, LABEL_W, layout, parseFolds, RULER_H, writeFolds } from "./draw";
import { CriticalBar, critView, drawCritical, useCriticalPath } from "./critical";
import { pollOnce, RETRY_PENDING_MS } from "../../poll";
import { useEvent } from "../../hooks";

export interface TimelineState {
  /** "start,end" ns relative to the run's base (the earliest origin of its ranks). */
  tl: string;
  /** Search text (highlighted); with tlfind "1" the first occurrence is opened. */
  tlq: string;
  /** Selected slice: "worker:id". */
  tlsel: string;
  tlfind: string;
  /** Folded ranks and tracks: "worker:*" and "worker:track", comma-separated (see parseFolds). */
  tlfold: string;
  /** The ranks shown: worker names, URI-encoded, comma-separated; "" = the default set. */
  tlranks: string;
  /** The critical path drawn: "" off, "<step>" or "<step>:<segment>" (critical.tsx). */
  tlcp?: string;
  /** "compact", "detail" or "" (the default): Compact.tsx. */
  tlmode?: string;
}

interface Props {
  run: string;
  span: string;
  worker: string;
  /** Every worker of the run, in rank order. */
  workers: WorkerEntry[];
  labels: Map<string, string>;
  state: TimelineState;
  update: (patch: Partial<TimelineState> & { view?: string; worker?: string; find?: string }) => void;
  traceHref?: string;
  /** More buttons at the start of the toolbar's tools (the switch to the compact view). */
  tools?: ComponentChildren;
}

/** The canvas fits the window: what the page leaves (above the details panel once there is one), at least MIN_VIEW_H. */
const MIN_VIEW_H = 260;
/** The details panel under the canvas, there only while something is selected (a slice, a box): this tall,
 * so that it is on screen with the canvas. */
export const DETAILS_H = 230;
/** Ranks per page, and the most that can be chosen at once: a window never asks for every rank. */
export const RANK_PAGE = 16;
export const MAX_RANKS = 32;

export function parseRankSet(text: string): string[] {
  const out: string[] = [];
  for (const part of text.split(",")) {
    if (!part) continue;
    try {
      out.push(decodeURIComponent(part));
    } catch {
      /* a malformed escape: skip it */
    }
  }
  return out;
}

export function writeRankSet(workers: string[]): string {
  return workers.map(encodeURIComponent).join(",");
}

export interface RankDefault {
  workers: string[];
  /** Why these ranks, in words (the server's, for a run of more than RANK_PAGE ranks). */
  why: string;
  /** The rank the timeline opens on: the straggler, or the worker named. */
  focus?: string;
}

/**
 * The ranks shown when none are chosen: all of them up to RANK_PAGE; else those the server's order gives
 * a role (route timeline_compact with order_only=1, timeline/compact.py order_of: the straggler(s) the
 * verdict names and the first one's role peers, nearest rank numbers first; with a worker named, any but
 * the run's first rank, which the tab selects when none is named, that worker and its role peers in their
 * place), at most RANK_PAGE, in rank order, with the server's sentence saying why; the order's first
 * RANK_PAGE when none has a role (rank order: no straggler). null until the server answers; the page of
 * RANK_PAGE ranks that holds the current rank when it cannot.
 */
export function useDefaultRanks(run: string, span: string, all: string[], current: string): RankDefault | null {
  const many = all.length > RANK_PAGE;
  const ci = all.indexOf(current);
  const focus = many && ci > 0 ? current : "";
  const key = `${run}|${span}|${focus}|${all.length}`;
  const [got, setGot] = useState<{ key: string; value: RankDefault } | null>(null);
  const every = useMemo(() => ({ workers: all, why: "every rank" }), [all]);
  const allRef = useRef(all);
  allRef.current = all;
  useEffect(() => {
    if (!many) return;
    let alive = true;
    const load = () => fetchCompact({ run, span, bins: 1, offset: 0, limit: 0, focus: focus || undefined });
    pollOnce(load, (g) => g.kind === "ok" && g.pending && !g.value.order.length, { stale: () => !alive }).then((g) => {
      if (!alive) return;
      const names = allRef.current;
      const index = new Map(names.map((w, i) => [w, i]));
      if (g && g.kind === "ok" && g.value.order.length) {
        const order = g.value.order.filter((o) => index.has(o.worker));
        const roled = order.filter((o) => o.role); // the straggler(s) or the worker named, and the role peers
        const workers = (roled.length ? roled : order).slice(0, RANK_PAGE).map((o) => o.worker).sort((x, y) => index.get(x)! - index.get(y)!);
        setGot({ key, value: { workers, why: g.value.why, focus: order[0]?.role ? order[0].worker : undefined } });
      } else {
        const start = Math.floor(Math.max(0, names.indexOf(current)) / RANK_PAGE) * RANK_PAGE;
        const reason = g && g.kind === "error" ? g.message : "the server's order of the ranks is not known yet";
        setGot({ key, value: { workers: names.slice(start, start + RANK_PAGE), why: `the page of the current rank (${reason})` } });
      }
    });
    return () => {
      alive = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `current` matters through `focus` (in `key`); the fallback page reads it when the answer comes
  }, [key, many]);
  if (!many) return every;
  return got && got.key === key ? got.value : null;
}

const FETCH_DELAY_MS = 60;
const RETRY_MS = RETRY_PENDING_MS;

interface Stats {
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

declare global {
  interface Window {
    __tbppTimeline?: Stats & {
      view: () => View;
      data: () => Decoded | null;
      rows: () => Layout["rows"];
      folds: () => string;
      workers: () => string[];
      selected: () => Marks["selected"];
      box: () => Marks["box"];
      scrollTop: () => number;
      viewH: () => number;
      instance: () => TimelineInstance | null;
    };
  }
}

function parseWindow(tl: string): View | null {
  const [a, b] = tl.split(",").map(Number);
  return Number.isFinite(a) && Number.isFinite(b) && b > a ? { start: a, end: b } : null;
}

export function Timeline(props: Props) {
  const { run, span } = props;
  const all = useMemo(() => props.workers.map((w) => w.worker), [props.workers]);
  const explicit = useMemo(() => {
    const known = new Set(all);
    return parseRankSet(props.state.tlranks ?? "").filter((w) => known.has(w)).slice(0, MAX_RANKS);
  }, [props.state.tlranks, all]);
  // the server's default set (none until it answers: no window is asked for before)
  const fallback = useDefaultRanks(run, span, all, props.worker);
  const chosen = useMemo(() => (explicit.length ? explicit : (fallback?.workers ?? [])), [explicit, fallback]);
  // the rank whose header the timeline opens on: the default set's focus (the straggler when no worker
  // is named), else the current rank
  const openTarget = !explicit.length && fallback?.focus && chosen.includes(fallback.focus) ? fallback.focus : props.worker;
  const openKey = `${run}|${openTarget}`;
  const chosenKey = chosen.join("\u0000");
  const chosenRef = useRef(chosen);
  chosenRef.current = chosen;
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const scrollRef = useRef<HTMLDivElement>(null);
  const foldBoxRef = useRef<HTMLDivElement>(null);
  const [data, setData] = useState<Decoded | null>(null);
  const [error, setError] = useState("");
  const [downloadError, setDownloadError] = useState(""); // a refused "Window JSON", until the view changes
  const [building, setBuildingState] = useState(0);
  const buildingRef = useRef(0);
  const setBuilding = (n: number) => {
    buildingRef.current = n;
    setBuildingState(n);
  };
  const [flows, setFlows] = useState(false);
  // the critical path across ranks (critical.tsx): its segments drawn over the ranks, a jump to them
  const crit = useCriticalPath(run, span, props.state.tlcp ?? "", props.workers);
  const critRef = useRef(crit);
  critRef.current = crit;
  const [query, setQuery] = useState(props.state.tlq);
  const [activeQuery, setActiveQuery] = useState(props.state.tlq);
  const [found, setFound] = useState<TimelineSearch | null>(null);
  const [matchAt, setMatchAt] = useState(0);
  const [detail, setDetail] = useState<TimelineEvent | null>(null);
  const [range, setRange] = useState<TimelineRange | null>(null);
  // the selected collective's matched instance on its member ranks (timeline_instance)
  const [instance, setInstanceState] = useState<TimelineInstance | null>(null);
  const instanceRef = useRef<TimelineInstance | null>(null);
  const [dark, setDark] = useState(isDark());
  useEffect(() => onDarkChange(setDark), []);
  const view = useRef<View | null>(parseWindow(props.state.tl));
  const dataRef = useRef<Decoded | null>(null);
  const marks = useRef<Marks>({ selected: null, box: null, hover: null, flows: false, query: props.state.tlq });
  const base = useRef<string | undefined>(undefined);
  const frame = useRef(0);
  const fetchTimer = useRef(0);
  const hashTimer = useRef(0);
  const inflight = useRef<AbortController | null>(null);
  const stats = useRef<Stats>({ frames: 0, drawMs: 0, requests: 0, bytes: 0, lastBytes: 0, maxBytes: 0, firstDrawAt: 0, items: 0, arrows: 0, memberFlows: 0, ruler: [], folded: [] });
  /** The view is the whole span until the user (or a link) moves it: it grows as more ranks are ready. */
  const autoView = useRef(view.current === null);
  /** A row to bring into the canvas once the layout has it: a selected slice's lane, or a rank's header. */
  const scrollTo = useRef<{ worker: string; track: number; depth: number } | null>(null);
  /** The rank whose header was brought into view when the timeline opened ("run|worker"). */
  const openedOn = useRef("");
  const hoverRef = useRef<HTMLDivElement>(null);
  const belowRef = useRef<HTMLDivElement>(null);
  const [viewH, setViewH] = useState(MIN_VIEW_H * 2);
  const viewHRef = useRef(viewH);
  viewHRef.current = viewH;
  const foldText = props.state.tlfold ?? "";
  const folds = useMemo<Folds>(() => parseFolds(foldText), [foldText]);
  const foldsRef = useRef(folds);
  foldsRef.current = folds;
  // laid out again when the ranks, their track counts or states change, not for every new window of the same ranks
  const dataShape = data && data.ranks.map((r) => r.worker + r.tracks.length + r.state).join(",");
  // eslint-disable-next-line react-hooks/exhaustive-deps -- `data` is read for its shape (dataShape) only: a new window of the same ranks keeps the layout
  const lay = useMemo<Layout>(() => layout(data, folds, props.labels), [dataShape, folds, props.labels]);
  const layRef = useRef(lay);
  layRef.current = lay;
  dataRef.current = data;
  marks.current.flows = flows;
  marks.current.query = activeQuery;
  marks.current.dark = dark;

  // ------------------------------------------------------------------ drawing
  const draw = () => {
    frame.current = 0;
    const canvas = canvasRef.current;
    const v = view.current;
    if (!canvas || !v) return;
    const t0 = performance.now();
    const fitted = fitCanvas(canvas);
    if (!fitted) return;
    const { ctx, w, h } = fitted;
    const top = scrollRef.current?.scrollTop ?? 0;
    const drawn = drawTimeline(ctx, w, h, top, dataRef.current, layRef.current, v, marks.current);
    drawCriticalPath(ctx, w, h, top, v);
    // the fold buttons scroll with the tracks; none of them shows (or takes a click) over the ruler
    if (foldBoxRef.current) foldBoxRef.current.style.clipPath = `inset(${top + RULER_H}px 0 0 0)`;
    const s = stats.current;
    s.frames++;
    s.arrows = drawn.arrows;
    s.memberFlows = drawn.memberFlows;
    canvas.dataset.memberFlows = String(drawn.memberFlows);
    s.ruler = drawn.ruler;
    s.folded = drawn.folded;
    s.drawMs = performance.now() - t0;
    if (!s.firstDrawAt && dataRef.current && dataRef.current.items > 0) s.firstDrawAt = performance.now();
  };
  const drawCriticalPath = (ctx: CanvasRenderingContext2D, w: number, h: number, top: number, v: View) => {
    const c = critRef.current;
    const d = dataRef.current;
    const segs = c.on && d ? c.segments(d.base) : [];
    const got = segs.length ? drawCritical(ctx, w, h, top, layRef.current, v, segs, c.focus) : { drawn: 0, workers: [] };
    window.__tbppCritical = { status: c.status, step: c.step, steps: c.steps, segments: segs, drawn: got.drawn, drawnWorkers: got.workers };
  };
  const redraw = useEvent(() => {
    if (!frame.current) frame.current = requestAnimationFrame(draw);
  });
  // the canvas resized: drawn again, and the window asked for again when it needs more detail
  const onResize = useEvent(() => {
    redraw();
    scheduleFetch();
  });

  useEffect(() => {
    window.__tbppTimeline = Object.assign(stats.current, {
      view: () => view.current!,
      data: () => dataRef.current,
      rows: () => layRef.current.rows,
      folds: () => writeFolds(foldsRef.current),
      workers: () => chosenRef.current,
      selected: () => marks.current.selected,
      box: () => marks.current.box,
      scrollTop: () => scrollRef.current?.scrollTop ?? 0,
      viewH: () => viewHRef.current,
      instance: () => instanceRef.current,
    });
    const ro = new ResizeObserver(onResize);
    if (canvasRef.current) ro.observe(canvasRef.current);
    // the canvas takes the window's height (above the details panel, when there is one)
    const fit = fitRef.current;
    fit();
    window.addEventListener("resize", fit);
    // W/A/S/D, 0 and Esc work on the page, not only once the canvas has the focus (never while typing)
    const keys = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      keyRef.current(e);
    };
    window.addEventListener("keydown", keys);
    return () => {
      window.removeEventListener("resize", fit);
      window.removeEventListener("keydown", keys);
      ro.disconnect();
      inflight.current?.abort();
      window.clearTimeout(fetchTimer.current);
      window.clearTimeout(hashTimer.current);
      if (frame.current) cancelAnimationFrame(frame.current);
    };
  }, [onResize]);

  // The canvas takes the window's height, less the details panel while something is selected; measured
  // after every render (the notices and the rank bar above it come and go), set only when it changes.
  const hasDetails = !!(detail || instance || range);
  const fitH = (): number | null => {
    const el = scrollRef.current;
    if (!el) return null;
    const box = el.getBoundingClientRect();
    const below = belowRef.current?.getBoundingClientRect();
    const gap = below ? Math.max(0, below.top - box.bottom) : 10; // the margin between the two
    const details = hasDetails ? DETAILS_H + gap : 0;
    return Math.max(MIN_VIEW_H, Math.floor(window.innerHeight - (box.top + window.scrollY) - details - 14));
  };
  const fitRef = useRef(() => undefined as void);
  fitRef.current = () => {
    const h = fitH();
    if (h !== null && Math.abs(h - viewHRef.current) > 1) setViewH(h);
  };
  useEffect(() => fitRef.current());

  // ------------------------------------------------------------------ fetching
  const load = async (v: View | null) => {
    if (!chosenRef.current.length) return; // the default ranks are not known yet: asked for once they are
    inflight.current?.abort();
    const ctl = new AbortController();
    inflight.current = ctl;
    const canvas = canvasRef.current;
    const plot = Math.max(200, (canvas?.clientWidth ?? 1200) - LABEL_W);
    let start: number | undefined;
    let end: number | undefined;
    if (v) {
      const w = v.end - v.start;
      start = v.start - w * 0.5;
      end = v.end + w * 0.5;
    }
    // The route answers a page of the ranks asked for (at most 32 ranks, 2 MB): the pages are asked
    // one after the other and merged into one window.
    let d: Decoded | null = null;
    let pending = false;
    let offset = 0;
    for (let page = 0; page < 64; page++) {
      stats.current.requests++;
      let got;
      try {
        got = await fetchWindow({ run, span, workers: chosenRef.current, rankOffset: offset, start, end, px: v ? plot * 2 : plot, base: base.current ?? d?.base, q: marks.current.query, flows: marks.current.flows }, ctl.signal);
      } catch {
        return; // aborted
      }
      if (inflight.current !== ctl) return;
      if (got.kind === "error") {
        inflight.current = null;
        setError(got.message);
        return;
      }
      stats.current.bytes += got.bytes;
      stats.current.lastBytes = got.bytes;
      stats.current.maxBytes = Math.max(stats.current.maxBytes, got.bytes);
      const part = decodeWindow(got.value, got.bytes);
      d = d ? mergeWindows(d, part) : part;
      pending = pending || got.pending;
      offset = nextRankOffset(got.value);
      if (offset < 0) break;
    }
    inflight.current = null;
    if (!d) return;
    setError("");
    stats.current.items = d.items;
    const anyReady = d.ranks.some((r) => r.state === "" && r.tracks.length > 0);
    if (anyReady) {
      base.current = d.base;
      // the whole span until the user moves: it grows as ranks finish loading
      if (!view.current || autoView.current) view.current = { start: d.rangeStart, end: Math.max(d.rangeEnd, d.rangeStart + 1) };
    }
    dataRef.current = d;
    setData(d);
    const waiting = d.ranks.filter((r) => r.state === "building").length;
    setBuilding(waiting);
    if (pending) {
      fetchTimer.current = window.setTimeout(() => load(view.current), RETRY_MS);
    }
    redraw();
  };

  const needsFetch = (): boolean => {
    const d = dataRef.current;
    const v = view.current;
    if (!d || !v) return true;
    if (d.query !== marks.current.query) return true;
    if (v.start < d.windowStart || v.end > d.windowEnd) return true;
    const plot = Math.max(200, (canvasRef.current?.clientWidth ?? 1200) - LABEL_W);
    return d.resolution > (2 * (v.end - v.start)) / plot; // the data is coarser than half a pixel
  };

  const scheduleFetch = useEvent((force = false) => {
    window.clearTimeout(fetchTimer.current);
    fetchTimer.current = window.setTimeout(() => {
      if (force || needsFetch()) load(view.current);
    }, FETCH_DELAY_MS);
    window.clearTimeout(hashTimer.current);
    hashTimer.current = window.setTimeout(() => {
      const v = view.current;
      if (v) props.update({ tl: `${Math.round(v.start)},${Math.round(v.end)}` });
    }, 400);
  });

  // First load, and again when the run or span changes (the URL's window and search as they are then).
  const firstLoad = useEvent(() => {
    base.current = undefined;
    dataRef.current = null;
    setData(null);
    setDetail(null);
    setRange(null);
    view.current = parseWindow(props.state.tl);
    autoView.current = view.current === null;
    openedOn.current = "";
    load(view.current);
    if (props.state.tlq && props.state.tlfind) runSearch(props.state.tlq, true, props.state.tlfind);
  });
  useEffect(() => {
    firstLoad();
  }, [run, span, firstLoad]);

  useEffect(() => {
    scheduleFetch(true);
  }, [flows, activeQuery, scheduleFetch]);

  // The critical path's jump: once per tlcp value, to the segment it names or the step's whole path.
  const critJumped = useRef("");
  const critJump = useEvent(() => {
    const key = `${run}|${span}|${props.state.tlcp ?? ""}`;
    if (!crit.on) critJumped.current = ""; // turned on again later: it jumps again
    if (!crit.on || crit.status !== "ok" || !data || critJumped.current === key) return;
    const at = critView(crit.segments(data.base), crit.focus);
    if (!at) return;
    critJumped.current = key;
    setView(at);
    // and the rank: the one the link named (the current one when it is on the path), else the path's first
    const segs = crit.segments(data.base);
    const named = segs.find((x) => x.index === crit.focus)?.worker;
    const target = named ?? (crit.workers.includes(props.worker) ? props.worker : crit.workers[0]);
    const header = layRef.current.rows.find((r) => r.kind === "rank" && r.worker === target);
    if (header && scrollRef.current) {
      openedOn.current = openKey; // the opening scroll to the current rank is done
      scrollRef.current.scrollTop = header.y;
    }
  });
  const dataBase = data?.base;
  useEffect(() => {
    critJump();
  }, [crit.on, crit.status, crit.step, crit.focus, dataBase, props.state.tlcp, critJump]);

  // Another set of ranks: the same window (and base), those ranks.
  const firstSet = useRef(true);
  const ranksChanged = useEvent(() => {
    if (firstSet.current) {
      firstSet.current = false;
      return;
    }
    load(view.current);
    if (instanceOf.current) loadInstance(instanceOf.current); // its members' slices on the ranks now shown
  });
  useEffect(() => {
    ranksChanged();
  }, [chosenKey, ranksChanged]);

  // ------------------------------------------------------------------ view changes
  const setView = (v: View, auto = false) => {
    autoView.current = auto;
    const d = dataRef.current;
    const minW = 1000; // 1 µs
    let { start, end } = v;
    if (end - start < minW) {
      const c = (start + end) / 2;
      start = c - minW / 2;
      end = c + minW / 2;
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
    view.current = { start, end };
    setDownloadError("");
    redraw();
    scheduleFetch();
  };

  const zoom = (factor: number, atX?: number) => {
    const v = view.current;
    const canvas = canvasRef.current;
    if (!v || !canvas) return;
    const plot = Math.max(1, canvas.clientWidth - LABEL_W);
    const frac = atX === undefined ? 0.5 : Math.min(1, Math.max(0, (atX - LABEL_W) / plot));
    const at = v.start + (v.end - v.start) * frac;
    const w = (v.end - v.start) * factor;
    setView({ start: at - w * frac, end: at - w * frac + w });
  };
  const pan = (fraction: number) => {
    const v = view.current;
    if (!v) return;
    const d = (v.end - v.start) * fraction;
    setView({ start: v.start + d, end: v.end + d });
  };
  const reset = () => {
    const d = dataRef.current;
    if (d) setView({ start: d.rangeStart, end: Math.max(d.rangeEnd, d.rangeStart + 1) }, true);
  };
  /** "Window JSON": asks trace_window with HEAD first, so a refusal (413: over the bound) is shown, not downloaded. */
  const downloadWindow = async (e: MouseEvent) => {
    const a = e.currentTarget as HTMLAnchorElement;
    if (a.dataset.checked) {
      delete a.dataset.checked; // the click below, once checked: the browser downloads
      return;
    }
    e.preventDefault();
    const message = await checkWindowTrace(a.getAttribute("href") ?? "");
    setDownloadError(message);
    if (!message) {
      a.dataset.checked = "1";
      a.click();
    }
  };
  const focusOn = (start: number, end: number) => {
    const w = Math.max((end - start) * 6, 20_000);
    const c = (start + end) / 2;
    setView({ start: c - w / 2, end: c + w / 2 });
  };

  // ------------------------------------------------------------------ folding
  // The folds live in the selection (URL hash `tlfold`), like the window and the search: they stay
  // while zooming and panning, and when another view is shown and this one again.
  const setFolds = (f: Folds) => {
    foldsRef.current = f; // a second toggle before the next render starts from this one
    props.update({ tlfold: writeFolds(f) });
  };
  const toggleRank = (worker: string) => {
    const f = foldsRef.current;
    const ranks = new Set(f.ranks);
    if (!ranks.delete(worker)) ranks.add(worker);
    setFolds({ ranks, tracks: f.tracks });
  };
  const toggleTrack = (worker: string, track: number) => {
    const f = foldsRef.current;
    const tracks = new Set(f.tracks);
    const k = `${worker}:${track}`;
    if (!tracks.delete(k)) tracks.add(k);
    setFolds({ ranks: f.ranks, tracks });
  };
  const collapseAll = () => {
    const d = dataRef.current;
    if (d) setFolds({ ranks: new Set([...foldsRef.current.ranks, ...d.ranks.map((r) => r.worker)]), tracks: foldsRef.current.tracks });
  };
  const expandAll = () => setFolds({ ranks: new Set(), tracks: new Set() });
  /** Unfolds the rank and track of a slice that is being shown (search, related slices). */
  const reveal = (worker: string, track: number) => {
    const f = foldsRef.current;
    const k = `${worker}:${track}`;
    if (!f.ranks.has(worker) && !f.tracks.has(k)) return;
    const ranks = new Set(f.ranks);
    const tracks = new Set(f.tracks);
    ranks.delete(worker);
    tracks.delete(k);
    setFolds({ ranks, tracks });
  };

  // ------------------------------------------------------------------ selection
  const select = async (worker: string, id: number, focus = false) => {
    const got = await fetchEvent(run, span, worker, id, base.current);
    if (got.kind === "error") {
      setError(got.message);
      return;
    }
    const e = got.value;
    setDetail(e);
    marks.current.selected = { worker, id, track: e.track, depth: e.depth, start: Number(e.startNs), end: Number(e.endNs) };
    loadInstance(maybeCommunication(e.name, e.type) ? { worker, id } : null);
    scrollTo.current = { worker, track: e.track, depth: e.depth };
    if (focus) {
      reveal(worker, e.track);
      focusOn(Number(e.startNs), Number(e.endNs));
    } else redraw();
    props.update({ tlsel: `${worker}:${id}` });
  };

  /** Nothing selected: the details panel goes (a click on empty space, its Close button, Esc). */
  const deselect = () => {
    marks.current.selected = null;
    loadInstance(null);
    setDetail(null);
    props.update({ tlsel: "" });
    redraw();
  };

  // ------------------------------------------------------------------ a collective's instance
  const setInstance = (inst: TimelineInstance | null) => {
    instanceRef.current = inst;
    marks.current.members = inst && inst.matched
      ? inst.members.filter((m) => m.found).map((m): MemberMark => ({ worker: m.worker, track: m.track, depth: m.depth, start: Number(m.startNs), end: Number(m.endNs), last: m.last }))
      : null;
    setInstanceState(inst);
    redraw();
  };
  /** Asks for the instance of the slice (null: none); its members' slices are looked up on the ranks shown. */
  const instanceOf = useRef<{ worker: string; id: number } | null>(null);
  const loadInstance = async (of: { worker: string; id: number } | null) => {
    instanceOf.current = of;
    if (!of) return setInstance(null);
    // the analysis waits for ranks to load: asked again while the route answers 202
    const got = await pollOnce(() => fetchInstance(run, span, of.worker, of.id, base.current, chosenRef.current), (g) => g.kind === "ok" && g.pending, {
      retryMs: RETRY_MS,
      tries: 60,
      stale: () => instanceOf.current !== of, // another selection meanwhile
    });
    if (!got) return;
    setInstance(got.kind === "ok" ? got.value : null);
  };
  /** Adds the member ranks that are not shown to the ranks shown (at most MAX_RANKS in all). */
  const showMembers = () => {
    const inst = instanceRef.current;
    if (!inst) return;
    const now = chosenRef.current;
    const missing = inst.members.map((m) => m.worker).filter((w) => w && !now.includes(w));
    const order = new Map(all.map((w, i) => [w, i]));
    const next = [...now, ...missing.slice(0, Math.max(0, MAX_RANKS - now.length))].sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
    props.update({ tlranks: writeRankSet(next) });
  };

  /** The rank a link or a search lands on: the one the link names (tlfind = its worker), else the current one. */
  const targetRank = (named?: string): string => {
    if (named && named !== "1" && chosenRef.current.includes(named)) return named;
    return props.worker;
  };
  const runSearch = async (text: string, open: boolean, named?: string) => {
    const t = text.trim();
    setActiveQuery(t);
    marks.current.query = t;
    props.update({ tlq: t, tlfind: "" });
    if (!t) {
      setFound(null);
      return;
    }
    if (base.current === undefined || buildingRef.current) {
      // the indexes are still being built: wait for the first window, which fixes the base
      window.setTimeout(() => runSearch(t, open, named), RETRY_MS);
      return;
    }
    let got = await fetchSearch(run, span, chosenRef.current, t, true, base.current);
    if (got.kind === "ok" && Number(got.value.total) === 0) got = await fetchSearch(run, span, chosenRef.current, t, false, base.current);
    if (got.kind === "error") {
      setError(got.message);
      return;
    }
    const res = got.value;
    // the first occurrence on the current (or named) rank, never another rank's
    const target = targetRank(named);
    let at = res.matches.findIndex((m) => m.worker === target);
    if (at < 0 && open && chosenRef.current.includes(target)) {
      // its matches are beyond the first page of all the ranks' matches: ask for that rank alone
      let own = await fetchSearch(run, span, [target], t, true, base.current);
      if (own.kind === "ok" && Number(own.value.total) === 0) own = await fetchSearch(run, span, [target], t, false, base.current);
      if (own.kind === "ok" && own.value.matches.length) {
        res.matches = [...own.value.matches, ...res.matches];
        at = 0;
      }
    }
    setFound(res);
    setMatchAt(Math.max(0, at));
    const m = res.matches[Math.max(0, at)];
    if (open && m) await select(m.worker, Number(m.id), true);
  };

  const step = (d: number) => {
    if (!found || !found.matches.length) return;
    const i = (matchAt + d + found.matches.length) % found.matches.length;
    setMatchAt(i);
    const m = found.matches[i];
    select(m.worker, Number(m.id), true);
  };

  // ------------------------------------------------------------------ mouse and keys
  const drag = useRef<{ x: number; y: number; v: View; top: number; box: boolean; moved: boolean } | null>(null);

  const rowAt = (y: number) => {
    const cy = y - RULER_H + (scrollRef.current?.scrollTop ?? 0);
    return layRef.current.rows.find((r) => cy >= r.y && cy < r.y + r.h);
  };
  const timeAt = (x: number) => {
    const v = view.current!;
    const plot = Math.max(1, (canvasRef.current?.clientWidth ?? 1) - LABEL_W);
    return v.start + ((x - LABEL_W) / plot) * (v.end - v.start);
  };
  const local = (e: MouseEvent) => {
    const r = canvasRef.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };

  const onMouseDown = (e: MouseEvent) => {
    if (e.button !== 0 || !view.current) return;
    const p = local(e);
    (e.currentTarget as HTMLElement).focus();
    drag.current = { x: p.x, y: p.y, v: { ...view.current }, top: scrollRef.current?.scrollTop ?? 0, box: e.shiftKey, moved: false };
    const move = (ev: MouseEvent) => {
      const g = drag.current;
      if (!g) return;
      const q = local(ev);
      if (Math.abs(q.x - g.x) + Math.abs(q.y - g.y) > 3) g.moved = true;
      if (g.box) {
        const top = scrollRef.current?.scrollTop ?? 0;
        marks.current.box = { t0: timeAt(Math.max(g.x, LABEL_W)), t1: timeAt(Math.max(q.x, LABEL_W)), y0: g.y - RULER_H + top, y1: q.y - RULER_H + top };
        redraw();
      } else if (g.moved) {
        const plot = Math.max(1, canvasRef.current!.clientWidth - LABEL_W);
        const dt = ((q.x - g.x) / plot) * (g.v.end - g.v.start);
        setView({ start: g.v.start - dt, end: g.v.end - dt });
        hideHover();
        if (scrollRef.current) scrollRef.current.scrollTop = g.top - (q.y - g.y);
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
        boxSelect(g.x, g.y, q.x, q.y);
      } else if (!g.moved) {
        marks.current.box = null;
        click(q.x, q.y);
      }
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  };

  const click = (x: number, y: number) => {
    const d = dataRef.current;
    if (!d || x < LABEL_W) return;
    const row = rowAt(y);
    if (row && row.kind === "rank") {
      toggleRank(row.worker); // a rank's header folds or unfolds it
      return;
    }
    if (!row) return;
    // nothing in a folded track can be selected: a click there is a click on empty space
    const lane = row.kind === "lane" ? d.ranks[row.rank]?.lanes.get(`${row.track}:${row.depth}`) : undefined;
    if (row.kind === "lane" && !lane) return;
    const v = view.current!;
    const plot = Math.max(1, canvasRef.current!.clientWidth - LABEL_W);
    const i = lane ? hitLane(lane, timeAt(x), (2 * (v.end - v.start)) / plot) : -1;
    if (i < 0) {
      deselect();
      return;
    }
    if (!lane) return;
    if (lane.count[i] > 1) {
      focusOn(lane.start[i], lane.start[i] + lane.dur[i]); // a merged block: zoom into it
      return;
    }
    select(row.worker, lane.id[i]);
  };

  const boxSelect = async (x0: number, y0: number, x1: number, y1: number) => {
    const d = dataRef.current;
    if (!d) return;
    const t0 = timeAt(Math.max(LABEL_W, Math.min(x0, x1)));
    const t1 = timeAt(Math.max(LABEL_W, Math.max(x0, x1)));
    const top = scrollRef.current?.scrollTop ?? 0;
    const ya = Math.min(y0, y1) - RULER_H + top;
    const yb = Math.max(y0, y1) - RULER_H + top;
    const tracks = new Set<string>();
    for (const r of layRef.current.rows) if (r.kind === "lane" && r.y + r.h > ya && r.y < yb) tracks.add(`${r.worker}:${r.track}`);
    if (!tracks.size) return;
    const got = await fetchRange(run, span, t0, t1, [...tracks], base.current);
    if (got.kind === "ok") setRange(got.value);
    else setError(got.message);
  };

  const onWheel = (e: WheelEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey) {
      e.preventDefault();
      zoom(Math.pow(1.0018, e.deltaY), local(e).x);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      pan((e.shiftKey ? e.deltaY : e.deltaX) / 800);
    }
  };

  const keyRef = useRef<(e: KeyboardEvent) => void>(() => undefined);
  const onKey = (e: KeyboardEvent) => {
    const k = e.key.toLowerCase();
    if (k === "w") zoom(0.8);
    else if (k === "s") zoom(1.25);
    else if (k === "a") pan(-0.15);
    else if (k === "d") pan(0.15);
    else if (k === "0") reset();
    else if (k === "escape") {
      // the box first (and its sums), else the selected slice
      if (marks.current.box || range) {
        marks.current.box = null;
        setRange(null);
        redraw();
      } else if (marks.current.selected || detail) deselect();
      else return;
    } else return;
    e.preventDefault();
  };

  keyRef.current = onKey;

  // the hover readout: the slice under the pointer, its name, duration and start (a DOM node written
  // directly, not a render per mouse move)
  const hideHover = () => {
    if (hoverRef.current) hoverRef.current.style.display = "none";
  };
  const hoverAt = (x: number, y: number) => {
    const el = hoverRef.current;
    const d = dataRef.current;
    const v = view.current;
    if (!el) return;
    if (!d || !v || drag.current || x < LABEL_W || y < RULER_H) return hideHover();
    const row = rowAt(y);
    if (row && row.kind === "counter") return counterHover(el, d, row, x, y);
    const lane = row && row.kind === "lane" ? d.ranks[row.rank]?.lanes.get(`${row.track}:${row.depth}`) : undefined;
    if (!row || !lane) return hideHover();
    const plot = Math.max(1, (canvasRef.current?.clientWidth ?? 1) - LABEL_W);
    const i = hitLane(lane, timeAt(x), (2 * (v.end - v.start)) / plot);
    if (i < 0) return hideHover();
    const n = lane.count[i];
    const name = n > 1 ? `${n.toLocaleString()} slices (click to zoom in)` : d.names[lane.name[i]] ?? "";
    el.replaceChildren();
    const b = document.createElement("b");
    b.textContent = name;
    b.dataset.key = "name";
    const meta = document.createElement("span");
    meta.dataset.key = "meta";
    meta.textContent = `${fmtDur(lane.dur[i])} · start ${fmtDur(lane.start[i])} · ${rankName(row.worker)}`;
    el.append(b, meta);
    el.style.display = "block";
    const w = canvasRef.current?.clientWidth ?? 0;
    const left = Math.min(x + 14, Math.max(LABEL_W, w - 360));
    el.style.left = `${left}px`;
    el.style.top = `${Math.min(y + 16, viewHRef.current - 44)}px`;
  };

  // a counter lane: its value in the pixel under the pointer (memory: the highest in it)
  const counterHover = (el: HTMLDivElement, d: Decoded, row: Row, x: number, y: number) => {
    const c = d.ranks[row.rank]?.counters[row.counter ?? 0];
    const t = timeAt(x);
    const v = c ? counterAt(c, d.windowStart, d.resolution, t) : null;
    if (!c || v === null) return hideHover();
    el.replaceChildren();
    const b = document.createElement("b");
    b.textContent = `${c.label}: ${c.unit === "bytes" ? humanBytes(v) : `${(v * 100).toFixed(1)} %`}`;
    b.dataset.key = "name";
    const meta = document.createElement("span");
    meta.dataset.key = "meta";
    meta.textContent = `at ${fmtDur(t)} · ${rankName(row.worker)}${c.unit === "bytes" ? " · highest in this pixel" : " · kernel time in this pixel"}`;
    el.append(b, meta);
    el.style.display = "block";
    const w = canvasRef.current?.clientWidth ?? 0;
    el.style.left = `${Math.min(x + 14, Math.max(LABEL_W, w - 360))}px`;
    el.style.top = `${Math.min(y + 16, viewHRef.current - 44)}px`;
  };

  const onMove = (e: MouseEvent) => {
    const p = local(e);
    marks.current.hover = p;
    hoverAt(p.x, p.y);
    redraw();
  };

  // Bring a row into the canvas: a selected slice's lane (when off screen), else, once when the
  // timeline opens, the current rank's header at the top.
  useEffect(() => {
    const el = scrollRef.current;
    if (!el || !data) return;
    // the height the canvas is about to take (a selection brings the details panel, which takes its height)
    const h = fitH() ?? viewH;
    const visible = (y: number, rh: number) => y >= el.scrollTop && y + rh <= el.scrollTop + h - RULER_H;
    const want = scrollTo.current;
    // a selection brings the details panel: scrolled once this render has it (an effect of an earlier
    // render can run first) and the canvas has its new height (the scroll box clamps to its old height)
    if (want && (!detail || !belowRef.current || Math.abs(h - viewH) > 1)) return;
    if (want) {
      const row = lay.rows.find((r) => r.worker === want.worker && ((r.kind === "lane" && r.track === want.track && r.depth === want.depth) || (r.kind === "fold" && r.track === want.track)));
      if (row) {
        scrollTo.current = null;
        openedOn.current = openKey;
        if (!visible(row.y, row.h)) {
          el.scrollTop = Math.max(0, row.y - Math.round((h - RULER_H) / 3));
          redraw();
        }
      }
      return;
    }
    const key = openKey;
    if (openedOn.current === key) return;
    const header = lay.rows.find((r) => r.kind === "rank" && r.worker === openTarget);
    if (!header) return;
    openedOn.current = key;
    if (!props.state.tlsel && !props.state.tlfind) {
      el.scrollTop = header.y;
      redraw();
    }
  });

  useEffect(() => {
    const c = canvasRef.current;
    if (!c) return;
    c.addEventListener("wheel", onWheel, { passive: false });
    return () => c.removeEventListener("wheel", onWheel);
  });

  // Re-select the slice named by the URL once the index is there.
  const reselect = useEvent(() => {
    const [w, id] = splitSel(props.state.tlsel);
    if (data && w && id !== null && !detail && !data.ranks.some((r) => r.state === "building")) select(w, id);
  });
  const rankCount = data ? data.ranks.length : null;
  useEffect(() => {
    reselect();
  }, [rankCount, reselect]);

  useEffect(redraw);

  /** "rank 5" (else the run's label of that worker, else its name): what a link to a table names. */
  const rankName = (worker: string): string => {
    const w = props.workers.find((x) => x.worker === worker);
    if (w && w.rank >= 0) return `rank ${w.rank}`;
    return props.labels.get(worker) || worker;
  };
  const d = data;
  const v = view.current;
  const selWorker = detail?.worker ?? props.worker;
  const contentH = lay.height + RULER_H;
  return (
    <div class="panel timeline" data-testid="panel-timeline">
      <div class="tl-bar">
        <form
          class="tl-search"
          onSubmit={(e) => {
            e.preventDefault();
            runSearch(query, true);
          }}
        >
          <input class="search" type="search" placeholder="Search slices by name (Enter)" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} data-testid="timeline-search" aria-label="Search the timeline" />
        </form>
        {found ? (
          <span class="tl-found" data-testid="timeline-found">
            <button class="btn small" onClick={() => step(-1)} disabled={!found.matches.length} aria-label="Previous match">‹</button>
            <span>{found.matches.length ? `${matchAt + 1} / ${Number(found.total)}` : "no match"}</span>
            <button class="btn small" onClick={() => step(1)} disabled={!found.matches.length} aria-label="Next match">›</button>
          </span>
        ) : null}
        <label class="tl-check">
          <input type="checkbox" checked={flows} onChange={(e) => setFlows((e.target as HTMLInputElement).checked)} data-testid="timeline-flows" />
          launch → kernel arrows of the selection
        </label>
        <CriticalBar crit={crit} shown={chosen} max={MAX_RANKS} onTlcp={(tlcp) => props.update({ tlcp } as Partial<TimelineState>)} onShowRanks={(ws) => props.update({ tlranks: writeRankSet(ws) })} />
        <span class="tl-tools">
          {props.tools}
          <button class="btn small" onClick={() => zoom(0.5)} data-testid="timeline-zoom-in" title="Zoom in (W)">+</button>
          <button class="btn small" onClick={() => zoom(2)} data-testid="timeline-zoom-out" title="Zoom out (S)">−</button>
          <button class="btn small" onClick={reset} data-testid="timeline-reset" title="Whole span (0)">Fit</button>
          <button class="btn small" onClick={collapseAll} disabled={!d || d.ranks.every((r) => folds.ranks.has(r.worker))} data-testid="timeline-collapse-all" title="Fold every rank to its header">
            Collapse all
          </button>
          <button class="btn small" onClick={expandAll} disabled={!folds.ranks.size && !folds.tracks.size} data-testid="timeline-expand-all" title="Unfold every rank and track">
            Expand all
          </button>
          {v ? (
            <a class="btn small" href={windowTraceUrl(run, span, selWorker, v.start, v.end, base.current)} download onClick={downloadWindow} data-testid="timeline-download-window" title={`The slices of ${selWorker} in this window, as Chrome-trace JSON (Perfetto, chrome://tracing)`}>
              Window JSON
            </a>
          ) : null}
          {props.traceHref ? (
            <a class="btn small" href={props.traceHref} download data-testid="timeline-download-raw" title="The whole raw trace of the selected worker">
              Raw trace
            </a>
          ) : null}
        </span>
      </div>
      {all.length > 1 ? (
        <RankBar
          workers={props.workers}
          all={all}
          chosen={chosen}
          explicit={explicit.length > 0}
          why={fallback?.why ?? "the server's order of the ranks (loading)"}
          labels={props.labels}
          set={(ws) => props.update({ tlranks: ws === null ? "" : writeRankSet(ws) })}
        />
      ) : null}
      <div class="tl-hint">
        Drag: pan · Ctrl+wheel, W/S: zoom · A/D: pan · Shift+drag: sum a box · click: details · 0: fit · a rank or track name: fold
        {d ? (
          <span class="tl-status" data-testid="timeline-status">
            {` · ${d.items.toLocaleString()} items for ${d.ranks.reduce((a, r) => a + r.events, 0).toLocaleString()} events · ${(d.bytes / 1024).toFixed(0)} KB · ${fmtDur(d.resolution)}/px`}
          </span>
        ) : null}
      </div>
      {error ? <Notice kind="error" testId="timeline-error">{error}</Notice> : null}
      {downloadError ? <Notice kind="error" testId="timeline-download-error">{downloadError}</Notice> : null}
      {building ? <Notice kind="loading" testId="timeline-building">{`Building the timeline index of ${building} rank${building > 1 ? "s" : ""}…`}</Notice> : null}
      {!d && !error ? <Notice kind="loading">Loading the timeline…</Notice> : null}
      <div class="tl-stage">
      <div class="tl-scroll" ref={scrollRef} style={{ height: `${viewH}px` }} onScroll={redraw}>
        <canvas
          ref={canvasRef}
          class="tl-canvas"
          style={{ height: `${viewH}px` }}
          tabIndex={0}
          data-testid="timeline-canvas"
          data-window={v ? `${Math.round(v.start)},${Math.round(v.end)}` : ""}
          data-rows={lay.rows.length}
          data-visible-tracks={trackIds(lay.rows, "lane")}
          data-folded-tracks={trackIds(lay.rows, "fold")}
          data-folded-ranks={lay.rows.filter((r) => r.kind === "rank" && r.folded).map((r) => r.worker).join(",")}
          onMouseDown={onMouseDown}
          onMouseMove={onMove}
          onMouseLeave={() => {
            marks.current.hover = null;
            hideHover();
            redraw();
          }}
        />
        <div style={{ height: `${Math.max(0, contentH - viewH)}px` }} />
        <div class="tl-folds" ref={foldBoxRef} style={{ width: `${LABEL_W - 1}px`, height: `${lay.height + RULER_H}px` }}>
          {lay.rows.map((row) => (row.first ? <FoldButton row={row} onToggle={() => (row.kind === "rank" ? toggleRank(row.worker) : toggleTrack(row.worker, row.track))} /> : null))}
        </div>
      </div>
      <div class="tl-hover" ref={hoverRef} data-testid="timeline-hover" style={{ display: "none" }} />
      </div>
      <TrackList data={d} folds={folds} labels={props.labels} />
      {hasDetails ? (
      <div class="tl-below" ref={belowRef} style={{ height: `${DETAILS_H}px` }} data-testid="timeline-below">
        {detail ? (
          <Details e={detail} rankName={rankName(detail.worker)} onJump={(w, id) => select(w, id, true)} onTable={(view, name) => props.update({ view, worker: detail.worker, find: name })} onClose={deselect} />
        ) : null}
        {instance && instance.matched ? (
          <InstanceCard inst={instance} shown={chosen} rankName={rankName} canAdd={chosen.length < MAX_RANKS} onJump={(w, id) => select(w, id, true)} onShow={showMembers} />
        ) : null}
        {range ? <RangeSums r={range} onClose={() => setRange(null)} /> : null}
      </div>
      ) : null}
    </div>
  );
}

/**
 * Which ranks are drawn: "ranks 1–16 of 1,024" with ◂ ▸ to page through the rest in rank order, a
 * searchable picker to add or remove ranks (at most MAX_RANKS at once), and "Default" to go back to
 * the default set.
 */
function RankBar(props: {
  workers: WorkerEntry[];
  all: string[];
  chosen: string[];
  explicit: boolean;
  why: string;
  labels: Map<string, string>;
  set: (workers: string[] | null) => void;
}) {
  const { all, chosen } = props;
  const index = useMemo(() => new Map(all.map((w, i) => [w, i])), [all]);
  const items = useMemo<PickItem[]>(() => props.workers.map((w) => ({ value: w.worker, label: workerLabel(w), search: `rank ${w.rank} ${w.hostname} ${w.worker}`, rank: w.rank })), [props.workers]);
  const selected = useMemo(() => new Set(chosen), [chosen]);
  const idx = chosen.map((w) => index.get(w) ?? 0).sort((a, b) => a - b);
  const lo = idx[0] ?? 0;
  const hi = idx[idx.length - 1] ?? 0;
  const contiguous = idx.length > 0 && hi - lo + 1 === idx.length;
  const n = all.length;
  const rankAt = (i: number) => (props.workers[i]?.rank ?? -1) >= 0 ? props.workers[i].rank : i;
  const text = contiguous ? `ranks ${rankAt(lo)}–${rankAt(hi)} of ${n.toLocaleString()}` : `${chosen.length} ranks of ${n.toLocaleString()}`;
  const [full, setFull] = useState(false);
  const toggle = (w: string) => {
    const next = new Set(chosen);
    if (next.has(w)) {
      if (next.size > 1) next.delete(w);
    } else if (next.size < MAX_RANKS) next.add(w);
    else {
      setFull(true);
      return;
    }
    setFull(false);
    props.set([...next].sort((a, b) => (index.get(a) ?? 0) - (index.get(b) ?? 0)));
  };
  return (
    <div class="tl-ranks" data-testid="timeline-ranks" data-shown={chosen.length} data-total={n} data-first={lo} data-last={hi}>
      <span class="tl-ranks-label">Ranks</span>
      <button class="btn small" onClick={() => props.set(all.slice(Math.max(0, lo - RANK_PAGE), Math.max(0, lo - RANK_PAGE) + RANK_PAGE))} disabled={lo === 0} data-testid="timeline-ranks-prev" title={`The ${RANK_PAGE} ranks before`}>
        ◂
      </button>
      <span class="tl-ranks-text" data-testid="timeline-ranks-text">{text}</span>
      <button class="btn small" onClick={() => props.set(all.slice(hi + 1, hi + 1 + RANK_PAGE))} disabled={hi >= n - 1} data-testid="timeline-ranks-next" title={`The next ${RANK_PAGE} ranks`}>
        ▸
      </button>
      <span class="tl-ranks-pick">
        <Picker items={items} selected={selected} onToggle={toggle} testId="timeline-rank-picker" buttonText={`Choose ranks (${chosen.length})`} placeholder="Filter by label, rank, host" title={`Add or remove ranks (at most ${MAX_RANKS})`} />
      </span>
      {props.explicit ? (
        <button class="btn small" onClick={() => props.set(null)} data-testid="timeline-ranks-default" title={`Back to the default: ${props.why}`}>
          Default
        </button>
      ) : (
        <span class="muted tl-ranks-why" data-testid="timeline-ranks-why">{`default: ${props.why}`}</span>
      )}
      {full ? <span class="tl-ranks-full" data-testid="timeline-ranks-full">{`At most ${MAX_RANKS} ranks at once: remove one first.`}</span> : null}
    </div>
  );
}

/** "worker:track" of the tracks drawn as `kind` rows (lanes: unfolded; fold: folded), in drawing order. */
function trackIds(rows: Row[], kind: Row["kind"]): string {
  const out: string[] = [];
  for (const r of rows) if (r.kind === kind && r.first) out.push(`${r.worker}:${r.track}`);
  return out.join(",");
}

/** A rank header's or a track label's button over the canvas: click, Enter or Space folds or unfolds. */
function FoldButton({ row, onToggle }: { row: Row; onToggle: () => void }) {
  const rank = row.kind === "rank";
  const name = rank ? row.label : `${row.worker} · ${row.label}`;
  const h = rank ? row.h : Math.min(row.h, 17);
  return (
    <button
      type="button"
      class={`tl-fold${rank ? " tl-fold-rank" : ""}`}
      style={{ top: `${RULER_H + row.y}px`, height: `${h}px` }}
      onClick={onToggle}
      aria-expanded={!row.folded}
      aria-label={name}
      title={`${row.folded ? "Unfold" : "Fold"} ${name}`}
      data-testid={rank ? "timeline-fold-rank" : "timeline-fold-track"}
      data-worker={row.worker}
      data-track={rank ? undefined : String(row.track)}
      data-folded={row.folded ? "1" : "0"}
    />
  );
}

function splitSel(s: string): [string, number | null] {
  const i = s.lastIndexOf(":");
  if (i < 0) return ["", null];
  const id = Number(s.slice(i + 1));
  return [s.slice(0, i), Number.isInteger(id) ? id : null];
}

/** The tracks as text (hidden visually small): what the canvas shows, for assistive tools and tests. */
function TrackList({ data, folds, labels }: { data: Decoded | null; folds: Folds; labels: Map<string, string> }) {
  if (!data) return null;
  return (
    <>
    <ul class="tl-tracks" data-testid="timeline-tracks">
      {data.ranks.map((r) =>
        r.tracks.map((t) => (
          <li
            data-worker={r.worker}
            data-track={t.id}
            data-kind={t.kind === 2 ? "gpu" : "host"}
            data-events={String(t.events)}
            data-fold={folds.ranks.has(r.worker) ? "rank" : folds.tracks.has(`${r.worker}:${t.id}`) ? "track" : ""}
          >
            {`${labels.get(r.worker) || (r.rank >= 0 ? `rank ${r.rank}` : r.worker)} · ${t.label} · ${Number(t.events).toLocaleString()} events`}
          </li>
        )),
      )}
    </ul>
    <ul class="tl-tracks" data-testid="timeline-counters">
      {layout(data, folds, labels).rows.filter((row) => row.kind === "counter").map((row) => {
        const c = data.ranks[row.rank]?.counters[row.counter ?? 0];
        const sc = c ? counterScale(c) : null; // the lane's axis: its bottom and top as drawn
        return (
          <li data-worker={row.worker} data-counter={String(row.counter)} data-testid="timeline-counter" data-lo={sc?.loText} data-hi={sc?.hiText}>
            {`${labels.get(row.worker) || row.worker} · ${row.label}${sc ? ` · ${sc.loText} to ${sc.hiText}` : ""}`}
          </li>
        );
      })}
    </ul>
    </>
  );
}

function Details({ e, rankName, onJump, onTable, onClose }: { e: TimelineEvent; rankName: string; onJump: (worker: string, id: number) => void; onTable: (view: string, name: string) => void; onClose: () => void }) {
  const dur = Number(e.endNs - e.startNs);
  const isDevice = e.type === "Kernel" || e.type === "Memcpy" || e.type === "Memset";
  return (
    <section class="card tl-details" data-testid="timeline-details">
      <header class="card-head">
        <h3 data-testid="timeline-detail-name" title={e.name}>{e.name}</h3>
        <div class="card-tools">
          <button class="btn small" onClick={onClose} data-testid="timeline-details-close" title="Deselect (Esc)">Close</button>
        </div>
      </header>
      <div class="card-body">
        <table class="tl-kv">
          <tbody>
            <tr><th>Type</th><td data-key="type">{e.type}</td></tr>
            <tr><th>Duration</th><td data-key="duration">{fmtDur(dur)}</td></tr>
            <tr><th>Start</th><td data-key="start">{fmtDur(Number(e.startNs))}</td></tr>
            <tr><th>Track</th><td data-key="track">{`${e.worker} · ${e.trackLabel} · row ${e.depth + 1}`}</td></tr>
            {e.correlationId >= 0n ? <tr><th>Correlation id</th><td data-key="correlation id">{e.correlationId.toString()}</td></tr> : null}
            {e.operator ? <tr><th>Operator</th><td data-key="operator">{e.operator}</td></tr> : null}
            {e.args.map((a) => (
              <tr><th>{a.key}</th><td data-key={a.key}>{a.value}</td></tr>
            ))}
          </tbody>
        </table>
        {e.related.length ? (
          <div class="tl-related">
            {e.related.map((r) => (
              <button class="btn small" onClick={() => onJump(r.worker, Number(r.id))} data-relation={r.relation} title={r.name}>
                {`${r.relation}: ${r.name.length > 60 ? `${r.name.slice(0, 59)}…` : r.name}`}
              </button>
            ))}
          </div>
        ) : null}
        <div class="tl-related">
          {isDevice && e.type === "Kernel" ? (
            <button class="btn small" data-testid="timeline-to-kernels" onClick={() => onTable("kernels", e.name)} title={`Switches to ${rankName}'s Kernels view`}>{`Show in Kernels table of ${rankName}`}</button>
          ) : null}
          {e.operator ? (
            <button class="btn small" data-testid="timeline-to-operators" onClick={() => onTable("operators", e.operator)} title={`Switches to ${rankName}'s Operators view`}>{`Show operator in Operators table of ${rankName}`}</button>
          ) : null}
        </div>
      </div>
    </section>
  );
}

/**
 * The selected collective's matched instance (timeline_instance, from the cross-rank analysis' matched
 * table): every member rank with its arrival (after the first member's), wait and duration, the
 * transfer; the last arrival marked; a member's row selects its slice; the members not shown can be added.
 */
function InstanceCard(props: { inst: TimelineInstance; shown: string[]; rankName: (w: string) => string; canAdd: boolean; onJump: (worker: string, id: number) => void; onShow: () => void }) {
  const { inst } = props;
  const first = Math.min(...inst.members.map((m) => Number(m.startNs)));
  const hidden = inst.members.filter((m) => m.worker && !props.shown.includes(m.worker));
  return (
    <section class="card tl-instance" data-testid="timeline-instance" data-members={inst.members.length} data-hidden={hidden.length}>
      <header class="card-head">
        <h3 title={inst.name}>{`${inst.kind.replace(/_/g, " ")} · step ${inst.step} · ${inst.members.length} ranks · transfer ${fmtDur(Number(inst.transferNs))}`}</h3>
        {hidden.length ? (
          <div class="card-tools">
            <button class="btn small" onClick={props.onShow} disabled={!props.canAdd} data-testid="timeline-instance-show" title={props.canAdd ? "Add the member ranks that are not shown to the timeline" : `At most ${MAX_RANKS} ranks at once`}>
              {`Show ${hidden.length} more member rank${hidden.length > 1 ? "s" : ""}`}
            </button>
          </div>
        ) : null}
      </header>
      <div class="card-body">
        <table class="tl-sums" data-testid="timeline-instance-members">
          <thead>
            <tr><th>Rank</th><th>Arrival</th><th>Wait</th><th>Duration</th><th>Transfer</th></tr>
          </thead>
          <tbody>
            {inst.members.map((m) => (
              <tr data-testid="timeline-instance-member" data-rank={m.rank} data-worker={m.worker} data-last={m.last ? "1" : "0"} data-shown={props.shown.includes(m.worker) ? "1" : "0"}
                data-wait-ns={String(m.waitNs)} data-duration-ns={String(m.durationNs)} data-transfer-ns={String(inst.transferNs)} data-start-unix-ns={String(m.startUnixNs)}>
                <td>
                  {m.found ? (
                    <button class="btn-link" onClick={() => props.onJump(m.worker, Number(m.id))} title={`Select its slice on ${props.rankName(m.worker)}`}>{props.rankName(m.worker)}</button>
                  ) : (
                    <span class="muted" title="not shown on the timeline">{m.worker ? props.rankName(m.worker) : `rank ${m.rank}`}</span>
                  )}
                  {m.direction ? <span class="muted">{` · ${m.direction}`}</span> : null}
                  {m.last ? <b class="tl-last">{" · last"}</b> : null}
                </td>
                <td>{`+${fmtDur(Number(m.startNs) - first)}`}</td>
                <td>{fmtDur(Number(m.waitNs))}</td>
                <td>{fmtDur(Number(m.durationNs))}</td>
                <td>{fmtDur(Number(inst.transferNs))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function RangeSums({ r, onClose }: { r: TimelineRange; onClose: () => void }) {
  return (
    <section class="card tl-range" data-testid="timeline-range">
      <header class="card-head">
        <h3>{`Selection: ${fmtDur(Number(r.endNs - r.startNs))}, ${Number(r.events).toLocaleString()} slices`}</h3>
        <div class="card-tools">
          <button class="btn small" onClick={onClose}>Close</button>
        </div>
      </header>
      <div class="card-body tl-range-body">
        <table class="tl-sums">
          <thead>
            <tr><th>Name</th><th>Type</th><th>Count</th><th>Total</th><th>In range</th></tr>
          </thead>
          <tbody>
            {r.rows.slice(0, 200).map((x) => (
              <tr>
                <td title={x.name}>{x.name}</td>
                <td>{x.type}</td>
                <td>{Number(x.count).toLocaleString()}</td>
                <td>{fmtDur(Number(x.totalNs))}</td>
                <td>{fmtDur(Number(x.overlapNs))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
