// The compact multi-rank timeline: one thin row per rank over one step (route timeline_compact), each
// row the GPU's time per pixel bin split into compute, communication and idle, in the order the server
// recommends (the straggler and its role peers first), the step's critical path over the rows it passes
// through. Rows are drawn on one canvas and fetched page by page as they scroll into view, so a
// 1,024-rank run costs what is on screen. A click on a row shows that rank's full lanes (the detailed
// timeline, Timeline.tsx) under the rows; a click on a communication bin aligns every row on that
// collective instance (the server finds the instance and each member's start: align "instance").
import type { ComponentProps } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Notice } from "../../components/ui";
import type { CompactRank, CompactRow, CompactSegment, TimelineCompact } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { isDark, onDarkChange } from "../../host";
import { critColor } from "./critical";
import { fetchCompact, fmtDur } from "./data";
import type { CompactInstance } from "./data";
import { DARK, fitCanvas, fitText, LIGHT, niceStep, rulerLabel, RULER_H } from "./draw";
import type { TimelineState } from "./Timeline";
import { MAX_RANKS, parseRankSet, Timeline, writeRankSet } from "./Timeline";
import { RETRY_PENDING_MS } from "../../poll";
import { useEvent } from "../../hooks";

/** One row per rank: a bar of BAR_H px and a gap. */
export const ROW_H = 13;
const BAR_H = 11;
const LABEL_W = 170;
/** Rows asked for at once (the route opens their indexes); pages are asked as they scroll into view. */
const PAGE = 64;
const RETRY_MS = RETRY_PENDING_MS;

export const COMPACT_COLORS = {
  light: { compute: "#43a047", communication: "#fb8c00", idle: "#eceff1", step: "#546e7a" },
  dark: { compute: "#66bb6a", communication: "#ffa726", idle: "#30363a", step: "#90a4ae" },
};
const ROLE_COLORS: Record<string, string> = { straggler: "#d32f2f", peer: "#7b1fa2" };

export interface DrawnLabel {
  worker: string;
  text: string;
  full: string;
  width: number;
  room: number;
}

export interface CompactExposed {
  order: () => string[];
  /** the rows wholly inside the scroll box, in order */
  visibleRows: () => string[];
  /** the rows drawn with their bins in the last frame */
  drawnRows: () => number;
  /** the label of each row drawn in the last frame: its text, its full text (on hover), its width and its room, px */
  labels: () => DrawnLabel[];
  /** rows whose bins are loaded */
  loadedRows: () => number;
  expanded: () => string[];
  /** the segments of the critical path drawn in the last frame */
  critical: () => number;
  rowH: number;
  /** the first row's top inside the canvas (below the ruler) */
  rowsTop: number;
  step: () => number;
  /** the alignment of the rows drawn ("step", "clock", "collective", "instance") */
  align: () => string;
  /** the window drawn, ns of each row's time */
  view: () => { start: number; end: number } | null;
  /** the window the bins of row i cover (they are asked for again after a zoom or pan) */
  windowOf: (i: number) => { start: number; end: number } | null;
  /** row i's communication fraction per bin (empty while not loaded) */
  communication: (i: number) => number[];
  /** the label column's width: the bins start there, px from the canvas's left */
  labelW: number;
  /** the ruler's labels drawn in the last frame (one the canvas's edge would cut is not drawn) */
  ruler: () => string[];
}

declare global {
  interface Window {
    __tbppCompact?: CompactExposed;
  }
}

interface Props {
  run: string;
  span: string;
  labels: Map<string, string>;
  expanded: string[];
  /** a row clicked: its worker, and its window in the times of the detailed timeline of that rank alone ("start,end") */
  onToggle: (worker: string, tl: string) => void;
  onDetail: () => void;
  /** at most this many rows high (a rank's lanes are shown under it) */
  maxRows?: number;
}

export function CompactTimeline(props: Props) {
  const { run, span } = props;
  const [meta, setMeta] = useState<TimelineCompact | null>(null);
  const [error, setError] = useState("");
  const [step, setStep] = useState<number | undefined>(undefined);
  const [align, setAlign] = useState("step");
  const [kind, setKind] = useState("");
  /** align "instance": the instance picked on the canvas (null: the rows are aligned by `align`) */
  const [picked, setPicked] = useState<CompactInstance | null>(null);
  const pickedKey = picked ? `${picked.worker}@${picked.at}` : "";
  const [dark, setDark] = useState(isDark());
  useEffect(() => onDarkChange(setDark), []);
  /** row index -> its bins and the window they cover (a zoom redraws the old bins stretched until the new ones come) */
  const rows = useRef(new Map<number, { row: CompactRow; ws: number; we: number }>());
  /** the window drawn (ns of each row's time); null: the server's default (the step) */
  const view = useRef<{ start: number; end: number } | null>(null);
  const zoomTimer = useRef(0);
  const segs = useRef(new Map<string, CompactSegment[]>());
  const pages = useRef(new Map<number, "loading" | "done">());
  const metaRef = useRef<TimelineCompact | null>(null);
  const bins = useRef(0);
  const gen = useRef(0); // a new run, step or alignment: answers of the previous one are dropped
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const scrollRef = useRef<HTMLDivElement>(null);
  const hoverRef = useRef<HTMLDivElement>(null);
  const frame = useRef(0);
  const drawn = useRef<{ rows: number; critical: number; labels: DrawnLabel[]; ruler: string[] }>({ rows: 0, critical: 0, labels: [], ruler: [] });
  const [viewH, setViewH] = useState(400);
  const expandedRef = useRef(props.expanded);
  expandedRef.current = props.expanded;
  const darkRef = useRef(dark);
  darkRef.current = dark;

  const fullName = (o: CompactRank) => props.labels.get(o.worker) || o.label || (o.rank >= 0 ? `rank ${o.rank}` : o.worker);
  const fullLabel = (o: CompactRank) => `${o.role === "straggler" ? "straggler · " : o.role === "peer" ? "role peer · " : ""}${fullName(o)}`;

  const loadPage = useEvent(async (page: number, g: number) => {
    if (pages.current.get(page)) return;
    pages.current.set(page, "loading");
    const v = view.current;
    const got = await fetchCompact({
      run, span, bins: bins.current, offset: page * PAGE, limit: PAGE, step, align: picked ? "instance" : align,
      kind: !picked && align === "collective" ? kind : undefined, instance: picked ?? undefined, start: v?.start, end: v?.end,
    });
    if (g !== gen.current) return;
    if (got.kind === "error") {
      pages.current.delete(page);
      setError(got.message);
      return;
    }
    const m = got.value;
    if (!m.order.length) {
      // the run's ranks are still loading (no order yet): asked again a little later
      pages.current.delete(page);
      if (got.pending) window.setTimeout(() => g === gen.current && loadPage(page, g), RETRY_MS);
      else setError(m.note || "no ranks in this run and span");
      return;
    }
    if (!metaRef.current) {
      metaRef.current = m;
      setMeta(m);
    }
    if (!view.current) view.current = { start: Number(m.windowStartNs), end: Number(m.windowEndNs) };
    const ws = Number(m.windowStartNs);
    const we = Number(m.windowEndNs);
    m.rows.forEach((r, i) => {
      if (r.state === "" || !rows.current.get(m.rankOffset + i)) rows.current.set(m.rankOffset + i, { row: r, ws, we });
    });
    if (got.pending || m.rows.some((r) => r.state === "building")) {
      // rows still being indexed: the page again a little later (its critical path then)
      window.setTimeout(() => {
        if (g !== gen.current) return;
        pages.current.delete(page);
        loadPage(page, g);
      }, RETRY_MS);
    } else {
        const fresh = new Set(m.critical.map((s) => s.worker));
      for (const w of fresh) segs.current.set(w, []);
      for (const s of m.critical) segs.current.get(s.worker)!.push(s);
      pages.current.set(page, "done");
    }
    redraw();
  });

  const wanted = useEvent(() => {
    // the pages of the rows in view (and the next one)
    const el = scrollRef.current;
    const m = metaRef.current;
    const n = m ? m.order.length : PAGE;
    const top = el?.scrollTop ?? 0;
    const first = Math.max(0, Math.floor(top / ROW_H));
    const last = Math.min(n - 1, Math.ceil((top + viewH) / ROW_H) + 8);
    const out: number[] = [];
    for (let p = Math.floor(first / PAGE); p <= Math.floor(last / PAGE); p++) out.push(p);
    return out;
  });

  useEffect(() => {
    gen.current++;
    const g = gen.current;
    rows.current = new Map();
    segs.current = new Map();
    pages.current = new Map();
    view.current = null;
    metaRef.current = null;
    setMeta(null);
    setError("");
    const w = canvasRef.current?.clientWidth ?? 1100;
    bins.current = Math.max(100, Math.min(4000, Math.round(w - LABEL_W)));
    loadPage(0, g);
  }, [run, span, step, align, kind, pickedKey, loadPage]);

  // the canvas takes the window's height below it (at least 8 rows), no more than its rows
  const fit = () => {
    const el = scrollRef.current;
    if (!el) return;
    const top = el.getBoundingClientRect().top + window.scrollY;
    const n = metaRef.current?.order.length ?? 32;
    const rowsH = RULER_H + Math.min(n, props.maxRows ?? n) * ROW_H + 2;
    const want = Math.max(RULER_H + 8 * ROW_H, Math.min(rowsH, Math.floor(window.innerHeight - top - 8)));
    if (Math.abs(want - viewH) > 1) setViewH(want);
  };
  useEffect(() => {
    fit();
    window.addEventListener("resize", fit);
    return () => window.removeEventListener("resize", fit);
  });

  const onScroll = () => {
    const m = metaRef.current;
    if (m) for (const p of wanted()) loadPage(p, gen.current);
    redraw();
  };

  // ------------------------------------------------------------------ drawing
  const draw = () => {
    frame.current = 0;
    const canvas = canvasRef.current;
    const m = metaRef.current;
    if (!canvas) return;
    const fitted = fitCanvas(canvas);
    if (!fitted) return;
    const { ctx, w, h } = fitted;
    const P = darkRef.current ? DARK : LIGHT;
    const C = darkRef.current ? COMPACT_COLORS.dark : COMPACT_COLORS.light;
    ctx.fillStyle = P.bg;
    ctx.fillRect(0, 0, w, h);
    drawn.current = { rows: 0, critical: 0, labels: [], ruler: [] };
    if (!m) return;
    const top = scrollRef.current?.scrollTop ?? 0;
    const plotW = Math.max(1, w - LABEL_W);
    const ws = view.current?.start ?? Number(m.windowStartNs);
    const we = view.current?.end ?? Number(m.windowEndNs);
    const X = (t: number) => LABEL_W + ((t - ws) / Math.max(1, we - ws)) * plotW;
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const first = Math.max(0, Math.floor(top / ROW_H));
    const last = Math.min(m.order.length - 1, Math.ceil((top + h) / ROW_H));
    const open = new Set(expandedRef.current);
    const marks: Record<string, { x: number; zero: string }> = {}; // align "instance": each member row's start of it, px
    for (let i = first; i <= last; i++) {
      const y = RULER_H + i * ROW_H - top;
      if (y + ROW_H < RULER_H || y > h) continue;
      const o = m.order[i];
      const got = rows.current.get(i);
      const r = got?.row;
      // label
      ctx.fillStyle = open.has(o.worker) ? P.header : P.bg;
      ctx.fillRect(0, y, LABEL_W, ROW_H);
      if (ROLE_COLORS[o.role]) {
        ctx.fillStyle = ROLE_COLORS[o.role];
        ctx.fillRect(0, y + 1, 3, BAR_H);
      }
      ctx.fillStyle = P.labelText;
      // a short label in the row ("rank 5 ★ straggler"); the full one on hover (the canvas's title)
      const text = fitText(ctx, `${open.has(o.worker) ? "▾ " : ""}${shortLabel(o, fullName(o))}`, LABEL_W - 10);
      ctx.fillText(text, 6, y + BAR_H / 2 + 1);
      drawn.current.labels.push({ worker: o.worker, text, full: fullLabel(o), width: ctx.measureText(text).width, room: LABEL_W - 10 });
      // bins
      ctx.fillStyle = C.idle;
      ctx.fillRect(LABEL_W, y, plotW, BAR_H);
      if (!r || r.state !== "" || !r.compute.length) {
        ctx.fillStyle = P.dimText;
        ctx.fillText(r?.state === "building" || !r ? "loading…" : r.state, LABEL_W + 6, y + BAR_H / 2 + 1);
        continue;
      }
      const n = r.compute.length;
      const x0 = X(got.ws);
      const bw = (X(got.we) - x0) / n;
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, y, plotW, ROW_H);
      ctx.clip();
      for (let k = 0; k < n; k++) {
        const comp = r.compute[k];
        const comm = r.communication[k];
        if (comp < 0.005 && comm < 0.005) continue;
        const x = x0 + k * bw;
        if (x + bw < LABEL_W || x > w) continue;
        const hc = comp * BAR_H;
        const hm = comm * BAR_H;
        if (hc > 0.05) {
          ctx.fillStyle = C.compute;
          ctx.fillRect(x, y + BAR_H - hc, bw + 0.5, hc);
        }
        if (hm > 0.05) {
          ctx.fillStyle = C.communication;
          ctx.fillRect(x, y + BAR_H - hc - hm, bw + 0.5, hm);
        }
      }
      ctx.restore();
      // align "instance": the member's start of the instance (the row's time 0)
      if (m.align === "instance" && r.onCollective) {
        const xi = X(0);
        if (xi >= LABEL_W && xi <= w) {
          ctx.fillStyle = P.labelText;
          ctx.fillRect(Math.round(xi) - 1, y - 1, 2, BAR_H + 2);
        }
        marks[o.worker] = { x: Math.round(xi * 10) / 10, zero: String(r.zeroUnixNs) };
      }
      // the rank's end of the step
      ctx.fillStyle = C.step;
      for (const t of [Number(r.stepStartNs), Number(r.stepEndNs)]) if (X(t) >= LABEL_W && X(t) <= w) ctx.fillRect(Math.round(X(t)), y, 1, BAR_H);
      // the critical path over the row
      for (const s of segs.current.get(o.worker) ?? []) {
        const x0 = Math.max(LABEL_W, X(Number(s.startNs)));
        const x1 = Math.min(w, X(Number(s.endNs)));
        if (x1 < LABEL_W || x0 > w) continue;
        ctx.globalAlpha = 0.3;
        ctx.fillStyle = "#ffb300";
        ctx.fillRect(x0, y, Math.max(1, x1 - x0), BAR_H);
        ctx.globalAlpha = 1;
        ctx.fillStyle = critColor(s.kind);
        ctx.fillRect(x0, y, Math.max(1, x1 - x0), 2);
        drawn.current.critical++;
      }
      drawn.current.rows++;
    }
    // the members' starts drawn, for the page's tests and tools (px from the canvas's left, the row's time 0)
    canvas.dataset.instanceStarts = m.align === "instance" ? JSON.stringify(marks) : "";
    // ruler: time from each row's start of the step
    ctx.fillStyle = P.rulerBg;
    ctx.fillRect(0, 0, w, RULER_H);
    ctx.fillStyle = P.rulerText;
    const from =
      m.align === "clock"
        ? "from the first row's step start"
        : m.align === "collective" && m.alignKind
          ? `from each rank's first ${m.alignKind.replace(/_/g, " ")}`
          : m.align === "instance" && m.alignKind
            ? `from each member's ${m.alignKind.replace(/_/g, " ")}`
            : "from each rank's step start";
    ctx.fillText(fitText(ctx, from, LABEL_W - 8), 6, RULER_H / 2);
    const stepNs = niceStep((we - ws) / Math.max(1, plotW / 110));
    ctx.fillStyle = P.tick;
    for (let t = Math.ceil(ws / stepNs) * stepNs; t <= we; t += stepNs) {
      const x = Math.round(X(t));
      ctx.fillRect(x, RULER_H - 6, 1, 6);
      const label = rulerLabel(t, stepNs, Math.max(Math.abs(ws), Math.abs(we)));
      if (x + 3 + ctx.measureText(label).width > w) continue; // a label the canvas's edge would cut: its tick only
      drawn.current.ruler.push(label);
      ctx.fillStyle = P.rulerText;
      ctx.fillText(label, x + 3, RULER_H / 2);
      ctx.fillStyle = P.tick;
    }
    ctx.fillStyle = P.edge;
    ctx.fillRect(0, RULER_H - 1, w, 1);
    ctx.fillRect(LABEL_W - 1, RULER_H, 1, h - RULER_H);
  };
  const redraw = useEvent(() => {
    if (!frame.current) frame.current = requestAnimationFrame(draw);
  });
  useEffect(redraw);
  useEffect(() => {
    const c = canvasRef.current;
    const ro = new ResizeObserver(redraw);
    if (c) ro.observe(c);
    return () => {
      ro.disconnect();
      if (frame.current) cancelAnimationFrame(frame.current);
    };
  }, [redraw]);
  useEffect(() => {
    // the pages of the rows in view once the canvas has its height
    if (meta) for (const p of wanted()) loadPage(p, gen.current);
  }, [meta, viewH, wanted, loadPage]);

  useEffect(() => {
    window.__tbppCompact = {
      order: () => (metaRef.current?.order ?? []).map((o) => o.worker),
      visibleRows: () => {
        const m = metaRef.current;
        const el = scrollRef.current;
        if (!m || !el) return [];
        const top = el.scrollTop;
        const h = el.clientHeight - RULER_H;
        const first = Math.ceil(top / ROW_H);
        const last = Math.floor((top + h) / ROW_H) - 1;
        return m.order.slice(first, Math.max(first, last + 1)).map((o) => o.worker);
      },
      drawnRows: () => drawn.current.rows,
      labels: () => drawn.current.labels,
      loadedRows: () => [...rows.current.values()].filter((r) => r.row.state === "" && r.row.compute.length > 0).length,
      view: () => view.current,
      windowOf: (i: number) => {
        const got = rows.current.get(i);
        return got ? { start: got.ws, end: got.we } : null;
      },
      communication: (i: number) => [...(rows.current.get(i)?.row.communication ?? [])],
      labelW: LABEL_W,
      ruler: () => [...drawn.current.ruler],
      expanded: () => expandedRef.current,
      critical: () => drawn.current.critical,
      rowH: ROW_H,
      rowsTop: RULER_H,
      step: () => Number(metaRef.current?.step ?? -1),
      align: () => metaRef.current?.align ?? "",
    };
  }, []);

  // ------------------------------------------------------------------ pointer
  const rowAt = (e: MouseEvent): number => {
    const c = canvasRef.current;
    const m = metaRef.current;
    if (!c || !m) return -1;
    const b = c.getBoundingClientRect();
    const y = e.clientY - b.top;
    if (y < RULER_H) return -1;
    const i = Math.floor((y - RULER_H + (scrollRef.current?.scrollTop ?? 0)) / ROW_H);
    return i >= 0 && i < m.order.length ? i : -1;
  };
  // zoom (Ctrl/Alt/⌘+wheel around the pointer) and pan (Shift+wheel, a horizontal wheel): drawn at once
  // from the bins at hand, the rows in view asked for again once it settles
  const refetch = () => {
    window.clearTimeout(zoomTimer.current);
    zoomTimer.current = window.setTimeout(() => {
      gen.current++;
      pages.current = new Map();
      for (const p of wanted()) loadPage(p, gen.current);
    }, 150);
  };
  const setView = (start: number, end: number) => {
    if (!(end - start >= 1000)) return;
    view.current = { start, end };
    redraw();
    refetch();
  };
  const onWheel = (e: WheelEvent) => {
    const c = canvasRef.current;
    const v = view.current;
    if (!c || !v) return;
    const b = c.getBoundingClientRect();
    const plotW = Math.max(1, b.width - LABEL_W);
    if (e.ctrlKey || e.metaKey || e.altKey) {
      e.preventDefault();
      const f = Math.pow(1.0018, e.deltaY);
      const at = v.start + (Math.max(0, e.clientX - b.left - LABEL_W) / plotW) * (v.end - v.start);
      setView(at - (at - v.start) * f, at + (v.end - at) * f);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      const d = (((e.shiftKey ? e.deltaY : e.deltaX) / 800) * (v.end - v.start));
      setView(v.start + d, v.end + d);
    }
  };
  useEffect(() => {
    const c = canvasRef.current;
    if (!c) return;
    c.addEventListener("wheel", onWheel, { passive: false });
    return () => c.removeEventListener("wheel", onWheel);
  });
  const fitStep = () => {
    const m = metaRef.current;
    if (m) setView(Number(m.windowStartNs), Number(m.windowEndNs));
  };

  /** The bin under the pointer of row i: its time (ns of the row's time) and its index; null outside the bins. */
  const binAt = (e: MouseEvent, i: number): { t: number; k: number } | null => {
    const c = canvasRef.current;
    const got = rows.current.get(i);
    const v = view.current;
    if (!c || !got || !v || !got.row.compute.length) return null;
    const b = c.getBoundingClientRect();
    const x = e.clientX - b.left;
    if (x < LABEL_W) return null;
    const t = v.start + ((x - LABEL_W) / Math.max(1, b.width - LABEL_W)) * (v.end - v.start);
    const k = Math.floor(((t - got.ws) / Math.max(1, got.we - got.ws)) * got.row.compute.length);
    return k >= 0 && k < got.row.compute.length ? { t, k } : null;
  };

  const clicked = useRef(-1);
  const onClick = (e: MouseEvent) => {
    const i = rowAt(e);
    const m = metaRef.current;
    if (i < 0 || !m) return;
    const r = rows.current.get(i)?.row;
    const bin = binAt(e, i);
    if (r && r.state === "" && bin && r.communication[bin.k] >= 0.5) {
      // a communication bin: every row on that collective instance (the server finds it from the rank and the time)
      setPicked({ worker: m.order[i].worker, at: String(r.zeroUnixNs + BigInt(Math.round(bin.t))) });
      return;
    }
    clicked.current = i;
    const off = r && r.state === "" ? Number(r.originOffsetNs) : NaN;
    const v = view.current ?? { start: Number(m.windowStartNs), end: Number(m.windowEndNs) };
    props.onToggle(m.order[i].worker, Number.isFinite(off) ? `${Math.round(off + v.start)},${Math.round(off + v.end)}` : "");
  };
  useEffect(() => {
    // the row clicked stays in view when the rows get shorter (its lanes shown under them)
    const el = scrollRef.current;
    const i = clicked.current;
    if (!el || i < 0) return;
    const y = i * ROW_H;
    if (y < el.scrollTop || y + ROW_H > el.scrollTop + viewH - RULER_H) el.scrollTop = Math.max(0, y - 2 * ROW_H);
    redraw();
  }, [viewH, redraw]);
  const onMove = (e: MouseEvent) => {
    const el = hoverRef.current;
    const c = canvasRef.current;
    const m = metaRef.current;
    if (!el || !c || !m) return;
    const i = rowAt(e);
    const b = c.getBoundingClientRect();
    const x = e.clientX - b.left;
    const got = i >= 0 ? rows.current.get(i) : undefined;
    const r = got?.row;
    const v = view.current;
    if (i >= 0 && x < LABEL_W) {
      // the label column: the row's full label
      const full = fullLabel(m.order[i]);
      c.title = full;
      el.textContent = full;
      el.style.display = "block";
      el.style.left = `${Math.min(x + 12, b.width - 360)}px`;
      el.style.top = `${e.clientY - b.top + 14}px`;
      return;
    }
    c.title = "";
    if (i < 0 || !got || !r || !r.compute.length || !v) {
      el.style.display = "none";
      return;
    }
    const t = v.start + ((x - LABEL_W) / Math.max(1, b.width - LABEL_W)) * (v.end - v.start);
    const k = Math.floor(((t - got.ws) / Math.max(1, got.we - got.ws)) * r.compute.length);
    if (k < 0 || k >= r.compute.length) {
      el.style.display = "none";
      return;
    }
    const o = m.order[i];
    const pct = (f: number) => `${Math.round(f * 100)}%`;
    const pick = r.communication[k] >= 0.5 ? " · click: align every row on this collective" : "";
    const side = r.hostSide ? " · host side: compute = CPU operators" : "";
    el.textContent = `${props.labels.get(o.worker) || o.label || o.worker}${side} · ${fmtDur(t)} · compute ${pct(r.compute[k])} · communication ${pct(r.communication[k])} · idle ${pct(Math.max(0, 1 - r.compute[k] - r.communication[k]))}${pick}`;
    el.style.display = "block";
    el.style.left = `${Math.min(x + 12, b.width - 360)}px`;
    el.style.top = `${e.clientY - b.top + 14}px`;
  };

  const m = meta;
  const n = m?.order.length ?? 0;
  return (
    <div class="tl-compact" data-testid="timeline-compact" data-rows={n} data-step={m ? String(m.step) : ""}>
      <div class="tl-bar">
        <span class="tl-compact-title">{m ? `${n.toLocaleString()} ranks · step ${m.step} · ${m.why}` : "Compact timeline"}</span>
        {m && m.steps.length > 1 ? (
          <select value={String(m.step)} onChange={(e) => { setPicked(null); setStep(Number((e.target as HTMLSelectElement).value)); }} data-testid="timeline-compact-step" aria-label="The step shown">
            {m.steps.map((s) => (
              <option value={String(s)}>{`step ${s}`}</option>
            ))}
          </select>
        ) : null}
        <select value={align} onChange={(e) => { setPicked(null); setAlign((e.target as HTMLSelectElement).value); }} data-testid="timeline-compact-align" aria-label="How the rows are aligned">
          <option value="step">each rank on its step start</option>
          <option value="clock">one clock (the first row's step start)</option>
          <option value="collective">each rank on its first collective of a kind</option>
        </select>
        {picked && m && m.align === "instance" ? (
          <span class="tl-chip" data-testid="timeline-compact-instance" data-label={m.alignKind} data-worker={picked.worker} data-at={picked.at}
            title="Every row is on its member's start of this collective instance (one communicator, one sequence number)">
            {m.alignKind ? `aligned on ${m.alignKind.replace(/_/g, " ")}` : m.note || "no collective instance there"}
            <button class="tl-chip-x" onClick={() => setPicked(null)} data-testid="timeline-compact-instance-clear" aria-label="Back to the alignment chosen" title="Back to the alignment chosen">
              ×
            </button>
          </span>
        ) : null}
        {m && m.align === "collective" && m.alignKinds.length ? (
          <select value={m.alignKind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)} data-testid="timeline-compact-kind" aria-label="The collective the rows are aligned on">
            {m.alignKinds.map((k) => (
              <option value={k}>{`its first ${k.replace(/_/g, " ")} of the step`}</option>
            ))}
          </select>
        ) : null}
        <span class="tl-legend">
          <i style={{ background: (dark ? COMPACT_COLORS.dark : COMPACT_COLORS.light).compute }} /> {m && m.hostNote ? "compute (CPU operators)" : "compute"}
          <i style={{ background: (dark ? COMPACT_COLORS.dark : COMPACT_COLORS.light).communication }} /> communication
          <i style={{ background: (dark ? COMPACT_COLORS.dark : COMPACT_COLORS.light).idle }} /> idle
          {m?.criticalKnown ? (
            <>
              <i style={{ background: "#ffb300" }} /> critical path
            </>
          ) : null}
        </span>
        <span class="tl-tools">
          <button class="btn small" onClick={fitStep} data-testid="timeline-compact-fit" title="The whole step (Ctrl+wheel zooms, Shift+wheel pans)">
            Fit
          </button>
          <button class="btn small" onClick={props.onDetail} data-testid="timeline-compact-detail" title="Every lane of up to 32 ranks (the detailed timeline)">
            Detailed view
          </button>
        </span>
      </div>
      {error ? <Notice kind="error" testId="timeline-compact-error">{error}</Notice> : null}
      {m && m.hostNote ? (
        <Notice kind="info" testId="timeline-compact-host-note">
          {m.hostNote}
        </Notice>
      ) : null}
      {!m && !error ? <Notice kind="loading">Loading the compact timeline…</Notice> : null}
      <div class="tl-stage">
        <div class="tl-scroll" ref={scrollRef} style={{ height: `${viewH}px` }} onScroll={onScroll}>
          <canvas
            ref={canvasRef}
            class="tl-canvas tl-compact-canvas"
            style={{ height: `${viewH}px`, cursor: "pointer" }}
            data-testid="timeline-compact-canvas"
            onClick={onClick}
            onMouseMove={onMove}
            onMouseLeave={() => hoverRef.current && (hoverRef.current.style.display = "none")}
          />
          <div style={{ height: `${Math.max(0, RULER_H + n * ROW_H - viewH)}px` }} />
        </div>
        <div class="tl-hover" ref={hoverRef} data-testid="timeline-compact-hover" style={{ display: "none" }} />
      </div>
      <div class="tl-hint">Click a rank to show (or hide) its lanes below · click communication (orange) to align every row on that collective · Ctrl+wheel: zoom · Shift+wheel: pan · the bars: {m && m.hostNote ? "the host's time (CPU operators, host communication)" : "the GPU's time"} in each pixel, compute below communication</div>
    </div>
  );
}

/** The label in a row: "rank 5 ★ straggler", "rank 1 · peer", "rank 7" (without a rank: the full label's first part). */
export function shortLabel(o: { rank: number; worker: string; role: string }, full = ""): string {
  const name = o.rank >= 0 ? `rank ${o.rank}` : (full.split(" · ")[0] || o.worker);
  return o.role === "straggler" ? `${name} ★ straggler` : o.role === "peer" ? `${name} · peer` : name;
}


// ---------------------------------------------------------------- the tab: compact or detailed

/** More ranks than this: the compact view is the default. */
export const COMPACT_ABOVE = 16;

/** Whether the tab shows the compact view: tlmode says so; by default beyond COMPACT_ABOVE ranks, unless
 * the link names something of the detailed view (a window, a slice, a search, ranks, a critical path). */
export function showsCompact(ranks: number, s: TimelineState): boolean {
  if (s.tlmode === "compact") return true;
  if (s.tlmode === "detail" || ranks <= COMPACT_ABOVE) return false;
  return !s.tl && !s.tlsel && !s.tlq && !s.tlfind && !s.tlranks && !s.tlcp;
}

export function TimelineTab(props: ComponentProps<typeof Timeline>) {
  const { state } = props;
  const all = props.workers.map((w) => w.worker);
  if (!showsCompact(all.length, state)) {
    const tools = all.length > 1 ? (
      <button class="btn small" onClick={() => props.update({ tlmode: "compact", tlranks: "", tlsel: "", tl: "" } as Partial<TimelineState>)} data-testid="timeline-compact-open" title="One summary row per rank: compute, communication and idle over one step">
        Compact view
      </button>
    ) : null;
    return <Timeline {...props} tools={tools} />;
  }
  const known = new Set(all);
  const expanded = parseRankSet(state.tlranks ?? "").filter((w) => known.has(w)).slice(0, MAX_RANKS);
  const toggle = (worker: string, tl: string) => {
    const next = expanded.includes(worker) ? expanded.filter((w) => w !== worker) : [...expanded, worker].slice(-MAX_RANKS);
    // the first rank shown opens on the step the rows show (its own times); more ranks keep the view
    const view = next.length === 1 && !expanded.length ? tl : next.length ? state.tl : "";
    props.update({ tlmode: "compact", tlranks: writeRankSet(next), tlsel: "", tl: view } as Partial<TimelineState>);
  };
  return (
    <>
      <div class="panel timeline" data-testid="panel-timeline-compact">
        <CompactTimeline run={props.run} span={props.span} labels={props.labels} expanded={expanded} onToggle={toggle} maxRows={expanded.length ? 10 : undefined}
          onDetail={() => props.update({ tlmode: "detail" } as Partial<TimelineState>)} />
      </div>
      {expanded.length ? <Timeline key={expanded.join(",")} {...props} state={{ ...state, tlranks: writeRankSet(expanded) }} /> : null}
    </>
  );
}
