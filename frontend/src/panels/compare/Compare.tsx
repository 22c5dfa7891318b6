// The Compare view: a baseline and a candidate (any run, worker — or every rank — and span, two ranks of
// one run too), and the `diff` route's answer drawn as it comes: the headline sentence, the decomposition
// of the change as a waterfall, then every table of the display model with its deltas coloured (slower /
// faster), new and removed rows marked. A delta row opens the matching place on either side's timeline.
// Every row, value, order and sentence is built in Python (RunDiff.display); this file lays them out.
import { useEffect, useMemo, useState } from "preact/hooks";
import type { DiffChoice } from "../../api";
import { diffCsvUrl, fetchDiff } from "../../api";
import { Picker } from "../../components/Picker";
import type { PickItem } from "../../components/Picker";
import { Card, Notice, Segmented } from "../../components/ui";
import type { TimeUnit } from "../../display/cells";
import { formatCell } from "../../display/cells";
import { DisplayTable } from "../../display/DisplayTable";
import { Sentence } from "../../display/Sentence";
import { tableOf } from "../../display/model";
import { fmtBytes } from "../../format";
import type { RunDiff } from "../../gen/tb_paddle_profile/v1/diff_pb";
import { CellKind } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { Row, Table, View } from "../../gen/tb_paddle_profile/v1/display_pb";
import { LoadState } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { RunList, SpanEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { workerLabel } from "../../labels";
import type { Selection } from "../../state";
import { useUrlState } from "../../state";
import type { Mode, Side } from "./choice";
import { ALL_RANKS, PEERS, baselineOf, candidateOf, diffChoice, modeOf, parseDiffLink, sortedWorkers, spansOf, swapped, timelineAt } from "./choice";
import { DiffChart } from "./DiffChart";
import { usePolled } from "../../poll";
import type { Polled } from "../../poll";

const BUSY = new Set([LoadState.QUEUED, LoadState.LOADING, LoadState.GROWING, LoadState.LOAD_STATE_UNSPECIFIED]);

/** The files a side reads: the worker's file of the span, or every worker's for the whole run (and for the
 * role peers' median: the route reads the peers among them). */
function sideFiles(runs: RunList, side: Side): SpanEntry[] {
  const run = runs.runs.find((r) => r.run === side.run);
  if (!run) return [];
  return run.workers
    .filter((w) => side.worker === ALL_RANKS || side.worker === PEERS || w.worker === side.worker)
    .flatMap((w) => w.spans.filter((s) => s.span === side.span));
}

/** Fetches the comparison whenever the choice (or a file it reads) changes, asking again while the route
 * answers 202 (the key names the choice). */
function useDiff(key: string | null, choice: DiffChoice): Polled<RunDiff> | null {
  return usePolled(key, (signal) => fetchDiff(choice, signal));
}

export function Compare({ runs, sel, update, reloads }: { runs: RunList; sel: Selection; update: (p: Partial<Selection>) => void; reloads: number }) {
  const mode = modeOf(sel);
  const b = baselineOf(sel);
  const c = candidateOf(sel);
  const choice = diffChoice(sel);
  const bFiles = sideFiles(runs, b);
  const cFiles = sideFiles(runs, c);
  const files = [...bFiles, ...cFiles];
  // A side none of whose files can be read (a whole run with a broken rank still compares: the route
  // covers the other ranks and says so).
  const unreadable = (fs: SpanEntry[]) => (fs.length > 0 && fs.every((f) => f.state === LoadState.FAILED) ? fs : []);
  const failed = [...unreadable(bFiles), ...unreadable(cFiles)];
  // Asked once both sides name files of the run list (not before the choice is resolved) and both can be
  // read (the run list carries the reason: no request that can only fail). A file that changes state or
  // size (parsed, rewritten) asks again.
  const ready = bFiles.length > 0 && cFiles.length > 0 && failed.length === 0;
  const key = ready ? `${JSON.stringify(choice)}\u0000${files.map((f) => `${f.fileName}:${f.state}:${f.fileSize}`).join(",")}\u0000${reloads}` : null;
  const diff = useDiff(key, choice);
  const busy = files.filter((f) => BUSY.has(f.state));

  return (
    <div class="panel compare" data-testid="panel-compare" data-mode={mode}>
      <Card title="Compare" subtitle="the candidate against the baseline: what changed, and why the step got faster or slower" testId="cmp-choice">
        <div class="cmp-choice">
          <div class="field cmp-mode">
            <span>Compare</span>
            <Segmented<Mode>
              value={mode}
              options={[
                { value: "rank", label: "One rank each", title: "Two ranks: of two runs, or of one run" },
                { value: "run", label: "Whole runs", title: "Every rank of each run, aligned by role (stage, MP index)" },
                { value: "peers", label: "A rank vs its role peers", title: "One rank's operators and kernels per step against the median of its role peers (same stage and MP index)" },
              ]}
              onChange={(m) => update(m === "run" ? { bworker: ALL_RANKS, cworker: ALL_RANKS } : m === "peers" ? { bworker: PEERS, cworker: sel.cworker === ALL_RANKS ? "" : sel.cworker } : { bworker: "", cworker: "" })}
              testId="cmp-mode"
              label="What to compare"
            />
          </div>
          <div class="cmp-pickers">
            <SidePicker title="Baseline" testId="cmp-baseline" runs={runs} side={b} mode={mode} onChange={(s) => update({ brun: s.run, bworker: s.worker, bspan: s.span })} />
            <SidePicker title="Candidate" testId="cmp-candidate" runs={runs} side={c} mode={mode} onChange={(s) => update({ crun: s.run, cworker: s.worker, cspan: s.span })} />
          </div>
          <button class="btn cmp-swap" onClick={() => update(swapped(sel))} disabled={mode === "peers"} data-testid="cmp-swap" title={mode === "peers" ? "The baseline is the candidate's role peers: nothing to exchange" : "Exchange the baseline and the candidate"}>
            ⇅ Swap
          </button>
        </div>
      </Card>
      {failed.length ? (
        <Notice kind="error" testId="cmp-error">{unreadableText(failed[0])}</Notice>
      ) : !diff || diff.status === "loading" ? (
        <Notice kind="loading">Comparing…</Notice>
      ) : diff.status === "error" ? (
        <Notice kind="error" testId="cmp-error">{diff.message}</Notice>
      ) : diff.status === "pending" ? (
        <Notice kind="loading" testId="cmp-pending">
          {busy.length
            ? `${busyText(busy)}; the comparison follows when both sides are read.`
            : diff.partial?.alignment.length
              ? diff.partial.alignment.join(" ")
              : "Still parsing; the comparison follows when both sides are read."}
        </Notice>
      ) : (
        <DiffBody diff={diff.value} choice={choice} unit={sel.unit} update={update} />
      )}
    </div>
  );
}

/** One line: the file's own error (which names it), else its name and state. */
function unreadableText(f: SpanEntry): string {
  const error = (f.error || "could not be read").split("\n")[0];
  return error.includes(f.fileName) ? error : `${f.fileName}: ${error}`;
}

/** "Still parsing <file> (1.72 MB)", "<file> is still being written", or a count of files. */
function busyText(busy: SpanEntry[]): string {
  if (busy.length > 1) return `Still parsing ${busy.length} files`;
  const f = busy[0];
  const file = `${f.fileName} (${fmtBytes(Number(f.fileSize))})`;
  if (f.state === LoadState.GROWING) return `${file} is still being written`;
  if (f.state === LoadState.QUEUED) return `${file} is waiting for a parsing process`;
  return `Still parsing ${file}`;
}

function SidePicker({ title, testId, runs, side, mode, onChange }: { title: string; testId: string; runs: RunList; side: Side; mode: Mode; onChange: (s: Side) => void }) {
  const run = runs.runs.find((r) => r.run === side.run);
  const workers = useMemo(() => (run ? sortedWorkers(run) : []), [run]);
  const items = useMemo<PickItem[]>(() => workers.map((w) => ({ value: w.worker, label: workerLabel(w), search: `rank ${w.rank} ${w.hostname} ${w.worker}`, rank: w.rank })), [workers]);
  const spans = spansOf(run, side.worker);
  if (side.worker === PEERS) {
    return (
      <div class="cmp-side" data-testid={testId} data-run={side.run} data-worker={side.worker} data-span={side.span}>
        <div class={`cmp-side-title ${testId === "cmp-baseline" ? "base" : "cand"}`}>{title}</div>
        <span class="cmp-all muted" data-testid={`${testId}-peers`}>{`the median of the candidate's role peers (${side.run}, span ${side.span})`}</span>
      </div>
    );
  }
  return (
    <div class="cmp-side" data-testid={testId} data-run={side.run} data-worker={side.worker} data-span={side.span}>
      <div class={`cmp-side-title ${testId === "cmp-baseline" ? "base" : "cand"}`}>{title}</div>
      <select value={side.run} onChange={(e) => onChange({ run: (e.target as HTMLSelectElement).value, worker: mode === "run" ? ALL_RANKS : "", span: "" })} data-testid={`${testId}-run`} aria-label={`${title}: run`} title={`${title}: run`}>
        {runs.runs.map((r) => (
          <option value={r.run}>{r.workers.length > 1 ? `${r.run} · ${r.workers.length} workers` : r.run}</option>
        ))}
      </select>
      {mode !== "run" ? (
        <Picker items={items} value={side.worker} onPick={(worker) => onChange({ ...side, worker, span: spansOf(run, worker).includes(side.span) ? side.span : "" })} testId={`${testId}-worker`} placeholder="Filter by label, rank, host" />
      ) : (
        <span class="cmp-all muted" data-testid={`${testId}-all`}>{`every rank (${run?.workers.length ?? 0})`}</span>
      )}
      <select value={side.span} onChange={(e) => onChange({ ...side, span: (e.target as HTMLSelectElement).value })} data-testid={`${testId}-span`} disabled={!spans.length} aria-label={`${title}: span`} title={`${title}: span`}>
        {spans.map((x) => (
          <option value={x}>{`span ${x}`}</option>
        ))}
      </select>
    </div>
  );
}

/** Columns whose cells are a change: "<x>_delta", "<x>_delta_pct", "delta_ns", "delta_pct". */
function isDeltaKey(key: string): boolean {
  return /(^|_)delta(_ns|_pct)?$/.test(key) || /_delta_/.test(key);
}

/** The delta columns coloured by sign: changes of durations and bytes (more is slower / more memory), and their percentages. */
function colouredColumns(table: Table): { key: string; i: number }[] {
  const out: { key: string; i: number }[] = [];
  const kindOf = (key: string) => table.columns.find((c) => c.key === key)?.format?.kind;
  table.columns.forEach((c, i) => {
    if (!isDeltaKey(c.key) || !/^[A-Za-z0-9_.-]+$/.test(c.key)) return;
    let kind = c.format?.kind;
    if (kind === CellKind.CELL_PERCENT || kind === CellKind.CELL_RATIO) {
      // a percentage of change: coloured as the change it is of ("<x>_delta_pct" beside "<x>_delta", "delta_pct" beside "delta_ns")
      const base = c.key.endsWith("_pct") ? c.key.slice(0, -"_pct".length) : "";
      kind = kindOf(base) ?? kindOf(`${base}_ns`) ?? (c.key === "delta_pct" ? kindOf("delta_ns") : undefined);
      if (kind === CellKind.CELL_PERCENT || kind === CellKind.CELL_RATIO) kind = undefined;
    }
    if (kind === CellKind.CELL_DURATION || kind === CellKind.CELL_BYTES) out.push({ key: c.key, i });
  });
  return out;
}

function statusIndex(table: Table): number {
  return table.columns.findIndex((c) => c.key === "status");
}

/**
 * A row's classes: the sign of each coloured delta cell ("up--<key>" slower, "dn--<key>" faster; none where
 * the printed value is zero, "-0.00"), new / removed.
 */
function rowClasses(table: Table, coloured: { key: string; i: number }[], row: Row, unit: TimeUnit): string {
  const out: string[] = [];
  for (const { key, i } of coloured) {
    const cell = row.cells[i];
    if (!cell || cell.missing || !cell.number || !/[1-9]/.test(formatCell(table.columns[i], cell, unit))) continue;
    out.push(cell.number > 0 ? `up--${key}` : `dn--${key}`);
  }
  const si = statusIndex(table);
  const status = si >= 0 ? row.cells[si]?.text : "";
  if (status === "new" || status === "removed") out.push(`cmp-${status}`);
  return out.join(" ");
}

/** The CSS that colours the delta cells of the rows marked by rowClasses (one rule per column key). */
function deltaStyle(tables: Table[]): string {
  const keys = new Set<string>();
  for (const t of tables) for (const { key } of colouredColumns(t)) keys.add(key);
  return [...keys]
    .map((k) => `.compare .vt-row.${CSS.escape(`up--${k}`)} > .vt-td[data-col="${k}"]{color:var(--cmp-slower)}\n.compare .vt-row.${CSS.escape(`dn--${k}`)} > .vt-td[data-col="${k}"]{color:var(--cmp-faster)}`)
    .join("\n");
}

function DiffBody({ diff, choice, unit, update }: { diff: RunDiff; choice: DiffChoice; unit: TimeUnit; update: (p: Partial<Selection>) => void }) {
  const views = useMemo(() => diff.display?.views ?? [], [diff]);
  const [viewKey, setViewKey] = useUrlState<string>("cmp.view", views[0]?.key ?? "");
  const view: View | undefined = views.find((v) => v.key === viewKey) ?? views[0];
  const decomposition = useMemo(() => {
    for (const v of views) {
      const t = tableOf(v, "decomposition");
      if (t) return t;
    }
    return undefined;
  }, [views]);
  const style = useMemo(() => deltaStyle(views.flatMap((v) => v.tables)), [views]);
  // every view's headline sentences, once, in the model's order
  const sentences = views.flatMap((v) => v.sentences);
  const sides = { baseline: diff.baseline ?? choice.baseline, candidate: diff.candidate ?? choice.candidate };
  return (
    <div class="cmp-body" data-testid="cmp-body" data-mode={diff.mode}>
      <style>{style}</style>
      <div class="cmp-sides muted" data-testid="cmp-sides">
        <span class="cmp-tag base">baseline</span>
        <span data-testid="cmp-baseline-label">{sideText(diff.baseline?.label, sides.baseline)}</span>
        <span class="cmp-vs">vs</span>
        <span class="cmp-tag cand">candidate</span>
        <span data-testid="cmp-candidate-label">{sideText(diff.candidate?.label, sides.candidate)}</span>
      </div>
      {sentences.length ? (
        <div class="cmp-verdict" data-testid="cmp-verdict">
          {sentences.map((s) => (
            <p class={`cmp-sentence level-${s.level || "info"}`}>
              <Sentence sentence={s} timeUnit={unit} showTitle testId="cmp-sentence" />
            </p>
          ))}
        </div>
      ) : null}
      {diff.alignment.length && !sentences.some((x) => x.key.startsWith("diff.alignment")) ? (
        <ul class="cmp-alignment note" data-testid="cmp-alignment">
          {diff.alignment.map((a) => (
            <li>{a}</li>
          ))}
        </ul>
      ) : null}
      {decomposition ? (
        <Card title={decomposition.title || "What the change is made of"} subtitle="parts that add up to the change (slower: red, faster: green)" testId="cmp-decomposition">
          <DiffChart table={decomposition} unit={unit} />
        </Card>
      ) : null}
      {views.length > 1 ? (
        <div class="cmp-views">
          <Segmented<string> value={view?.key ?? ""} options={views.map((v) => ({ value: v.key, label: v.title || v.key }))} onChange={setViewKey} testId="cmp-views" label="Which tables" />
        </div>
      ) : null}
      {view ? (
        <div class="cmp-tables" data-testid="cmp-tables" data-view={view.key}>
          {view.tables.map((t) => (
            <DiffTable key={`${view.key}/${t.key}`} table={t} view={view.key} choice={choice} sides={sides} unit={unit} update={update} />
          ))}
          {view.tables.length === 0 ? <p class="note">Nothing to compare in this view.</p> : null}
        </div>
      ) : (
        <p class="note">The comparison has no tables.</p>
      )}
    </div>
  );
}

/** "run · label · span 0": the route's label names the rank (or the run), the run and span are added where it does not hold them. */
function sideText(label: string | undefined, side: { run: string; worker: string; span: string }): string {
  if (label && (label === side.run || label.startsWith(`${side.run} `))) return label;
  const parts = [side.run];
  if (label) parts.push(label);
  else parts.push(side.worker || "every rank");
  if (!(label ?? "").includes(`span ${side.span}`)) parts.push(`span ${side.span}`);
  return parts.join(" · ");
}

function DiffTable({
  table,
  view,
  choice,
  sides,
  unit,
  update,
}: {
  table: Table;
  view: string;
  choice: DiffChoice;
  sides: { baseline: { run: string; span: string }; candidate: { run: string; span: string } };
  unit: TimeUnit;
  update: (p: Partial<Selection>) => void;
}) {
  const coloured = useMemo(() => colouredColumns(table), [table]);
  const [picked, setPicked] = useState<Row | null>(null);
  useEffect(() => setPicked(null), [table]);
  const link = picked ? parseDiffLink(picked.link) : null;
  const linked = table.rows.some((r) => r.link.startsWith("diff:"));
  const name = link?.name ?? "";
  const tools = linked ? (
    <span class="cmp-links" data-testid={`cmp-links-${table.key}`}>
      <span class="muted cmp-links-what" title={name}>
        {picked ? `${name || picked.cells[0]?.text || ""}: ` : "Click a row, then open it on "}
      </span>
      <button class="btn" disabled={!link?.baseline} onClick={() => link && update(timelineAt(sides.baseline, link.baseline, name))} data-testid="cmp-tl-baseline" title="The baseline's timeline, this name searched">
        Baseline timeline
      </button>
      <button class="btn" disabled={!link?.candidate} onClick={() => link && update(timelineAt(sides.candidate, link.candidate, name))} data-testid="cmp-tl-candidate" title="The candidate's timeline, this name searched">
        Candidate timeline
      </button>
    </span>
  ) : null;
  return (
    <Card title={table.title || table.key} testId={`cmp-card-${table.key}`}>
      <DisplayTable
        table={table}
        timeUnit={unit}
        testId={`dt-${view}-${table.key}`}
        csvHref={diffCsvUrl(choice, table.key)}
        tools={tools}
        onRowClick={linked ? (row) => setPicked(row.link.startsWith("diff:") ? row : null) : undefined}
        rowClass={(row) => `${rowClasses(table, coloured, row, unit)} ${picked && row.id === picked.id ? "picked" : ""}`}
      />
    </Card>
  );
}
