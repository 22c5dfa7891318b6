// Number formatting that prints exactly what Paddle's (and the CLI's) text tables print.
//
// Paddle formats times with `'{:.2f}'.format(ns / 1e6)` (per unit) and ratios with
// `'{:.2f}'.format(ratio * 100)`. Python rounds the exact binary value half-to-even; JavaScript's
// toFixed rounds exact ties away from zero. The two differ only on exact ties, i.e. values whose
// eightfold is an odd integer (0.125, 2.375, …), which are fixed up here.

export type TimeUnit = "s" | "ms" | "us" | "ns";
export const TIME_UNITS: TimeUnit[] = ["s", "ms", "us", "ns"];

const DIVISOR: Record<TimeUnit, number> = { s: 1e9, ms: 1e6, us: 1e3, ns: 1 };

/** Python's `'%.2f' % x`. */
export function fixed2(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  const a = Math.abs(x);
  const eight = a * 8; // exact: a power-of-two scaling
  if (Number.isInteger(eight) && eight % 2 === 1 && eight < 2 ** 50) {
    // An exact tie at the third decimal: a*100 = n + 0.5 exactly; Python keeps the even neighbour.
    const n = Math.floor(a * 100);
    const kept = n % 2 === 0 ? n : n + 1;
    const sign = x < 0 || Object.is(x, -0) ? "-" : "";
    return `${sign}${Math.floor(kept / 100)}.${String(kept % 100).padStart(2, "0")}`;
  }
  const s = x.toFixed(2);
  return Object.is(x, -0) ? `-${s}` : s;
}

/** Paddle's format_time: "-" for a missing value (no calls), else the time in `unit` with 2 decimals. */
export function fmtTime(ns: number | undefined, unit: TimeUnit): string {
  if (ns === undefined || ns === Infinity) return "-";
  return fixed2(ns / DIVISOR[unit]);
}

/** A sentence of the hybrid-parallel analysis with its "{ns:N}" time tokens printed in `unit`
 * (what the CLI's fill_times does). */
export function fillTimes(text: string, unit: TimeUnit): string {
  return text.replace(/\{ns:(-?[0-9]+)\}/g, (_m, ns: string) => `${fmtTime(Number(ns), unit)} ${unit}`);
}

/** Paddle's format_ratio: a fraction as a percentage with 2 decimals. */
export function fmtRatio(ratio: number | undefined): string {
  if (ratio === undefined) return "-";
  return fixed2(ratio * 100);
}

/** `num / den` as Paddle computes its ratios: 0 when the denominator is 0. */
export function ratio(num: number, den: number): number {
  return den === 0 ? 0 : num / den;
}

/** A time in `unit` as a plain number (for chart axes), same arithmetic as fmtTime. */
export function inUnit(ns: number, unit: TimeUnit): number {
  return ns / DIVISOR[unit];
}

/** Integers (calls, bytes, counts) exactly as Python's str(int) prints them. */
export function fmtInt(v: number | bigint): string {
  return typeof v === "bigint" ? v.toString() : String(Math.trunc(v));
}

/** Human-readable bytes for labels next to exact values (never used inside the CLI-equal tables). */
export function fmtBytes(bytes: number): string {
  const abs = Math.abs(bytes);
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = abs;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const text = i === 0 ? String(v) : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2);
  return `${bytes < 0 ? "-" : ""}${text} ${units[i]}`;
}
