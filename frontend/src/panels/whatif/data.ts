// Loading the `whatif` route (RunWhatIf: the critical path, the what-if estimates, the pipeline schedule
// and MFU, built in Python) and laying its schedule out for the chart. Nothing here computes a value
// the route does not send: the chart's geometry is the slots' and bubbles' own times from the step's start.
import type { MfuInputs } from "../../api";
import { fetchWhatIf } from "../../api";
import type { PipelineSchedule, SchedulePipeline } from "../../gen/tb_paddle_profile/v1/schedule_pb";
import { BubbleKind, SchedulePhase } from "../../gen/tb_paddle_profile/v1/schedule_pb";
import type { RunWhatIf } from "../../gen/tb_paddle_profile/v1/whatif_pb";
import type { ChartStep } from "./Schedule";
import { fetchOnce, remember, useNoted } from "../../poll";
import type { Noted } from "../../poll";

const RETRY_MS = 800;
const CACHE_SIZE = 6;

export type WhatIfState = Noted<RunWhatIf>;

const cache = new Map<string, RunWhatIf>();

function mfuKey(m: MfuInputs): string {
  return `${m.params}\u0000${m.tokensPerStep}\u0000${m.peakTflops}`;
}

/** RunWhatIf of run/span with the MFU inputs; `key` changes when the run's files change (fetch again). */
export function useWhatIf(run: string, span: string, key: string, mfu: MfuInputs): WhatIfState {
  const full = `${key}\u0000${mfuKey(mfu)}`;
  return useNoted(full, (signal) => fetchWhatIf(run, span, mfu, signal), { retryMs: RETRY_MS, cache, cacheSize: CACHE_SIZE });
}

const once = new Map<string, Promise<RunWhatIf | null>>();
const ONCE_TRIES = 150; // 2 minutes of 202s

/**
 * RunWhatIf of run/span for the timeline's critical-path band (no MFU inputs: the path does not depend
 * on them): the What-if view's answer when it holds this run and span, else fetched once, retried
 * while the route answers 202; null when it fails.
 */
export function whatIfOnce(run: string, span: string): Promise<RunWhatIf | null> {
  for (const v of [...cache.values()].reverse()) if (v.run === run && v.span === span) return Promise.resolve(v);
  const key = `${run}\u0000${span}`;
  let p = once.get(key);
  if (!p) {
    p = fetchOnce(() => fetchWhatIf(run, span, { params: "", tokensPerStep: "", peakTflops: "" }), { retryMs: RETRY_MS, tries: ONCE_TRIES }).then((r) => {
      if (r?.kind === "ok") return r.value;
      if (r?.kind === "error") once.delete(key); // asked again next time (a file that is fixed, a route that recovers)
      return null;
    });
    remember(once, key, p, CACHE_SIZE);
  }
  return p;
}

/** The steps of a run's critical path that have segments, in order. */
export function pathSteps(w: RunWhatIf): number[] {
  return (w.criticalPath?.steps ?? []).map((s) => Number(s.step));
}

/** A pipeline's stages in one step, as the chart draws them (times from the pipeline's span start). */
export function chartStep(sched: PipelineSchedule, pipe: SchedulePipeline, step: number, rankLabel: (rank: number) => string, workerOf: (rank: number) => string): ChartStep | null {
  const stages = pipe.stageSteps.filter((s) => Number(s.step) === step).sort((a, b) => a.stage - b.stage);
  if (!stages.length) return null;
  const t0 = stages[0].startUnixNs;
  const rel = (t: bigint) => Number(t - t0);
  const span = Math.max(1, rel(stages[0].endUnixNs));
  const out: ChartStep = { step, span, stages: [], slots: [], bubbles: [], chunks: Math.max(1, sched.chunks) };
  for (const s of stages) {
    out.stages.push({ stage: s.stage, label: `stage ${s.stage} · ${rankLabel(s.rank)}`, worker: s.worker || workerOf(s.rank) });
    for (const x of s.slots) {
      out.slots.push({
        stage: s.stage,
        phase: x.phase === SchedulePhase.FORWARD ? "F" : "B",
        microBatch: x.microBatch,
        chunk: x.chunk,
        start: rel(x.startUnixNs),
        end: rel(x.endUnixNs),
        rank: s.rank,
      });
    }
    for (const b of s.bubbles) {
      out.bubbles.push({ stage: s.stage, kind: b.kind === BubbleKind.WAIT ? "wait" : "fill_drain", start: rel(b.startUnixNs), end: rel(b.endUnixNs) });
    }
  }
  return out;
}
