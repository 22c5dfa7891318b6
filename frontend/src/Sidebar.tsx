// The sidebar: the run, the unit, the views, and the run's files with their states (grouped by blocks of
// ranks in a large run), the failures of other runs.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Picker } from "./components/Picker";
import type { PickItem } from "./components/Picker";
import { Segmented } from "./components/ui";
import { UNIT_CHOICES } from "./display/cells";
import type { UnitChoice } from "./display/cells";
import { fmtBytes } from "./format";
import { LoadState } from "./gen/tb_paddle_profile/v1/plugin_pb";
import type { RunList, SpanEntry, WorkerEntry } from "./gen/tb_paddle_profile/v1/plugin_pb";
import { workerLabel } from "./labels";
import { allSpans, BUSY, fmtElapsed, loadingSince, runLabel, sortedWorkers, stateName } from "./runs";
import type { Selection, View } from "./state";
import { RUN_VIEWS, VIEW_TITLES, VIEWS } from "./state";
export function Sidebar({ runs, sel, update }: { runs: RunList | null; sel: Selection; update: (p: Partial<Selection>) => void }) {
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

/** In a group, at most this many files are listed (the filter narrows them). */
const GROUP_SHOWN = 64;

interface FileGroup {
  title: string;
  items: { w: WorkerEntry; s: SpanEntry }[];
}

/** The run's files by their WorkerEntry.group (the runs route's, present/display/files.py), the groups in the
 * order of their first worker; none when the route lists them flat. */
function groupFiles(workers: WorkerEntry[]): FileGroup[] {
  const groups = new Map<string, FileGroup>();
  for (const w of workers) {
    if (!w.group) return [];
    let g = groups.get(w.group);
    if (!g) groups.set(w.group, (g = { title: w.group, items: [] }));
    for (const s of w.spans) g.items.push({ w, s });
  }
  return [...groups.values()];
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

/** Scrolls the sidebar (its own box, not the page) so that `el` is in view, a third down, when it is not. */
function showInSidebar(el: HTMLElement | null): void {
  const side = el?.closest(".side") as HTMLElement | null;
  if (!el || !side) return;
  const r = el.getBoundingClientRect();
  const box = side.getBoundingClientRect();
  const bottom = Math.min(box.bottom, window.innerHeight);
  if (r.top < box.top || r.bottom > bottom) side.scrollTop += r.top - box.top - (bottom - box.top) / 3;
}

function FileItem({ w, s, sel, update }: { w: WorkerEntry; s: SpanEntry; sel: Selection; update: (p: Partial<Selection>) => void }) {
  const current = w.worker === sel.worker && s.span === sel.span;
  const item = useRef<HTMLLIElement>(null);
  // the current file in view: a link (a rank of a table, the What-if path) opens a rank far down the list
  useEffect(() => {
    if (current) showInSidebar(item.current);
  }, [current]);
  return (
    <li ref={item} class={`file-item ${stateName(s.state)} ${current ? "current" : ""}`} data-state={stateName(s.state)} data-file={s.fileName}>
      <button class="file-link" onClick={() => update({ worker: w.worker, span: s.span })} title={`${workerLabel(w)} · span ${s.span}\n${s.fileName}`}>
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
 * The run's files: a plain list for a few; else in the groups the runs route gives (WorkerEntry.group: by
 * host, by blocks of ranks when the names tell no host), each group collapsible with its counts, and a
 * search box (label, rank, host, file name). Only open groups list their files.
 */
function FileList({ workers, sel, update }: { workers: WorkerEntry[]; sel: Selection; update: (p: Partial<Selection>) => void }) {
  const [q, setQ] = useState("");
  const [opened, setOpened] = useState<Set<string>>(new Set());
  const files = workers.reduce((a, w) => a + w.spans.length, 0);
  const groups = useMemo(() => groupFiles(workers), [workers]);
  if (!groups.length) {
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
          const open = opened.has(g.title) ? !byDefault : byDefault;
          const failed = g.items.filter((x) => x.s.state === LoadState.FAILED).length;
          const ready = g.items.filter((x) => x.s.state === LoadState.READY).length;
          return (
            <li class={`file-group ${open ? "open" : ""} ${current ? "current" : ""}`} data-testid="file-group" data-group={g.title} data-files={items.length}>
              <button class="file-group-head" onClick={() => toggle(g.title)} aria-expanded={open} data-testid="file-group-toggle">
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
