// The What-if view of a run and span: the what-if estimates, the critical path across ranks (breakdowns
// by rank, kind and operator, a link to the timeline), the pipeline schedule (stage × time chart) and MFU.
// Every table and sentence is RunWhatIf.display (view "whatif", built in Python by display/whatif.py and
// display/schedule.py, the message `tb-paddle-profile whatif` prints), drawn with DisplayTable and
// Sentence in the card of its section (Sentence.section, Table.section and part); the schedule chart reads
// the schedule's raw slots and bubbles and opens on the pipeline and step the schedule names
// (drawn_pipeline, drawn_step). Nothing here derives a row, a value, a sentence or where it goes.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { csvUrl } from "../../api";
import type { MfuInputs } from "../../api";
import { Card, Notice } from "../../components/ui";
import type { TimeUnit } from "../../display/cells";
import { DisplayTable } from "../../display/DisplayTable";
import { Sentence } from "../../display/Sentence";
import type { Row, Sentence as SentenceMsg, Table, View } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { WorkerEntry } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import { ScheduleKind } from "../../gen/tb_paddle_profile/v1/schedule_pb";
import type { PipelineSchedule } from "../../gen/tb_paddle_profile/v1/schedule_pb";
import type { RunWhatIf } from "../../gen/tb_paddle_profile/v1/whatif_pb";
import type { LabelMap } from "../../labels";
import { useUrlState } from "../../state";
import { chartStep, useWhatIf } from "./data";
import { ScheduleChart } from "./Schedule";
import "./whatif.css";

/** The view of the display model this panel draws. */
const VIEW = "whatif";

/** The sections of the model that have a card; the others (the headline, the missing ranks, the notes) go
 * above the cards; "units" is the CLI's line (the panel says its unit in the cards' heads). */
type Place = "estimates" | "path" | "schedule" | "mfu" | "other";
const CARDS = new Set<string>(["estimates", "path", "schedule", "mfu"]);
const placeOf = (section: string): Place => (CARDS.has(section) ? (section as Place) : "other");

export interface WhatIfProps {
  run: string;
  span: string;
  /** Changes when the run's files change (fetch again). */
  dataKey: string;
  unit: TimeUnit;
  workers: WorkerEntry[];
  labels: LabelMap;
  onOpenRank: (worker: string) => void;
  /** Opens the timeline on `worker` with the critical path of a step drawn (tlcp: "<step>" or "<step>:<segment>"). */
  onTimeline: (worker: string, tlcp: string) => void;
}

const NUMBER = /^\s*(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

export function WhatIf(props: WhatIfProps) {
  const [params, setParams] = useUrlState<string>("wi.params", "");
  const [tokens, setTokens] = useUrlState<string>("wi.tokens", "");
  const [peak, setPeak] = useUrlState<string>("wi.peak", "");
  const mfu: MfuInputs = useMemo(() => ({ params, tokensPerStep: tokens, peakTflops: peak }), [params, tokens, peak]);
  const state = useWhatIf(props.run, props.span, props.dataKey, mfu);
  const form = (
    <MfuForm
      value={mfu}
      onApply={(m) => {
        setParams(m.params);
        setTokens(m.tokensPerStep);
        setPeak(m.peakTflops);
      }}
    />
  );
  if (state.status === "error") {
    return (
      <div class="panel wi" data-testid="panel-whatif">
        <Notice kind="error" testId="panel-error">{state.message}</Notice>
        <Card title="MFU inputs" testId="wi-mfu">{form}</Card>
      </div>
    );
  }
  if (state.status !== "ok") {
    return (
      <div class="panel wi" data-testid="panel-whatif">
        <Notice kind="loading" testId={state.status === "pending" ? "panel-pending" : undefined}>
          {state.status === "pending" ? `Some ranks are still being parsed${state.note ? `: ${state.note}` : ""}…` : "Replaying the run's dependency graph…"}
        </Notice>
      </div>
    );
  }
  return <WhatIfBody {...props} w={state.value} form={form} />;
}

function WhatIfBody(props: WhatIfProps & { w: RunWhatIf; form: ComponentChildren }) {
  const { w, unit } = props;
  const view: View | undefined = w.display?.views.find((v) => v.key === VIEW) ?? w.display?.views[0];
  const byRank = useMemo(() => new Map(props.workers.filter((x) => x.rank >= 0).map((x) => [x.rank, x])), [props.workers]);
  const workerOf = (rank: number) => byRank.get(rank)?.worker ?? "";
  const rankLabel = (rank: number) => `rank ${rank}`;
  const openRank = (rank: number) => {
    const wk = workerOf(rank);
    if (wk) props.onOpenRank(wk);
  };
  const tables = (place: Place) => (view?.tables ?? []).filter((t) => placeOf(t.section) === place);
  const sentences = (place: Place) => (view?.sentences ?? []).filter((s) => placeOf(s.section) === place && s.section !== "units");
  const steps = (w.criticalPath?.steps ?? []).map((s) => Number(s.step));
  const [stepText, setStepText] = useUrlState<string>("wi.cpstep", "");
  const cpStep = steps.includes(Number(stepText)) && stepText !== "" ? Number(stepText) : steps[0] ?? -1;
  // the tables may keep the first link handler they were given: the step is read when a row is clicked
  const cpStepRef = useRef(cpStep);
  cpStepRef.current = cpStep;

  /** The first segment of `rank` in the chosen step (its index in CriticalPath.segments), or -1. */
  const firstSegment = (rank: number, step: number) => (w.criticalPath?.segments ?? []).findIndex((s) => s.rank === rank && Number(s.step) === step);
  const toTimeline = (rank: number, step: number, segment = -1) => {
    const wk = workerOf(rank);
    if (wk) props.onTimeline(wk, segment >= 0 ? `${step}:${segment}` : `${step}`);
  };
  const endRank = w.criticalPath?.steps.find((s) => Number(s.step) === cpStep)?.endRank ?? -1;
  // A path row leads to the timeline: a segment ("critical:<step>:<index>") or a rank ("rank:<n>": its
  // first segment in the chosen step).
  const onPathLink = (link: string) => {
    const seg = /^critical:(-?\d+)(?::(\d+))?$/.exec(link);
    if (seg && seg[2] !== undefined) {
      const s = w.criticalPath?.segments[Number(seg[2])];
      if (s) props.onTimeline(s.worker || workerOf(s.rank), `${seg[1]}:${seg[2]}`);
      return;
    }
    if (seg) {
      const st = w.criticalPath?.steps.find((x) => Number(x.step) === Number(seg[1]));
      if (st) toTimeline(st.endRank, Number(st.step));
      return;
    }
    const rank = /^rank:(\d+)$/.exec(link);
    if (rank) {
      const r = Number(rank[1]);
      const step = cpStepRef.current;
      toTimeline(r, step, firstSegment(r, step));
    }
  };
  // the straggler's estimate ("rank:<n>") opens that rank
  const onRankLink = (link: string) => {
    const rank = /^rank:(\d+)$/.exec(link);
    if (rank) openRank(Number(rank[1]));
  };
  const csv = (t: Table) => csvUrl({ run: w.run || props.run, span: w.span || props.span }, VIEW, t.key);
  const drawTable = (t: Table, onLink?: (link: string, row: Row) => void, showTitle = true) => (
    <div class="wi-table" data-table={t.key}>
      <DisplayTable table={t} timeUnit={unit} csvHref={csv(t)} onLink={onLink} showTitle={showTitle} maxHeight={360} />
    </div>
  );
  const headline = sentences("other");

  return (
    <div class="panel wi" data-testid="panel-whatif" data-ranks={w.ranks}>
      {headline.length || w.notes.length ? (
        <div class="wi-headline" data-testid="wi-headline">
          {headline.map((s) => (
            <div class={`notice info level-${s.level || "info"}`} role="status">
              <SentenceLine s={s} unit={unit} openRank={openRank} />
            </div>
          ))}
        </div>
      ) : null}

      <Card title="What-if estimates" subtitle={`each change replayed on the run's dependency graph across ranks · times in ${unit}`} testId="wi-estimates">
        {tables("estimates").map((t) => drawTable(t, onRankLink, tables("estimates").length > 1))}
        {!tables("estimates").length ? <div class="wi-na">No estimates for this run.</div> : null}
        {sentences("estimates").length ? (
          <details class="wi-details" data-testid="wi-estimates-sentences">
            <summary>Each estimate and its assumption in full</summary>
            <div class="wi-sentences">{sentences("estimates").map((s) => <SentenceLine s={s} unit={unit} openRank={openRank} />)}</div>
          </details>
        ) : null}
      </Card>

      <Card
        title="Critical path"
        subtitle={`the longest chain of dependent work across ranks that sets the step time · times in ${unit}`}
        testId="wi-path"
        tools={
          steps.length ? (
            <>
              <label class="wi-step">
                Step
                <select value={String(cpStep)} onChange={(e) => setStepText((e.target as HTMLSelectElement).value)} data-testid="wi-path-step">
                  {steps.map((s) => (
                    <option value={String(s)}>{String(s)}</option>
                  ))}
                </select>
              </label>
              <button class="btn small" data-testid="wi-path-timeline" disabled={endRank < 0 || !workerOf(endRank)} onClick={() => toTimeline(endRank, cpStep)} title="The timeline of the rank whose step ended last, with this step's critical path drawn on every rank">
                Show on the timeline
              </button>
            </>
          ) : null
        }
      >
        {sentences("path").length ? <div class="wi-sentences">{sentences("path").map((s) => <SentenceLine s={s} unit={unit} openRank={openRank} />)}</div> : null}
        {tables("path").filter((t) => t.part !== "breakdown").map((t) => drawTable(t, onPathLink))}
        <div class="grid two wi-path-tables">{tables("path").filter((t) => t.part === "breakdown").map((t) => drawTable(t, onPathLink))}</div>
        {!tables("path").length ? <div class="wi-na">No critical path for this run.</div> : null}
      </Card>

      {w.schedule ? <ScheduleCard {...props} sched={w.schedule} tables={tables("schedule")} sentences={sentences("schedule")} drawTable={drawTable} rankLabel={rankLabel} workerOf={workerOf} openRank={openRank} /> : null}

      <Card title="MFU" subtitle="model FLOPs utilisation: 6 · N · tokens per step ÷ (step time × the devices' peak FLOP/s)" testId="wi-mfu">
        {props.form}
        {sentences("mfu").length ? <div class="wi-sentences">{sentences("mfu").map((s) => <SentenceLine s={s} unit={unit} openRank={openRank} />)}</div> : null}
        {tables("mfu").map((t) => drawTable(t))}
      </Card>

      {tables("other").length ? (
        <Card title="More" testId="wi-other">
          {tables("other").map((t) => drawTable(t))}
        </Card>
      ) : null}
    </div>
  );
}

function SentenceLine({ s, unit, openRank }: { s: SentenceMsg; unit: TimeUnit; openRank: (rank: number) => void }) {
  return <Sentence sentence={s} timeUnit={unit} onRank={(r) => openRank(r)} showTitle />;
}

function ScheduleCard(props: WhatIfProps & {
  sched: PipelineSchedule;
  tables: Table[];
  sentences: SentenceMsg[];
  drawTable: (t: Table) => ComponentChildren;
  rankLabel: (rank: number) => string;
  workerOf: (rank: number) => string;
  openRank: (rank: number) => void;
}) {
  const { sched, unit } = props;
  const pipelined = sched.kind !== ScheduleKind.SCHEDULE_KIND_NOT_PIPELINED && sched.kind !== ScheduleKind.SCHEDULE_KIND_UNSPECIFIED;
  const steps = sched.steps.map(Number);
  const [stepText, setStepText] = useUrlState<string>("wi.step", "");
  const [pipeText, setPipeText] = useUrlState<string>("wi.pipe", "");
  // by default the pipeline and step the schedule names (the one that waits most, its first step)
  const step = stepText !== "" && steps.includes(Number(stepText)) ? Number(stepText) : Number(sched.drawnStep);
  const pipe = sched.pipelines.find((p) => String(p.index) === pipeText) ?? sched.pipelines.find((p) => p.index === sched.drawnPipeline);
  const chart = pipe && pipelined ? chartStep(sched, pipe, step, props.rankLabel, props.workerOf) : null;
  const title = pipelined ? `Pipeline schedule: ${sched.name}` : `Pipeline schedule: ${sched.name || "not pipelined"}`;
  return (
    <Card
      title={title}
      subtitle={sched.why}
      testId="wi-schedule"
      tools={
        pipelined && steps.length ? (
          <>
            {sched.pipelines.length > 1 ? (
              <label class="wi-step">
                Pipeline
                <select value={String(pipe?.index ?? "")} onChange={(e) => setPipeText((e.target as HTMLSelectElement).value)} data-testid="wi-schedule-pipeline">
                  {sched.pipelines.map((p) => (
                    <option value={String(p.index)}>{`${p.index} · ranks ${p.ranks.join(", ")}`}</option>
                  ))}
                </select>
              </label>
            ) : null}
            <label class="wi-step">
              Step
              <select value={String(step)} onChange={(e) => setStepText((e.target as HTMLSelectElement).value)} data-testid="wi-schedule-step">
                {steps.map((s) => (
                  <option value={String(s)}>{String(s)}</option>
                ))}
              </select>
            </label>
          </>
        ) : null
      }
    >
      <div data-testid="wi-schedule-kind" data-kind={ScheduleKind[sched.kind] ?? ""} data-name={sched.name} data-pipeline={pipe ? String(pipe.index) : ""} hidden />
      {props.sentences.length ? <div class="wi-sentences">{props.sentences.map((s) => <SentenceLine s={s} unit={unit} openRank={props.openRank} />)}</div> : null}
      {chart ? (
        <ScheduleChart step={chart} unit={unit} onStage={(wk) => props.onOpenRank(wk)} />
      ) : pipelined ? (
        <div class="wi-na">{`No slots for step ${step} in this pipeline.`}</div>
      ) : null}
      {sched.pipelinesTotal > sched.pipelines.length ? (
        <div class="note" data-testid="wi-schedule-more">{`${sched.pipelines.length} of ${sched.pipelinesTotal} pipelines are drawn (the one that waits most, and the first); the table below covers every pipeline.`}</div>
      ) : null}
      {props.tables.filter((t) => t.part !== "list").map((t) => props.drawTable(t))}
      {props.tables.filter((t) => t.part === "list").map((t) => (
        <details class="wi-details" data-testid={`wi-details-${t.key}`}>
          <summary>{`${t.title} · ${t.rows.length.toLocaleString()} rows`}</summary>
          {props.drawTable(t)}
        </details>
      ))}
    </Card>
  );
}

/** The MFU inputs: parameters, tokens per step, peak TFLOP/s per device; Apply re-queries the route
 * (the values are kept in the URL). */
function MfuForm({ value, onApply }: { value: MfuInputs; onApply: (m: MfuInputs) => void }) {
  const [draft, setDraft] = useState<MfuInputs>(value);
  const [bad, setBad] = useState("");
  // the URL changed (Back, a pasted link): the fields show it
  const { params, tokensPerStep, peakTflops } = value; // a new object each render: the effect follows its fields
  useEffect(() => setDraft({ params, tokensPerStep, peakTflops }), [params, tokensPerStep, peakTflops]);
  const field = (key: keyof MfuInputs, label: string, placeholder: string, testId: string) => (
    <label>
      {label}
      <input
        type="text"
        inputMode="decimal"
        value={draft[key]}
        placeholder={placeholder}
        data-testid={testId}
        onInput={(e) => setDraft({ ...draft, [key]: (e.target as HTMLInputElement).value.trim() })}
      />
    </label>
  );
  return (
    <form
      class="wi-mfu-form"
      data-testid="wi-mfu-form"
      onSubmit={(e) => {
        e.preventDefault();
        const wrong = (Object.keys(draft) as (keyof MfuInputs)[]).filter((k) => draft[k] !== "" && !NUMBER.test(draft[k]));
        if (wrong.length) {
          setBad(`Not a number: ${wrong.map((k) => draft[k]).join(", ")}`);
          return;
        }
        setBad("");
        onApply(draft);
      }}
    >
      {field("params", "Parameters (N)", "e.g. 7e9", "wi-mfu-params")}
      {field("tokensPerStep", "Tokens per step", "e.g. 4194304", "wi-mfu-tokens")}
      {field("peakTflops", "Peak TFLOP/s per device", "from the device name", "wi-mfu-peak")}
      <button class="btn" type="submit" data-testid="wi-mfu-apply">Apply</button>
      {bad ? <span class="wi-bad" data-testid="wi-mfu-bad">{bad}</span> : null}
    </form>
  );
}
