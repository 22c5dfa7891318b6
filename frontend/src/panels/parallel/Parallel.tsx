// Hybrid-parallel analysis across the ranks of a run and span (RunParallel; docs/distributed.md): the
// straggler verdict, the per-rank and per-step breakdown of the GPU (or host) timeline, rank × step
// heatmaps, collectives by kind, waits at collectives, pipeline bubbles and advice. Every number is
// printed as `tb-paddle-profile distributed RUN_DIR --time-unit X` prints it; names are text, never HTML.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { Chart } from "../../components/Chart";
import { RowsTable } from "../../components/RowsTable";
import type { RowColumn } from "../../components/RowsTable";
import { Card, Notice, Segmented, SimpleTable } from "../../components/ui";
import type { SimpleColumn } from "../../components/ui";
import type { TimeUnit } from "../../format";
import { fillTimes, fmtTime } from "../../format";
import type { Advice, Finding, HostClock, KindAcrossRanks, PipelineStage, RankKind, RankParallel, RunParallel, Straggler } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { Timeline } from "../../gen/tb_paddle_profile/v1/summary_pb";
import type { LabelMap } from "../../labels";
import { labelOf, ranksText } from "../../labels";
import { num } from "../../summary";
import type { Breakdown, RankLabel } from "./charts";
import { breakdownOption, heatBins, heatmapOption, kindsPresent, meanBreakdown, stepBreakdown, waitsOption } from "./charts";
import type { ParallelState } from "./data";
import "./parallel.css";
import { kindLabel, pct0, pct1, pyBytes, pyFixed, pyG } from "./pyfmt";
import { RankGrid, hasGrid } from "./RankGrid";

type Open = (worker: string) => void;

const MAX_PER_STEP_BARS = 160;
/** Named ranks shown in full at first (the rest behind a button). */
const SHOWN_STRAGGLERS = 3;
/** How many outlier ranks the summary lists. */
const OUTLIERS = 8;

/** What the parallel cards share: the analysis, the unit, the label of a rank, opening a rank. */
interface Ctx {
  rp: RunParallel;
  unit: TimeUnit;
  label: RankLabel;
  open: Open;
  byRank: Map<number, RankParallel>;
}

function useCtx(rp: RunParallel, unit: TimeUnit, labels: LabelMap | undefined, open: Open): Ctx {
  return useMemo(() => {
    const byRank = new Map(rp.ranks.map((r) => [r.rank, r]));
    return { rp, unit, open, byRank, label: (r: RankParallel) => labelOf(r, labels) };
  }, [rp, unit, labels, open]);
}

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
}: {
  state: ParallelState;
  unit: TimeUnit;
  current: string;
  labels?: LabelMap;
  onOpenRank: Open;
}) {
  if (state.status !== "ok") return <div class="par-summary" data-testid="par-summary">{loadingNotes(state)}</div>;
  return <SummaryBody rp={state.value} unit={unit} current={current} labels={labels} open={onOpenRank} />;
}

function SummaryBody({ rp, unit, current, labels, open }: { rp: RunParallel; unit: TimeUnit; current: string; labels?: LabelMap; open: Open }) {
  const c = useCtx(rp, unit, labels, open);
  const named = useMemo(() => new Set(rp.straggler?.stragglers.map((s) => s.rank) ?? []), [rp]);
  return (
    <div class="par-summary" data-testid="par-summary">
      <VerdictCard c={c} />
      {rp.findings.length ? <FindingsCard c={c} /> : null}
      {/* a grid of up to 64 DP replicas fits beside the outliers; a wider one takes the whole row */}
      {hasGrid(rp) && (rp.topology?.dp ?? 0) <= 64 ? (
        <div class="grid par-summary-two">
          <OutliersCard c={c} named={named} current={current} />
          <RankGrid rp={rp} unit={unit} label={c.label} current={current} named={named} open={open} />
        </div>
      ) : (
        <>
          <OutliersCard c={c} named={named} current={current} />
          {hasGrid(rp) ? <RankGrid rp={rp} unit={unit} label={c.label} current={current} named={named} open={open} /> : null}
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
}: {
  state: ParallelState;
  unit: TimeUnit;
  current: string;
  labels?: LabelMap;
  onOpenRank: Open;
}) {
  return (
    <section class="par" id="tbpp-parallel" data-testid="parallel">
      <header class="par-head">
        <h2>Hybrid-parallel analysis: details</h2>
        <span class="par-head-sub">
          {state.status === "ok" ? headline(state.value, unit) : "collectives by kind, exposed communication, stragglers, pipeline bubbles"}
        </span>
      </header>
      {state.status === "ok" ? <Deferred key={state.value.analysisKey || "rp"}><ParallelBody rp={state.value} unit={unit} current={current} labels={labels} open={onOpenRank} /></Deferred> : loadingNotes(state)}
    </section>
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

function headline(rp: RunParallel, unit: TimeUnit): string {
  const steps = rp.steps.map((s) => num(s));
  const stepTxt = steps.length > 1 ? `steps ${steps[0]}..${steps[steps.length - 1]}` : steps.length ? `step ${steps[0]}` : "no steps";
  return `${rp.ranks.length} ranks, ${stepTxt} · times in ${unit}, per step (means over the rank's steps)`;
}

function ParallelBody({ rp, unit, current, labels, open }: { rp: RunParallel; unit: TimeUnit; current: string; labels?: LabelMap; open: Open }) {
  const c = useCtx(rp, unit, labels, open);
  const openRank = (rank: number) => {
    const w = c.byRank.get(rank)?.worker;
    if (w) open(w);
  };
  const named = useMemo(() => new Set(rp.straggler?.stragglers.map((s) => s.rank) ?? []), [rp]);
  const rowClass = (r: RankParallel) => `${r.worker === current ? "current" : ""} ${named.has(r.rank) ? "par-named" : ""}`;
  return (
    <>
      <AdviceCard c={c} advice={rp.advice} openRank={openRank} />
      <BreakdownCard c={c} named={named} />
      <div class="grid two">
        <HeatmapCard
          c={c}
          title="Step time by rank and step"
          values={rp.stepTime?.valuesNs ?? []}
          colors={["#e3f2fd", "#64b5f6", "#0d47a1"]}
          label="step time"
          testId="par-heat-step"
        />
        <HeatmapCard
          c={c}
          title="Exposed communication by rank and step"
          values={rp.exposedCommunication?.valuesNs ?? []}
          colors={["#fff3e0", "#ffb74d", "#bf360c"]}
          label="exposed communication"
          testId="par-heat-exposed"
        />
      </div>
      <RankTable c={c} rowClass={rowClass} />
      <WaitsCard c={c} rowClass={rowClass} />
      <HostCard c={c} rowClass={rowClass} />
      <KindsCard rp={rp} unit={unit} />
      <div class="grid two">
        <PipelineCard c={c} openRank={openRank} />
        <RankKindsCard c={c} />
      </div>
      <ClocksCard c={c} />
      <MatchingCard rp={rp} />
    </>
  );
}

// ------------------------------------------------------------------ verdict, findings, outliers

const CAUSES: Record<string, string> = {
  device_compute: "device compute: check its GPU",
  host_dataloader: "host: its data loader",
  host: "host: check its CPU side",
  launch_overhead: "launch overhead",
  memcpy: "memcpy",
  pipeline: "pipeline",
};

function causeText(cause: string): string {
  return CAUSES[cause] ?? cause.replace(/_/g, " ");
}

/** Coverage of the matching: the verdict's own figures, else the matching totals. */
function coverage(rp: RunParallel): { all: number; min: number } | null {
  const v = rp.straggler;
  if (v && (v.coverage > 0 || v.minRankCoverage > 0)) return { all: v.coverage, min: v.minRankCoverage };
  const m = rp.matching;
  if (m && num(m.instances) > 0) {
    const ranks = rp.ranks.filter((r) => r.coverage > 0);
    return { all: num(m.matchedInstances) / num(m.instances), min: ranks.length ? Math.min(...ranks.map((r) => r.coverage)) : -1 };
  }
  return null;
}

function VerdictCard({ c }: { c: Ctx }) {
  const { rp, unit } = c;
  const v = rp.straggler;
  const [allNamed, setAllNamed] = useState(false);
  if (!v) return null;
  const cov = coverage(rp);
  const state = v.uncertain ? "uncertain" : v.found ? "found" : "clear";
  return (
    <section class={`card par-verdict ${state}`} data-testid="par-verdict" data-found={v.found ? "1" : "0"} data-uncertain={v.uncertain ? "1" : "0"}>
      <header class="card-head">
        <h3>Straggler verdict</h3>
        {v.uncertain ? (
          <span class="par-uncertain" data-testid="par-uncertain">
            Uncertain: the evidence is incomplete
          </span>
        ) : null}
        {cov ? (
          <span class={`par-coverage ${v.uncertain ? "low" : ""}`} data-testid="par-coverage" title="Collective instances matched across ranks ÷ instances">
            {`coverage ${pct1(cov.all)}${cov.min >= 0 ? ` · lowest rank ${pct1(cov.min)}` : ""}`}
          </span>
        ) : null}
      </header>
      <div class="card-body">
        <div class="par-verdict-line">
          <span class="par-banner-mark" aria-hidden="true">{v.uncertain ? "?" : v.found ? "!" : "✓"}</span>
          <div class="par-verdict-summary" data-testid="par-verdict-summary">
            {fillTimes(v.summary, unit)}
          </div>
        </div>
        {(allNamed ? v.stragglers : v.stragglers.slice(0, SHOWN_STRAGGLERS)).map((s) => (
          <StragglerBlock c={c} s={s} />
        ))}
        {v.stragglers.length > SHOWN_STRAGGLERS ? (
          <button class="btn small" onClick={() => setAllNamed(!allNamed)} data-testid="par-straggler-more">
            {allNamed ? "Show fewer" : `Show the other ${v.stragglers.length - SHOWN_STRAGGLERS} named ranks`}
          </button>
        ) : null}
        <p class="note" data-testid="par-verdict-rule">
          {`(${v.rule})`}
        </p>
      </div>
    </section>
  );
}

function StragglerBlock({ c, s }: { c: Ctx; s: Straggler }) {
  const { unit, open } = c;
  const t = (ns: bigint) => `${fmtTime(num(ns), unit)} ${unit}`;
  // The cost to the job leads: the peers' waits summed over every peer grow with the number of
  // replicas and are no measure of what the rank costs (issue 12), so they are not shown here.
  const facts: [string, string, string][] = [
    ["cost", "Costs the job", `${t(s.jobCostNs)} / step${s.absorbed ? " (mostly absorbed)" : ""}`],
    ["compute", "Compute", `${t(s.computeNs)} vs role peers' ${t(s.peerComputeNs)} (${s.computeExcess >= 0 ? "+" : ""}${pct0(s.computeExcess)})`],
    ["last", "Arrived last", `${s.lastArrivals} of ${s.matched}`],
  ];
  const rank = c.byRank.get(s.rank);
  const label = s.label || (rank ? c.label(rank) : s.worker && s.worker !== `rank${s.rank}` ? `rank ${s.rank} · ${s.worker}` : `rank ${s.rank}`);
  const tag = s.cause ? causeText(s.cause) : s.longerCompute ? "longer compute: check its GPU" : "late arrival, normal compute: check its host";
  const gpu = s.cause ? s.cause === "device_compute" : s.longerCompute;
  return (
    <div class="par-straggler" data-testid="par-straggler" data-rank={String(s.rank)}>
      <div class="par-straggler-head">
        <button class="par-chip strong" onClick={() => open(s.worker)} title="Open this rank's overview" data-testid="par-straggler-open">
          {label}
        </button>
        <span class={`par-tag ${gpu ? "gpu" : "host"}`}>{tag}</span>
      </div>
      <dl class="par-facts">
        {facts.map(([key, name, value]) => (
          <div data-fact={key}>
            <dt>{name}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
      <p class="par-reason">{fillTimes(s.reason, unit)}</p>
    </div>
  );
}

const CATEGORY_ORDER = ["anomaly", "structure", "evidence"];
const CATEGORY_TITLE: Record<string, string> = { anomaly: "Anomaly", structure: "Structure", evidence: "Evidence" };

function RankChips({ c, ranks, max = 4 }: { c: Ctx; ranks: number[]; max?: number }) {
  if (!ranks.length) return null;
  return (
    <div class="par-advice-ranks">
      {ranks.slice(0, max).map((rank) => {
        const r = c.byRank.get(rank);
        return (
          <button class="par-chip" onClick={() => r && c.open(r.worker)} title={r ? `Open ${c.label(r)}` : undefined} data-rank={String(rank)}>
            {r ? c.label(r) : `rank ${rank}`}
          </button>
        );
      })}
      {ranks.length > max ? (
        <span class="muted" title={ranksText(ranks)} data-testid="par-more-ranks">
          {`+${ranks.length - max} more ranks`}
        </span>
      ) : null}
    </div>
  );
}

function FindingsCard({ c }: { c: Ctx }) {
  const { rp, unit } = c;
  const t = (ns: bigint) => `${fmtTime(num(ns), unit)} ${unit}`;
  const order = (f: Finding) => {
    const i = CATEGORY_ORDER.indexOf(f.category);
    return i < 0 ? CATEGORY_ORDER.length : i;
  };
  // anomalies, then structure, then evidence; within each the analysis's order (most costly first)
  const items = rp.findings.map((f, i) => ({ f, i })).sort((a, b) => order(a.f) - order(b.f) || a.i - b.i);
  return (
    <Card title="Findings" subtitle={`anomalies, structure, evidence · cost to the whole job per step, ${unit}`} testId="par-findings-card">
      <ol class="par-findings" data-testid="par-findings">
        {items.map(({ f }) => (
          <li class={`par-finding ${f.category}`} data-rule={f.rule} data-category={f.category} data-testid="par-finding">
            <div class="par-finding-head">
              <span class={`par-cat ${f.category}`}>{CATEGORY_TITLE[f.category] ?? f.category}</span>
              {f.cause ? <span class="par-cause">{causeText(f.cause)}</span> : null}
              {f.stage >= 0 ? <span class="par-cause">{`stage ${f.stage}`}</span> : null}
              <span class="par-cost" data-testid="par-finding-cost">
                {num(f.costNs) > 0 ? `costs ${t(f.costNs)} / step` : f.category === "evidence" ? "" : "no cost to the job"}
                {f.absorbed ? <span class="par-absorbed">mostly absorbed</span> : null}
              </span>
            </div>
            <p class="par-finding-text">{fillTimes(f.text, unit)}</p>
            {num(f.excessNs) > 0 ? <p class="note">{`Excess on the rank itself: ${t(f.excessNs)} / step against its role peers.`}</p> : null}
            <RankChips c={c} ranks={f.ranks} />
          </li>
        ))}
      </ol>
    </Card>
  );
}

interface Outlier {
  r: RankParallel;
  score: number;
}

/** The ranks least like their peers: by deviation (the analysis's measure) where it is given, else by the net wait they cause. */
function outliers(rp: RunParallel, named: Set<number>): { by: "deviation" | "caused"; rows: Outlier[] } {
  const byDev = rp.ranks.some((r) => r.deviation !== 0);
  const score = (r: RankParallel) => (byDev ? r.deviation : num(r.causedWaitNs) - num(r.waitNs));
  const rows = rp.ranks
    .map((r) => ({ r, score: score(r) }))
    .filter((x) => x.score > 0 || named.has(x.r.rank))
    .sort((a, b) => Number(named.has(b.r.rank)) - Number(named.has(a.r.rank)) || b.score - a.score)
    .slice(0, OUTLIERS);
  return { by: byDev ? "deviation" : "caused", rows };
}

function OutliersCard({ c, named, current }: { c: Ctx; named: Set<number>; current: string }) {
  const { rp, unit } = c;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const o = useMemo(() => outliers(rp, named), [rp, named]);
  const columns: SimpleColumn<Outlier>[] = [
    { key: "label", title: "Rank", align: "left", text: (x) => c.label(x.r) },
    o.by === "deviation"
      ? { key: "deviation", title: "Deviation", text: (x) => pct1(x.score) }
      : { key: "net", title: "Net caused wait", text: (x) => t(x.score) },
    { key: "step", title: "Step", text: (x) => t(x.r.stepTimeNs) },
  ];
  const sub =
    o.by === "deviation"
      ? "largest excess over the rank's role peers, as a share of the median step"
      : `time its peers wait for it net of its own waits, ${unit} per step`;
  return (
    <Card title="Outlier ranks" subtitle={`${sub} · click to open`} testId="par-outliers-card">
      {o.rows.length ? (
        <SimpleTable columns={columns} rows={o.rows} rowKey={(x) => x.r.worker} testId="par-outliers" onRowClick={(x) => c.open(x.r.worker)} rowClass={(x) => `${named.has(x.r.rank) ? "par-named" : ""} ${x.r.worker === current ? "current" : ""}`} />
      ) : (
        <p class="muted" data-testid="par-outliers-none">
          No rank stands out from its peers.
        </p>
      )}
    </Card>
  );
}

function triggerValue(value: number, unit: string): string {
  return unit.includes("fraction") ? pct1(value) : pyG(value);
}

function AdviceCard({ c, advice, openRank }: { c: Ctx; advice: Advice[]; openRank: (rank: number) => void }) {
  const { unit } = c;
  const who = (rank: number) => {
    if (rank < 0) return "all ranks";
    return `rank ${rank}`;
  };
  return (
    <Card title="Advice" subtitle="rule-based; each rule cites the value that fired it and its threshold" testId="par-advice-card">
      {advice.length ? (
        <ol class="par-advice" data-testid="par-advice">
          {advice.map((a) => (
            <li data-rule={a.rule}>
              <div class="par-advice-title">
                <span>{a.title}</span>
                <code class="par-rule">{a.rule}</code>
              </div>
              <p class="par-advice-text">{fillTimes(a.text, unit)}</p>
              <ul class="par-triggers">
                {a.triggers.map((tr) => {
                  const value = triggerValue(tr.value, tr.unit);
                  const threshold = triggerValue(tr.threshold, tr.unit);
                  return (
                    <li data-testid="par-trigger" data-value={value} data-threshold={threshold} data-metric={tr.metric}>
                      <span class="par-trigger-metric">{`${tr.metric} (${who(tr.rank)})`}</span>
                      <span class="par-trigger-num">
                        <span class="par-trigger-value">{value}</span>
                        <span class="par-trigger-op">≥ threshold</span>
                        <span class="par-trigger-threshold">{threshold}</span>
                      </span>
                    </li>
                  );
                })}
              </ul>
              {a.ranks.length ? (
                <div class="par-advice-ranks">
                  {a.ranks.slice(0, 16).map((r) => (
                    <button class="par-chip" onClick={() => openRank(r)} title="Open this rank's overview">{`rank ${r}`}</button>
                  ))}
                  {a.ranks.length > 16 ? <span class="muted">{`+${a.ranks.length - 16} more (${ranksText(a.ranks)})`}</span> : null}
                </div>
              ) : null}
            </li>
          ))}
        </ol>
      ) : (
        <p class="muted" data-testid="par-advice-none">
          No rule fired.
        </p>
      )}
    </Card>
  );
}

// ------------------------------------------------------------------ breakdown

type BreakdownMode = "steps" | "mean" | "waits";

function BreakdownCard({ c, named }: { c: Ctx; named: Set<number> }) {
  const { rp, unit, open } = c;
  const stepIds = useMemo(() => rp.steps.map((s) => num(s)), [rp]);
  const [mode, setMode] = useState<BreakdownMode>(rp.ranks.length * Math.max(1, stepIds.length) <= MAX_PER_STEP_BARS ? "steps" : "mean");
  const kinds = useMemo(() => kindsPresent(rp), [rp]);
  const host = rp.ranks.length > 0 && rp.ranks.every((r) => r.timeline === Timeline.HOST);

  const option = useMemo(() => {
    if (mode === "waits") return waitsOption(rp, unit, named, c.label);
    if (mode === "mean") return breakdownOption(rp.ranks, [-1], rp.ranks.map((r) => [meanBreakdown(r)]), kinds, unit, c.label);
    const cells: (Breakdown | null)[][] = rp.ranks.map((r) => {
      const byStep = new Map(r.stepBreakdown.map((x) => [num(x.step), x]));
      return stepIds.map((id) => {
        const s = byStep.get(id);
        return s ? stepBreakdown(s) : null;
      });
    });
    return breakdownOption(rp.ranks, stepIds, cells, kinds, unit, c.label);
  }, [mode, rp, unit, kinds, stepIds, named, c]);

  const subtitle =
    mode === "waits"
      ? "collectives other than send/recv, per step: time a rank waited for late peers, and time its peers waited for it"
      : `${host ? "host timeline (no device events)" : "GPU timeline"} · ${mode === "steps" ? "per rank one bar per step, in step order" : "means over the rank's steps"} · the parts add up to the step time · click a bar to open the rank`;
  return (
    <Card
      title={mode === "waits" ? "Waits at collectives, per rank" : "Step breakdown, rank × step"}
      subtitle={subtitle}
      testId="par-breakdown-card"
      tools={
        <Segmented<BreakdownMode>
          value={mode}
          options={[
            { value: "steps", label: "Per step", title: "One bar per rank and step" },
            { value: "mean", label: "Mean per step", title: "One bar per rank: the means over its steps" },
            { value: "waits", label: "Waits", title: "Waited vs made peers wait, per rank" },
          ]}
          onChange={setMode}
          testId="par-breakdown-mode"
          label="Breakdown"
        />
      }
    >
      <Chart option={option} height={320} testId="par-breakdown-chart" onClick={(p) => rp.ranks[p.dataIndex] && open(rp.ranks[p.dataIndex].worker)} />
      {kinds.length > 1 && mode !== "waits" ? (
        <p class="note">Where kinds overlap one another, the overlap is drawn with the first kind; the tooltip gives each kind's own exposed time.</p>
      ) : null}
    </Card>
  );
}

// ------------------------------------------------------------------ per-rank tables (virtualised)

const rankCol: RowColumn<RankParallel> = { key: "rank", title: "Rank", width: 52, align: "left", text: (r) => String(r.rank), sort: (r) => r.rank, firstDir: "asc" };

function RankTable({ c, rowClass }: { c: Ctx; rowClass: (r: RankParallel) => string }) {
  const { rp, unit, open } = c;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const share = (r: RankParallel, ns: bigint) => (num(r.stepTimeNs) ? pct1(num(ns) / num(r.stepTimeNs)) : "-");
  const anyHost = rp.ranks.some((r) => r.timeline === Timeline.HOST);
  const ns = (f: (r: RankParallel) => bigint) => (r: RankParallel) => num(f(r));
  const columns: RowColumn<RankParallel>[] = [
    rankCol,
    { key: "steps", title: "Steps", width: 50, text: (r) => String(r.steps), sort: (r) => r.steps },
    { key: "step", title: "Step", width: 72, text: (r) => t(r.stepTimeNs), sort: ns((r) => r.stepTimeNs) },
    { key: "compute", title: "Compute", width: 72, text: (r) => t(r.computeNs), sort: ns((r) => r.computeNs) },
    { key: "exposed", title: "Exposed comm", width: 96, text: (r) => t(r.exposedCommunicationNs), sort: ns((r) => r.exposedCommunicationNs) },
    { key: "exposed_share", title: "(of step)", width: 66, text: (r) => share(r, r.exposedCommunicationNs), sort: (r) => (num(r.stepTimeNs) ? num(r.exposedCommunicationNs) / num(r.stepTimeNs) : undefined) },
    { key: "hidden", title: "Hidden comm", width: 88, text: (r) => t(r.hiddenCommunicationNs), sort: ns((r) => r.hiddenCommunicationNs) },
    { key: "memcpy", title: "Exposed memcpy", width: 104, text: (r) => t(r.exposedMemoryNs), sort: ns((r) => r.exposedMemoryNs) },
    { key: "idle", title: "Idle", width: 64, text: (r) => t(r.idleNs), sort: ns((r) => r.idleNs) },
    { key: "timeline", title: "Timeline", width: 66, align: "left", text: (r) => (r.timeline === Timeline.HOST ? "host" : "GPU") },
  ];
  return (
    <Card title="Per-rank step breakdown" subtitle={`times in ${unit} · click a header to sort, a row to open the rank`} testId="par-ranks-card">
      <RowsTable<RankParallel> columns={columns} rows={rp.ranks} rowKey={(r) => r.worker} name={c.label} nameTitle="Rank" testId="par-ranks" onRowClick={(r) => open(r.worker)} rowClass={rowClass} />
      <p class="note">
        {"Step = Compute + Exposed comm + Exposed memcpy + Idle. GPU timeline: Compute = some non-communication kernel runs; Exposed comm = a communication kernel runs and no computation; Hidden comm = communication overlapped by computation; Idle = nothing runs on the GPU." +
          (anyHost ? " Host timeline (no device events): communication = host communication events, which block the host; Compute = other operators; Idle = the rest." : "") +
          (rp.ranks.some((r) => r.rankInferred) ? " * rank numbered in the order of hostname, pid and worker name (the file names do not tell it)." : "")}
      </p>
    </Card>
  );
}

function HostCard({ c, rowClass }: { c: Ctx; rowClass: (r: RankParallel) => string }) {
  const { rp, unit, open } = c;
  // A CPU run (no device events on any rank) has no CUDA runtime to weigh against kernels (the CLI omits the table too).
  if (rp.ranks.every((r) => r.timeline === Timeline.HOST)) return null;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const columns: RowColumn<RankParallel>[] = [
    rankCol,
    { key: "runtime", title: "CUDA runtime", width: 96, text: (r) => t(r.runtimeNs), sort: (r) => num(r.runtimeNs) },
    { key: "runtime_share", title: "(of step)", width: 66, text: (r) => (num(r.stepTimeNs) ? pct1(num(r.runtimeNs) / num(r.stepTimeNs)) : "-"), sort: (r) => (num(r.stepTimeNs) ? num(r.runtimeNs) / num(r.stepTimeNs) : undefined) },
    { key: "launches", title: "Launches", width: 72, text: (r) => String(r.launches), sort: (r) => num(r.launches) },
    { key: "sync", title: "Synchronising", width: 96, text: (r) => t(r.syncNs), sort: (r) => num(r.syncNs) },
    { key: "kernel", title: "Kernel time", width: 86, text: (r) => t(r.kernelNs), sort: (r) => num(r.kernelNs) },
  ];
  return (
    <Card title="Host side: CUDA runtime against kernels" subtitle={`per step · ${unit} · click a row to open the rank`} testId="par-host-card">
      <RowsTable<RankParallel> columns={columns} rows={rp.ranks} rowKey={(r) => r.worker} name={c.label} nameTitle="Rank" testId="par-host" onRowClick={(r) => open(r.worker)} rowClass={rowClass} maxHeight={280} />
      <p class="note">Kernel time is the plain sum of kernel durations (streams overlap). Synchronising = time in *Synchronize* calls and synchronous cudaMemcpy.</p>
    </Card>
  );
}

// ------------------------------------------------------------------ heatmaps

type HeatMode = "heatmap" | "table";

interface HeatRow {
  r: RankParallel;
  cells: string[];
  values: number[];
}

function HeatmapCard({ c, title, values, colors, label, testId }: { c: Ctx; title: string; values: bigint[]; colors: string[]; label: string; testId: string }) {
  const { rp, unit, open } = c;
  const [mode, setMode] = useState<HeatMode>("heatmap");
  const option = useMemo(() => heatmapOption(rp, values, unit, colors, label, c.label), [rp, values, unit, colors, label, c]);
  const bins = heatBins(rp.ranks.length);
  const steps = rp.steps.map((s) => num(s));
  const rows: HeatRow[] = useMemo(
    () =>
      mode === "table"
        ? rp.ranks.map((r, ri) => {
            const vs = steps.map((_s, si) => num(values[ri * steps.length + si]));
            return { r, values: vs, cells: vs.map((v) => (v >= 0 ? fmtTime(v, unit) : "-")) };
          })
        : [],
    [mode, rp, values, unit],
  );
  const columns: RowColumn<HeatRow>[] = [
    { key: "rank", title: "Rank", width: 52, align: "left", text: (x) => String(x.r.rank), sort: (x) => x.r.rank, firstDir: "asc" },
    ...steps.map((s, si) => ({ key: `s${s}`, title: `#${s}`, width: 72, text: (x: HeatRow) => x.cells[si], sort: (x: HeatRow) => (x.values[si] >= 0 ? x.values[si] : undefined) })),
  ];
  const height = Math.max(160, Math.min(520, 26 * bins.rows.length + 40));
  const binned = bins.size > 1;
  return (
    <Card
      title={title}
      subtitle={`${unit} · ${binned ? `each row ${bins.size} consecutive ranks, the max of the bin (hover: its range and worst rank)` : "one row per rank"} · click a cell to open the rank`}
      testId={`${testId}-card`}
      tools={
        <Segmented<HeatMode>
          value={mode}
          options={[
            { value: "heatmap", label: "Heatmap" },
            { value: "table", label: "Table" },
          ]}
          onChange={setMode}
          testId={`${testId}-mode`}
          label={title}
        />
      }
    >
      {mode === "heatmap" ? (
        <div data-testid={`${testId}-box`} data-bin={bins.size} data-rows={bins.rows.length}>
          <Chart
            option={option}
            height={height}
            testId={testId}
            onClick={(p) => {
              const d = p.data as [number, number, number, number] | undefined;
              if (d && rp.ranks[d[3]]) open(rp.ranks[d[3]].worker);
            }}
          />
        </div>
      ) : (
        <RowsTable<HeatRow> columns={columns} rows={rows} rowKey={(x) => x.r.worker} name={(x) => c.label(x.r)} nameTitle="Rank" testId={`${testId}-table`} onRowClick={(x) => open(x.r.worker)} maxHeight={height} />
      )}
    </Card>
  );
}

// ------------------------------------------------------------------ collectives and waits

interface RankKindRow {
  r: RankParallel;
  k: RankKind;
}

function KindsCard({ rp, unit }: { rp: RunParallel; unit: TimeUnit }) {
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const columns: SimpleColumn<KindAcrossRanks>[] = [
    { key: "kind", title: "Kind", align: "left", text: (k) => kindLabel(k.kind) },
    { key: "calls", title: "Calls", text: (k) => String(k.calls) },
    { key: "device", title: "Device time", text: (k) => t(k.deviceNs) },
    { key: "host", title: "Host time", text: (k) => t(k.hostNs) },
    { key: "exposed", title: "Exposed", text: (k) => t(k.exposedNs) },
    { key: "matched", title: "Matched", text: (k) => String(k.matched) },
    { key: "wait", title: "Wait", text: (k) => t(k.waitNs) },
    { key: "transfer", title: "Transfer", text: (k) => t(k.transferNs) },
    { key: "bytes", title: "Bytes", text: (k) => pyBytes(num(k.bytes)) },
    { key: "ranks", title: "Ranks", align: "left", text: (k) => ranksText(k.ranks) },
  ];
  return (
    <Card title="Collectives by kind" subtitle={`all ranks, all steps · ${unit}`} testId="par-kinds-card">
      <SimpleTable columns={columns} rows={rp.kinds} rowKey={(k) => kindLabel(k.kind)} testId="par-kinds" />
      <p class="note">
        Totals over ranks and steps. Wait = duration − transfer of matched instances (transfer ≈ the shortest duration of the instance across its ranks). Bytes only where the
        trace records the operator's input shapes. More than 16 ranks are written as ranges (0-127).
      </p>
    </Card>
  );
}

function RankKindsCard({ c }: { c: Ctx }) {
  const { rp, unit } = c;
  const perRank: RankKindRow[] = useMemo(() => rp.ranks.flatMap((r) => r.kinds.map((k) => ({ r, k }))), [rp]);
  const n = (x: RankKindRow) => Math.max(1, x.r.steps);
  const rkColumns: RowColumn<RankKindRow>[] = [
    { key: "rank", title: "Rank", width: 48, align: "left", text: (x) => String(x.r.rank), sort: (x) => x.r.rank, firstDir: "asc" },
    { key: "calls", title: "Calls", width: 50, text: (x) => pyFixed(num(x.k.calls) / n(x), 1), sort: (x) => num(x.k.calls) / n(x) },
    { key: "device", title: "Device time", width: 80, text: (x) => fmtTime(num(x.k.deviceNs) / n(x), unit), sort: (x) => num(x.k.deviceNs) / n(x) },
    { key: "exposed", title: "Exposed", width: 66, text: (x) => fmtTime(num(x.k.exposedNs) / n(x), unit), sort: (x) => num(x.k.exposedNs) / n(x) },
    { key: "wait", title: "Wait", width: 60, text: (x) => fmtTime(num(x.k.waitNs) / n(x), unit), sort: (x) => num(x.k.waitNs) / n(x) },
    { key: "matched", title: "Matched", width: 66, text: (x) => `${x.k.matched}/${x.k.calls}`, sort: (x) => (num(x.k.calls) ? num(x.k.matched) / num(x.k.calls) : undefined) },
  ];
  return (
    <Card title="Collectives by rank and kind" subtitle={`per step · ${unit}`} testId="par-rank-kinds-card">
      <RowsTable<RankKindRow>
        columns={rkColumns}
        rows={perRank}
        rowKey={(x) => `${x.r.rank}:${kindLabel(x.k.kind)}`}
        name={(x) => kindLabel(x.k.kind)}
        nameTitle="Kind"
        nameWidth={110}
        testId="par-rank-kinds"
        maxHeight={320}
      />
    </Card>
  );
}

function WaitsCard({ c, rowClass }: { c: Ctx; rowClass: (r: RankParallel) => string }) {
  const { rp, unit, open } = c;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const columns: RowColumn<RankParallel>[] = [
    rankCol,
    { key: "waited", title: "Waited", width: 72, text: (r) => t(r.waitNs), sort: (r) => num(r.waitNs) },
    { key: "caused", title: "Made peers wait", width: 110, text: (r) => t(r.causedWaitNs), sort: (r) => num(r.causedWaitNs) },
    { key: "last", title: "Arrived last", width: 86, text: (r) => `${r.lastArrivals}/${r.matched}`, sort: (r) => (r.matched ? r.lastArrivals / r.matched : undefined) },
    { key: "compute", title: "Compute", width: 72, text: (r) => t(r.computeNs), sort: (r) => num(r.computeNs) },
    { key: "peer_compute", title: "Peers' compute", width: 100, text: (r) => (r.peers.length ? t(r.peerComputeNs) : "-"), sort: (r) => (r.peers.length ? num(r.peerComputeNs) : undefined) },
    { key: "peers", title: "Peers", width: 200, align: "left", text: (r) => ranksText(r.peers) },
  ];
  return (
    <Card title="Waits at collectives other than send/recv" subtitle={`per step · ${unit} · click a row to open the rank`} testId="par-waits-card">
      <RowsTable<RankParallel> columns={columns} rows={rp.ranks} rowKey={(r) => r.worker} name={c.label} nameTitle="Rank" testId="par-waits" onRowClick={(r) => open(r.worker)} rowClass={rowClass} maxHeight={280} />
      <p class="note">
        Waited = time the rank spent in collectives waiting for the last member; Made peers wait = its peers' wait at the instances it arrived last at; Peers = the ranks it shares
        matched collectives with (more than 16 as ranges); their median compute is the yardstick for “longer compute”.
      </p>
    </Card>
  );
}

// ------------------------------------------------------------------ pipeline, matching

function PipelineCard({ c, openRank }: { c: Ctx; openRank: (rank: number) => void }) {
  const { rp, unit } = c;
  const pv = rp.pipeline;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  if (!pv?.present) {
    return (
      <Card title="Pipeline" testId="par-pipeline-card">
        <p class="muted" data-testid="par-pipeline-none">
          No pipeline: no send/recv pairs matched across ranks.
        </p>
      </Card>
    );
  }
  const bar = (ratio: number) => (
    <span class="par-ratio">
      <span class="par-ratio-bar">
        <span style={{ width: `${Math.min(100, Math.max(0, ratio * 100))}%` }} />
      </span>
    </span>
  );
  if (pv.stages.length) {
    const columns: SimpleColumn<PipelineStage>[] = [
      { key: "stage", title: "Stage", align: "left", text: (s) => String(s.stage) },
      { key: "ranks", title: "Ranks", align: "left", text: (s) => ranksText(s.ranks) },
      { key: "step", title: "Step", text: (s) => t(s.stepTimeNs) },
      { key: "compute", title: "Compute", text: (s) => t(s.computeNs) },
      { key: "bubble", title: "Bubble", text: (s) => t(s.bubbleNs) },
      { key: "ratio", title: "Bubble ratio", text: (s) => pct1(s.bubbleRatio) },
    ];
    return (
      <Card title={`Pipeline (${pv.pipelines} pipelines)`} subtitle={`per step · ${unit} · click a stage to open its first rank`} testId="par-pipeline-card">
        <div class="par-stages">
          <SimpleTable columns={columns} rows={pv.stages} rowKey={(s) => String(s.stage)} testId="par-stages" onRowClick={(s) => s.ranks.length && openRank(s.ranks[0])} />
          <div class="par-stage-bars" aria-hidden="true">
            {pv.stages.map((s) => (
              <div class="par-stage-bar">
                <span class="par-stage-name">{`stage ${s.stage}`}</span>
                {bar(s.bubbleRatio)}
                <span class="par-stage-pct">{pct1(s.bubbleRatio)}</span>
              </div>
            ))}
          </div>
        </div>
        <p class="note">{pv.definition}</p>
      </Card>
    );
  }
  const rows = rp.ranks.filter((r) => num(r.bubbleNs) || r.pipelineStage >= 0);
  const columns: RowColumn<RankParallel>[] = [
    rankCol,
    { key: "step", title: "Step", width: 72, text: (r) => t(r.stepTimeNs), sort: (r) => num(r.stepTimeNs) },
    { key: "bubble", title: "Bubble", width: 72, text: (r) => t(r.bubbleNs), sort: (r) => num(r.bubbleNs) },
    { key: "ratio", title: "Bubble ratio", width: 86, text: (r) => pct1(r.bubbleRatio), sort: (r) => r.bubbleRatio },
  ];
  return (
    <Card title="Pipeline (stages unknown)" subtitle={`per step · ${unit}`} testId="par-pipeline-card">
      <RowsTable<RankParallel> columns={columns} rows={rows} rowKey={(r) => r.worker} name={c.label} nameTitle="Rank" testId="par-stages" onRowClick={(r) => openRank(r.rank)} maxHeight={280} />
      <p class="note">{pv.definition}</p>
    </Card>
  );
}

function ClocksCard({ c }: { c: Ctx }) {
  const { rp, unit } = c;
  if (rp.clocks.length < 2) return null;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const columns: SimpleColumn<HostClock>[] = [
    { key: "host", title: "Host", align: "left", text: (h) => h.hostname + (h.reference ? " (reference)" : "") },
    { key: "offset", title: "Offset", text: (h) => t(h.offsetNs) },
    { key: "spread", title: "Spread (IQR)", text: (h) => t(h.spreadNs) },
    { key: "samples", title: "Samples", text: (h) => String(h.samples) },
    { key: "ranks", title: "Ranks", align: "left", text: (h) => ranksText(h.ranks) },
  ];
  return (
    <Card
      title="Host clocks"
      subtitle={`${unit} · each host's offset from the reference host's, from collectives spanning hosts (their members end together); subtracted from its times before matching and on the Timeline`}
      testId="par-clocks-card"
    >
      <SimpleTable columns={columns} rows={rp.clocks} rowKey={(h) => h.hostname} testId="par-clocks" />
    </Card>
  );
}

function MatchingCard({ rp }: { rp: RunParallel }) {
  const m = rp.matching;
  return (
    <div class="par-foot" data-testid="par-matching">
      {m ? <p>{`Matching: ${m.matchedInstances} of ${m.instances} communication instances matched across ranks (${m.method}).`}</p> : null}
      {rp.notes.map((n) => (
        <p data-testid="par-note">{`Note: ${n}`}</p>
      ))}
    </div>
  );
}
