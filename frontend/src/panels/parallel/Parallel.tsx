// Hybrid-parallel analysis across the ranks of a run and span (RunParallel; docs/distributed.md): the
// straggler verdict, the per-rank and per-step breakdown of the GPU (or host) timeline, rank × step
// heatmaps, collectives by kind, waits at collectives, pipeline bubbles and advice. Every number is
// printed as `tb-paddle-profile distributed RUN_DIR --time-unit X` prints it; names are text, never HTML.
import { useMemo, useState } from "preact/hooks";
import { Chart } from "../../components/Chart";
import { Card, Notice, Segmented, SimpleTable } from "../../components/ui";
import type { SimpleColumn } from "../../components/ui";
import type { TimeUnit } from "../../format";
import { fillTimes, fmtTime } from "../../format";
import type { Advice, KindAcrossRanks, PipelineStage, RankKind, RankParallel, RunParallel, Straggler } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { Timeline } from "../../gen/tb_paddle_profile/v1/summary_pb";
import { num } from "../../summary";
import type { Breakdown } from "./charts";
import { breakdownOption, heatmapOption, kindsPresent, meanBreakdown, stepBreakdown, waitsOption } from "./charts";
import type { ParallelState } from "./data";
import "./parallel.css";
import { kindLabel, pct0, pct1, pyBytes, pyFixed, pyG } from "./pyfmt";

type Open = (worker: string) => void;

const MAX_PER_STEP_BARS = 160;

function ranksText(ranks: number[]): string {
  return ranks.join(",") || "-";
}

/** The verdict in one line, for the top of the Distributed view (the full card is further down). */
export function VerdictBanner({ state, unit, onJump }: { state: ParallelState; unit: TimeUnit; onJump: () => void }) {
  if (state.status !== "ok") return null;
  const v = state.value.straggler;
  if (!v?.summary) return null;
  return (
    <div class={`par-banner ${v.found ? "found" : "clear"}`} data-testid="par-banner" role="status">
      <span class="par-banner-mark" aria-hidden="true">{v.found ? "!" : "✓"}</span>
      <span class="par-banner-text">{fillTimes(v.summary, unit)}</span>
      <button class="link" onClick={onJump}>
        Hybrid-parallel analysis ↓
      </button>
    </div>
  );
}

export function ParallelSection({
  state,
  unit,
  current,
  onOpenRank,
}: {
  state: ParallelState;
  unit: TimeUnit;
  current: string;
  onOpenRank: Open;
}) {
  return (
    <section class="par" id="tbpp-parallel" data-testid="parallel">
      <header class="par-head">
        <h2>Hybrid-parallel analysis</h2>
        <span class="par-head-sub">
          {state.status === "ok" ? headline(state.value, unit) : "collectives by kind, exposed communication, stragglers, pipeline bubbles"}
        </span>
      </header>
      {state.status === "loading" ? <Notice kind="loading">Analysing the ranks…</Notice> : null}
      {state.status === "pending" ? (
        <Notice kind="loading" testId="par-pending">
          {`The analysis starts once every rank is parsed${state.note ? ` (${state.note})` : ""}.`}
        </Notice>
      ) : null}
      {state.status === "error" ? <Notice kind="error" testId="par-error">{`The hybrid-parallel analysis failed: ${state.message}`}</Notice> : null}
      {state.status === "ok" ? <ParallelBody rp={state.value} unit={unit} current={current} open={onOpenRank} /> : null}
    </section>
  );
}

function headline(rp: RunParallel, unit: TimeUnit): string {
  const steps = rp.steps.map((s) => num(s));
  const stepTxt = steps.length > 1 ? `steps ${steps[0]}..${steps[steps.length - 1]}` : steps.length ? `step ${steps[0]}` : "no steps";
  return `${rp.ranks.length} ranks, ${stepTxt} · times in ${unit}, per step (means over the rank's steps)`;
}

function ParallelBody({ rp, unit, current, open }: { rp: RunParallel; unit: TimeUnit; current: string; open: Open }) {
  const workerOf = (rank: number) => rp.ranks.find((r) => r.rank === rank)?.worker;
  const openRank = (rank: number) => {
    const w = workerOf(rank);
    if (w) open(w);
  };
  const named = useMemo(() => new Set(rp.straggler?.stragglers.map((s) => s.rank) ?? []), [rp]);
  const rowClass = (r: RankParallel) => `${r.worker === current ? "current" : ""} ${named.has(r.rank) ? "par-named" : ""}`;
  return (
    <>
      <VerdictCard rp={rp} unit={unit} open={open} />
      <AdviceCard advice={rp.advice} unit={unit} openRank={openRank} />
      <BreakdownCard rp={rp} unit={unit} open={open} named={named} />
      <div class="grid two">
        <HeatmapCard
          rp={rp}
          title="Step time by rank and step"
          values={rp.stepTime?.valuesNs ?? []}
          colors={["#e3f2fd", "#64b5f6", "#0d47a1"]}
          label="step time"
          unit={unit}
          open={open}
          testId="par-heat-step"
        />
        <HeatmapCard
          rp={rp}
          title="Exposed communication by rank and step"
          values={rp.exposedCommunication?.valuesNs ?? []}
          colors={["#fff3e0", "#ffb74d", "#bf360c"]}
          label="exposed communication"
          unit={unit}
          open={open}
          testId="par-heat-exposed"
        />
      </div>
      <RankTable rp={rp} unit={unit} open={open} rowClass={rowClass} />
      <WaitsCard rp={rp} unit={unit} open={open} rowClass={rowClass} />
      <HostCard rp={rp} unit={unit} open={open} rowClass={rowClass} />
      <KindsCard rp={rp} unit={unit} />
      <div class="grid two">
        <PipelineCard rp={rp} unit={unit} openRank={openRank} />
        <RankKindsCard rp={rp} unit={unit} />
      </div>
      <MatchingCard rp={rp} />
    </>
  );
}

// ------------------------------------------------------------------ verdict and advice

function VerdictCard({ rp, unit, open }: { rp: RunParallel; unit: TimeUnit; open: Open }) {
  const v = rp.straggler;
  if (!v) return null;
  return (
    <section class={`card par-verdict ${v.found ? "found" : "clear"}`} data-testid="par-verdict" data-found={v.found ? "1" : "0"}>
      <header class="card-head">
        <h3>Straggler verdict</h3>
      </header>
      <div class="card-body">
        <div class="par-verdict-summary" data-testid="par-verdict-summary">
          {fillTimes(v.summary, unit)}
        </div>
        {v.stragglers.map((s) => (
          <StragglerBlock s={s} unit={unit} open={open} />
        ))}
        <p class="note" data-testid="par-verdict-rule">
          {`(A rank is named when the wait it causes its peers, net of its own, is at least ${pct0(v.minWaitFraction)} of the median step and at least ${pct0(v.minShareOfTop)} of the largest; 'longer compute' means at least ${pct0(v.computeExcessThreshold)} more than its peers' median.)`}
        </p>
      </div>
    </section>
  );
}

function StragglerBlock({ s, unit, open }: { s: Straggler; unit: TimeUnit; open: Open }) {
  const t = (ns: bigint) => `${fmtTime(num(ns), unit)} ${unit}`;
  const facts: [string, string, string][] = [
    ["caused", "Made peers wait", `${t(s.causedWaitNs)} / step`],
    ["net", "Net of its own waits", `${t(s.netCausedWaitNs)} / step`],
    ["last", "Arrived last", `${s.lastArrivals} of ${s.matched}`],
    ["compute", "Compute", `${t(s.computeNs)} vs peers' ${t(s.peerComputeNs)} (${s.computeExcess >= 0 ? "+" : ""}${pct0(s.computeExcess)})`],
  ];
  return (
    <div class="par-straggler" data-testid="par-straggler" data-rank={String(s.rank)}>
      <div class="par-straggler-head">
        <button class="par-chip strong" onClick={() => open(s.worker)} title="Open this rank's overview" data-testid="par-straggler-open">
          {s.worker && s.worker !== `rank${s.rank}` ? `rank ${s.rank} · ${s.worker}` : `rank ${s.rank}`}
        </button>
        <span class={`par-tag ${s.longerCompute ? "gpu" : "host"}`}>{s.longerCompute ? "longer compute: check its GPU" : "late arrival, normal compute: check its host"}</span>
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

function triggerValue(value: number, unit: string): string {
  return unit.includes("fraction") ? pct1(value) : pyG(value);
}

function AdviceCard({ advice, unit, openRank }: { advice: Advice[]; unit: TimeUnit; openRank: (rank: number) => void }) {
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
                  const who = tr.rank >= 0 ? `rank ${tr.rank}` : "all ranks";
                  const value = triggerValue(tr.value, tr.unit);
                  const threshold = triggerValue(tr.threshold, tr.unit);
                  return (
                    <li data-testid="par-trigger" data-value={value} data-threshold={threshold} data-metric={tr.metric}>
                      <span class="par-trigger-metric">{`${tr.metric} (${who})`}</span>
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
                  {a.ranks.map((r) => (
                    <button class="par-chip" onClick={() => openRank(r)} title="Open this rank's overview">{`rank ${r}`}</button>
                  ))}
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

function BreakdownCard({ rp, unit, open, named }: { rp: RunParallel; unit: TimeUnit; open: Open; named: Set<number> }) {
  const stepIds = useMemo(() => rp.steps.map((s) => num(s)), [rp]);
  const [mode, setMode] = useState<BreakdownMode>(rp.ranks.length * Math.max(1, stepIds.length) <= MAX_PER_STEP_BARS ? "steps" : "mean");
  const kinds = useMemo(() => kindsPresent(rp), [rp]);
  const host = rp.ranks.length > 0 && rp.ranks.every((r) => r.timeline === Timeline.HOST);

  const option = useMemo(() => {
    if (mode === "waits") return waitsOption(rp, unit, named);
    if (mode === "mean") return breakdownOption(rp.ranks, [-1], rp.ranks.map((r) => [meanBreakdown(r)]), kinds, unit);
    const cells: (Breakdown | null)[][] = rp.ranks.map((r) =>
      stepIds.map((id) => {
        const s = r.stepBreakdown.find((x) => num(x.step) === id);
        return s ? stepBreakdown(s) : null;
      }),
    );
    return breakdownOption(rp.ranks, stepIds, cells, kinds, unit);
  }, [mode, rp, unit, kinds, stepIds, named]);

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

// ------------------------------------------------------------------ per-rank table

function RankTable({ rp, unit, open, rowClass }: { rp: RunParallel; unit: TimeUnit; open: Open; rowClass: (r: RankParallel) => string }) {
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const share = (r: RankParallel, ns: bigint) => (num(r.stepTimeNs) ? pct1(num(ns) / num(r.stepTimeNs)) : "-");
  const anyHost = rp.ranks.some((r) => r.timeline === Timeline.HOST);
  const columns: SimpleColumn<RankParallel>[] = [
    { key: "rank", title: "Rank", align: "left", text: (r) => String(r.rank) },
    { key: "worker", title: "Worker", align: "left", text: (r) => r.worker },
    { key: "steps", title: "Steps", text: (r) => String(r.steps) },
    { key: "step", title: "Step", text: (r) => t(r.stepTimeNs) },
    { key: "compute", title: "Compute", text: (r) => t(r.computeNs), swatch: () => "#1976d2" },
    { key: "exposed", title: "Exposed comm", text: (r) => t(r.exposedCommunicationNs), swatch: () => "#f57c00" },
    { key: "exposed_share", title: "(of step)", text: (r) => share(r, r.exposedCommunicationNs) },
    { key: "hidden", title: "Hidden comm", text: (r) => t(r.hiddenCommunicationNs), swatch: () => "#90caf9" },
    { key: "memcpy", title: "Exposed memcpy", text: (r) => t(r.exposedMemoryNs), swatch: () => "#00897b" },
    { key: "idle", title: "Idle", text: (r) => t(r.idleNs), swatch: () => "#cfd8dc" },
    { key: "timeline", title: "Timeline", align: "left", text: (r) => (r.timeline === Timeline.HOST ? "host" : "GPU") },
  ];
  return (
    <Card title="Per-rank step breakdown" subtitle={`times in ${unit} · click a row to open the rank`} testId="par-ranks-card">
      <SimpleTable columns={columns} rows={rp.ranks} rowKey={(r) => r.worker} testId="par-ranks" onRowClick={(r) => open(r.worker)} rowClass={rowClass} />
      <p class="note">
        {"Step = Compute + Exposed comm + Exposed memcpy + Idle. GPU timeline: Compute = some non-communication kernel runs; Exposed comm = a communication kernel runs and no computation; Hidden comm = communication overlapped by computation; Idle = nothing runs on the GPU." +
          (anyHost ? " Host timeline (no device events): communication = host communication events, which block the host; Compute = other operators; Idle = the rest." : "") +
          (rp.ranks.some((r) => r.rankInferred) ? " * rank numbered in the order of hostname, pid and worker name (the file names do not tell it)." : "")}
      </p>
    </Card>
  );
}

function HostCard({ rp, unit, open, rowClass }: { rp: RunParallel; unit: TimeUnit; open: Open; rowClass: (r: RankParallel) => string }) {
  // A CPU run (no device events on any rank) has no CUDA runtime to weigh against kernels (the CLI omits the table too).
  if (rp.ranks.every((r) => r.timeline === Timeline.HOST)) return null;
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const columns: SimpleColumn<RankParallel>[] = [
    { key: "rank", title: "Rank", align: "left", text: (r) => String(r.rank) },
    { key: "runtime", title: "CUDA runtime", text: (r) => t(r.runtimeNs) },
    { key: "runtime_share", title: "(of step)", text: (r) => (num(r.stepTimeNs) ? pct1(num(r.runtimeNs) / num(r.stepTimeNs)) : "-") },
    { key: "launches", title: "Launches", text: (r) => String(r.launches) },
    { key: "sync", title: "Synchronising", text: (r) => t(r.syncNs) },
    { key: "kernel", title: "Kernel time", text: (r) => t(r.kernelNs) },
  ];
  return (
    <Card title="Host side: CUDA runtime against kernels" subtitle={`per step · ${unit} · click a row to open the rank`} testId="par-host-card">
      <SimpleTable columns={columns} rows={rp.ranks} rowKey={(r) => r.worker} testId="par-host" onRowClick={(r) => open(r.worker)} rowClass={rowClass} />
      <p class="note">Kernel time is the plain sum of kernel durations (streams overlap). Synchronising = time in *Synchronize* calls and synchronous cudaMemcpy.</p>
    </Card>
  );
}

// ------------------------------------------------------------------ heatmaps

type HeatMode = "heatmap" | "table";

interface HeatRow {
  r: RankParallel;
  cells: string[];
}

function HeatmapCard({
  rp,
  title,
  values,
  colors,
  label,
  unit,
  open,
  testId,
}: {
  rp: RunParallel;
  title: string;
  values: bigint[];
  colors: string[];
  label: string;
  unit: TimeUnit;
  open: Open;
  testId: string;
}) {
  const [mode, setMode] = useState<HeatMode>("heatmap");
  const option = useMemo(() => heatmapOption(rp, values, unit, colors, label), [rp, values, unit, colors, label]);
  const steps = rp.steps.map((s) => num(s));
  const rows: HeatRow[] = rp.ranks.map((r, ri) => ({
    r,
    cells: steps.map((_s, si) => {
      const v = num(values[ri * steps.length + si]);
      return v >= 0 ? fmtTime(v, unit) : "-";
    }),
  }));
  const columns: SimpleColumn<HeatRow>[] = [
    { key: "rank", title: "Rank", align: "left", text: (x) => String(x.r.rank) },
    ...steps.map((s, si) => ({ key: `s${s}`, title: `#${s}`, text: (x: HeatRow) => x.cells[si] })),
  ];
  const height = Math.max(160, Math.min(520, 26 * rp.ranks.length + 40));
  return (
    <Card
      title={title}
      subtitle={`${unit} · click a cell to open the rank`}
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
        <Chart option={option} height={height} testId={testId} onClick={(p) => { const d = p.data as [number, number, number] | undefined; if (d && rp.ranks[d[1]]) open(rp.ranks[d[1]].worker); }} />
      ) : (
        <SimpleTable columns={columns} rows={rows} rowKey={(x) => x.r.worker} testId={`${testId}-table`} onRowClick={(x) => open(x.r.worker)} />
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
        trace records the operator's input shapes.
      </p>
    </Card>
  );
}

function RankKindsCard({ rp, unit }: { rp: RunParallel; unit: TimeUnit }) {
  const perRank: RankKindRow[] = rp.ranks.flatMap((r) => r.kinds.map((k) => ({ r, k })));
  const n = (x: RankKindRow) => Math.max(1, x.r.steps);
  const rkColumns: SimpleColumn<RankKindRow>[] = [
    { key: "rank", title: "Rank", align: "left", text: (x) => String(x.r.rank) },
    { key: "kind", title: "Kind", align: "left", text: (x) => kindLabel(x.k.kind) },
    { key: "calls", title: "Calls", text: (x) => pyFixed(num(x.k.calls) / n(x), 1) },
    { key: "device", title: "Device time", text: (x) => fmtTime(num(x.k.deviceNs) / n(x), unit) },
    { key: "exposed", title: "Exposed", text: (x) => fmtTime(num(x.k.exposedNs) / n(x), unit) },
    { key: "wait", title: "Wait", text: (x) => fmtTime(num(x.k.waitNs) / n(x), unit) },
    { key: "matched", title: "Matched", text: (x) => `${x.k.matched}/${x.k.calls}` },
  ];
  return (
    <Card title="Collectives by rank and kind" subtitle={`per step · ${unit}`} testId="par-rank-kinds-card">
      <div class="par-scroll">
        <SimpleTable columns={rkColumns} rows={perRank} rowKey={(x) => `${x.r.rank}:${kindLabel(x.k.kind)}`} testId="par-rank-kinds" />
      </div>
    </Card>
  );
}

function WaitsCard({ rp, unit, open, rowClass }: { rp: RunParallel; unit: TimeUnit; open: Open; rowClass: (r: RankParallel) => string }) {
  const t = (ns: bigint | number) => fmtTime(num(ns), unit);
  const columns: SimpleColumn<RankParallel>[] = [
    { key: "rank", title: "Rank", align: "left", text: (r) => String(r.rank) },
    { key: "waited", title: "Waited", text: (r) => t(r.waitNs) },
    { key: "caused", title: "Made peers wait", text: (r) => t(r.causedWaitNs) },
    { key: "last", title: "Arrived last", text: (r) => `${r.lastArrivals}/${r.matched}` },
    { key: "compute", title: "Compute", text: (r) => t(r.computeNs) },
    { key: "peer_compute", title: "Peers' compute", text: (r) => (r.peers.length ? t(r.peerComputeNs) : "-") },
    { key: "peers", title: "Peers", align: "left", text: (r) => ranksText(r.peers) },
  ];
  return (
    <Card title="Waits at collectives other than send/recv" subtitle={`per step · ${unit} · click a row to open the rank`} testId="par-waits-card">
      <SimpleTable columns={columns} rows={rp.ranks} rowKey={(r) => r.worker} testId="par-waits" onRowClick={(r) => open(r.worker)} rowClass={rowClass} />
      <p class="note">
        Waited = time the rank spent in collectives waiting for the last member; Made peers wait = its peers' wait at the instances it arrived last at; Peers = the ranks it shares
        matched collectives with; their median compute is the yardstick for “longer compute”.
      </p>
    </Card>
  );
}

// ------------------------------------------------------------------ pipeline, matching

function PipelineCard({ rp, unit, openRank }: { rp: RunParallel; unit: TimeUnit; openRank: (rank: number) => void }) {
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
  const columns: SimpleColumn<RankParallel>[] = [
    { key: "rank", title: "Rank", align: "left", text: (r) => String(r.rank) },
    { key: "step", title: "Step", text: (r) => t(r.stepTimeNs) },
    { key: "bubble", title: "Bubble", text: (r) => t(r.bubbleNs) },
    { key: "ratio", title: "Bubble ratio", text: (r) => pct1(r.bubbleRatio) },
  ];
  return (
    <Card title="Pipeline (stages unknown)" subtitle={`per step · ${unit}`} testId="par-pipeline-card">
      <SimpleTable columns={columns} rows={rows} rowKey={(r) => r.worker} testId="par-stages" onRowClick={(r) => openRank(r.rank)} />
      <p class="note">{pv.definition}</p>
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
