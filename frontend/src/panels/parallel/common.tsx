// What the hybrid-parallel cards share: the context (the analysis, its display view, the unit, opening a
// rank), the view's sentences by key, and a display table in a card with its CSV link.
import type { ComponentChildren } from "preact";
import { useMemo } from "preact/hooks";
import { csvUrl } from "../../api";
import { Card } from "../../components/ui";
import type { TimeUnit } from "../../display/cells";
import { DisplayTable } from "../../display/DisplayTable";
import { viewOf } from "../../display/model";
import { Sentence } from "../../display/Sentence";
import type { Row, Sentence as SentenceMsg, Table, View } from "../../gen/tb_paddle_profile/v1/display_pb";
import type { RankParallel, RunParallel } from "../../gen/tb_paddle_profile/v1/plugin_pb";
import type { LabelMap } from "../../labels";
import { labelOf } from "../../labels";
import type { RankLabel } from "./charts";

export type Open = (worker: string) => void;

/** The view of the display model these panels draw. */
export const VIEW = "parallel";

/** What the parallel cards share: the analysis, its display view, the unit, opening a rank. */
export interface Ctx {
  rp: RunParallel;
  view: View;
  unit: TimeUnit;
  label: RankLabel;
  open: Open;
  /** Opens a rank by its number (rank spans, "rank:<n>" links). */
  openRank: (rank: number) => void;
  byRank: Map<number, RankParallel>;
  named: Set<number>;
  current: string;
}

export const EMPTY_VIEW = { key: VIEW, title: "", sentences: [], tables: [] } as unknown as View;

export function useCtx(rp: RunParallel, unit: TimeUnit, labels: LabelMap | undefined, open: Open, current: string): Ctx {
  return useMemo(() => {
    const byRank = new Map(rp.ranks.map((r) => [r.rank, r]));
    const openRank = (rank: number) => {
      const w = byRank.get(rank)?.worker;
      if (w) open(w);
    };
    return {
      rp,
      view: viewOf(rp.display, VIEW) ?? EMPTY_VIEW,
      unit,
      open,
      openRank,
      byRank,
      named: new Set(rp.straggler?.stragglers.map((s) => s.rank) ?? []),
      current,
      label: (r: RankParallel) => labelOf(r, labels),
    };
  }, [rp, unit, labels, open, current]);
}

/** Where a Row.link leads: "rank:<n>" opens that rank. */
export function onLink(c: Ctx) {
  return (link: string) => {
    if (link.startsWith("rank:")) c.openRank(Number(link.slice(5)));
  };
}

/** Row classes of the per-rank tables: the current rank, the ranks the verdict names. */
export function rankRowClass(c: Ctx) {
  return (row: Row) => {
    const rank = row.link.startsWith("rank:") ? Number(row.link.slice(5)) : NaN;
    return `${row.id === c.current ? "current" : ""} ${c.named.has(rank) ? "par-named" : ""}`;
  };
}

export function sentencesOf(view: View, key: string): SentenceMsg[] {
  return view.sentences.filter((s) => s.key === key);
}

/**
 * The sentences of a section of the view ("findings", "advice"), grouped as the model places them: each
 * head (Sentence.part "") with the parts that follow it (its "cost", "excess", "ranks", "trigger").
 */
export function groupsOf(view: View, section: string): { head: SentenceMsg; parts: SentenceMsg[] }[] {
  const out: { head: SentenceMsg; parts: SentenceMsg[] }[] = [];
  for (const s of view.sentences) {
    if (s.section !== section) continue;
    if (!s.part) out.push({ head: s, parts: [] });
    else out[out.length - 1]?.parts.push(s);
  }
  return out;
}

export function partOf(g: { head: SentenceMsg; parts: SentenceMsg[] }, part: string): SentenceMsg[] {
  return g.parts.filter((s) => s.part === part);
}

export function S({ c, s, testId }: { c: Ctx; s: SentenceMsg | undefined; testId?: string }) {
  if (!s) return null;
  return <Sentence sentence={s} timeUnit={c.unit} onRank={c.openRank} testId={testId} />;
}

/** A table of the view in a card, with its CSV link; rows with a rank link open the rank. */
export function TableCard({
  c,
  table,
  testId,
  title,
  subtitle,
  tools,
  maxHeight,
  nameWidth,
  children,
}: {
  c: Ctx;
  table: Table | undefined;
  testId: string;
  title?: string;
  subtitle?: string;
  tools?: ComponentChildren;
  maxHeight?: number;
  nameWidth?: number;
  children?: ComponentChildren;
}) {
  if (!table) return null;
  return (
    <Card title={title ?? table.title} subtitle={subtitle} testId={`${testId}-card`} tools={tools}>
      {children}
      <ParTable c={c} table={table} testId={testId} maxHeight={maxHeight} nameWidth={nameWidth} />
    </Card>
  );
}

export function ParTable({ c, table, testId, maxHeight, nameWidth }: { c: Ctx; table: Table; testId: string; maxHeight?: number; nameWidth?: number }) {
  return (
    <DisplayTable
      table={table}
      timeUnit={c.unit}
      testId={testId}
      csvHref={csvUrl({ run: c.rp.run, span: c.rp.span }, VIEW, table.key)}
      onLink={onLink(c)}
      rowClass={rankRowClass(c)}
      noFilter={table.rows.length < 20}
      maxHeight={maxHeight ?? 320}
      nameWidth={nameWidth ?? 64}
    />
  );
}

