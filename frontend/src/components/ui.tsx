// Small building blocks: cards, plain tables for short lists, segmented controls, notices.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";

export function Card(props: {
  title: string;
  subtitle?: string;
  tools?: ComponentChildren;
  children: ComponentChildren;
  class?: string;
  testId?: string;
}) {
  return (
    <section class={`card ${props.class ?? ""}`} data-testid={props.testId}>
      <header class="card-head">
        <h3>{props.title}</h3>
        {props.subtitle ? <span class="card-sub">{props.subtitle}</span> : null}
        {props.tools ? <div class="card-tools">{props.tools}</div> : null}
      </header>
      <div class="card-body">{props.children}</div>
    </section>
  );
}

export interface SimpleColumn<R> {
  key: string;
  title: string;
  group?: string;
  align?: "left" | "right";
  text: (row: R) => string;
  /** Optional swatch colour shown before the text (chart legend inside the table). */
  swatch?: (row: R) => string | undefined;
  cls?: string;
}

/** A short table (no virtual scrolling). Cells carry data-col so tests can read them by column. */
export function SimpleTable<R>(props: {
  columns: SimpleColumn<R>[];
  rows: R[];
  rowKey: (row: R) => string;
  testId: string;
  onRowClick?: (row: R) => void;
  rowClass?: (row: R) => string;
}) {
  const { columns, rows } = props;
  const groups: { title: string; span: number }[] = [];
  for (const c of columns) {
    const t = c.group ?? "";
    const last = groups[groups.length - 1];
    if (last && last.title === t) last.span++;
    else groups.push({ title: t, span: 1 });
  }
  const hasGroups = groups.some((g) => g.title);
  return (
    <div class="st-wrap">
      <table class="st" data-testid={props.testId}>
        <thead>
          {hasGroups ? (
            <tr class="st-groups">
              {groups.map((g) => (
                <th colSpan={g.span} class={g.title ? "group" : ""}>
                  {g.title}
                </th>
              ))}
            </tr>
          ) : null}
          <tr>
            {columns.map((c) => (
              <th class={`${c.align ?? "right"} ${c.cls ?? ""}`} data-col={c.key}>
                {c.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              data-key={props.rowKey(r)}
              class={`${props.onRowClick ? "clickable" : ""} ${props.rowClass?.(r) ?? ""}`}
              onClick={props.onRowClick ? () => props.onRowClick!(r) : undefined}
            >
              {columns.map((c) => {
                const sw = c.swatch?.(r);
                return (
                  <td class={`${c.align ?? "right"} ${c.cls ?? ""}`} data-col={c.key} title={c.align === "left" ? c.text(r) : undefined}>
                    {sw ? <span class="swatch" style={{ background: sw }} /> : null}
                    {c.text(r)}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Segmented<T extends string>(props: {
  value: T;
  options: { value: T; label: string; title?: string }[];
  onChange: (v: T) => void;
  testId?: string;
  label?: string;
}) {
  return (
    <div class="seg" role="radiogroup" aria-label={props.label} data-testid={props.testId}>
      {props.options.map((o) => (
        <button
          class={o.value === props.value ? "on" : ""}
          role="radio"
          aria-checked={o.value === props.value}
          title={o.title}
          data-value={o.value}
          onClick={() => props.onChange(o.value)}
        >
          {o.label}
        </button>
      ))}
    </div>
  );
}

export function Notice(props: { kind: "info" | "error" | "loading"; children: ComponentChildren; testId?: string }) {
  return (
    <div class={`notice ${props.kind}`} data-testid={props.testId} role={props.kind === "error" ? "alert" : "status"}>
      {props.kind === "loading" ? <span class="spinner" /> : null}
      <div>{props.children}</div>
    </div>
  );
}

export function Stat(props: { label: string; value: string; sub?: string; testId?: string }) {
  return (
    <div class="stat" data-testid={props.testId}>
      <div class="stat-label">{props.label}</div>
      <div class="stat-value">{props.value}</div>
      {props.sub ? <div class="stat-sub">{props.sub}</div> : null}
    </div>
  );
}

/**
 * A section that can be folded: its title is a button; folded, its children are not drawn at all (no
 * DOM node, no chart), so a 1,024-rank page stays small until the user asks for the details.
 */
export function Fold(props: { title: string; subtitle?: string; open: boolean; testId: string; children: ComponentChildren }) {
  const [open, setOpen] = useState(props.open);
  return (
    <section class={`fold ${open ? "open" : ""}`} data-testid={props.testId} data-open={open ? "1" : "0"}>
      <button class="fold-head" onClick={() => setOpen(!open)} aria-expanded={open} data-testid={`${props.testId}-toggle`}>
        <span class="fold-caret" aria-hidden="true">{open ? "▾" : "▸"}</span>
        <span class="fold-title">{props.title}</span>
        {props.subtitle ? <span class="fold-sub">{props.subtitle}</span> : null}
      </button>
      {open ? <div class="fold-body">{props.children}</div> : null}
    </section>
  );
}
