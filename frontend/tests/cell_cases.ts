// Prints, as a JSON array, what frontend/src/display/cells.ts makes of every case in the file named by
// argv[2] (tests/data/cell_cases.json); tests/test_display_cells.py compares it with the expected strings.
import { readFileSync } from "node:fs";
import { CellKind } from "../src/gen/tb_paddle_profile/v1/display_pb";
import type { Cell, Format } from "../src/gen/tb_paddle_profile/v1/display_pb";
import { formatValue, type TimeUnit } from "../src/display/cells";

interface Case {
  format: { kind: string; unit: string; digits: number; style: string };
  cell: { number: number; text: string; missing: boolean };
  time_unit: TimeUnit;
}

const cases: Case[] = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const out = cases.map((c) => {
  const fmt = { ...c.format, kind: CellKind[c.format.kind as keyof typeof CellKind] } as unknown as Format;
  const cell = { ...c.cell, title: "" } as unknown as Cell;
  try {
    return formatValue(fmt, cell, c.time_unit);
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
});
process.stdout.write(JSON.stringify(out));
