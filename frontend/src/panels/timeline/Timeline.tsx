// The detailed timeline: every rank of a run on one canvas, its level of detail chosen by the server.
//
// The page keeps one decoded window (a little wider than the view, at ~2 samples per pixel) and draws it
// at whatever zoom the view is at; after each zoom or pan settles it asks for the window that is in view.
// Nothing here is a DOM node per slice. This component wires the hooks together and lays the page out:
// ranks.tsx (which ranks), useWindow (the data), useViewport (the view, the canvas's height), useFolds,
// useSelection, useSearch, usePointer, and cards.tsx's small components.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Notice } from "../../components/ui";
import type { WorkerEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { TimelineInstance } from "../../gen/tb_paddle_profile/v1/timeline_pb";
import { isDark, onDarkChange } from "../../host";
import { useEvent } from "../../hooks";
import { Details, FoldButton, InstanceCard, RangeSums, splitSel, trackIds, TrackList } from "./cards";
import type { Stats } from "./core";
import { parseWindow, useTimelineRefs } from "./core";
import { CriticalBar, critView, drawCritical, useCriticalPath } from "./critical";
import type { Decoded } from "./data";
import { checkWindowTrace, fmtDur, windowTraceUrl } from "./data";
import { fitCanvas } from "./canvas";
import type { Marks, View } from "./draw";
import { drawTimeline } from "./draw";
import type { Layout } from "./layout";
import { LABEL_W, layout, RULER_H, writeFolds } from "./layout";
import { MAX_RANKS, RankBar, useRankChoice, writeRankSet } from "./ranks";
import "./timeline.css";
import { useFolds } from "./useFolds";
import { usePointer } from "./usePointer";
import { useSearch } from "./useSearch";
import { useSelection } from "./useSelection";
import { DETAILS_H, useCanvasHeight, useViewport } from "./useViewport";
import { useWindow } from "./useWindow";

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

export function Timeline(props: Props) {
  const { run, span, update } = props;
  const { all, explicit, fallback, chosen, open } = useRankChoice(run, span, props.workers, props.state.tlranks ?? "", props.worker);
  const openKey = `${run}|${open}`;
  const t = useTimelineRefs(props.state.tl, props.state.tlq);
  t.chosen.current = chosen;
  const [downloadError, setDownloadError] = useState(""); // a refused "Window JSON", until the view changes
  const [flows, setFlows] = useState(false);
  // the critical path across ranks (critical.tsx): its segments drawn over the ranks, a jump to them
  const crit = useCriticalPath(run, span, props.state.tlcp ?? "", props.workers);
  const critRef = useRef(crit);
  critRef.current = crit;
  const [dark, setDark] = useState(isDark());
  useEffect(() => onDarkChange(setDark), []);

  // ------------------------------------------------------------------ drawing
  const frame = useRef(0);
  const draw = () => {
    frame.current = 0;
    const canvas = t.canvas.current;
    const v = t.view.current;
    if (!canvas || !v) return;
    const t0 = performance.now();
    const fitted = fitCanvas(canvas);
    if (!fitted) return;
    const { ctx, w, h } = fitted;
    const top = t.scroll.current?.scrollTop ?? 0;
    const d = t.data.current;
    const drawn = drawTimeline(ctx, w, h, top, d, t.lay.current, v, t.marks.current);
    // the critical path over the ranks it passes through
    const c = critRef.current;
    const segs = c.on && d ? c.segments(d.base) : [];
    const got = segs.length ? drawCritical(ctx, w, h, top, t.lay.current, v, segs, c.focus) : { drawn: 0, workers: [] };
    window.__tbppCritical = { status: c.status, step: c.step, steps: c.steps, segments: segs, drawn: got.drawn, drawnWorkers: got.workers };
    // the fold buttons scroll with the tracks; none of them shows (or takes a click) over the ruler
    if (t.foldBox.current) t.foldBox.current.style.clipPath = `inset(${top + RULER_H}px 0 0 0)`;
    const s = t.stats.current;
    s.frames++;
    s.arrows = drawn.arrows;
    s.memberFlows = drawn.memberFlows;
    canvas.dataset.memberFlows = String(drawn.memberFlows);
    s.ruler = drawn.ruler;
    s.folded = drawn.folded;
    s.drawMs = performance.now() - t0;
    if (!s.firstDrawAt && d && d.items > 0) s.firstDrawAt = performance.now();
  };
  const redraw = useEvent(() => {
    if (!frame.current) frame.current = requestAnimationFrame(draw);
  });

  const win = useWindow(t, run, span, update, redraw);
  const data = win.data;
  const viewport = useViewport(t, () => {
    setDownloadError("");
    redraw();
    win.scheduleFetch();
  });
  const { folds, now: foldsNow, toggleRank, toggleTrack, collapseAll, expandAll, reveal } = useFolds(t, props.state.tlfold ?? "", update);
  const roles = fallback?.roles; // the straggler and its role peers, named in their headers
  // laid out again when the ranks, their track counts or states change, not for every new window of the same ranks
  const dataShape = data && data.ranks.map((r) => r.worker + r.tracks.length + r.state).join(",");
  // eslint-disable-next-line react-hooks/exhaustive-deps -- `data` is read for its shape (dataShape) only: a new window of the same ranks keeps the layout
  const lay = useMemo<Layout>(() => layout(data, folds, props.labels, roles), [dataShape, folds, props.labels, roles]);
  t.lay.current = lay;
  t.data.current = data;
  t.marks.current.flows = flows;
  t.marks.current.dark = dark;
  const sel = useSelection(t, { run, span, all, update, setError: win.setError, reveal, focusOn: viewport.focusOn, redraw });
  const { detail, instance, range, select, deselect } = sel;
  const search = useSearch(t, { run, span, worker: props.worker, tlq: props.state.tlq, building: win.buildingNow, update, setError: win.setError, select });
  const hasDetails = !!(detail || instance || range);
  const { viewH, fitH } = useCanvasHeight(t, hasDetails);
  /** "rank 5" (else the run's label of that worker, else its name): what a link to a table names. */
  const rankName = (worker: string): string => {
    const w = props.workers.find((x) => x.worker === worker);
    if (w && w.rank >= 0) return `rank ${w.rank}`;
    return props.labels.get(worker) || worker;
  };
  const pointer = usePointer(t, {
    viewport,
    redraw,
    toggleRank,
    select,
    deselect,
    sumBox: sel.sumBox,
    shown: () => ({ range: !!range, detail: !!detail }),
    clearRange: sel.clearRange,
    rankName,
  });

  // the canvas resized: drawn again, and the window asked for again when it needs more detail
  const onResize = useEvent(() => {
    redraw();
    win.scheduleFetch();
  });
  useEffect(() => {
    window.__tbppTimeline = Object.assign(t.stats.current, {
      view: () => t.view.current!,
      data: () => t.data.current,
      rows: () => t.lay.current.rows,
      folds: () => writeFolds(foldsNow()),
      workers: () => t.chosen.current,
      selected: () => t.marks.current.selected,
      box: () => t.marks.current.box,
      scrollTop: () => t.scroll.current?.scrollTop ?? 0,
      viewH: () => t.viewH.current,
      instance: sel.instanceNow,
    });
    const ro = new ResizeObserver(onResize);
    if (t.canvas.current) ro.observe(t.canvas.current);
    return () => {
      ro.disconnect();
      if (frame.current) cancelAnimationFrame(frame.current);
    };
  }, [onResize, t, sel.instanceNow, foldsNow]);

  // First load, and again when the run or span changes (the URL's window and search as they are then).
  const firstLoad = useEvent(() => {
    win.clear();
    sel.clear();
    t.view.current = parseWindow(props.state.tl);
    t.autoView.current = t.view.current === null;
    t.openedOn.current = "";
    win.load();
    if (props.state.tlq && props.state.tlfind) search.run(props.state.tlq, true, props.state.tlfind);
  });
  useEffect(() => {
    firstLoad();
  }, [run, span, firstLoad]);

  const { scheduleFetch } = win;
  useEffect(() => {
    scheduleFetch(true);
  }, [flows, search.active, scheduleFetch]);

  // The critical path's jump: once per tlcp value, to the segment it names or the step's whole path.
  const critJumped = useRef("");
  const critJump = useEvent(() => {
    const key = `${run}|${span}|${props.state.tlcp ?? ""}`;
    if (!crit.on) critJumped.current = ""; // turned on again later: it jumps again
    if (!crit.on || crit.status !== "ok" || !data || critJumped.current === key) return;
    const at = critView(crit.segments(data.base), crit.focus);
    if (!at) return;
    critJumped.current = key;
    viewport.setView(at);
    // and the rank: the one the link named (the current one when it is on the path), else the path's first
    const segs = crit.segments(data.base);
    const named = segs.find((x) => x.index === crit.focus)?.worker;
    const target = named ?? (crit.workers.includes(props.worker) ? props.worker : crit.workers[0]);
    const header = t.lay.current.rows.find((r) => r.kind === "rank" && r.worker === target);
    if (header && t.scroll.current) {
      t.openedOn.current = openKey; // the opening scroll to the current rank is done
      t.scroll.current.scrollTop = header.y;
    }
  });
  const dataBase = data?.base;
  useEffect(() => {
    critJump();
  }, [crit.on, crit.status, crit.step, crit.focus, dataBase, props.state.tlcp, critJump]);

  // Another set of ranks: the same window (and base), those ranks.
  const chosenKey = chosen.join("\u0000");
  const firstSet = useRef(true);
  const ranksChanged = useEvent(() => {
    if (firstSet.current) {
      firstSet.current = false;
      return;
    }
    win.load();
    sel.reloadInstance(); // its members' slices on the ranks now shown
  });
  useEffect(() => {
    ranksChanged();
  }, [chosenKey, ranksChanged]);

  // Bring a row into the canvas: a selected slice's lane (when off screen), else, once when the
  // timeline opens, the current rank's header at the top.
  useEffect(() => {
    const el = t.scroll.current;
    if (!el || !data) return;
    // the height the canvas is about to take (a selection brings the details panel, which takes its height)
    const h = fitH() ?? viewH;
    const visible = (y: number, rh: number) => y >= el.scrollTop && y + rh <= el.scrollTop + h - RULER_H;
    const want = t.scrollTo.current;
    // a selection brings the details panel: scrolled once this render has it (an effect of an earlier
    // render can run first) and the canvas has its new height (the scroll box clamps to its old height)
    if (want && (!detail || !t.below.current || Math.abs(h - viewH) > 1)) return;
    if (want) {
      const row = lay.rows.find((r) => r.worker === want.worker && ((r.kind === "lane" && r.track === want.track && r.depth === want.depth) || (r.kind === "fold" && r.track === want.track)));
      if (row) {
        t.scrollTo.current = null;
        t.openedOn.current = openKey;
        if (!visible(row.y, row.h)) {
          el.scrollTop = Math.max(0, row.y - Math.round((h - RULER_H) / 3));
          redraw();
        }
      }
      return;
    }
    if (t.openedOn.current === openKey) return;
    const header = lay.rows.find((r) => r.kind === "rank" && r.worker === open);
    if (!header) return;
    t.openedOn.current = openKey;
    if (!props.state.tlsel && !props.state.tlfind) {
      el.scrollTop = header.y;
      redraw();
    }
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

  const d = data;
  const v = t.view.current;
  const selWorker = detail?.worker ?? props.worker;
  const contentH = lay.height + RULER_H;
  const { found, matchAt, step } = search;
  return (
    <div class="panel timeline" data-testid="panel-timeline">
      <div class="tl-bar">
        <form
          class="tl-search"
          onSubmit={(e) => {
            e.preventDefault();
            search.run(search.query, true);
          }}
        >
          <input class="search" type="search" placeholder="Search slices by name (Enter)" value={search.query} onInput={(e) => search.setQuery((e.target as HTMLInputElement).value)} data-testid="timeline-search" aria-label="Search the timeline" />
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
        <CriticalBar crit={crit} shown={chosen} max={MAX_RANKS} onTlcp={(tlcp) => update({ tlcp } as Partial<TimelineState>)} onShowRanks={(ws) => update({ tlranks: writeRankSet(ws) })} />
        <span class="tl-tools">
          {props.tools}
          <button class="btn small" onClick={() => viewport.zoom(0.5)} data-testid="timeline-zoom-in" title="Zoom in (W)">+</button>
          <button class="btn small" onClick={() => viewport.zoom(2)} data-testid="timeline-zoom-out" title="Zoom out (S)">−</button>
          <button class="btn small" onClick={viewport.reset} data-testid="timeline-reset" title="Whole span (0)">Fit</button>
          <button class="btn small" onClick={collapseAll} disabled={!d || d.ranks.every((r) => folds.ranks.has(r.worker))} data-testid="timeline-collapse-all" title="Fold every rank to its header">
            Collapse all
          </button>
          <button class="btn small" onClick={expandAll} disabled={!folds.ranks.size && !folds.tracks.size} data-testid="timeline-expand-all" title="Unfold every rank and track">
            Expand all
          </button>
          {v ? (
            <a class="btn small" href={windowTraceUrl(run, span, selWorker, v.start, v.end, t.base.current)} download onClick={downloadWindow} data-testid="timeline-download-window" title={`The slices of ${selWorker} in this window, as Chrome-trace JSON (Perfetto, chrome://tracing)`}>
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
          set={(ws) => update({ tlranks: ws === null ? "" : writeRankSet(ws) })}
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
      {win.error ? <Notice kind="error" testId="timeline-error">{win.error}</Notice> : null}
      {downloadError ? <Notice kind="error" testId="timeline-download-error">{downloadError}</Notice> : null}
      {win.building ? <Notice kind="loading" testId="timeline-building">{`Building the timeline index of ${win.building} rank${win.building > 1 ? "s" : ""}…`}</Notice> : null}
      {!d && !win.error ? <Notice kind="loading">Loading the timeline…</Notice> : null}
      <div class="tl-stage">
      <div class="tl-scroll" ref={t.scroll} style={{ height: `${viewH}px` }} onScroll={redraw}>
        <canvas
          ref={t.canvas}
          class="tl-canvas"
          style={{ height: `${viewH}px` }}
          tabIndex={0}
          data-testid="timeline-canvas"
          data-window={v ? `${Math.round(v.start)},${Math.round(v.end)}` : ""}
          data-rows={lay.rows.length}
          data-visible-tracks={trackIds(lay.rows, "lane")}
          data-folded-tracks={trackIds(lay.rows, "fold")}
          data-folded-ranks={lay.rows.filter((r) => r.kind === "rank" && r.folded).map((r) => r.worker).join(",")}
          onMouseDown={pointer.onMouseDown}
          onMouseMove={pointer.onMouseMove}
          onMouseLeave={pointer.onMouseLeave}
        />
        <div style={{ height: `${Math.max(0, contentH - viewH)}px` }} />
        <div class="tl-folds" ref={t.foldBox} style={{ width: `${LABEL_W - 1}px`, height: `${lay.height + RULER_H}px` }}>
          {lay.rows.map((row) => (row.first ? <FoldButton row={row} onToggle={() => (row.kind === "rank" ? toggleRank(row.worker) : toggleTrack(row.worker, row.track))} /> : null))}
        </div>
      </div>
      <div class="tl-hover" ref={t.hover} data-testid="timeline-hover" style={{ display: "none" }} />
      </div>
      <TrackList data={d} folds={folds} labels={props.labels} />
      {hasDetails ? (
      <div class="tl-below" ref={t.below} style={{ height: `${DETAILS_H}px` }} data-testid="timeline-below">
        {detail ? (
          <Details e={detail} rankName={rankName(detail.worker)} onJump={(w, id) => select(w, id, true)} onTable={(view, name) => update({ view, worker: detail.worker, find: name })} onClose={deselect} />
        ) : null}
        {instance && instance.matched ? (
          <InstanceCard inst={instance} shown={chosen} rankName={rankName} canAdd={chosen.length < MAX_RANKS} onJump={(w, id) => select(w, id, true)} onShow={sel.showMembers} />
        ) : null}
        {range ? <RangeSums r={range} onClose={sel.clearRange} /> : null}
      </div>
      ) : null}
    </div>
  );
}
