// The selection (run, worker, span, unit, view) and its place in the URL.
import type { TimeUnit } from "./format";
import { TIME_UNITS } from "./format";
import { useEffect, useRef, useState } from "preact/hooks";

export const VIEWS = ["overview", "operators", "kernels", "distributed", "whatif", "memory", "timeline", "compare"] as const;
export type View = (typeof VIEWS)[number];

export const VIEW_TITLES: Record<View, string> = {
  overview: "Overview",
  operators: "Operators",
  kernels: "Kernels",
  distributed: "Distributed",
  whatif: "What-if",
  memory: "Memory",
  timeline: "Timeline",
  compare: "Compare",
};

export interface Selection {
  run: string;
  worker: string;
  span: string;
  unit: TimeUnit;
  /** The unit selector on "auto" (URL unit=auto): tables print each duration column in the unit that
   * fits it (display/DisplayTable.tsx AutoUnits); `unit` stays the panels' unit for sentences and charts. */
  auto: boolean;
  view: View;
  /** Timeline: window "start,end" (ns), search, selected slice "worker:id", open the first match,
   * folded ranks and tracks ("worker:*" and "worker:track", comma-separated). */
  tl: string;
  tlq: string;
  tlsel: string;
  tlfind: string;
  tlfold: string;
  /** Timeline: the ranks shown, worker names comma-separated (URI-encoded); "" = the default set. */
  tlranks: string;
  /** Timeline: the critical path drawn ("" = off; else "<step>" or "<step>:<segment>" to jump to that segment). */
  tlcp: string;
  /** Timeline: "compact" (one row per rank; tlranks = the ranks whose lanes are shown under it), "detail"
   * (every lane of the ranks shown), "" = the default (compact beyond 16 ranks unless the link names a
   * window, slice, search, ranks or critical path: panels/timeline/Compact.tsx). */
  tlmode: string;
  /** A name to search for in the Operators/Kernels tables (links from the timeline). */
  find: string;
  /** Compare: the baseline's and the candidate's run, worker ("*" = every rank: the whole runs) and span. */
  brun: string;
  bworker: string;
  bspan: string;
  crun: string;
  cworker: string;
  cspan: string;
}

export const DEFAULT_SELECTION: Selection = { run: "", worker: "", span: "", unit: "ms", auto: false, view: "overview", tl: "", tlq: "", tlsel: "", tlfind: "", tlfold: "", tlranks: "", tlcp: "", tlmode: "", find: "", brun: "", bworker: "", bspan: "", crun: "", cworker: "", cspan: "" };

/** Reads a selection from "run=…&worker=…" pairs; unknown or malformed values fall back to defaults. */
export function parseSelection(pairs: Record<string, string>): Partial<Selection> {
  const out: Partial<Selection> = {};
  if (pairs.run !== undefined) out.run = pairs.run;
  if (pairs.worker !== undefined) out.worker = pairs.worker;
  if (pairs.span !== undefined) out.span = pairs.span;
  if (TIME_UNITS.includes(pairs.unit as TimeUnit)) Object.assign(out, { unit: pairs.unit as TimeUnit, auto: false });
  else if (pairs.unit === "auto") Object.assign(out, { unit: DEFAULT_SELECTION.unit, auto: true });
  if ((VIEWS as readonly string[]).includes(pairs.view)) out.view = pairs.view as View;
  for (const k of ["tl", "tlq", "tlsel", "tlfind", "tlfold", "tlranks", "tlcp", "tlmode", "find", ...COMPARE_KEYS] as const) if (pairs[k] !== undefined) out[k] = pairs[k];
  return out;
}

export function selectionKeys(sel: Selection): Record<string, string> {
  const keys: Record<string, string> = { run: sel.run, worker: sel.worker, span: sel.span, unit: sel.auto ? "auto" : sel.unit, view: sel.view };
  if (sel.view === "timeline") Object.assign(keys, { tl: sel.tl, tlq: sel.tlq, tlsel: sel.tlsel, tlfind: sel.tlfind, tlfold: sel.tlfold, tlranks: sel.tlranks, tlcp: sel.tlcp, tlmode: sel.tlmode });
  if (sel.find && (sel.view === "kernels" || sel.view === "operators")) keys.find = sel.find;
  if (sel.view === "compare") for (const k of COMPARE_KEYS) keys[k] = sel[k];
  for (const [k, v] of Object.entries(ui)) keys[UI_PREFIX + k] = v;
  return keys;
}

/** The Compare view's choice in the URL (a new choice is a history entry). */
export const COMPARE_KEYS = ["brun", "bworker", "bspan", "crun", "cworker", "cspan"] as const;

/** The run views: they show every rank of a run and span, not one worker's file. */
export const RUN_VIEWS: readonly View[] = ["distributed", "whatif", "compare"];

/** Whether going from `a` to `b` is a new view (run, worker, span or panel): a browser history entry. */
export function isNewView(a: Selection, b: Selection): boolean {
  return a.run !== b.run || a.worker !== b.worker || a.span !== b.span || a.view !== b.view || COMPARE_KEYS.some((k) => a[k] !== b[k]);
}

// ---------------------------------------------------------------- the panels' own state in the URL
//
// A table's filter text and sort ("dt.<table>.q", "dt.<table>.s" = "column:asc|desc") and a panel's
// choices (grouping, thread) are kept as "u.<key>" pairs of the same hash, so a link restores them.
// A value equal to its default is left out. Changing one replaces the history entry (no new one).

const UI_PREFIX = "u.";
let ui: Record<string, string> = {};
const uiListeners = new Set<() => void>();

/** Takes the u.* pairs of a hash (the first load, Back/Forward, a pasted link). */
export function loadUi(pairs: Record<string, string>): void {
  const next: Record<string, string> = {};
  for (const [k, v] of Object.entries(pairs)) if (k.startsWith(UI_PREFIX) && v !== "") next[k.slice(UI_PREFIX.length)] = v;
  if (JSON.stringify(next) === JSON.stringify(ui)) return;
  ui = next;
  for (const listener of uiListeners) listener();
}

export function uiValue(key: string): string | undefined {
  return ui[key];
}

export function setUiValue(key: string, value: string, fallback: string): void {
  const had = ui[key];
  if (value === fallback || value === "") delete ui[key];
  else ui[key] = value;
  if (had === ui[key]) return;
  ui = { ...ui };
  for (const listener of uiListeners) listener();
}

/** Calls `listener` after any u.* value changes; returns the function that stops it. */
export function onUiChange(listener: () => void): () => void {
  uiListeners.add(listener);
  return () => uiListeners.delete(listener);
}

function readUrlValue<T extends string>(key: string, fallback: T, valid?: (v: string) => boolean): T {
  const v = uiValue(key);
  return v !== undefined && (!valid || valid(v)) ? (v as T) : fallback;
}

/** useState for a string kept in the URL under u.<key>; `fallback` is its value when the URL has none. */
export function useUrlState<T extends string>(key: string, fallback: T, valid?: (v: string) => boolean): [T, (v: T) => void] {
  // `valid` is often written inline (a new function each render): the latest one is used, it is no reason to read again
  const validRef = useRef(valid);
  validRef.current = valid;
  const [value, setValue] = useState<T>(() => readUrlValue(key, fallback, valid));
  useEffect(() => {
    const read = () => readUrlValue(key, fallback, validRef.current);
    setValue(read());
    return onUiChange(() => setValue(read()));
  }, [key, fallback]);
  return [value, (v: T) => {
    setValue(v);
    setUiValue(key, v, fallback);
  }];
}

export function readHash(hash: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of hash.replace(/^#/, "").split("&")) {
    if (!part) continue;
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    try {
      out[decodeURIComponent(part.slice(0, eq))] = decodeURIComponent(part.slice(eq + 1));
    } catch {
      /* a malformed escape: ignore that pair */
    }
  }
  return out;
}

export function writeHash(sel: Selection): string {
  return Object.entries(selectionKeys(sel))
    .filter(([, v]) => v !== "")
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join("&");
}
