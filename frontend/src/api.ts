// The plugin's data routes. Every URL is relative: the iframe's document has
// <base href="plugin/paddle_profile/">, so "runs" resolves to /data/plugin/paddle_profile/runs
// below whatever path prefix TensorBoard is served at.
import { fromBinary } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { RunDistributedSchema, RunListSchema, RunParallelSchema } from "./gen/tb_paddle_profile/v1/plugin_pb";
import type { RunDistributed, RunList, RunParallel } from "./gen/tb_paddle_profile/v1/plugin_pb";
import { SummarySchema } from "./gen/tb_paddle_profile/v1/summary_pb";
import { DisplaySchema, ViewSchema } from "./gen/tb_paddle_profile/v1/display_pb";
import type { Display, View } from "./gen/tb_paddle_profile/v1/display_pb";
import type { Summary } from "./gen/tb_paddle_profile/v1/summary_pb";
import { RunWhatIfSchema } from "./gen/tb_paddle_profile/v1/whatif_pb";
import type { RunWhatIf } from "./gen/tb_paddle_profile/v1/whatif_pb";
import { RunDiffSchema } from "./gen/tb_paddle_profile/v1/diff_pb";
import type { RunDiff } from "./gen/tb_paddle_profile/v1/diff_pb";

/** What a route answered: the message, "not ready yet" (HTTP 202) or an error message. */
export type Fetched<T> =
  | { kind: "ok"; value: T }
  | { kind: "pending"; partial?: T }
  | { kind: "error"; message: string };

function query(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

/**
 * GET a protobuf route. HTTP 202 means "not ready yet"; with `partialOn202` its body is the same message,
 * partly filled (the distributed route lists every rank with its state while some still load).
 */
async function fetchMessage<Desc extends DescMessage>(
  schema: Desc,
  url: string,
  signal?: AbortSignal,
  partialOn202 = false,
): Promise<Fetched<MessageShape<Desc>>> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { Accept: "application/x-protobuf" }, signal });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    return { kind: "error", message: `request failed: ${(err as Error).message}` };
  }
  if (response.status === 202) {
    if (!partialOn202) return { kind: "pending" };
    try {
      return { kind: "pending", partial: fromBinary(schema, new Uint8Array(await response.arrayBuffer())) };
    } catch {
      return { kind: "pending" };
    }
  }
  if (!response.ok) {
    const text = (await response.text()).trim();
    return { kind: "error", message: `${response.status} ${response.statusText}${text ? `: ${firstLine(text)}` : ""}` };
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  try {
    return { kind: "ok", value: await decode(schema, bytes) };
  } catch (err) {
    return { kind: "error", message: `could not decode the answer of ${url.split("?")[0]}: ${(err as Error).message}` };
  }
}

/** Answers above this size are decoded in a worker: a 1,024-rank analysis takes ~100 ms to decode, one
 * task the page could not answer input in. */
const WORKER_BYTES = 64 << 10;
let worker: Worker | null | undefined;
let nextId = 0;
const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

function decoder(): Worker | null {
  if (worker === undefined) {
    try {
      worker = new Worker(new URL("./decode.worker.ts", import.meta.url), { type: "module" });
      worker.onmessage = (e: MessageEvent<{ id: number; value?: unknown; error?: string }>) => {
        const w = waiting.get(e.data.id);
        waiting.delete(e.data.id);
        if (e.data.error !== undefined) w?.reject(new Error(e.data.error));
        else w?.resolve(e.data.value);
      };
      worker.onerror = () => {
        // no worker here (a policy, an old browser): every answer is decoded on the page, these again
        worker = null;
        for (const w of waiting.values()) w.reject(new Error("worker"));
        waiting.clear();
      };
    } catch {
      worker = null;
    }
  }
  return worker;
}

async function decode<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): Promise<MessageShape<Desc>> {
  const w = bytes.length >= WORKER_BYTES ? decoder() : null;
  if (w) {
    const id = nextId++;
    try {
      return await new Promise<MessageShape<Desc>>((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
        w.postMessage({ id, typeName: schema.typeName, bytes });
      });
    } catch (err) {
      if ((err as Error).message !== "worker") throw err;
    }
  }
  return fromBinary(schema, bytes);
}

function firstLine(text: string): string {
  // An HTML error page would be noise: keep the first line of plain text only.
  const plain = text.replace(/<[^>]*>/g, " ");
  return plain.split("\n").map((l) => l.trim()).find((l) => l) ?? "";
}

export function fetchRuns(signal?: AbortSignal): Promise<Fetched<RunList>> {
  return fetchMessage(RunListSchema, "runs", signal);
}

export interface SpanKey {
  run: string;
  worker: string;
  span: string;
}

export function fetchSummary(key: SpanKey, signal?: AbortSignal): Promise<Fetched<Summary>> {
  return fetchMessage(SummarySchema, `summary?${query({ run: key.run, worker: key.worker, span: key.span })}`, signal);
}

/** Every rank of a run and span; `part` "summary": the charts' series without the view's per-rank tables (a
 * folded view of many ranks), "details": every table; both without the ranks' own figures (the tables carry them). */
export function fetchDistributed(run: string, span: string, signal?: AbortSignal, part = ""): Promise<Fetched<RunDistributed>> {
  return fetchMessage(RunDistributedSchema, `distributed?${query(part ? { run, span, part } : { run, span })}`, signal, true);
}

/** The run's cross-rank analysis, "pending" (with a note) while some ranks still load; `part` "summary":
 * without the per-rank tables and breakdowns (the top of the Distributed view at scale), "details": what the
 * page draws (without the raw series the tables carry, and the per-step breakdown of many bars),
 * "breakdown_steps": that table alone. */
export function fetchParallel(run: string, span: string, signal?: AbortSignal, part = ""): Promise<Fetched<RunParallel>> {
  return fetchMessage(RunParallelSchema, `parallel?${query(part ? { run, span, part } : { run, span })}`, signal, true);
}

/** MFU inputs of the `whatif` route (empty: not given). */
export interface MfuInputs {
  params: string;
  tokensPerStep: string;
  peakTflops: string;
}

/** The critical path, the what-if estimates, the pipeline schedule and MFU of a run and span; "pending"
 * while some ranks still load. */
export function fetchWhatIf(run: string, span: string, mfu: MfuInputs, signal?: AbortSignal): Promise<Fetched<RunWhatIf>> {
  const params: Record<string, string> = { run, span };
  if (mfu.params) params.params = mfu.params;
  if (mfu.tokensPerStep) params.tokens_per_step = mfu.tokensPerStep;
  if (mfu.peakTflops) params.peak_tflops = mfu.peakTflops;
  return fetchMessage(RunWhatIfSchema, `whatif?${query(params)}`, signal, true);
}

/** The display model of one rank (every table and sentence of its views), built in Python. */
/** What the run's stored cross-rank analysis says of one rank (View "rank_banner": the straggler, a role
 * peer of it, or no sentence); the server never computes an analysis for it. */
export function fetchRankBanner(key: SpanKey, signal?: AbortSignal): Promise<Fetched<View>> {
  return fetchMessage(ViewSchema, `rank_banner?${query({ run: key.run, worker: key.worker, span: key.span })}`, signal);
}

export function fetchDisplay(key: SpanKey, sortedBy?: string, signal?: AbortSignal): Promise<Fetched<Display>> {
  const params: Record<string, string> = { run: key.run, worker: key.worker, span: key.span };
  if (sortedBy) params.sorted_by = sortedBy;
  return fetchMessage(DisplaySchema, `display?${query(params)}`, signal);
}

/**
 * The `csv` route of one table: a rank's view with its worker, a run view ("parallel", "distributed")
 * without one. The CSV is built in Python from the same model.
 */
export function csvUrl(key: { run: string; worker?: string; span: string }, view: string, table: string): string {
  const params: Record<string, string> = { run: key.run };
  if (key.worker) params.worker = key.worker;
  params.span = key.span;
  params.view = view;
  params.table = table;
  return `csv?${query(params)}`;
}

export function traceUrl(key: SpanKey): string {
  return `trace?${query({ run: key.run, worker: key.worker, span: key.span })}`;
}

/** The Compare view's two sides; a side's worker "" means every rank of its run (the across-ranks comparison). */
export interface DiffChoice {
  baseline: SpanKey;
  candidate: SpanKey;
}

function diffParams(c: DiffChoice): Record<string, string> {
  return {
    baseline_run: c.baseline.run,
    baseline_worker: c.baseline.worker,
    baseline_span: c.baseline.span,
    candidate_run: c.candidate.run,
    candidate_worker: c.candidate.worker,
    candidate_span: c.candidate.span,
  };
}

/** The comparison of two ranks or two runs (built in Python); "pending" (partly filled) while a side is parsed. */
export function fetchDiff(c: DiffChoice, signal?: AbortSignal): Promise<Fetched<RunDiff>> {
  return fetchMessage(RunDiffSchema, `diff?${query(diffParams(c))}`, signal, true);
}

/** The `csv` route of one table of a comparison (built in Python from the same model). */
export function diffCsvUrl(c: DiffChoice, table: string): string {
  return `csv?${query({ view: "diff", table, ...diffParams(c) })}`;
}
