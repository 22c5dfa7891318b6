// A card holding one display table: the table's title (or the panel's), its CSV link, its notes.
import type { ComponentChildren } from "preact";
import type { SpanKey } from "../api";
import { csvUrl } from "../api";
import { Card } from "../components/ui";
import type { Display, Sentence as SentenceMsg } from "../gen/tb_paddle_profile/v1/display_pb";
import type { Summary } from "../gen/tb_paddle_profile/v1/summary_pb";
import type { TimeUnit } from "./cells";
import type { DisplayTableProps } from "./DisplayTable";
import { DisplayTable } from "./DisplayTable";
import { Sentence } from "./Sentence";

/** What a per-rank panel is given: the rank's Summary (charts), its display model (tables), where it is. */
export interface TablePanelProps {
  summary: Summary;
  display: Display;
  spanKey: SpanKey;
  unit: TimeUnit;
  /** A search to start with (a link from another view). */
  find?: string;
  onTimeline?: (name: string) => void;
}

export function DisplayCard(
  props: Omit<DisplayTableProps, "csvHref"> & {
    /** The rank and view the table belongs to (for the CSV link). */
    spanKey: SpanKey;
    view: string;
    title?: string;
    subtitle?: string;
    cardTestId?: string;
    /** Tools in the card's header (grouping, thread, …). */
    cardTools?: ComponentChildren;
    /** Above the table (charts). */
    children?: ComponentChildren;
    /** Below the table (notes). */
    after?: ComponentChildren;
    /** The CSV link's table key when the drawn table is part of a model table (a card's top rows). */
    csvTable?: string;
  },
) {
  const { spanKey, view, title, subtitle, cardTestId, cardTools, children, after, csvTable, ...rest } = props;
  return (
    <Card title={title ?? props.table.title} subtitle={subtitle} testId={cardTestId} tools={cardTools}>
      {children}
      <DisplayTable {...rest} csvHref={csvUrl(spanKey, view, csvTable ?? props.table.key)} />
      {after}
    </Card>
  );
}

/** A view's headline sentences (a trace without steps, …) as notes above the panel. */
export function ViewSentences({ sentences, timeUnit }: { sentences: SentenceMsg[]; timeUnit: TimeUnit }) {
  if (!sentences.length) return null;
  return (
    <div class="view-sentences" data-testid="view-sentences">
      {sentences.map((s) => (
        <div class={`notice info level-${s.level || "info"}`} role="status">
          <Sentence sentence={s} timeUnit={timeUnit} showTitle />
        </div>
      ))}
    </div>
  );
}
