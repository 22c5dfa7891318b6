// The rank grid: one cell per rank at its DP × PP × MP coordinate (RankParallel.dp / pipeline_stage /
// mp, found by the cross-rank analysis), coloured by its deviation from its role peers. Columns are
// DP replicas; rows are (pipeline stage, MP index), stage by stage. One canvas, whatever the number
// of ranks: hover gives the rank's label and numbers, a click opens it.
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Card } from "../../components/ui";
import { isDark, onDarkChange } from "../../host";
import type { TimeUnit } from "../../display/cells";
import type { RankParallel, RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { RankLabel } from "./charts";
import { pct1, timeUnit } from "./charts";

const LABEL_W = 74;
const TOP = 20;
const STAGE_GAP = 5;
const RIGHT = 8;

interface Dims {
  dp: number;
  pp: number;
  mp: number;
}

function dims(rp: RunParallel): Dims | null {
  const t = rp.topology;
  if (!t || t.dp <= 0) return null;
  return { dp: t.dp, pp: Math.max(1, t.pp), mp: Math.max(1, t.mp) };
}

function coord(r: RankParallel, d: Dims): { dp: number; stage: number; mp: number } | null {
  if (r.dp < 0 || r.dp >= d.dp) return null;
  const stage = d.pp > 1 ? r.pipelineStage : Math.max(0, r.pipelineStage);
  const mp = d.mp > 1 ? r.mp : Math.max(0, r.mp);
  if (stage < 0 || stage >= d.pp || mp < 0 || mp >= d.mp) return null;
  return { dp: r.dp, stage, mp };
}

/** The grid is shown when the analysis found a topology and placed ranks in it. */
export function hasGrid(rp: RunParallel): boolean {
  const d = dims(rp);
  return !!d && rp.ranks.some((r) => coord(r, d) !== null);
}

type Stops = [number, [number, number, number]][];

const STOPS: Stops = [
  [0, [236, 239, 241]],
  [0.35, [255, 204, 128]],
  [0.7, [239, 108, 0]],
  [1, [183, 28, 28]],
];
// dark mode: no deviation is a blue grey that stands apart from the card (#262626) without glowing
const DARK_STOPS: Stops = [[0, [84, 110, 122]], ...STOPS.slice(1)];

/** What the canvas draws besides the cells, per mode: the labels (the page's muted text), a cell without a
 * rank, the outlines of the ranks the verdict names and of the current rank. */
const INKS = {
  light: { label: "#616161", empty: "#ffffff", named: "#212121", current: "#1976d2" },
  dark: { label: "#b0b0b0", empty: "#333333", named: "#ffffff", current: "#64b5f6" },
};

/** Colour of a deviation, on a scale whose top is `max`. */
export function deviationColor(dev: number, max: number, stops: Stops = STOPS): string {
  const t = Math.min(1, Math.max(0, dev / max));
  for (let i = 1; i < stops.length; i++) {
    const [t1, c1] = stops[i];
    const [t0, c0] = stops[i - 1];
    if (t <= t1) {
      const f = (t - t0) / (t1 - t0);
      const c = c0.map((v, k) => Math.round(v + (c1[k] - v) * f));
      return `rgb(${c[0]},${c[1]},${c[2]})`;
    }
  }
  return "rgb(183,28,28)";
}

export function RankGrid({
  rp,
  unit,
  label,
  current,
  named,
  open,
}: {
  rp: RunParallel;
  unit: TimeUnit;
  label: RankLabel;
  current: string;
  named: Set<number>;
  open: (worker: string) => void;
}) {
  const d = useMemo(() => dims(rp)!, [rp]);
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(0);
  const [tip, setTip] = useState<{ x: number; y: number; r: RankParallel } | null>(null);
  const [dark, setDark] = useState(isDark());
  useEffect(() => onDarkChange(setDark), []);
  const stops = dark ? DARK_STOPS : STOPS;
  const ink = dark ? INKS.dark : INKS.light;

  const rows = d.pp * d.mp;
  const avail = Math.max(100, width - LABEL_W - RIGHT);
  const cw = Math.max(2, Math.min(56, Math.floor(avail / d.dp)));
  const ch = rows <= 16 ? 20 : Math.max(6, Math.floor(320 / rows));
  const height = TOP + d.pp * d.mp * ch + (d.pp - 1) * STAGE_GAP + 6;
  const maxDev = Math.max(0.05, ...rp.ranks.map((r) => r.deviation));

  // cell index → rank
  const { cells, unplaced } = useMemo(() => {
    const cells = new Map<string, RankParallel>();
    let unplaced = 0;
    for (const r of rp.ranks) {
      const c = coord(r, d);
      if (c) cells.set(`${c.dp}:${c.stage}:${c.mp}`, r);
      else unplaced++;
    }
    return { cells, unplaced };
  }, [rp, d]);
  const yOf = useCallback((stage: number, mp: number) => TOP + stage * (d.mp * ch + STAGE_GAP) + mp * ch, [d, ch]);

  useEffect(() => {
    const node = box.current;
    if (!node) return;
    const ro = new ResizeObserver(() => setWidth(node.clientWidth));
    ro.observe(node);
    setWidth(node.clientWidth);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const cv = canvas.current;
    if (!cv || !width) return;
    const dpr = window.devicePixelRatio || 1;
    cv.width = Math.round(width * dpr);
    cv.height = Math.round(height * dpr);
    const ctx = cv.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillStyle = ink.label;
    // DP axis: a tick label every few replicas
    const every = Math.max(1, Math.ceil(36 / cw));
    ctx.textAlign = "center";
    for (let x = 0; x < d.dp; x += every) ctx.fillText(`dp${x}`, LABEL_W + x * cw + cw / 2, 9);
    ctx.textAlign = "right";
    const marks: { r: RankParallel; x: number; y: number; color: string }[] = [];
    for (let stage = 0; stage < d.pp; stage++) {
      for (let mp = 0; mp < d.mp; mp++) {
        const y = yOf(stage, mp);
        ctx.fillStyle = ink.label;
        if (ch >= 10) ctx.fillText(d.pp > 1 ? `pp${stage} mp${mp}` : `mp${mp}`, LABEL_W - 6, y + ch / 2);
        else if (mp === 0) ctx.fillText(`pp${stage}`, LABEL_W - 6, y + (d.mp * ch) / 2);
        for (let dp = 0; dp < d.dp; dp++) {
          const r = cells.get(`${dp}:${stage}:${mp}`);
          const x = LABEL_W + dp * cw;
          ctx.fillStyle = r ? deviationColor(r.deviation, maxDev, stops) : ink.empty;
          const gap = cw > 4 ? 1 : 0;
          ctx.fillRect(x, y, cw - gap, ch - (ch > 6 ? 1 : 0));
          if (r && (named.has(r.rank) || r.worker === current)) marks.push({ r, x, y, color: named.has(r.rank) ? ink.named : ink.current });
        }
      }
    }
    ctx.lineWidth = 2;
    for (const m of marks) {
      ctx.strokeStyle = m.color;
      ctx.strokeRect(m.x - 1, m.y - 1, Math.max(cw, 4) + 1, Math.max(ch, 4) + 1);
    }
  }, [d, cells, yOf, maxDev, stops, ink, width, height, cw, ch, current, named]);

  const at = (e: MouseEvent): RankParallel | null => {
    const rect = canvas.current!.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top;
    const dp = Math.floor((x - LABEL_W) / cw);
    if (dp < 0 || dp >= d.dp || y < TOP) return null;
    const block = d.mp * ch + STAGE_GAP;
    const stage = Math.floor((y - TOP) / block);
    const mp = Math.floor((y - TOP - stage * block) / ch);
    if (stage >= d.pp || mp >= d.mp) return null;
    return cells.get(`${dp}:${stage}:${mp}`) ?? null;
  };
  const t = (ns: bigint) => timeUnit(ns, unit);
  const topo = rp.topology!;
  return (
    <Card
      title={`Rank grid: DP ${d.dp} × PP ${d.pp} × MP ${d.mp}`}
      subtitle={`colour = the rank's deviation from its role peers · outlined: named by the verdict (${dark ? "white" : "black"}), the current rank (blue) · hover for numbers, click to open`}
      testId="par-grid-card"
    >
      <div class="par-grid-box" ref={box}>
        <canvas
          ref={canvas}
          class="par-grid"
          style={{ width: "100%", height: `${height}px` }}
          data-testid="par-grid"
          data-dp={d.dp}
          data-pp={d.pp}
          data-mp={d.mp}
          data-cell-w={cw}
          data-cell-h={ch}
          data-left={LABEL_W}
          data-top={TOP}
          data-stage-gap={STAGE_GAP}
          data-placed={cells.size}
          onMouseMove={(e) => {
            const r = at(e);
            const rect = box.current!.getBoundingClientRect();
            setTip(r ? { x: e.clientX - rect.left, y: e.clientY - rect.top, r } : null);
          }}
          onMouseLeave={() => setTip(null)}
          onClick={(e) => {
            const r = at(e);
            if (r) open(r.worker);
          }}
        />
        {tip ? (
          <div class="par-grid-tip" data-testid="par-grid-tip" data-rank={String(tip.r.rank)} style={{ left: `${Math.min(tip.x + 12, Math.max(0, width - 300))}px`, top: `${tip.y + 14}px` }}>
            <div class="par-grid-tip-title">{label(tip.r)}</div>
            <div>{`dp${tip.r.dp} pp${tip.r.pipelineStage} mp${tip.r.mp}${tip.r.hostname ? ` · ${tip.r.hostname}` : ""}`}</div>
            <div>{`deviation ${pct1(tip.r.deviation)} · step ${t(tip.r.stepTimeNs)}`}</div>
            <div>{`compute ${t(tip.r.computeNs)}${tip.r.peers.length ? ` vs peers' ${t(tip.r.peerComputeNs)}` : ""}`}</div>
            <div>{`waited ${t(tip.r.waitNs)} · made peers wait ${t(tip.r.causedWaitNs)}`}</div>
          </div>
        ) : null}
      </div>
      <div class="par-grid-legend">
        <span>deviation 0</span>
        <span class="par-grid-scale" style={{ background: `linear-gradient(90deg, ${STOPS.map(([p]) => `${deviationColor(p * maxDev, maxDev, stops)} ${p * 100}%`).join(", ")})` }} />
        <span>{`${pct1(maxDev)} of the median step`}</span>
        {unplaced ? <span class="muted">{` · ${unplaced} ranks without a coordinate`}</span> : null}
        {!topo.complete ? <span class="muted"> · the coordinates do not fill the grid</span> : null}
        {topo.method ? <span class="muted">{` · ${topo.method}`}</span> : null}
      </div>
    </Card>
  );
}
