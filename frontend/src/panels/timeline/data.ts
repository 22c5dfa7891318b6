// The timeline routes (relative URLs) and the decoded window: per rank, per lane, columns of numbers.
import { fromBinary } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import {
  TimelineCompactSchema,
  TimelineEventSchema,
  TimelineInstanceSchema,
  TimelineRangeSchema,
  TimelineSearchSchema,
  TimelineWindowSchema,
} from "../../gen/tb_paddle_profile/v1/timeline_pb";
import type { TimelineCompact, TimelineEvent, TimelineInstance, TimelineRange, TimelineSearch, TimelineTrack, TimelineWindow } from "../../gen/tb_paddle_profile/v1/timeline_pb";

export type Got<T> = { kind: "ok"; value: T; pending: boolean; bytes: number } | { kind: "error"; message: string };

function q(params: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") p.set(k, String(v));
  return p.toString();
}

async function get<D extends DescMessage>(schema: D, url: string, signal?: AbortSignal): Promise<Got<MessageShape<D>>> {
  let r: Response;
  try {
    r = await fetch(url, { headers: { Accept: "application/x-protobuf" }, signal });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    return { kind: "error", message: `request failed: ${(err as Error).message}` };
  }
  if (!r.ok) {
    const text = (await r.text()).trim().split("\n")[0] ?? "";
    return { kind: "error", message: `${r.status} ${r.statusText}${text ? `: ${text}` : ""}` };
  }
  const bytes = new Uint8Array(await r.arrayBuffer());
  try {
    return { kind: "ok", value: fromBinary(schema, bytes), pending: r.status === 202, bytes: bytes.length };
  } catch (err) {
    return { kind: "error", message: `could not decode ${url.split("?")[0]}: ${(err as Error).message}` };
  }
}

export interface WindowQuery {
  run: string;
  span: string;
  start?: number;
  end?: number;
  px: number;
  base?: string; // unix ns as a decimal string (beyond a double's precision)
  q?: string;
  flows?: boolean;
  /** The ranks to draw (worker names); the route's default, every rank, is never asked for. */
  workers: string[];
  /** The page of those ranks to start from (the route answers at most 32 ranks and 2 MB a window). */
  rankOffset?: number;
}

export function fetchWindow(w: WindowQuery, signal?: AbortSignal): Promise<Got<TimelineWindow>> {
  const url = `timeline?${q({
    run: w.run,
    span: w.span,
    workers: w.workers.join(","),
    rank_offset: w.rankOffset ? w.rankOffset : undefined,
    start_ns: w.start === undefined ? undefined : Math.floor(w.start),
    end_ns: w.end === undefined ? undefined : Math.ceil(w.end),
    px: Math.round(w.px),
    base_unix_ns: w.base,
    q: w.q,
    flows: w.flows ? 1 : undefined,
  })}`;
  return get(TimelineWindowSchema, url, signal);
}

export function fetchEvent(run: string, span: string, worker: string, id: number, base: string | undefined, signal?: AbortSignal): Promise<Got<TimelineEvent>> {
  return get(TimelineEventSchema, `timeline_event?${q({ run, span, worker, id, base_unix_ns: base })}`, signal);
}

/** The matched collective instance of a slice, its members' slices looked up on the ranks shown (`workers`). */
export function fetchInstance(run: string, span: string, worker: string, id: number, base: string | undefined, workers: string[], signal?: AbortSignal): Promise<Got<TimelineInstance>> {
  return get(TimelineInstanceSchema, `timeline_instance?${q({ run, span, worker, id, base_unix_ns: base, workers: workers.join(",") })}`, signal);
}

/** Whether a slice may be a collective or a send/recv (its instance is asked for when it is selected). */
export function maybeCommunication(name: string, type: string): boolean {
  if (type === "CudaRuntime") return false;
  return /nccl|xccl|rccl|gloo|send|recv|all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|barrier/i.test(name) || type === "Communication";
}

/** The compact timeline (one row of bins per rank over one step): rows order[offset : offset + limit]. */
/** align "instance": the rank whose matched collective instance the rows are aligned on and the time it runs it
 * (unix ns on the run's corrected clock, a decimal string: beyond a double's precision). */
export interface CompactInstance {
  worker: string;
  at: string;
}

/** The compact timeline's rows (limit 0: order_only, the server's order of the ranks alone; focus: that worker and its role peers first). */
export function fetchCompact(c: { run: string; span: string; bins: number; offset: number; limit: number; step?: number; align?: string; kind?: string; instance?: CompactInstance; start?: number; end?: number; focus?: string }, signal?: AbortSignal): Promise<Got<TimelineCompact>> {
  const win = c.start !== undefined && c.end !== undefined ? { start_ns: Math.floor(c.start), end_ns: Math.ceil(c.end) } : {};
  const inst = c.instance ? { instance_worker: c.instance.worker, instance_ns: c.instance.at } : {};
  return get(TimelineCompactSchema, `timeline_compact?${q({ run: c.run, span: c.span, bins: Math.round(c.bins), rank_offset: c.offset || undefined, rank_limit: c.limit || undefined, order_only: c.limit ? undefined : 1, focus: c.focus, step: c.step, align: c.align, kind: c.kind, ...inst, ...win })}`, signal);
}

export function fetchSearch(run: string, span: string, workers: string[], text: string, exact: boolean, base: string | undefined, signal?: AbortSignal): Promise<Got<TimelineSearch>> {
  return get(TimelineSearchSchema, `timeline_search?${q({ run, span, workers: workers.join(","), q: text, exact: exact ? 1 : undefined, base_unix_ns: base, limit: 500 })}`, signal);
}

export function fetchRange(run: string, span: string, start: number, end: number, tracks: string[], base: string | undefined): Promise<Got<TimelineRange>> {
  return get(TimelineRangeSchema, `timeline_range?${q({ run, span, start_ns: Math.floor(start), end_ns: Math.ceil(end), tracks: tracks.join(","), base_unix_ns: base })}`);
}

/** "" when trace_window would send this window (asked with HEAD, no body); else its one-line message (read with a GET). */
export async function checkWindowTrace(url: string): Promise<string> {
  try {
    if ((await fetch(url, { method: "HEAD" })).ok) return "";
    const r = await fetch(url);
    if (r.ok) {
      await r.body?.cancel(); // it answers now: the download goes ahead
      return "";
    }
    const text = (await r.text()).trim().split("\n")[0] ?? "";
    return `${r.status} ${r.statusText}${text ? `: ${text}` : ""}`;
  } catch (err) {
    return `request failed: ${(err as Error).message}`;
  }
}

export function windowTraceUrl(run: string, span: string, worker: string, start: number, end: number, base: string | undefined): string {
  return `trace_window?${q({ run, span, worker, start_ns: Math.floor(start), end_ns: Math.ceil(end), base_unix_ns: base })}`;
}

/** One row of slices, decoded: absolute times (ns in window coordinates) as doubles. */
export interface Lane {
  track: number;
  depth: number;
  start: Float64Array;
  dur: Float64Array;
  name: Uint32Array;
  count: Uint32Array;
  id: Float64Array;
  type: Uint16Array;
  match: Uint8Array | null;
}

/** A counter of a rank over the fetched window: one value per pixel bin (bin k starts at
 * windowStart + k * resolution); NaN where a memory counter has no value yet. */
export interface Counter {
  kind: string; // "allocated", "reserved", "utilization"
  label: string;
  unit: string; // "bytes", "ratio"
  device: number;
  values: Float64Array;
  max: number; // the lane's top: the highest value of the whole trace (1 for a ratio)
  min: number; // the lane's bottom: the lowest value of the whole trace (0 for a ratio)
}

export interface RankData {
  worker: string;
  rank: number;
  fileName: string;
  state: string;
  offset: number;
  start: number;
  end: number;
  tracks: TimelineTrack[];
  lanes: Map<string, Lane>; // key `${track}:${depth}`
  events: number;
  counters: Counter[];
}

export interface Decoded {
  windowStart: number;
  windowEnd: number;
  resolution: number;
  base: string;
  rangeStart: number;
  rangeEnd: number;
  names: string[];
  types: string[];
  ranks: RankData[];
  flows: { rank: number; srcTrack: number; srcDepth: number; srcStart: number; dstTrack: number; dstDepth: number; dstStart: number }[];
  query: string;
  items: number;
  bytes: number;
  /** Ranks asked for, and how many of them this window holds (all, once every page is merged). */
  ranksTotal: number;
  /** Pages (responses) merged into this window; the largest response in bytes. */
  pages: number;
  maxPageBytes: number;
}

/** The next page's rank offset, or -1 when the window holds every rank asked for. */
export function nextRankOffset(w: TimelineWindow): number {
  const total = w.ranksTotal;
  const next = w.rankOffset + w.ranks.length;
  return total > 0 && next < total && w.ranks.length > 0 ? next : -1;
}

/** One window from its pages of ranks: string tables concatenated, each page's indexes shifted. */
export function mergeWindows(a: Decoded, b: Decoded): Decoded {
  const nameOff = a.names.length;
  const typeOff = a.types.length;
  const rankOff = a.ranks.length;
  const ranks = b.ranks.map((r) => {
    const lanes = new Map<string, Lane>();
    for (const [k, l] of r.lanes) lanes.set(k, { ...l, name: l.name.map((x) => x + nameOff), type: l.type.map((x) => x + typeOff) });
    return { ...r, lanes };
  });
  return {
    ...a,
    names: [...a.names, ...b.names],
    types: [...a.types, ...b.types],
    ranks: [...a.ranks, ...ranks],
    flows: [...a.flows, ...b.flows.map((f) => ({ ...f, rank: f.rank + rankOff }))],
    items: a.items + b.items,
    bytes: a.bytes + b.bytes,
    pages: a.pages + b.pages,
    maxPageBytes: Math.max(a.maxPageBytes, b.maxPageBytes),
  };
}

export function decodeWindow(w: TimelineWindow, bytes: number): Decoded {
  const ws = Number(w.windowStartNs);
  let items = 0;
  const ranks: RankData[] = w.ranks.map((r) => {
    const lanes = new Map<string, Lane>();
    for (const l of r.lanes) {
      const n = l.durations.length;
      const start = new Float64Array(n);
      const dur = new Float64Array(n);
      const id = new Float64Array(n);
      let s = ws;
      let i0 = 0;
      for (let i = 0; i < n; i++) {
        s += Number(l.startDeltas[i]);
        start[i] = s;
        dur[i] = Number(l.durations[i]);
        i0 += Number(l.idDeltas[i]);
        id[i] = i0;
      }
      items += n;
      lanes.set(`${l.track}:${l.depth}`, {
        track: l.track,
        depth: l.depth,
        start,
        dur,
        id,
        name: Uint32Array.from(l.names),
        count: Uint32Array.from(l.counts),
        type: Uint16Array.from(l.types),
        match: l.matches.length ? Uint8Array.from(l.matches) : null,
      });
    }
    return {
      worker: r.worker,
      rank: r.rank,
      fileName: r.fileName,
      state: r.state,
      offset: Number(r.offsetNs),
      start: Number(r.startNs),
      end: Number(r.endNs),
      tracks: r.tracks,
      lanes,
      events: Number(r.eventsInWindow),
      counters: r.counters.map((c) => ({
        kind: c.kind,
        label: c.label,
        unit: c.unit,
        device: Number(c.device),
        values: Float64Array.from(c.values),
        max: c.maxValue,
        min: c.minValue,
      })),
    };
  });
  return {
    windowStart: ws,
    windowEnd: Number(w.windowEndNs),
    resolution: w.resolutionNs,
    base: w.baseUnixNs.toString(),
    rangeStart: Number(w.rangeStartNs),
    rangeEnd: Number(w.rangeEndNs),
    names: w.names,
    types: w.types,
    ranks,
    flows: w.flows.map((f) => ({
      rank: f.rank,
      srcTrack: f.srcTrack,
      srcDepth: f.srcDepth,
      srcStart: ws + Number(f.srcStartNs),
      dstTrack: f.dstTrack,
      dstDepth: f.dstDepth,
      dstStart: ws + Number(f.dstStartNs),
    })),
    query: w.query,
    items,
    bytes,
    ranksTotal: w.ranksTotal || ranks.length,
    pages: 1,
    maxPageBytes: bytes,
  };
}

/** The value of a counter at time t (window coordinates) of a window, or null outside it / before a value. */
export function counterAt(c: Counter, windowStart: number, resolution: number, t: number): number | null {
  const k = Math.floor((t - windowStart) / Math.max(resolution, 1e-9));
  if (k < 0 || k >= c.values.length) return null;
  const v = c.values[k];
  return Number.isNaN(v) ? null : v;
}

/** A duration in the unit that reads best. */
export function fmtDur(ns: number): string {
  const a = Math.abs(ns);
  if (a >= 1e9) return `${(ns / 1e9).toFixed(3)} s`;
  if (a >= 1e6) return `${(ns / 1e6).toFixed(3)} ms`;
  if (a >= 1e3) return `${(ns / 1e3).toFixed(3)} µs`;
  return `${Math.round(ns)} ns`;
}
