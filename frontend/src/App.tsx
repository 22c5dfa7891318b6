// The plugin's page: navigation (run, worker, span, unit, views, file states) and the selected panel.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Fetched, SpanKey } from "./api";
import { fetchDisplay, fetchDistributed, fetchRuns, fetchSummary, traceUrl } from "./api";
import { Notice } from "./components/ui";
import { usePolled } from "./poll";
import type { Polled } from "./poll";
import type { LabelMap } from "./labels";
import { workerLabel } from "./labels";
import { fmtBytes } from "./format";
import { AutoUnits } from "./display/DisplayTable";
import { LoadState } from "./gen/tb_paddle_profile/v1/plugin_pb";
import type { RunDistributed, RunEntry, RunList, SpanEntry, WorkerEntry } from "./gen/tb_paddle_profile/v1/plugin_pb";
import type { Summary } from "./gen/tb_paddle_profile/v1/summary_pb";
import type { Display } from "./gen/tb_paddle_profile/v1/display_pb";
import { connectHost, hostHashKeys, hostUrlData, mirrorToHost, onHostHashChange } from "./host";
import { Distributed } from "./panels/Distributed";
import { FOLD_RANKS } from "./panels/parallel/Parallel";
import { Kernels } from "./panels/Kernels";
import { Memory } from "./panels/Memory";
import { Operators } from "./panels/Operators";
import { Overview } from "./panels/Overview";
import { RankBanner } from "./panels/RankBanner";
import { TimelineTab } from "./panels/timeline/TimelineTab";
import { Compare } from "./panels/compare/Compare";
import { peersChoice, resolveChoice } from "./panels/compare/choice";
import { WhatIf } from "./panels/whatif/WhatIf";
import type { Selection } from "./state";
import { allSpans, BUSY, fingerprint, fmtElapsed, loadingSince, resolve, sortedWorkers } from "./runs";
import { Sidebar } from "./Sidebar";
import { DEFAULT_SELECTION, RUN_VIEWS, isNewView, loadUi, onUiChange, parseSelection, readHash, selectionKeys, VIEW_TITLES, writeHash } from "./state";

const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 15000;
const SUMMARY_CACHE_SIZE = 8;

/**
 * The summary named by the URL, requested at once, in parallel with the run list (which the page
 * otherwise waits for before it knows what to ask). Used by the first load of that key only.
 */
const early = new Map<string, Promise<Fetched<Summary>>>();

function prefetchSummary(sel: Selection): void {
  if (sel.run && sel.worker && sel.span && !RUN_VIEWS.includes(sel.view) && sel.view !== "timeline") {
    early.set(`${sel.run}\u0000${sel.worker}\u0000${sel.span}`, fetchSummary(sel).catch(() => ({ kind: "pending" }) as const));
  }
}

function takeSummary(key: SpanKey, signal: AbortSignal): Promise<Fetched<Summary>> {
  const id = `${key.run}\u0000${key.worker}\u0000${key.span}`;
  const hit = early.get(id);
  early.delete(id);
  return hit ?? fetchSummary(key, signal);
}

export function App() {
  // The iframe's own hash (the tab was shown before), else the TensorBoard page's link.
  const [sel, setSel] = useState<Selection>(() => {
    const pairs = window.location.hash.length > 1 ? readHash(window.location.hash) : hostHashKeys();
    loadUi(pairs);
    const initial = { ...DEFAULT_SELECTION, ...parseSelection(pairs) };
    prefetchSummary(initial);
    return initial;
  });
  const [runs, setRuns] = useState<RunList | null>(null);
  const [runsError, setRunsError] = useState("");
  const [reloads, setReloads] = useState(0);
  const lastRuns = useRef("");
  const [uiTick, setUiTick] = useState(0);
  // The view the last history entry shows, and whether the next change comes from the user (update()).
  const shown = useRef<Selection | null>(null);
  const byUser = useRef(false);

  // TensorBoard: reload button, and the selection of a shared TensorBoard link.
  useEffect(() => {
    connectHost(() => setReloads((n) => n + 1));
    if (window.location.hash.length <= 1 && Object.keys(hostHashKeys()).length === 0) {
      hostUrlData().then((data) => {
        const fromLink = parseSelection(data);
        loadUi(data);
        if (Object.keys(fromLink).length) setSel((s) => ({ ...s, ...fromLink }));
      });
    }
    // Back/Forward (our own history entries) and edited links: the hash is the state.
    const onHash = () => {
      const pairs = readHash(window.location.hash);
      loadUi(pairs);
      setSel((s) => ({ ...s, ...parseSelection(pairs) }));
    };
    window.addEventListener("hashchange", onHash);
    window.addEventListener("popstate", onHash);
    // A link pasted into TensorBoard's address bar while the tab is open: only TensorBoard's hash changes.
    // The link is the whole state (keys it leaves out take their defaults); the paste is already a
    // history entry of TensorBoard's page, so ours is only replaced. A hash without our keys (another
    // tab of TensorBoard, or "#paddle_profile" alone) leaves the tab as it is.
    const stopHost = onHostHashChange((pairs) => {
      if (!Object.keys(pairs).length) return;
      loadUi(pairs);
      const next = { ...DEFAULT_SELECTION, ...parseSelection(pairs) };
      setSel((s) => (writeHash(s) === writeHash(next) ? s : next));
    });
    const stopUi = onUiChange(() => setUiTick((n) => n + 1));
    return () => {
      window.removeEventListener("hashchange", onHash);
      window.removeEventListener("popstate", onHash);
      stopHost();
      stopUi();
    };
  }, []);

  // The run list: polled quickly while files are loading, slowly otherwise (new runs and spans appear).
  useEffect(() => {
    let alive = true;
    let timer = 0;
    const ctl = new AbortController();
    const poll = async () => {
      let r: Fetched<RunList>;
      try {
        r = await fetchRuns(ctl.signal);
      } catch {
        return;
      }
      if (!alive) return;
      let busy = true;
      if (r.kind === "ok") {
        const fp = fingerprint(r.value);
        if (fp !== lastRuns.current) {
          lastRuns.current = fp;
          setRuns(r.value);
        }
        setRunsError("");
        busy = allSpans(r.value).some((s) => BUSY.has(s.state));
      } else if (r.kind === "error") {
        setRunsError(r.message);
      }
      timer = window.setTimeout(poll, busy ? POLL_BUSY_MS : POLL_IDLE_MS);
    };
    poll();
    return () => {
      alive = false;
      ctl.abort();
      window.clearTimeout(timer);
    };
  }, [reloads]);

  // Keep the selection valid for the run list.
  useEffect(() => {
    if (!runs) return;
    const fixed = sel.view === "compare" ? resolveChoice(resolve(sel, runs), runs) : resolve(sel, runs);
    if (isNewView(fixed, sel)) setSel(fixed);
  }, [runs, sel]);

  // The selection lives in the iframe's hash (and, for sharing, in TensorBoard's own URL).
  useEffect(() => {
    const hash = writeHash(sel);
    if (window.location.hash.replace(/^#/, "") !== hash) {
      // An absolute URL: a bare "#…" would resolve against the page's <base href> and change its path.
      const url = new URL(window.location.href);
      url.hash = hash;
      // A new view chosen by the user is a history entry of its own, so Back returns to the previous
      // view inside the tab; the first resolution of the selection and the finer state only replace it.
      if (byUser.current && shown.current && shown.current.run !== "" && isNewView(shown.current, sel)) {
        window.history.pushState(null, "", url.href);
      } else {
        window.history.replaceState(window.history.state, "", url.href);
      }
    }
    byUser.current = false;
    shown.current = sel;
    mirrorToHost(selectionKeys(sel));
  }, [sel, uiTick]);

  const run = runs?.runs.find((r) => r.run === sel.run);
  const worker = run?.workers.find((w) => w.worker === sel.worker);
  const span = worker?.spans.find((s) => s.span === sel.span);
  const spanKey = { run: sel.run, worker: sel.worker, span: sel.span };

  const needsSummary = !RUN_VIEWS.includes(sel.view) && sel.view !== "timeline";
  // A file the run list reports as failed is not requested: the list carries its reason.
  const summaryKey =
    span && needsSummary && span.state !== LoadState.FAILED ? `${sel.run}\u0000${sel.worker}\u0000${sel.span}\u0000${span.fileSize}\u0000${reloads}` : null;
  const summary = usePolled<Summary>(summaryKey, (signal) => takeSummary(spanKey, signal), { cacheSize: SUMMARY_CACHE_SIZE });
  // The display model of the same rank (every table the panels draw), requested with the summary.
  const display = usePolled<Display>(summaryKey, (signal) => fetchDisplay(spanKey, undefined, signal), { cacheSize: SUMMARY_CACHE_SIZE });

  // The run's files as the run views see them: a file that changes state or size asks again.
  const runFiles = run
    ? run.workers
        .map((w) => {
          const s = w.spans.find((x) => x.span === sel.span);
          return `${w.worker}:${s?.state}:${s?.fileSize}`;
        })
        .join(",")
    : "";
  // (not before the selection has its span: a link naming only the run asked for span "" and got a 404)
  const distKey =
    run && sel.view === "distributed" && sel.span
      ? `${sel.run}\u0000${sel.span}\u0000${run.workers
          .map((w) => {
            const s = w.spans.find((x) => x.span === sel.span);
            return `${w.worker}:${s?.state}:${s?.fileSize}`; // a rewritten trace changes its size
          })
          .join(",")}\u0000${reloads}`
      : null;
  // many ranks: the view opens folded, so its per-rank tables are fetched when the details are opened
  const distPart = run && run.workers.length > FOLD_RANKS ? "summary" : "";
  const dist = usePolled<RunDistributed>(distKey && `${distKey}\u0000${distPart}`, (signal) => fetchDistributed(sel.run, sel.span, signal, distPart), { cacheSize: 4 });

  const update = (patch: Partial<Selection>) => {
    byUser.current = true;
    setSel((s) => ({ ...s, ...patch }));
  };

  return (
    <div class="app" data-testid="app">
      <Sidebar runs={runs} sel={sel} update={update} />
      <main class="main">
        <AutoUnits.Provider value={sel.auto}>
        <MainHeader sel={sel} span={span} worker={worker} traceHref={span ? traceUrl(spanKey) : undefined} />
        <div class="content">
          {runsError ? (
            <Notice kind="error" testId="runs-error">{`Could not list the runs: ${runsError}`}</Notice>
          ) : null}
          {!runs && !runsError ? <Notice kind="loading">Looking for Paddle profiler traces…</Notice> : null}
          {runs && runs.runs.length === 0 ? (
            <Notice kind="info" testId="no-runs">
              No Paddle profiler traces in this logdir. A run is a folder that holds files named
              {" "}<code>*.paddle_trace.json</code> (or <code>.json.gz</code>), as written by
              {" "}<code>paddle.profiler.export_chrome_tracing</code>.
            </Notice>
          ) : null}
          {sel.view === "compare" && runs && runs.runs.length ? <Compare runs={runs} sel={sel} update={update} reloads={reloads} /> : run && span ? <PanelArea sel={sel} run={run} span={span} summary={summary} display={display} dist={dist} update={update} runKey={`${runFiles}\u0000${reloads}`} /> : null}
        </div>
        </AutoUnits.Provider>
      </main>
    </div>
  );
}

function PanelArea({
  sel,
  run,
  span,
  summary,
  display,
  dist,
  update,
  runKey,
}: {
  sel: Selection;
  run: RunEntry;
  span: SpanEntry;
  summary: Polled<Summary> | null;
  display: Polled<Display> | null;
  dist: Polled<RunDistributed> | null;
  update: (p: Partial<Selection>) => void;
  /** Changes when a file of the run changes state or size (the run views fetch again). */
  runKey: string;
}) {
  const workers = useMemo(() => sortedWorkers(run), [run]);
  const labels = useMemo<LabelMap>(() => new Map(workers.filter((w) => w.label).map((w) => [w.worker, w.label])), [workers]);
  if (sel.view === "distributed") {
    if (dist?.status === "error") return <Notice kind="error" testId="panel-error">{dist.message}</Notice>;
    const data = dist?.status === "ok" ? dist.value : dist?.status === "pending" ? dist.partial : undefined;
    if (!data) return <Notice kind="loading">Loading every rank of this span…</Notice>;
    return (
      <>
        {dist?.status === "pending" ? <Notice kind="loading" testId="panel-pending">Some ranks are still being parsed; they appear as they are ready.</Notice> : null}
        <Distributed data={data} unit={sel.unit} current={sel.worker} labels={labels} onOpenRank={(worker) => update({ worker, view: "overview" })} />
      </>
    );
  }
  if (sel.view === "whatif") {
    return (
      <WhatIf
        run={sel.run}
        span={sel.span}
        dataKey={`${sel.run}\u0000${sel.span}\u0000${runKey}`}
        unit={sel.unit}
        workers={workers}
        labels={labels}
        onOpenRank={(worker) => update({ worker, view: "overview" })}
        onTimeline={(worker, tlcp) => update({ view: "timeline", worker, tlcp, tl: "", tlsel: "", tlq: "", tlfind: "" })}
      />
    );
  }
  // A failed file has no timeline: its reason is shown instead of a request that can only fail (and
  // would log a console error).
  if (sel.view === "timeline" && span.state !== LoadState.FAILED) {
    return (
      <TimelineTab
        run={sel.run}
        span={sel.span}
        worker={sel.worker}
        workers={workers}
        labels={labels}
        state={sel}
        traceHref={traceUrl({ run: sel.run, worker: sel.worker, span: sel.span })}
        update={(p) => update(p as Partial<Selection>)}
      />
    );
  }
  if (span.state === LoadState.FAILED) {
    return (
      <Notice kind="error" testId="panel-error">
        {`This file could not be read. ${span.error || span.fileName}`}
      </Notice>
    );
  }
  if (!summary || summary.status === "loading") return <Notice kind="loading">Loading the summary…</Notice>;
  if (summary.status === "pending") {
    const file = `${span.fileName} (${fmtBytes(Number(span.fileSize))})`;
    const text =
      span.state === LoadState.GROWING
        ? `${file} is still being written; it is read again once it stops changing.`
        : span.state === LoadState.QUEUED
          ? `${file} is waiting for a parsing process…`
          : `Parsing ${file}, for ${fmtElapsed(loadingSince(span))}…`;
    return (
      <Notice kind="loading" testId="panel-pending">
        {text}
      </Notice>
    );
  }
  if (summary.status === "error") return <Notice kind="error" testId="panel-error">{summary.message}</Notice>;
  if (display?.status === "error") return <Notice kind="error" testId="panel-error">{display.message}</Notice>;
  if (!display || display.status !== "ok") return <Notice kind="loading">Loading the tables…</Notice>;
  const s = summary.value;
  const d = display.value;
  const key = { run: sel.run, worker: sel.worker, span: sel.span };
  // the banner above every page of the rank, at the same place whichever page: asked for once per rank
  const banner = (
    <RankBanner
      spanKey={key}
      unit={sel.unit}
      runKey={runKey}
      onRank={(rank) => {
        const w = run.workers.find((x) => x.rank === rank);
        if (w) update({ worker: w.worker });
      }}
      onComparePeers={() => update(peersChoice(sel))}
    />
  );
  return (
    <>
      {banner}
      <RankPanel sel={sel} summary={s} display={d} spanKey={key} update={update} />
    </>
  );
}

/** The rank's page (Overview, Operators, Kernels, Memory). */
function RankPanel({ sel, summary: s, display: d, spanKey: key, update }: { sel: Selection; summary: Summary; display: Display; spanKey: SpanKey; update: (p: Partial<Selection>) => void }) {
  switch (sel.view) {
    case "operators":
      return <Operators summary={s} display={d} spanKey={key} unit={sel.unit} find={sel.find} onTimeline={(name) => update({ view: "timeline", tlq: name, tlfind: sel.worker || "1", tl: "", tlsel: "" })} />;
    case "kernels":
      return <Kernels summary={s} display={d} spanKey={key} unit={sel.unit} find={sel.find} onTimeline={(name) => update({ view: "timeline", tlq: name, tlfind: sel.worker || "1", tl: "", tlsel: "" })} />;
    case "memory":
      return <Memory summary={s} display={d} spanKey={key} unit={sel.unit} />;
    default:
      return (
        <Overview
          summary={s}
          display={d}
          spanKey={key}
          unit={sel.unit}
          onOpen={(view) => update({ view })}
        />
      );
  }
}

function MainHeader({ sel, span, worker, traceHref }: { sel: Selection; span?: SpanEntry; worker?: WorkerEntry; traceHref?: string }) {
  return (
    <header class="main-head">
      <div class="crumbs" data-testid="crumbs">
        <span class="crumb-view">{VIEW_TITLES[sel.view]}</span>
        {sel.view === "compare" ? <span class="crumb">{`${sel.brun} vs ${sel.crun}`}</span> : sel.run ? <span class="crumb keep" data-testid="crumb-run" title={sel.run}>{sel.run}</span> : null}
        {worker && !RUN_VIEWS.includes(sel.view) ? <span class="crumb worker" data-testid="crumb-worker" title={workerLabel(worker)}>{workerLabel(worker)}</span> : null}
        {span && sel.view !== "compare" ? <span class="crumb keep" data-testid="crumb-span">{`span ${span.span}`}</span> : null}
      </div>
      <div class="head-tools">
        {span && !RUN_VIEWS.includes(sel.view) ? (
          <span class="file" title={span.fileName}>
            {span.fileName}
          </span>
        ) : null}
        {span && !RUN_VIEWS.includes(sel.view) && span.cached ? <span class="badge" data-testid="head-cached">cached</span> : null}
        {traceHref && !RUN_VIEWS.includes(sel.view) ? (
          <a class="btn" href={traceHref} download={span?.fileName} data-testid="download-trace" title="The raw trace, for Perfetto or chrome://tracing">
            Download trace
          </a>
        ) : null}
      </div>
    </header>
  );
}
