// A searchable picker for long lists (a run's workers, the timeline's ranks): a button that opens a
// box with a search field and the first matches. One value (`value`/`onPick`) or a set
// (`selected`/`onToggle`). Only the shown matches are DOM nodes, so 4,096 items cost nothing.
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

export interface PickItem {
  value: string;
  label: string;
  /** Extra text that the search looks in (rank number, host, worker name, file name). */
  search?: string;
  /** Sort key for exact matches ("5" finds rank 5 first). */
  rank?: number;
}

/** Items whose label or search text holds every word of `q` (case-insensitive); an exact rank first. */
export function filterItems(items: PickItem[], q: string): PickItem[] {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return items;
  const hay = (it: PickItem) => `${it.label} ${it.search ?? ""} ${it.value}`.toLowerCase();
  const out = items.filter((it) => {
    const h = hay(it);
    return words.every((w) => h.includes(w));
  });
  const exact = words.length === 1 && /^\d+$/.test(words[0]) ? Number(words[0]) : null;
  if (exact !== null) out.sort((a, b) => Number(b.rank === exact) - Number(a.rank === exact));
  return out;
}

const SHOWN = 100;

export function Picker(props: {
  items: PickItem[];
  testId: string;
  /** Single choice. */
  value?: string;
  onPick?: (value: string) => void;
  /** A set of choices (checkboxes); the box stays open. */
  selected?: Set<string>;
  onToggle?: (value: string) => void;
  disabled?: boolean;
  /** What the button shows (default: the chosen item's label). */
  buttonText?: string;
  placeholder?: string;
  title?: string;
  extra?: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const [q, setQ] = useState("");
  const [at, setAt] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const multi = !!props.selected;
  const matches = useMemo(() => (open ? filterItems(props.items, q) : []), [open, q, props.items]);
  const shown = matches.slice(0, SHOWN);
  const current = props.items.find((it) => it.value === props.value);

  useEffect(() => {
    if (!open) return;
    input.current?.focus();
    const away = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("mousedown", away);
    return () => document.removeEventListener("mousedown", away);
  }, [open]);

  const pick = (v: string) => {
    if (multi) props.onToggle?.(v);
    else {
      props.onPick?.(v);
      setOpen(false);
    }
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Escape") setOpen(false);
    else if (e.key === "ArrowDown") setAt((i) => Math.min(shown.length - 1, i + 1));
    else if (e.key === "ArrowUp") setAt((i) => Math.max(0, i - 1));
    else if (e.key === "Enter") {
      if (shown[at]) pick(shown[at].value);
    } else return;
    e.preventDefault();
  };

  return (
    <div class={`picker ${open ? "open" : ""}`} ref={box} data-testid={props.testId} data-value={props.value ?? ""} data-items={props.items.length}>
      <button
        type="button"
        class="picker-btn"
        disabled={props.disabled}
        title={props.title ?? current?.label}
        aria-haspopup="listbox"
        aria-expanded={open}
        data-testid={`${props.testId}-button`}
        onClick={() => {
          setOpen(!open);
          setQ("");
          setAt(0);
        }}
      >
        <span class="picker-text">{props.buttonText ?? current?.label ?? "—"}</span>
        <span class="picker-caret" aria-hidden="true">▾</span>
      </button>
      {open ? (
        <div class="picker-box">
          <input
            ref={input}
            class="search picker-search"
            type="search"
            value={q}
            placeholder={props.placeholder ?? "Type to filter"}
            aria-label={props.placeholder ?? "Filter"}
            data-testid={`${props.testId}-search`}
            onInput={(e) => {
              setQ((e.target as HTMLInputElement).value);
              setAt(0);
            }}
            onKeyDown={onKey}
          />
          <ul class="picker-list" role="listbox" aria-multiselectable={multi}>
            {shown.map((it, i) => {
              const on = multi ? props.selected!.has(it.value) : it.value === props.value;
              return (
                <li>
                  <button
                    type="button"
                    role="option"
                    aria-selected={on}
                    class={`picker-opt ${on ? "on" : ""} ${i === at ? "at" : ""}`}
                    data-testid={`${props.testId}-option`}
                    data-value={it.value}
                    title={it.label}
                    onClick={() => pick(it.value)}
                  >
                    {multi ? <span class="picker-check" aria-hidden="true">{on ? "☑" : "☐"}</span> : null}
                    <span class="picker-label">{it.label}</span>
                  </button>
                </li>
              );
            })}
          </ul>
          <div class="picker-foot" data-testid={`${props.testId}-count`}>
            {matches.length > SHOWN ? `${SHOWN} of ${matches.length.toLocaleString()} matches: type to narrow` : `${matches.length.toLocaleString()} of ${props.items.length.toLocaleString()}`}
          </div>
          {props.extra}
        </div>
      ) : null}
    </div>
  );
}
