// Labels outside the tables (stat tiles, chart tooltips and axes) printed with the one formatter of the
// display model, display/cells.ts: table cells and sentences go through formatCell / sentenceText, and
// these thin helpers use the same Python-exact rounding.
import { fixed, humanBytes, pyInt } from "./display/cells";
import type { TimeUnit } from "./display/cells";

export type { TimeUnit } from "./display/cells";
export { TIME_UNITS } from "./display/cells";

const DIVISOR: Record<TimeUnit, number> = { s: 1e9, ms: 1e6, us: 1e3, ns: 1 };

/** Python's `'%.2f' % x`, no sign on a zero (tests/test_frontend_format.py checks the rounding here too). */
export function fixed2(x: number): string {
  return fixed(x, 2);
}

/** A time in `unit` with 2 decimals (a CELL_DURATION's text); "-" for a missing value. */
export function fmtTime(ns: number | undefined, unit: TimeUnit): string {
  if (ns === undefined || !Number.isFinite(ns)) return "-";
  return fixed(unit === "ns" ? ns : ns / DIVISOR[unit], 2);
}

/** A time in `unit` as a plain number (for chart axes). */
export function inUnit(ns: number, unit: TimeUnit): number {
  return ns / DIVISOR[unit];
}

/** Integers (calls, bytes, counts) exactly as Python's str(int) prints them. */
export function fmtInt(v: number | bigint): string {
  return typeof v === "bigint" ? v.toString() : pyInt(v);
}

/** Human-readable bytes for labels next to exact values ("1.50 MiB", a CELL_BYTES of style "human"; "0 B" for 0). */
export function fmtBytes(bytes: number): string {
  return bytes === 0 ? "0 B" : humanBytes(bytes);
}
