// The one TypeScript formatter of the display model's cells and sentences (display.proto).
// Its twin is tb_paddle_profile/display/cells.py; both are tested on tests/data/cell_cases.json, whose
// expected strings come from Python's own formatting. Panels print every table cell and sentence
// through formatValue / sentenceText, never with their own arithmetic.
import { CellKind } from "../gen/tb_paddle_profile/v1/display_pb";
import type { Cell, Column, Format, Sentence, Span } from "../gen/tb_paddle_profile/v1/display_pb";

export type TimeUnit = "s" | "ms" | "us" | "ns";
export const TIME_UNITS: TimeUnit[] = ["s", "ms", "us", "ns"];
const DIVISOR: Record<TimeUnit, number> = { s: 1e9, ms: 1e6, us: 1e3, ns: 1 };
/** The unit selector's choices: a fixed unit (every panel's strings equal the CLI's in it), or "auto". */
export type UnitChoice = TimeUnit | "auto";
export const UNIT_CHOICES: UnitChoice[] = [...TIME_UNITS, "auto"];

/**
 * "auto": the unit of a table column whose largest value |x| (ns) prints with at most three digits
 * before the point (s for a second and more): 242251000 ns → ms ("242.25").
 */
export function fitUnit(maxNs: number): TimeUnit {
  const x = Math.abs(maxNs);
  return x >= 1e9 ? "s" : x >= 1e6 ? "ms" : x >= 1e3 ? "us" : "ns";
}

/**
 * Python's `'%.{d}f' % x`. Python rounds the exact binary value half-to-even, JavaScript's toFixed
 * rounds exact ties away from zero; they differ only on exact ties, i.e. when x·2^(d+1) is an odd integer.
 */
export function pyFixed(x: number, d: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  const a = Math.abs(x);
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  const scaled = a * 2 ** (d + 1); // exact: a power-of-two scaling
  if (Number.isInteger(scaled) && scaled % 2 === 1 && scaled < 2 ** 50) {
    const p = 10 ** d;
    const n = Math.floor(a * p); // a·10^d = n + 0.5 exactly
    const kept = n % 2 === 0 ? n : n + 1;
    const int = Math.floor(kept / p);
    return d === 0 ? `${sign}${int}` : `${sign}${int}.${String(kept % p).padStart(d, "0")}`;
  }
  if (a >= 1e21) {
    // toFixed switches to exponents here; Python prints every digit of the integer part
    const int = BigInt(Math.round(a)).toString();
    return d === 0 ? `${sign}${int}` : `${sign}${int}.${"0".repeat(d)}`;
  }
  return `${sign}${a.toFixed(d)}`;
}

/** pyFixed without the sign of a value that prints as zero (Python 3.11's `'{:z.{d}f}'`: "0%", not "-0%"). */
export function fixed(x: number, d: number): string {
  const s = pyFixed(x, d);
  return /^-[0.]+$/.test(s) ? s.slice(1) : s;
}

/** Python's `'{:g}'.format(x)` (6 significant digits, trailing zeros dropped, exponent below 1e-4 or from 1e6). */
export function pyG(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const [mant, e] = x.toExponential(5).split("e");
  const exp = Number(e);
  if (exp < -4 || exp >= 6) {
    const m = mant.includes(".") ? mant.replace(/0+$/, "").replace(/\.$/, "") : mant;
    return `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  const s = pyFixed(x, Math.max(0, 5 - exp));
  return s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
}

/** Python's str(int(x)). */
export function pyInt(x: number): string {
  const t = Math.trunc(x);
  return Math.abs(t) < 2 ** 53 ? String(t === 0 ? 0 : t) : BigInt(t).toString();
}

/** The binary units of a human size, largest first (display/cells.py BYTE_UNITS). */
export const BYTE_UNITS: readonly (readonly [string, number])[] = [
  ["GiB", 2 ** 30],
  ["MiB", 2 ** 20],
  ["KiB", 2 ** 10],
];

/** [name, divisor] of the binary unit that `n` bytes print in: the largest that |n| reaches (a chart's
 * axis takes its unit from here, so that the axis and the sizes printed on it name the same unit). */
export function byteUnit(n: number): [string, number] {
  for (const [unit, div] of BYTE_UNITS) if (Math.abs(n) >= div) return [unit, div];
  return ["B", 1];
}

/** "-" for 0, else B / KiB / MiB / GiB with 2 decimals (an integer of B), a negative size with its sign. */
export function humanBytes(n: number): string {
  if (!n) return "-";
  const sign = n < 0 ? "-" : "";
  const a = Math.abs(n);
  const [unit, div] = byteUnit(a);
  return div === 1 ? `${sign}${pyInt(a)} B` : `${sign}${pyFixed(a / div, 2)} ${unit}`;
}

/** The printed text of one cell under its column's (or span's) format. */
export function formatValue(fmt: Format | undefined, cell: Cell | undefined, timeUnit: TimeUnit = "ms"): string {
  if (!cell || cell.missing) return "-";
  const kind = fmt?.kind ?? CellKind.CELL_TEXT;
  if (kind === CellKind.CELL_TEXT) return cell.text;
  const x = cell.number;
  const digits = fmt?.digits ?? 0;
  const style = fmt?.style ?? "";
  switch (kind) {
    case CellKind.CELL_DURATION: {
      const unit = ((fmt?.unit || timeUnit) as TimeUnit);
      if (!(unit in DIVISOR)) throw new Error(`time unit must be one of ${TIME_UNITS.join(", ")}, not ${unit}`);
      if (!Number.isFinite(x) && !Number.isNaN(x)) return "-";
      const text = fixed(unit === "ns" ? x : x / DIVISOR[unit], 2);
      return style === "unit" ? `${text} ${unit}` : text;
    }
    case CellKind.CELL_RATIO:
      return fixed(x * 100, digits);
    case CellKind.CELL_PERCENT:
      return `${fixed(x * 100, digits)}%`;
    case CellKind.CELL_COUNT:
      return pyInt(x);
    case CellKind.CELL_BYTES:
      return style === "human" ? humanBytes(Math.trunc(x)) : pyInt(x);
    case CellKind.CELL_NUMBER:
      return style === "g" ? (x === 0 ? "0" : pyG(x)) : fixed(x, digits);
    default:
      throw new Error(`unknown cell kind ${kind}`);
  }
}

export function formatCell(column: Column, cell: Cell | undefined, timeUnit: TimeUnit = "ms"): string {
  return formatValue(column.format, cell, timeUnit);
}

export function spanText(span: Span, timeUnit: TimeUnit = "ms"): string {
  return span.isValue ? formatValue(span.format, span.value, timeUnit) : span.text;
}

/** A sentence as plain text: its spans one after the other. */
export function sentenceText(sentence: Sentence, timeUnit: TimeUnit = "ms"): string {
  return sentence.spans.map((s) => spanText(s, timeUnit)).join("");
}
