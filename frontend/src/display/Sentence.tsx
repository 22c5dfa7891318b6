// A sentence of the display model: literal spans as text, value spans through formatValue, rank spans
// as links (handed to a callback: the panel goes to that rank). The words come from Python.
import type { Sentence as SentenceMsg, Span } from "../gen/tb_paddle_profile/v1/display_pb";
import type { TimeUnit } from "./cells";
import { spanText } from "./cells";

export function Sentence(props: {
  sentence: SentenceMsg;
  timeUnit: TimeUnit;
  /** A click on a rank span. */
  onRank?: (rank: number, span: Span) => void;
  /** A click on a span with a link ("timeline:...", "operators:..."). */
  onLink?: (link: string, span: Span) => void;
  testId?: string;
  /** Draw Sentence.title before the text (bold). */
  showTitle?: boolean;
}) {
  const { sentence, timeUnit } = props;
  return (
    <span class={`sentence level-${sentence.level || "info"}`} data-testid={props.testId ?? "sentence"} data-key={sentence.key}>
      {props.showTitle && sentence.title ? <strong class="sentence-title">{sentence.title}: </strong> : null}
      {sentence.spans.map((span) => {
        const text = spanText(span, timeUnit);
        if (span.isRank && props.onRank) return link(text, "rank-link", () => props.onRank!(span.rank, span), { "data-rank": span.rank });
        if (span.link && props.onLink) return link(text, "span-link", () => props.onLink!(span.link, span), { "data-link": span.link });
        if (span.isValue) return <span class="span-value">{text}</span>;
        return text;
      })}
    </span>
  );
}

function link(text: string, cls: string, onClick: () => void, data: Record<string, string | number>) {
  return (
    <a
      class={cls}
      href="#"
      {...data}
      onClick={(e) => {
        e.preventDefault();
        onClick();
      }}
    >
      {text}
    </a>
  );
}
