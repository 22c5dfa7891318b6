// The plugin's page: navigation (run, worker, span, unit, views, file states) and the selected panel.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Fetched, SpanKey } from "./api";
import { fetchDisplay, fetchDistributed, fetchRuns, fetchSummary, traceUrl } from "./api";
import { Picker } from "./components/Picker";
import type { PickItem } from "./components/Picker";
import { Notice, Segmented } from "./components/ui";
import { usePolled } from "./poll";
import type { Polled } from "./poll";
import type { LabelMap } from "./labels";
import { workerLabel } from "./labels";
import { fmtBytes } from "./format";
import { UNIT_CHOICES } from "./display/cells";
import type { UnitChoice } from "./display/cells";
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
import { TimelineTab } from "./panels/timeline/Compact";
import { Compare } from "./panels/compare/Compare";
import { peersChoice, resolveChoice } from "./panels/compare/choice";
import { WhatIf } from "./panels/whatif/WhatIf";
import type { Selection, View } from "./state";
import { DEFAULT_SELECTION, RUN_VIEWS, isNewView, loadUi, onUiChange, parseSelection, readHash, selectionKeys, VIEW_TITLES, VIEWS, writeHash } from "./state";

const BUSY = new Set([LoadState.QUEUED, LoadState.LOADING, LoadState.GROWING, LoadState.LOAD_STATE_UNSPECIFIED]);
const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 15000;
const SUMMARY_CACHE_SIZE = 8;

function allSpans(list: RunList | null): SpanEntry[] {
  return (list?.runs ?? []).flatMap((r) => r.workers.flatMap((w) => w.spans));
}

/** A run's line in the run picker: its name, and its number of workers when more than one. */
function runLabel(r: { run: string; workers: unknown[] } | undefined): string {
  if (!r) return "";
  return r.workers.length > 1 ? `${r.run} · ${r.workers.length} workers` : r.run;
}

/** A run's workers in the runs route's order (rank order: the numbers it gives, Fleet's order for Paddle's
 * default worker names, whose hosts come in natural order); the tab sorts nothing of its own. */
function sortedWorkers(run: RunEntry): WorkerEntry[] {
  return run.workers;
}

/** The selection made valid for the run list: unknown run, worker or span fall back to the first one. */
function resolve(sel: Selection, list: RunList): Selection {
  const run = list.runs.find((r) => r.run === sel.run) ?? list.runs[0];
  if (!run) return sel;
  const workers = sortedWorkers(run);
  const worker = workers.find((w) => w.worker === sel.worker) ?? workers[0];
  const span = worker?.spans.find((s) => s.span === sel.span) ?? worker?.spans[0];
  return { ...sel, run: run.run, worker: worker?.worker ?? "", span: span?.span ?? "" };
}

function stateName(s: LoadState): string {
  return (LoadState[s] ?? "UNKNOWN").toLowerCase();
}

/** A stable fingerprint of the run list, so a poll that changed nothing does not re-render the page. */
function fingerprint(list: RunList): string {
  return JSON.stringify(list.runs, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
}

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

function Sidebar({ runs, sel, update }: { runs: RunList | null; sel: Selection; update: (p: Partial<Selection>) => void }) {
  const run = runs?.runs.find((r) => r.run === sel.run);
  const workers = useMemo(() => (run ? sortedWorkers(run) : []), [run]);
  const worker = workers.find((w) => w.worker === sel.worker);
  const spans = allSpans(runs);
  const done = spans.filter((s) => !BUSY.has(s.state)).length;
  const failed = spans.filter((s) => s.state === LoadState.FAILED).length;
  const multiRank = (run?.workers.length ?? 0) > 1;
  const workerItems = useMemo<PickItem[]>(() => workers.map((w) => ({ value: w.worker, label: workerLabel(w), search: `rank ${w.rank} ${w.hostname} ${w.worker}`, rank: w.rank })), [workers]);

  return (
    <aside class="side" data-testid="sidebar">
      <div class="brand">
        <span class="logo" aria-hidden="true" />
        <span>Paddle Profile</span>
      </div>
      <label class="field">
        <span>Run</span>
        {/* the box cuts a long run name and its worker count ("· 8 worke"): the whole text on hover */}
        <select value={sel.run} onChange={(e) => update({ run: (e.target as HTMLSelectElement).value, worker: "", span: "", tlranks: "", tlfold: "", tlcp: "" })} data-testid="select-run" disabled={!runs?.runs.length}
          title={runLabel((runs?.runs ?? []).find((r) => r.run === sel.run))}>
          {(runs?.runs ?? []).map((r) => (
            <option value={r.run}>{runLabel(r)}</option>
          ))}
        </select>
      </label>
      <div class="field">
        <span>Worker</span>
        <Picker
          items={workerItems}
          value={sel.worker}
          onPick={(worker) => update({ worker })}
          testId="select-worker"
          disabled={!workers.length || RUN_VIEWS.includes(sel.view)}
          placeholder="Filter by label, rank, host"
        />
      </div>
      <label class="field">
        <span>Span</span>
        <select value={sel.span} onChange={(e) => update({ span: (e.target as HTMLSelectElement).value })} data-testid="select-span" disabled={!worker?.spans.length}>
          {(worker?.spans ?? []).map((s) => (
            <option value={s.span}>{`span ${s.span}`}</option>
          ))}
        </select>
      </label>
      <div class="field">
        <span>Time unit</span>
        <Segmented<UnitChoice>
          value={sel.auto ? "auto" : sel.unit}
          options={UNIT_CHOICES.map((u) => ({ value: u, label: u }))}
          onChange={(unit) => update(unit === "auto" ? { unit: "ms", auto: true } : { unit, auto: false })}
          testId="select-unit"
          label="Time unit"
        />
      </div>
      <nav class="views" data-testid="views">
        {VIEWS.map((v: View) => (
          <button
            class={`view ${sel.view === v ? "on" : ""}`}
            data-view={v}
            onClick={() => update({ view: v })}
            title={v === "distributed" && !multiRank ? "This run has one worker" : undefined}
          >
            {VIEW_TITLES[v]}
            {v === "distributed" && multiRank ? <span class="count">{run!.workers.length}</span> : null}
          </button>
        ))}
      </nav>
      <div class="files" data-testid="files">
        <div class="files-head">
          <span>Files</span>
          <span class="muted" data-testid="files-progress">
            {`${done - failed}/${spans.length} ready${failed ? ` · ${failed} failed` : ""}`}
          </span>
        </div>
        {spans.length && done < spans.length ? (
          <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={spans.length} aria-valuenow={done}>
            <span style={{ width: `${(100 * done) / spans.length}%` }} />
          </div>
        ) : null}
        <FileList workers={workers} sel={sel} update={update} />
        {runs && runs.runs.length > 1 ? <OtherRunsFailures runs={runs} current={sel.run} /> : null}
      </div>
    </aside>
  );
}

/** At most this many files are listed flat; more are grouped by host (or by blocks of ranks). */
const FLAT_FILES = 16;
const RANK_BLOCK = 16;
const GROUP_SHOWN = 64;

interface FileGroup {
  key: string;
  title: string;
  items: { w: WorkerEntry; s: SpanEntry }[];
}

function groupFiles(workers: WorkerEntry[]): FileGroup[] {
  const groups = new Map<string, FileGroup>();
  const anyHost = workers.some((w) => w.hostname);
  // blocks of ranks: 16, or larger powers of two so that there are at most 32 groups
  let block = RANK_BLOCK;
  while (workers.length / block > 32) block *= 2;
  for (const w of workers) {
    let key: string;
    let title: string;
    if (anyHost) {
      key = `h:${w.hostname}`;
      title = w.hostname ? `host ${w.hostname}` : "no host in the name";
    } else if (w.rank >= 0) {
      const lo = Math.floor(w.rank / block) * block;
      key = `r:${lo}`;
      title = `ranks ${lo}–${lo + block - 1}`;
    } else {
      key = "other";
      title = "other workers";
    }
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { key, title, items: [] }));
    for (const s of w.spans) g.items.push({ w, s });
  }
  // the groups in the order of their first worker in the runs route's order: hosts by their lowest rank
  // (for Paddle's default names the server numbers ranks host by host, hosts in natural order:
  // gpunode9 < gpunode10 < gpunode100), blocks of ranks in rank order
  return [...groups.values()];
}

/**
 * When a file's parse began, in ms of this page's clock. The parse runs in a worker process that reports
 * no progress, so the sidebar and the pending panel show its size and how long it has been parsing
 * (from the server's `loadingSinceUnixS`; before a server said, from when this page first saw it
 * LOADING), never a made-up percentage.
 */
const LOADING_SINCE = new Map<string, number>();

function loadingSince(s: SpanEntry): number {
  const server = Number(s.loadingSinceUnixS || 0);
  if (server > 0) return Math.min(server * 1000, Date.now());
  const key = `${s.fileName}\u0000${s.fileSize}`;
  let t = LOADING_SINCE.get(key);
  if (t === undefined) LOADING_SINCE.set(key, (t = Date.now()));
  return t;
}

function fmtElapsed(since: number): string {
  const s = Math.max(0, Math.floor((Date.now() - since) / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** "parsing 12 s · 65 MB" for a file being parsed, ticking every second. */
function Parsing({ s }: { s: SpanEntry }) {
  const since = loadingSince(s);
  const [, tick] = useState(0);
  useEffect(() => {
    const t = window.setInterval(() => tick((n) => n + 1), 1000);
    return () => window.clearInterval(t);
  }, []);
  return (
    <span data-testid="file-progress" title="parsing in a worker process: its size, and how long it has been parsing">
      {`parsing ${fmtElapsed(since)} · ${fmtBytes(Number(s.fileSize))}`}
    </span>
  );
}

function FileItem({ w, s, sel, update }: { w: WorkerEntry; s: SpanEntry; sel: Selection; update: (p: Partial<Selection>) => void }) {
  return (
    <li class={`file-item ${stateName(s.state)} ${w.worker === sel.worker && s.span === sel.span ? "current" : ""}`} data-state={stateName(s.state)} data-file={s.fileName}>
      <button class="file-link" onClick={() => update({ worker: w.worker, span: s.span })} title={`${workerLabel(w)}\n${s.fileName}`}>
        <span class={`dot ${stateName(s.state)}`} />
        <span class="file-name">{`${workerLabel(w)} · span ${s.span}`}</span>
        <span class="file-state">
          {s.state === LoadState.READY ? fmtBytes(Number(s.fileSize)) : s.state === LoadState.LOADING ? <Parsing s={s} /> : stateName(s.state)}
        </span>
      </button>
      {s.error ? (
        <div class={`file-error ${s.state === LoadState.FAILED ? "" : "warn"}`} data-testid="file-error">
          {s.error}
        </div>
      ) : null}
    </li>
  );
}

/**
 * The run's files: a plain list for a few; beyond FLAT_FILES grouped by host (by blocks of ranks when
 * the names tell no host), each group collapsible with its counts, and a search box (label, rank,
 * host, file name). Only open groups list their files.
 */
function FileList({ workers, sel, update }: { workers: WorkerEntry[]; sel: Selection; update: (p: Partial<Selection>) => void }) {
  const [q, setQ] = useState("");
  const [opened, setOpened] = useState<Set<string>>(new Set());
  const files = workers.reduce((a, w) => a + w.spans.length, 0);
  const groups = useMemo(() => (files > FLAT_FILES ? groupFiles(workers) : []), [workers, files]);
  if (files <= FLAT_FILES) {
    return (
      <ul>
        {workers.flatMap((w) => w.spans.map((s) => <FileItem w={w} s={s} sel={sel} update={update} />))}
      </ul>
    );
  }
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const hit = (x: { w: WorkerEntry; s: SpanEntry }) => {
    const h = `${workerLabel(x.w)} rank ${x.w.rank} ${x.w.hostname} ${x.w.worker} ${x.s.fileName}`.toLowerCase();
    return words.every((wd) => h.includes(wd));
  };
  // a rank number searched for: that rank first (its group first, it first in its group)
  const exact = words.length === 1 && /^\d+$/.test(words[0]) ? Number(words[0]) : null;
  const exactFirst = (items: { w: WorkerEntry }[]) => (exact === null ? items : [...items].sort((a, b) => Number(b.w.rank === exact) - Number(a.w.rank === exact)));
  const shownGroups = exact === null ? groups : [...groups].sort((a, b) => Number(b.items.some((x) => x.w.rank === exact)) - Number(a.items.some((x) => x.w.rank === exact)));
  const toggle = (key: string) => {
    const next = new Set(opened);
    if (!next.delete(key)) next.add(key);
    setOpened(next);
  };
  return (
    <div class="file-groups" data-testid="file-groups" data-groups={groups.length}>
      <input class="search file-search" type="search" placeholder={`Filter ${files.toLocaleString()} files`} value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} data-testid="file-search" aria-label="Filter the files" />
      <ul>
        {shownGroups.map((g) => {
          const items = words.length ? exactFirst(g.items.filter(hit)) as typeof g.items : g.items;
          if (!items.length) return null;
          const current = g.items.some((x) => x.w.worker === sel.worker && x.s.span === sel.span);
          // open: toggled by the user (a toggle flips the default), or, by default, the current group and any group while searching
          const byDefault = current || words.length > 0;
          const open = opened.has(g.key) ? !byDefault : byDefault;
          const failed = g.items.filter((x) => x.s.state === LoadState.FAILED).length;
          const ready = g.items.filter((x) => x.s.state === LoadState.READY).length;
          return (
            <li class={`file-group ${open ? "open" : ""} ${current ? "current" : ""}`} data-testid="file-group" data-group={g.title} data-files={items.length}>
              <button class="file-group-head" onClick={() => toggle(g.key)} aria-expanded={open} data-testid="file-group-toggle">
                <span class="file-group-caret" aria-hidden="true">{open ? "▾" : "▸"}</span>
                <span class="file-group-title">{g.title}</span>
                <span class={`file-group-count ${failed ? "failed" : ""}`}>
                  {`${words.length ? `${items.length}/` : ""}${g.items.length}${failed ? ` · ${failed} failed` : ready < g.items.length ? ` · ${ready} ready` : ""}`}
                </span>
              </button>
              {open ? (
                <ul>
                  {items.slice(0, GROUP_SHOWN).map((x) => (
                    <FileItem w={x.w} s={x.s} sel={sel} update={update} />
                  ))}
                  {items.length > GROUP_SHOWN ? <li class="muted file-more">{`${items.length - GROUP_SHOWN} more: filter to narrow`}</li> : null}
                </ul>
              ) : null}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** Failed files of the runs that are not selected: they must not go unnoticed. */
function OtherRunsFailures({ runs, current }: { runs: RunList; current: string }) {
  const failed = runs.runs
    .filter((r) => r.run !== current)
    .flatMap((r) => r.workers.flatMap((w) => w.spans.filter((s) => s.state === LoadState.FAILED).map((s) => ({ run: r.run, s }))));
  if (!failed.length) return null;
  return (
    <ul class="other-failures">
      {failed.map(({ run, s }) => (
        <li class="file-item failed" data-state="failed" data-file={s.fileName}>
          <div class="file-name">{`${run} / ${s.fileName}`}</div>
          <div class="file-error">{s.error}</div>
        </li>
      ))}
    </ul>
  );
}
