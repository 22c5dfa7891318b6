// Hybrid-parallel analysis across the ranks of a run and span (docs/distributed.md). Every table, note
// and sentence is RunParallel.display (view "parallel", built in Python by display/parallel.py, the same
// model `tb-paddle-profile distributed` prints), drawn with DisplayTable and Sentence; only the charts
// (step breakdown, heatmaps, the rank grid, the stage bars) read RunParallel's raw fields. Nothing here
// derives a row, a value or a sentence.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Card, Fold, Notice } from "../../components/ui";
import type { TimeUnit } from "../../display/cells";
import { formatCell } from "../../display/cells";
import { cellOf, tableOf, textOf, viewOf } from "../../display/model";
import { Sentence } from "../../display/Sentence";
import type { Row, Sentence as SentenceMsg, Table } from "../../gen/tb_paddle_profile/v1/display_pb";
import { CellKind } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { LabelMap } from "../../labels";
import { num } from "./charts";
import { BreakdownCard, HeatmapCard, MatchingCard, MemoryCard, PipelineCard } from "./ChartCards";
import type { Ctx, Open } from "./common";
import { EMPTY_VIEW, groupsOf, ParTable, partOf, S, sentencesOf, TableCard, useCtx, VIEW } from "./common";
import type { ParallelState } from "./data";
import { useParallel } from "./data";
import "./parallel.css";
import { RankGrid, hasGrid } from "./RankGrid";

/** Named ranks shown in full at first (the rest behind a button). */
const SHOWN_STRAGGLERS = 3;
/** Rank references of a finding or an advice shown as buttons (the rest counted; the whole list on hover). */
const SHOWN_CHIPS = 4;
/** Findings and advice items drawn at first, and how many more each "Show more" adds: the summary stays
 * on one screen whatever the number of ranks (a 1,024-rank job may have hundreds of findings). */
const SHOWN_ITEMS = 5;
/** Above this many ranks the charts and tables below the summary start folded (summary first). */
export const FOLD_RANKS = 64;
const MORE_ITEMS = 20;
function loadingNotes(state: ParallelState) {
  return (
    <>
      {state.status === "loading" ? <Notice kind="loading">Analysing the ranks…</Notice> : null}
      {state.status === "pending" ? (
        <Notice kind="loading" testId="par-pending">
          {`The analysis starts once every rank is parsed${state.note ? ` (${state.note})` : ""}.`}
        </Notice>
      ) : null}
      {state.status === "error" ? <Notice kind="error" testId="par-error">{`The hybrid-parallel analysis failed: ${state.message}`}</Notice> : null}
    </>
  );
}

/** What the summary and the details of the section are drawn from. */
interface SectionProps {
  state: ParallelState;
  unit: TimeUnit;
  current: string;
  labels?: LabelMap;
  onOpenRank: Open;
}

/**
 * The top of the Distributed view, before any chart or table: the verdict with its coverage (and
 * "uncertain" when the evidence is incomplete), the findings with their cost per step, the outlier
 * ranks, and the rank grid by DP × PP × MP.
 */
export function ParallelSummary({
  state,
  unit,
  current,
  labels,
  onOpenRank,
}: SectionProps) {
  if (state.status !== "ok") return <div class="par-summary" data-testid="par-summary">{loadingNotes(state)}</div>;
  return <SummaryBody rp={state.value} unit={unit} current={current} labels={labels} open={onOpenRank} />;
}

function SummaryBody({ rp, unit, current, labels, open }: { rp: RunParallel; unit: TimeUnit; current: string; labels?: LabelMap; open: Open }) {
  const c = useCtx(rp, unit, labels, open, current);
  const grid = hasGrid(rp) ? <RankGrid rp={rp} unit={unit} label={c.label} current={current} named={c.named} open={open} /> : null;
  return (
    <div class="par-summary" data-testid="par-summary">
      {!rp.display ? <Notice kind="error" testId="par-no-display">The server sent the analysis without its tables (RunParallel.display).</Notice> : null}
      <VerdictCard c={c} />
      {groupsOf(c.view, "findings").length ? <FindingsCard c={c} /> : null}
      {/* a grid of up to 64 DP replicas fits beside the outliers; a wider one takes the whole row */}
      {grid && (rp.topology?.dp ?? 0) <= 64 ? (
        <div class="grid par-summary-two">
          <OutliersCard c={c} />
          {grid}
        </div>
      ) : (
        <>
          <OutliersCard c={c} />
          {grid}
        </>
      )}
    </div>
  );
}

export function ParallelSection({
  state,
  unit,
  current,
  labels,
  onOpenRank,
  whole,
}: SectionProps & { whole?: { run: string; span: string; key: string } }) {
  const headline = state.status === "ok" ? sentencesOf(viewOf(state.value.display, VIEW) ?? EMPTY_VIEW, "headline")[0] : undefined;
  return (
    <section class="par" id="tbpp-parallel" data-testid="parallel">
      <header class="par-head">
        <h2>Hybrid-parallel analysis: details</h2>
        <span class="par-head-sub" data-testid="par-headline">
          {headline ? (
            <>
              <Sentence sentence={headline} timeUnit={unit} testId="par-headline-sentence" />
              {` · times in ${unit}, per step (means over the rank's steps)`}
            </>
          ) : (
            "collectives by kind, exposed communication, stragglers, pipeline bubbles"
          )}
        </span>
      </header>
      {state.status === "ok"
        ? sentencesOf(viewOf(state.value.display, VIEW) ?? EMPTY_VIEW, "missing").map((s) => (
            <Notice kind="error" testId="par-missing">
              <Sentence sentence={s} timeUnit={unit} />
            </Notice>
          ))
        : null}
      {state.status === "ok" ? (
        <Fold title="Advice, heatmaps and the tables of every rank" subtitle={`${state.value.ranks.length.toLocaleString()} ranks`} open={state.value.ranks.length <= FOLD_RANKS} testId="par-fold">
          {whole ? (
            <WholeBody whole={whole} unit={unit} current={current} labels={labels} open={onOpenRank} />
          ) : (
            <Deferred key={state.value.analysisKey || "rp"}>
              <ParallelBody rp={state.value} unit={unit} current={current} labels={labels} open={onOpenRank} />
            </Deferred>
          )}
        </Fold>
      ) : (
        loadingNotes(state)
      )}
    </section>
  );
}

/** The details from the whole analysis, fetched when they are first shown (the summary came from its summary part). */
function WholeBody({ whole, unit, current, labels, open }: { whole: { run: string; span: string; key: string }; unit: TimeUnit; current: string; labels?: LabelMap; open: Open }) {
  const state = useParallel(whole.run, whole.span, whole.key, "details");
  if (state.status !== "ok") return loadingNotes(state);
  return (
    <Deferred key={state.value.analysisKey || "rp"}>
      <ParallelBody rp={state.value} unit={unit} current={current} labels={labels} open={open} />
    </Deferred>
  );
}

/** Renders its children one task later: the summary above is drawn first, the details after it. */
function Deferred({ children }: { children: ComponentChildren }) {
  const [ready, setReady] = useState(false);
  useEffect(() => {
    const t = window.setTimeout(() => setReady(true), 0);
    return () => window.clearTimeout(t);
  }, []);
  return ready ? <>{children}</> : <Notice kind="loading">Drawing the details…</Notice>;
}

/** Tables drawn in their own places; every other table of the view is drawn after them, in the model's order. */
const PLACED = new Set([
  "ranks",
  "step_time",
  "exposed_comm_by_step",
  "kinds",
  "rank_kinds",
  "host",
  "waits",
  "pipeline",
  "pipeline_ranks",
  "clocks",
  "memory_stages",
  "memory_ranks",
  "stage_layers",
  // the charts' series
  "breakdown_steps",
  "breakdown_mean",
  "step_time_heat",
  "exposed_comm_heat",
  // the summary's
  "stragglers",
  "findings",
  "outliers",
  "advice_triggers",
]);

function ParallelBody({ rp, unit, current, labels, open }: { rp: RunParallel; unit: TimeUnit; current: string; labels?: LabelMap; open: Open }) {
  const c = useCtx(rp, unit, labels, open, current);
  const t = (key: string) => tableOf(c.view, key);
  const others = c.view.tables.filter((x) => !PLACED.has(x.key));
  const per = `per step · ${unit} · click a row to open the rank`;
  return (
    <>
      <AdviceCard c={c} />
      <BreakdownCard c={c} />
      <div class="grid two">
        <HeatmapCard c={c} table={t("step_time")} heat={t("step_time_heat")} colors={["#e3f2fd", "#64b5f6", "#0d47a1"]} label="step time" testId="par-heat-step" />
        <HeatmapCard
          c={c}
          table={t("exposed_comm_by_step")}
          heat={t("exposed_comm_heat")}
          colors={["#fff3e0", "#ffb74d", "#bf360c"]}
          label="exposed communication"
          testId="par-heat-exposed"
        />
      </div>
      <TableCard c={c} table={t("ranks")} testId="par-ranks" subtitle={`times in ${unit} · click a header to sort, a row to open the rank`} maxHeight={420} />
      <TableCard c={c} table={t("waits")} testId="par-waits" subtitle={per} />
      <TableCard c={c} table={t("host")} testId="par-host" subtitle={per} />
      <TableCard c={c} table={t("kinds")} testId="par-kinds" subtitle={`all ranks, all steps · ${unit}`} nameWidth={110} />
      <div class="grid two">
        <PipelineCard c={c} />
        <TableCard c={c} table={t("rank_kinds")} testId="par-rank-kinds" subtitle={`per step · ${unit}`} />
      </div>
      {/* the time per layer by stage: a row per stage and layer (not per rank), so never folded */}
      <TableCard c={c} table={t("stage_layers")} testId="par-stage-layers" subtitle={`forward kernels per step · ${unit} · click a row to open its slowest rank`} nameWidth={130} />
      <MemoryCard c={c} />
      <TableCard c={c} table={t("clocks")} testId="par-clocks" subtitle={`${unit} · also subtracted from each host's times on the Timeline`} nameWidth={140} />
      {others.length ? (
        // the view's other tables (communication per communicator and rank, FLOPs, sequences, …): folded
        // at scale, where each adds a table of every rank to the page
        <Fold title={others.map((x) => x.title).join(" · ")} subtitle={`${others.length} table${others.length > 1 ? "s" : ""}`} open={rp.ranks.length <= FOLD_RANKS} testId="par-more-fold">
          {others.map((x) => (
            <TableCard c={c} table={x} testId={`par-${x.key}`} subtitle={x.columns.some((k) => k.format?.kind === CellKind.CELL_DURATION) ? unit : undefined} nameWidth={90} />
          ))}
        </Fold>
      ) : null}
      <MatchingCard c={c} />
    </>
  );
}

// ------------------------------------------------------------------ verdict, findings, outliers

function VerdictCard({ c }: { c: Ctx }) {
  const { rp, view } = c;
  const v = rp.straggler;
  const [allNamed, setAllNamed] = useState(false);
  const verdict = sentencesOf(view, "verdict")[0];
  if (!v || !verdict) return null;
  const reasons = sentencesOf(view, "verdict.straggler");
  const coverage = sentencesOf(view, "verdict.coverage")[0];
  const evidence = sentencesOf(view, "verdict.evidence")[0];
  const named = tableOf(view, "stragglers");
  const rows = named?.rows ?? [];
  const state = v.uncertain ? "uncertain" : v.found ? "found" : "clear";
  return (
    <section class={`card par-verdict ${state}`} data-testid="par-verdict" data-found={v.found ? "1" : "0"} data-uncertain={v.uncertain ? "1" : "0"}>
      <header class="card-head">
        <h3>{verdict.title || "Straggler verdict"}</h3>
        {v.uncertain ? (
          <span class="par-uncertain" data-testid="par-uncertain">
            Uncertain: the evidence is incomplete
          </span>
        ) : null}
        {coverage ? (
          <span class={`par-coverage ${coverage.level === "warning" ? "low" : ""}`} data-testid="par-coverage" title="Collective instances matched across ranks ÷ instances">
            <S c={c} s={coverage} />
          </span>
        ) : null}
      </header>
      <div class="card-body">
        <div class="par-verdict-line">
          <span class="par-banner-mark" aria-hidden="true">{v.uncertain ? "?" : v.found ? "!" : "✓"}</span>
          <div class="par-verdict-summary" data-testid="par-verdict-summary">
            <S c={c} s={verdict} testId="par-verdict-sentence" />
          </div>
        </div>
        {rows.slice(0, allNamed ? rows.length : SHOWN_STRAGGLERS).map((row, i) => (
          <StragglerBlock c={c} table={named!} row={row} reason={reasons[i]} />
        ))}
        {rows.length > SHOWN_STRAGGLERS ? (
          <button class="btn small" onClick={() => setAllNamed(!allNamed)} data-testid="par-straggler-more">
            {allNamed ? "Show fewer" : `Show the other ${rows.length - SHOWN_STRAGGLERS} named ranks`}
          </button>
        ) : null}
        {evidence ? (
          <p class="note" data-testid="par-verdict-rule">
            <S c={c} s={evidence} testId="par-verdict-evidence" />
          </p>
        ) : null}
      </div>
    </section>
  );
}

/** Columns of the named-ranks table that head a block rather than list a fact. */
const STRAGGLER_HEAD = new Set(["rank", "label", "cause", "gpu"]);

/** One named rank: its label (opens it), its cause, its numbers (the model's cells under their headers), its reason. */
function StragglerBlock({ c, table, row, reason }: { c: Ctx; table: Table; row: Row; reason: SentenceMsg | undefined }) {
  const rank = num(cellOf(table, row, "rank")?.number);
  const gpu = textOf(table, row, "gpu") !== "";
  const facts = table.columns
    .map((col, i) => ({ col, cell: row.cells[i] }))
    .filter(({ col, cell }) => !col.panelHidden && !STRAGGLER_HEAD.has(col.key) && !(col.format?.kind === CellKind.CELL_TEXT && !cell?.text));
  const unitOf = (k: CellKind | undefined) => (k === CellKind.CELL_DURATION ? ` (${c.unit})` : "");
  return (
    <div class="par-straggler" data-testid="par-straggler" data-rank={String(rank)}>
      <div class="par-straggler-head">
        <button class="par-chip strong" onClick={() => c.openRank(rank)} title="Open this rank's overview" data-testid="par-straggler-open">
          {textOf(table, row, "label")}
        </button>
        <span class={`par-tag ${gpu ? "gpu" : "host"}`} data-testid="par-straggler-cause">
          {textOf(table, row, "cause")}
        </span>
      </div>
      <dl class="par-facts">
        {facts.map(({ col, cell }) => (
          <div data-fact={col.key}>
            <dt>{`${col.header}${unitOf(col.format?.kind)}`}</dt>
            <dd data-testid="par-fact" data-col={col.key}>
              {formatCell(col, cell, c.unit)}
            </dd>
          </div>
        ))}
      </dl>
      {reason ? (
        <p class="par-reason">
          <S c={c} s={reason} testId="par-reason" />
        </p>
      ) : null}
    </div>
  );
}

/** Rank references as buttons: the first few rank spans of the sentence, the whole sentence on hover of the count. */
function RankChips({ c, s }: { c: Ctx; s: SentenceMsg | undefined }) {
  if (!s) return null;
  const ranks = s.spans.filter((x) => x.isRank);
  if (!ranks.length) return null;
  return (
    <div class="par-advice-ranks" data-testid="par-rank-chips" data-key={s.key}>
      {ranks.slice(0, SHOWN_CHIPS).map((x) => (
        <button class="par-chip" onClick={() => c.openRank(x.rank)} title={`Open ${x.text}`} data-rank={String(x.rank)}>
          {x.text}
        </button>
      ))}
      {ranks.length > SHOWN_CHIPS ? (
        <span class="muted" title={s.spans.map((x) => x.text).join("")} data-testid="par-more-ranks">
          {`+${ranks.length - SHOWN_CHIPS} more ranks`}
        </span>
      ) : null}
    </div>
  );
}

/** The first `shown` items, and a button that shows MORE_ITEMS more (and one that folds them again). */
function usePaged(total: number): [number, ComponentChildren] {
  const [shown, setShown] = useState(SHOWN_ITEMS);
  const n = Math.min(total, shown);
  const more =
    total > SHOWN_ITEMS ? (
      <div class="par-more" data-testid="par-more" data-shown={String(n)} data-total={String(total)}>
        {n < total ? (
          <button class="btn small" onClick={() => setShown(shown + MORE_ITEMS)} data-testid="par-more-show">
            {`Show ${Math.min(MORE_ITEMS, total - n)} more of ${total.toLocaleString()}`}
          </button>
        ) : null}
        {n > SHOWN_ITEMS ? (
          <button class="btn small" onClick={() => setShown(SHOWN_ITEMS)} data-testid="par-more-fold">
            Show fewer
          </button>
        ) : null}
      </div>
    ) : null;
  return [n, more];
}

function FindingsCard({ c }: { c: Ctx }) {
  const { view, unit } = c;
  const groups = groupsOf(view, "findings");
  const table = tableOf(view, "findings");
  const [shown, more] = usePaged(groups.length);
  return (
    <Card title="Findings" subtitle={`${groups.length.toLocaleString()} · anomalies, structure, evidence · cost to the whole job per step, ${unit}`} testId="par-findings-card">
      <ol class="par-findings" data-testid="par-findings" data-total={String(groups.length)}>
        {groups.slice(0, shown).map((g, i) => {
          const row = table?.rows[i];
          const cell = (key: string) => (table && row ? textOf(table, row, key) : "");
          const category = cell("category");
          const stageCol = table?.columns.find((x) => x.key === "stage");
          const stage = table && row ? cellOf(table, row, "stage") : undefined;
          const cost = partOf(g, "cost")[0];
          return (
            <li class={`par-finding ${category}`} data-rule={g.head.rule} data-category={category} data-testid="par-finding">
              <div class="par-finding-head">
                <span class={`par-cat ${category}`}>{cell("category_title") || category}</span>
                {cell("cause") ? <span class="par-cause">{cell("cause")}</span> : null}
                {stageCol && stage && !stage.missing ? <span class="par-cause">{`${stageCol.header.toLowerCase()} ${formatCell(stageCol, stage, unit)}`}</span> : null}
                {cost ? (
                  <span class="par-cost" data-testid="par-finding-cost">
                    <S c={c} s={cost} />
                  </span>
                ) : null}
              </div>
              <p class="par-finding-text">
                <S c={c} s={g.head} testId="par-finding-text" />
              </p>
              {partOf(g, "excess").map((s) => (
                <p class="note">
                  <S c={c} s={s} />
                </p>
              ))}
              <RankChips c={c} s={partOf(g, "ranks")[0]} />
            </li>
          );
        })}
      </ol>
      {more}
    </Card>
  );
}

function OutliersCard({ c }: { c: Ctx }) {
  const table = tableOf(c.view, "outliers");
  if (!table) return null;
  return (
    <Card title={table.title} subtitle="click to open" testId="par-outliers-card">
      {table.rows.length ? (
        <ParTable c={c} table={table} testId="par-outliers" maxHeight={260} nameWidth={220} />
      ) : (
        <p class="muted" data-testid="par-outliers-none">
          {table.empty}
        </p>
      )}
    </Card>
  );
}

function AdviceCard({ c }: { c: Ctx }) {
  const { view } = c;
  const all = groupsOf(view, "advice");
  // an advice has its rule; the one sentence without ("No rule fired.") says there is none
  const groups = all.filter((g) => g.head.rule);
  const none = all.find((g) => !g.head.rule)?.head;
  const triggers = tableOf(view, "advice_triggers");
  const [shown, more] = usePaged(groups.length);
  return (
    <Card title="Advice" subtitle="rule-based; each rule cites the value that fired it and its threshold" testId="par-advice-card">
      {groups.length ? (
        <ol class="par-advice" data-testid="par-advice" data-total={String(groups.length)}>
          {groups.slice(0, shown).map((g, i) => {
            const rule = g.head.rule;
            const rows = triggers ? triggers.rows.filter((r) => num(cellOf(triggers, r, "advice")?.number) === i) : [];
            return (
              <li data-rule={rule}>
                <div class="par-advice-title">
                  <span>{g.head.title}</span>
                  <code class="par-rule">{rule}</code>
                </div>
                <p class="par-advice-text">
                  <S c={c} s={g.head} testId="par-advice-text" />
                </p>
                <ul class="par-triggers">
                  {partOf(g, "trigger").map((s, k) => {
                    const row = rows[k];
                    const at = (key: string) => {
                      const col = triggers?.columns.find((x) => x.key === key);
                      return col && row ? formatCell(col, cellOf(triggers!, row, key), c.unit) : "";
                    };
                    return (
                      <li data-testid="par-trigger" data-metric={at("metric")} data-value={at("value")} data-threshold={at("threshold")}>
                        <S c={c} s={s} testId="par-trigger-sentence" />
                      </li>
                    );
                  })}
                </ul>
                <RankChips c={c} s={partOf(g, "ranks")[0]} />
              </li>
            );
          })}
        </ol>
      ) : null}
      {groups.length ? (
        more
      ) : (
        <p class="muted" data-testid="par-advice-none">
          <S c={c} s={none} />
        </p>
      )}
    </Card>
  );
}

