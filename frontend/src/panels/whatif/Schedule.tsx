// The pipeline schedule of one step: stage × time, one box per slot (a micro-batch's forward or backward
// on a stage), the bubbles between them shaded by kind. The slots, bubbles and the schedule's name come
// from the route (the reconstruction is Python's, analysis/crossrank/schedule.py); this file only lays
// them out. SVG: one <rect> per slot, so a step of a deep pipeline is a few hundred nodes, readable and
// themed by the page's CSS variables (light and dark).
import { useEffect, useRef, useState } from "preact/hooks";
import type { TimeUnit } from "../../display/cells";
import { inUnit } from "../../format";

export interface ChartSlot {
  stage: number;
  /** "F" forward, "B" backward (a backward split in two, "W": the weight gradient). */
  phase: string;
  microBatch: number;
  chunk: number;
  /** ns from the step's start. */
  start: number;
  end: number;
  rank: number;
}

export interface ChartBubble {
  stage: number;
  /** "fill_drain" (what the schedule must idle) | "wait" (waiting for an imbalanced neighbour) */
  kind: string;
  start: number;
  end: number;
}

export interface ChartStage {
  stage: number;
  /** "stage 0 · rank 4" */
  label: string;
  /** the rank's worker (a click opens it), "" when not known */
  worker: string;
}

export interface ChartStep {
  step: number;
  /** ns, the step's length on the chart's axis (0 .. span) */
  span: number;
  stages: ChartStage[];
  slots: ChartSlot[];
  bubbles: ChartBubble[];
  chunks: number;
}

const LABEL_W = 118;
const ROW_H = 26;
const ROW_GAP = 6;
const AXIS_H = 22;
const RIGHT = 10;

/** Ticks at 1, 2 or 5 × 10^k of the unit, about every 90 px. */
function ticks(spanNs: number, plotW: number, unit: TimeUnit): { at: number; text: string }[] {
  const span = inUnit(spanNs, unit);
  if (!(span > 0)) return [];
  const want = Math.max(2, Math.floor(plotW / 90));
  const raw = span / want;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  const out: { at: number; text: string }[] = [];
  for (let t = 0; t <= span + step * 1e-9; t += step) out.push({ at: t / span, text: `${t.toFixed(decimals)}` });
  return out;
}

function phaseClass(phase: string): string {
  return phase === "F" ? "f" : phase === "W" ? "w" : "b";
}

export function ScheduleChart(props: {
  step: ChartStep;
  unit: TimeUnit;
  onStage?: (worker: string) => void;
  testId?: string;
}) {
  const { step, unit } = props;
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(900);
  const [hover, setHover] = useState<{ x: number; y: number; text: string } | null>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(Math.max(320, Math.floor(el.clientWidth))));
    ro.observe(el);
    setWidth(Math.max(320, Math.floor(el.clientWidth)));
    return () => ro.disconnect();
  }, []);
  const plotW = Math.max(100, width - LABEL_W - RIGHT);
  const span = Math.max(1, step.span);
  const X = (t: number) => LABEL_W + (Math.max(0, Math.min(span, t)) / span) * plotW;
  const rowOf = new Map(step.stages.map((s, i) => [s.stage, i]));
  const Y = (stage: number) => (rowOf.get(stage) ?? 0) * (ROW_H + ROW_GAP);
  const height = step.stages.length * (ROW_H + ROW_GAP) + AXIS_H;
  const dur = (ns: number) => `${inUnit(ns, unit).toFixed(unit === "ns" ? 0 : 2)} ${unit}`;
  const tip = (e: MouseEvent, text: string) => {
    const r = box.current?.getBoundingClientRect();
    if (r) setHover({ x: e.clientX - r.left, y: e.clientY - r.top, text });
  };
  const phaseName = (p: string) => (p === "F" ? "forward" : p === "W" ? "weight gradient" : "backward");
  return (
    <div class="sched" ref={box} data-testid={props.testId ?? "schedule-chart"} data-step={step.step} data-slots={step.slots.length} data-bubbles={step.bubbles.length} data-stages={step.stages.length}>
      <svg width={width} height={height} class="sched-svg" role="img" aria-label={`Pipeline schedule of step ${step.step}`} onMouseLeave={() => setHover(null)}>
        {step.stages.map((s) => (
          <g class="sched-row">
            <rect class="sched-lane" x={LABEL_W} y={Y(s.stage)} width={plotW} height={ROW_H} />
            <text
              class={`sched-label ${s.worker && props.onStage ? "link" : ""}`}
              x={LABEL_W - 8}
              y={Y(s.stage) + ROW_H / 2}
              text-anchor="end"
              dominant-baseline="central"
              data-testid="schedule-stage"
              data-stage={s.stage}
              onClick={s.worker && props.onStage ? () => props.onStage!(s.worker) : undefined}
            >
              {s.label}
            </text>
          </g>
        ))}
        {step.bubbles.map((b) => {
          const x = X(b.start);
          const w = Math.max(0.5, X(b.end) - x);
          return (
            <rect
              class={`sched-bubble ${b.kind}`}
              x={x}
              y={Y(b.stage) + 1}
              width={w}
              height={ROW_H - 2}
              data-testid="schedule-bubble"
              data-kind={b.kind}
              data-stage={b.stage}
              onMouseMove={(e) => tip(e as MouseEvent, `${b.kind === "wait" ? "bubble: waiting for an imbalanced neighbour" : "bubble: fill / drain (the schedule's warm-up and cool-down)"} · stage ${b.stage} · ${dur(b.end - b.start)}`)}
            />
          );
        })}
        {step.slots.map((s) => {
          const x = X(s.start);
          const w = Math.max(1, X(s.end) - x);
          const y = Y(s.stage);
          const label = `${s.microBatch}`;
          const fits = w >= label.length * 7 + 4;
          return (
            <g
              class={`sched-slot ${phaseClass(s.phase)} chunk${s.chunk % 4}`}
              data-testid="schedule-slot"
              data-stage={s.stage}
              data-phase={s.phase}
              data-mb={s.microBatch}
              data-chunk={s.chunk}
              onMouseMove={(e) => tip(e as MouseEvent, `stage ${s.stage} · ${phaseName(s.phase)} of micro-batch ${s.microBatch}${step.chunks > 1 ? ` · chunk ${s.chunk}` : ""} · ${dur(s.end - s.start)} from ${dur(s.start)}`)}
            >
              <rect x={x} y={y + 2} width={w} height={ROW_H - 4} rx={2} />
              {fits ? (
                <text x={x + w / 2} y={y + ROW_H / 2} text-anchor="middle" dominant-baseline="central">
                  {label}
                </text>
              ) : null}
            </g>
          );
        })}
        <g class="sched-axis">
          <line x1={LABEL_W} x2={LABEL_W + plotW} y1={height - AXIS_H + 2} y2={height - AXIS_H + 2} />
          {ticks(span, plotW, unit).map((t) => (
            <text x={LABEL_W + t.at * plotW} y={height - 6} text-anchor="middle">
              {t.text}
            </text>
          ))}
          <text x={LABEL_W - 8} y={height - 6} text-anchor="end">{`${unit} from step start`}</text>
        </g>
      </svg>
      {hover ? (
        <div class="sched-tip" style={{ left: `${Math.min(hover.x + 12, width - 280)}px`, top: `${hover.y + 14}px` }} data-testid="schedule-tip">
          {hover.text}
        </div>
      ) : null}
      <div class="sched-legend">
        <span class="sched-key f">forward</span>
        <span class="sched-key b">backward</span>
        {step.slots.some((s) => s.phase === "W") ? <span class="sched-key w">weight gradient</span> : null}
        {step.chunks > 1 ? <span class="sched-key chunk">{`chunks 0–${step.chunks - 1}: shades of the colour`}</span> : null}
        <span class="sched-key bubble-fill">fill / drain bubble</span>
        <span class="sched-key bubble-wait">waiting for a neighbour</span>
        <span class="muted">the number in a box is its micro-batch</span>
      </div>
    </div>
  );
}
