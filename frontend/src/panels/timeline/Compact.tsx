// The compact multi-rank timeline: one thin row per rank over one step (route timeline_compact), each
// row the GPU's time per pixel bin split into compute, communication and idle, in the order the server
// recommends (the straggler and its role peers first), the step's critical path over the rows it passes
// through. Rows are drawn on one canvas and fetched page by page as they scroll into view, so a
// 1,024-rank run costs what is on screen. A click on a row shows that rank's full lanes (the detailed
// timeline, Timeline.tsx) under the rows; a click on a communication bin aligns every row on that
// collective instance (the server finds the instance and each member's start: align "instance").
import { useEffect, useRef, useState } from "preact/hooks";
import { Notice } from "../../components/ui";
import type { CompactRank, CompactRow, CompactSegment, TimelineCompact } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { isDark, onDarkChange } from "../../host";
import { fitCanvas } from "./canvas";
import type { DrawnLabel } from "./compactDraw";
import { COMPACT_COLORS, drawCompact, LABEL_W, ROW_H } from "./compactDraw";
import { CRIT_BAND } from "./critical";
import { fetchCompact, fmtDur } from "./data";
import type { CompactInstance } from "./data";
import { RULER_H } from "./layout";
import { pollEach } from "../../poll";
import { useEvent } from "../../hooks";

/** Rows asked for at once (the route opens their indexes); pages are asked as they scroll into view. */
const PAGE = 64;

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

  /** Page `page` of the rows (its bins over the view), asked again while the route answers 202 or rows of it
   * are still being indexed (each answer drawn as it comes), until the rows' generation `g` is not the current one. */
  const loadPage = useEvent(async (page: number, g: number) => {
    if (pages.current.get(page)) return;
    pages.current.set(page, "loading");
    const ask = () => {
      const v = view.current;
      return fetchCompact({
        run, span, bins: bins.current, offset: page * PAGE, limit: PAGE, step, align: picked ? "instance" : align,
        kind: !picked && align === "collective" ? kind : undefined, instance: picked ?? undefined, start: v?.start, end: v?.end,
      });
    };
    // the run's ranks still loading (no order yet), or rows still being indexed: asked again a little later
    const unfinished = (got: Awaited<ReturnType<typeof ask>>) => got.kind === "ok" && (got.pending || (got.value.order.length > 0 && got.value.rows.some((r) => r.state === "building")));
    const take = (got: Awaited<ReturnType<typeof ask>>) => {
      if (got.kind === "error") {
        pages.current.delete(page);
        setError(got.message);
        return;
      }
      const m = got.value;
      if (!m.order.length) {
        if (!got.pending) {
          pages.current.delete(page);
          setError(m.note || "no ranks in this run and span");
        }
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
      if (!unfinished(got)) {
        // every row indexed: the page's critical path
        const fresh = new Set(m.critical.map((s) => s.worker));
        for (const w of fresh) segs.current.set(w, []);
        for (const s of m.critical) segs.current.get(s.worker)!.push(s);
        pages.current.set(page, "done");
      }
      redraw();
    };
    await pollEach(ask, unfinished, take, { tries: Infinity, stale: () => g !== gen.current });
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
    if (!canvas) return;
    const fitted = fitCanvas(canvas);
    if (!fitted) return;
    drawn.current = drawCompact(canvas, fitted.ctx, fitted.w, fitted.h, {
      meta: metaRef.current,
      top: scrollRef.current?.scrollTop ?? 0,
      view: view.current,
      rows: rows.current,
      segs: segs.current,
      expanded: expandedRef.current,
      dark: darkRef.current,
      fullName,
      fullLabel,
    });
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
              <i style={{ background: CRIT_BAND }} /> critical path
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
