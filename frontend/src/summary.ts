// Rows of the panels, derived from the Summary protobuf with Paddle's own definitions
// (profiler_statistic.py; see docs/paddle-trace-format.md §2). Values stay in ns; the panels format.
import type {
  DeviceStats,
  EventStats,
  KernelStats,
  MemoryItem,
  MemoryPlace,
  ModelStep,
  OperatorNode,
  Summary,
  TimeStats,
} from "./gen/tb_paddle_profile/v1/summary_pb";
import { ratio } from "./format";

export const num = (v: bigint | number | undefined): number => (v === undefined ? 0 : Number(v));

/** Total / Avg / Max / Min / Ratio of one time column; an undefined part prints "-". */
export interface TimeCol {
  total: number;
  avg?: number;
  max?: number;
  min?: number;
  ratio?: number;
}

export function timeCol(ts: TimeStats | undefined, calls: number, r?: number): TimeCol {
  const total = num(ts?.totalNs);
  if (calls <= 0) return { total, max: num(ts?.maxNs), ratio: r };
  return { total, avg: total / calls, max: num(ts?.maxNs), min: num(ts?.minNs), ratio: r };
}

/** One row of a stats table or tree. */
export interface StatRow {
  id: string;
  name: string;
  kind: "op" | "shape" | "inner" | "device" | "kernel" | "config" | "item" | "model";
  calls?: number;
  cpu?: TimeCol;
  gpu?: TimeCol;
  /** Secondary text: input shapes, an event type, an operator. */
  detail?: string;
  children?: StatRow[];
  flops?: number;
  /** Kernel launch configuration columns. */
  launch?: LaunchCols;
}

export interface LaunchCols {
  grid: string;
  block: string;
  registers: number;
  sharedMemory: number;
  blocksPerSm: number;
  warpsPerSm: number;
  occupancy: number;
}

// ------------------------------------------------------------------ device, overview

export interface UtilRow {
  device: string;
  /** A fraction (Paddle prints it ×100). */
  utilization: number;
}

export function deviceRows(s: Summary): UtilRow[] {
  const total = num(s.meta?.totalTimeNs);
  const rows: UtilRow[] = [
    { device: "CPU(Process)", utilization: s.device?.cpuProcessUtilization ?? 0 },
    { device: "CPU(System)", utilization: s.device?.cpuSystemUtilization ?? 0 },
  ];
  for (const gpu of s.device?.gpus ?? []) {
    rows.push({ device: `GPU${num(gpu.deviceId)}`, utilization: ratio(num(gpu.kernelTimeNs), total) });
  }
  return rows;
}

export interface TypeRow {
  type: string;
  calls: number;
  time: number;
  ratio: number;
}

export function overviewRows(s: Summary): { cpu: TypeRow[]; gpu: TypeRow[] } {
  const total = num(s.meta?.totalTimeNs);
  const conv = (r: { eventType: string; calls: bigint; timeNs: bigint }): TypeRow => ({
    type: r.eventType,
    calls: num(r.calls),
    time: num(r.timeNs),
    ratio: ratio(num(r.timeNs), total),
  });
  return { cpu: (s.overview?.cpu ?? []).map(conv), gpu: (s.overview?.gpu ?? []).map(conv) };
}

// ------------------------------------------------------------------ model perspective

export const STAGES = ["Dataloader", "Forward", "Backward", "Optimization"] as const;
export type Stage = (typeof STAGES)[number];

/** Paddle's Model Summary rows: ProfileStep, the stages present, then Others. Empty when Paddle prints none. */
export function modelRows(s: Summary): StatRow[] {
  const items = s.model?.items ?? [];
  if (items.length <= 1) return [];
  const total = num(s.meta?.totalTimeNs);
  const byName = new Map(items.map((i) => [i.name, i]));
  const step = byName.get("ProfileStep");
  const gpuTotal = num(step?.gpu?.totalNs);
  const rows: StatRow[] = [];
  let cpuAcc = 0;
  let gpuAcc = 0;
  for (const name of ["ProfileStep", ...STAGES]) {
    const item = byName.get(name);
    if (!item) continue;
    const calls = num(item.calls);
    const cpu = num(item.cpu?.totalNs);
    const gpu = num(item.gpu?.totalNs);
    rows.push({
      id: `model:${name}`,
      name,
      kind: "model",
      calls,
      cpu: timeCol(item.cpu, calls, ratio(cpu, total)),
      gpu: timeCol(item.gpu, calls, ratio(gpu, gpuTotal)),
    });
    if (name !== "ProfileStep") {
      cpuAcc += cpu;
      gpuAcc += gpu;
    }
  }
  const otherCpu = total - cpuAcc;
  const otherGpu = gpuTotal - gpuAcc;
  rows.push({
    id: "model:Others",
    name: "Others",
    kind: "model",
    cpu: { total: otherCpu, ratio: ratio(otherCpu, total) },
    gpu: { total: otherGpu, ratio: ratio(otherGpu, gpuTotal) },
  });
  return rows;
}

export interface StepStages {
  step: number;
  duration: number;
  stages: Record<Stage | "Others", number>;
}

/** Per step: the stage times and the rest of the step, for CPU (step duration) or GPU (step kernel time). */
export function stepStages(steps: ModelStep[], side: "cpu" | "gpu"): StepStages[] {
  return steps.map((st) => {
    const v =
      side === "cpu"
        ? [st.dataloaderCpuNs, st.forwardCpuNs, st.backwardCpuNs, st.optimizationCpuNs]
        : [st.dataloaderGpuNs, st.forwardGpuNs, st.backwardGpuNs, st.optimizationGpuNs];
    const vals = v.map(num);
    const duration = side === "cpu" ? num(st.range?.endNs) - num(st.range?.startNs) : num(st.gpuNs);
    const sum = vals.reduce((a, b) => a + b, 0);
    return {
      step: num(st.step),
      duration,
      stages: {
        Dataloader: vals[0],
        Forward: vals[1],
        Backward: vals[2],
        Optimization: vals[3],
        Others: duration - sum,
      },
    };
  });
}

// ------------------------------------------------------------------ distributed

export interface DistRow {
  name: "ProfileStep" | "Communication" | "Computation" | "Overlap";
  time: number;
  ratio: number;
}

export function distributedRows(s: Summary): DistRow[] {
  const d = s.distributed;
  if (!d?.present) return [];
  const total = num(s.meta?.totalTimeNs);
  return [
    { name: "ProfileStep", time: total, ratio: ratio(total, total) },
    { name: "Communication", time: num(d.communicationNs), ratio: ratio(num(d.communicationNs), total) },
    { name: "Computation", time: num(d.computationNs), ratio: ratio(num(d.computationNs), total) },
    { name: "Overlap", time: num(d.overlapNs), ratio: ratio(num(d.overlapNs), total) },
  ];
}

// ------------------------------------------------------------------ operators

function deviceRow(parentId: string, d: DeviceStats, parentGeneralGpu: number): StatRow {
  const calls = num(d.calls);
  return {
    id: `${parentId}\u0001d:${d.name}`,
    name: d.name,
    kind: "device",
    detail: d.eventType,
    calls,
    gpu: timeCol(d.gpu, calls, ratio(num(d.gpu?.totalNs), parentGeneralGpu)),
  };
}

/** An inner event (infer_meta, compute, kernel launch, …) under an operator or another inner event. */
function innerRow(parentId: string, node: OperatorNode, parent: EventStats | undefined): StatRow {
  const st = node.stats;
  const id = `${parentId}\u0001i:${st?.name ?? ""}`;
  const calls = num(st?.calls);
  const cpu = num(st?.cpu?.totalNs);
  const ggpu = num(st?.generalGpu?.totalNs);
  return {
    id,
    name: st?.name ?? "",
    kind: "inner",
    calls,
    cpu: timeCol(st?.cpu, calls, ratio(cpu, num(parent?.cpu?.totalNs))),
    gpu: timeCol(st?.generalGpu, calls, ratio(ggpu, num(parent?.generalGpu?.totalNs))),
    children: childrenOf(id, node),
  };
}

function childrenOf(id: string, node: OperatorNode): StatRow[] | undefined {
  const ggpu = num(node.stats?.generalGpu?.totalNs);
  const kids = [
    ...node.inners.map((inner) => innerRow(id, inner, node.stats)),
    ...node.devices.map((d) => deviceRow(id, d, ggpu)),
  ];
  return kids.length ? kids : undefined;
}

export type OperatorGrouping = "name" | "shape";

/**
 * Paddle's Operator Summary as a tree: operator → inner events → device events. Operator ratios are
 * against the sum over all operators; inner and device ratios against their parent (Paddle's definitions).
 * Grouping "shape" splits each operator that carries input shapes into one row per shape group.
 */
export function operatorRows(ops: OperatorNode[], grouping: OperatorGrouping): StatRow[] {
  let sumCpu = 0;
  let sumGpu = 0;
  for (const op of ops) {
    sumCpu += num(op.stats?.cpu?.totalNs);
    sumGpu += num(op.stats?.generalGpu?.totalNs);
  }
  const rows: StatRow[] = [];
  for (const op of ops) {
    const st = op.stats;
    const name = st?.name ?? "";
    if (grouping === "shape" && op.shapes.length > 0) {
      op.shapes.forEach((g, i) => {
        const calls = num(g.stats?.calls);
        rows.push({
          id: `op:${name}\u0001s:${i}`,
          name,
          kind: "shape",
          detail: shapeText(g.inputShapes, g.inputDtypes),
          calls,
          cpu: timeCol(g.stats?.cpu, calls, ratio(num(g.stats?.cpu?.totalNs), sumCpu)),
          gpu: timeCol(g.stats?.generalGpu, calls, ratio(num(g.stats?.generalGpu?.totalNs), sumGpu)),
          flops: num(g.stats?.flops),
        });
      });
      continue;
    }
    const id = `op:${name}`;
    const calls = num(st?.calls);
    rows.push({
      id,
      name,
      kind: "op",
      detail: grouping === "shape" ? "(no input shapes recorded)" : undefined,
      calls,
      cpu: timeCol(st?.cpu, calls, ratio(num(st?.cpu?.totalNs), sumCpu)),
      gpu: timeCol(st?.generalGpu, calls, ratio(num(st?.generalGpu?.totalNs), sumGpu)),
      flops: num(st?.flops),
      children: childrenOf(id, op),
    });
  }
  return rows;
}

/** "x: [[2, 8]], y: [[8, 4]]" from the canonical JSON of input shapes (and dtypes when given). */
export function shapeText(shapesJson: string, dtypesJson: string): string {
  try {
    const shapes = JSON.parse(shapesJson || "{}") as Record<string, unknown>;
    const dtypes = JSON.parse(dtypesJson || "{}") as Record<string, unknown>;
    const parts = Object.entries(shapes).map(([k, v]) => {
      const dt = dtypes[k];
      return `${k}: ${JSON.stringify(v)}${dt !== undefined ? ` ${JSON.stringify(dt)}` : ""}`;
    });
    return parts.length ? parts.join(", ") : "(no inputs)";
  } catch {
    return shapesJson;
  }
}

// ------------------------------------------------------------------ kernels

export type KernelGrouping = "kernel" | "operator";

function launchCols(k: KernelStats["configs"][number]): LaunchCols {
  return {
    grid: `[${k.grid.join(", ")}]`,
    block: `[${k.block.join(", ")}]`,
    registers: k.registersPerThread,
    sharedMemory: num(k.sharedMemory),
    blocksPerSm: k.blocksPerSm,
    warpsPerSm: k.warpsPerSm,
    occupancy: k.occupancyPct,
  };
}

/**
 * Paddle's Kernel Summary: ratio = kernel GPU time / sum of all kernels' GPU time. Grouping "kernel"
 * gives one row per kernel (its launch configurations as children when there are several); "operator"
 * one row per (kernel, launching operator) pair, against the same denominator.
 */
export function kernelRows(kernels: KernelStats[], grouping: KernelGrouping): StatRow[] {
  let sum = 0;
  for (const k of kernels) sum += num(k.gpu?.totalNs);
  const rows: StatRow[] = [];
  for (const k of kernels) {
    const calls = num(k.calls);
    const total = num(k.gpu?.totalNs);
    const id = `k:${k.name}`;
    if (grouping === "operator") {
      for (const o of k.operators) {
        const c = num(o.calls);
        rows.push({
          id: `${id}\u0001o:${o.operator}`,
          name: k.name,
          kind: "kernel",
          detail: o.operator || "(thread root)",
          calls: c,
          gpu: timeCol(o.gpu, c, ratio(num(o.gpu?.totalNs), sum)),
        });
      }
      continue;
    }
    const children =
      k.configs.length > 1
        ? k.configs.map((cfg, i) => {
            const c = num(cfg.calls);
            const t = num(cfg.totalNs);
            return {
              id: `${id}\u0001c:${i}`,
              name: `launch ${i + 1}`,
              kind: "config" as const,
              calls: c,
              gpu: { total: t, avg: c > 0 ? t / c : undefined, ratio: ratio(t, total) },
              launch: launchCols(cfg),
            };
          })
        : undefined;
    rows.push({
      id,
      name: k.name,
      kind: "kernel",
      calls,
      gpu: timeCol(k.gpu, calls, ratio(total, sum)),
      launch: k.configs.length === 1 ? launchCols(k.configs[0]) : undefined,
      detail: k.configs.length > 1 ? `${k.configs.length} launch configurations` : undefined,
      children,
    });
  }
  return rows;
}

// ------------------------------------------------------------------ memory, manipulation, user defined

export interface MemRow {
  id: string;
  name: string;
  type: "Allocated" | "Reserved";
  allocationCount: number;
  freeCount: number;
  allocationSize: number;
  freeSize: number;
  increasedSize: number;
}

function memRow(item: MemoryItem, type: MemRow["type"]): MemRow {
  const allocationSize = num(item.allocationSize);
  const freeSize = num(item.freeSize);
  return {
    id: `${type}:${item.name}`,
    name: item.name,
    type,
    allocationCount: num(item.allocationCount),
    freeCount: num(item.freeCount),
    allocationSize,
    freeSize,
    increasedSize: allocationSize - freeSize,
  };
}

/** Paddle's Memory Summary of one place: allocated rows by increased size (descending), then reserved rows. */
export function memoryRows(place: MemoryPlace): MemRow[] {
  const allocated = place.allocated.map((i) => memRow(i, "Allocated"));
  allocated.sort((a, b) => b.increasedSize - a.increasedSize);
  return [...allocated, ...place.reserved.map((i) => memRow(i, "Reserved"))];
}

/**
 * Memory Manipulation and User Defined rows: CPU ratio = cpu / total_time; GPU columns use all device
 * time (general_gpu) with ratio = general_gpu / ProfileStep's general_gpu.
 */
export function itemRows(items: EventStats[], s: Summary, prefix: string): StatRow[] {
  const total = num(s.meta?.totalTimeNs);
  const step = (s.model?.items ?? []).find((i) => i.name === "ProfileStep");
  const gpuTotal = num(step?.generalGpu?.totalNs);
  return items.map((it) => {
    const calls = num(it.calls);
    return {
      id: `${prefix}:${it.name}`,
      name: it.name,
      kind: "item",
      calls,
      cpu: timeCol(it.cpu, calls, ratio(num(it.cpu?.totalNs), total)),
      gpu: timeCol(it.generalGpu, calls, ratio(num(it.generalGpu?.totalNs), gpuTotal)),
    };
  });
}

export function hasGpu(s: Summary): boolean {
  return (s.overview?.gpu.length ?? 0) > 0 || (s.kernels?.kernels.length ?? 0) > 0;
}
