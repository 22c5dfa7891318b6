// The hybrid-parallel view's chart cards: the step breakdown, the rank × step heatmaps, the pipeline's
// stages, memory across ranks and the matching's quality.
import { useMemo, useState } from "preact/hooks";
import { Chart } from "../../components/Chart";
import { Card, Segmented } from "../../components/ui";
import { formatCell } from "../../display/cells";
import { cellOf, numberOf, tableOf } from "../../display/model";
import type { Table } from "../../gen/tb_paddle_profile/v1/display_pb";
import { Timeline } from "../../gen/tb_paddle_profile/v1/summary_pb";
import type { HeatCell } from "./charts";
import { breakdownOption, heatmapOption, heatWorker, pct1, waitsOption } from "./charts";
import type { Ctx } from "./common";
import { ParTable, S, sentencesOf, TableCard } from "./common";
import { useParallelTable } from "./data";

const MAX_PER_STEP_BARS = 160;

// ------------------------------------------------------------------ breakdown (a chart of raw fields)

type BreakdownMode = "steps" | "mean" | "waits";

export function BreakdownCard({ c }: { c: Ctx }) {
  const { rp, unit, open, named, view } = c;
  const mean = tableOf(view, "breakdown_mean");
  // the details part leaves the per-step table out beyond MAX_PER_STEP_BARS bars (the route's
  // DETAIL_STEP_ROWS): the chart opens on the means then, and the table is asked for when picked
  const given = tableOf(view, "breakdown_steps");
  const [mode, setMode] = useState<BreakdownMode>(given && given.rows.length <= MAX_PER_STEP_BARS ? "steps" : "mean");
  const asked = useParallelTable(rp, "breakdown_steps", !given && mode === "steps");
  const perStep = given ?? asked;
  const host = rp.ranks.length > 0 && rp.ranks.every((r) => r.timeline === Timeline.HOST);
  const table = mode === "steps" ? perStep : mode === "mean" ? mean : undefined;

  const option = useMemo(() => {
    if (mode === "waits") return waitsOption(rp, unit, named, c.label);
    return table ? breakdownOption(table, unit) : {};
  }, [mode, rp, unit, table, named, c]);

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
      {(mode !== "waits" ? (perStep?.notes ?? []) : []).map((s) => (
        <p class="note">
          <S c={c} s={s} />
        </p>
      ))}
    </Card>
  );
}

// ------------------------------------------------------------------ heatmaps (chart: raw fields; table: the model's)

type HeatMode = "heatmap" | "table";

export function HeatmapCard({ c, table, heat, title, colors, label, testId }: { c: Ctx; table: Table | undefined; heat: Table | undefined; title?: string; colors: string[]; label: string; testId: string }) {
  const { unit, open } = c;
  const [mode, setMode] = useState<HeatMode>("heatmap");
  const option = useMemo(() => (heat ? heatmapOption(heat, unit, colors, label) : {}), [heat, unit, colors, label]);
  const rows = heat?.rows.length ?? 0;
  // ranks per row: the first row's (a bin of consecutive ranks; the last may hold fewer)
  const size = heat && rows ? numberOf(heat, heat.rows[0], "ranks") : 1;
  const height = Math.max(160, Math.min(520, 26 * rows + 40));
  const binned = size > 1;
  const name = title ?? table?.title ?? label;
  return (
    <Card
      title={name}
      subtitle={`${unit} · ${binned ? `each row ${size} consecutive ranks, the max of the bin (hover: its range and worst rank)` : "one row per rank"} · click a cell to open the rank`}
      testId={`${testId}-card`}
      tools={
        table ? (
          <Segmented<HeatMode>
            value={mode}
            options={[
              { value: "heatmap", label: "Heatmap" },
              { value: "table", label: "Table" },
            ]}
            onChange={setMode}
            testId={`${testId}-mode`}
            label={name}
          />
        ) : undefined
      }
    >
      {mode === "heatmap" || !table ? (
        <div data-testid={`${testId}-box`} data-bin={size} data-rows={rows}>
          <Chart
            option={option}
            height={height}
            testId={testId}
            onClick={(p) => {
              const d = p.data as HeatCell | undefined;
              const w = d && heat ? heatWorker(heat, d) : "";
              if (w) open(w);
            }}
          />
        </div>
      ) : (
        <ParTable c={c} table={table} testId={`${testId}-table`} maxHeight={height} />
      )}
    </Card>
  );
}

// ------------------------------------------------------------------ pipeline, matching

export function PipelineCard({ c }: { c: Ctx }) {
  const { rp, unit, view } = c;
  const pv = rp.pipeline;
  const stages = tableOf(view, "pipeline");
  const ranks = tableOf(view, "pipeline_ranks");
  if (stages && pv?.stages.length) {
    // beside the model's table, one bar per stage of its bubble ratio (a chart of the raw field)
    const bar = (ratio: number) => (
      <span class="par-ratio">
        <span class="par-ratio-bar">
          <span style={{ width: `${Math.min(100, Math.max(0, ratio * 100))}%` }} />
        </span>
      </span>
    );
    return (
      <Card title={stages.title} subtitle={`per step · ${unit} · click a stage to open its first rank`} testId="par-pipeline-card">
        <div class="par-stages">
          <ParTable c={c} table={stages} testId="par-stages" maxHeight={280} />
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
      </Card>
    );
  }
  if (ranks) return <TableCard c={c} table={ranks} testId="par-stages" subtitle={`per step · ${unit}`} title={ranks.title} />;
  return null;
}

/** Peak memory by pipeline stage (the model's `memory_stages`, one bar per stage of its largest peak
 * allocated against the largest of all stages: a chart of the cells' raw numbers) and by rank. */
export function MemoryCard({ c }: { c: Ctx }) {
  const stages = tableOf(c.view, "memory_stages");
  const ranks = tableOf(c.view, "memory_ranks");
  if (!stages) return null;
  const top = Math.max(1, ...stages.rows.map((r) => numberOf(stages, r, "max_peak_allocated")));
  const peakCol = stages.columns.find((k) => k.key === "max_peak_allocated");
  return (
    <Card title={stages.title} subtitle="each rank's device memory (its GPU places, else its others) · click a row to open its rank" testId="par-memory-card">
      <div class="par-stages">
        <ParTable c={c} table={stages} testId="par-memory_stages" maxHeight={240} />
        <div class="par-stage-bars" aria-hidden="true" data-testid="par-memory-bars">
          {stages.rows.map((r) => {
            const v = numberOf(stages, r, "max_peak_allocated");
            const stage = numberOf(stages, r, "stage");
            return (
              <div class="par-stage-bar par-mem-bar">
                <span class="par-stage-name">{stage < 0 ? "all ranks" : `stage ${stage}`}</span>
                <span class="par-ratio">
                  <span class="par-ratio-bar par-mem-ratio">
                    <span style={{ width: `${Math.min(100, Math.max(0, (v / top) * 100))}%` }} />
                  </span>
                </span>
                <span class="par-stage-pct">{peakCol ? formatCell(peakCol, cellOf(stages, r, "max_peak_allocated"), c.unit) : ""}</span>
              </div>
            );
          })}
        </div>
        {ranks ? <ParTable c={c} table={ranks} testId="par-memory_ranks" maxHeight={300} /> : null}
      </div>
    </Card>
  );
}

export function MatchingCard({ c }: { c: Ctx }) {
  const matching = sentencesOf(c.view, "matching");
  const notes = sentencesOf(c.view, "note");
  return (
    <div class="par-foot" data-testid="par-matching">
      {matching.map((s) => (
        <p>
          <S c={c} s={s} testId="par-matching-sentence" />
        </p>
      ))}
      {notes.map((s) => (
        <p data-testid="par-note">
          <S c={c} s={s} testId="par-note-sentence" />
        </p>
      ))}
    </div>
  );
}
