// Talking to the TensorBoard page that holds our iframe.
//
// TensorBoard's dynamic-plugin API: the iframe posts "experimental.bootstrap" with a MessagePort to its
// parent; messages on that port are JSON text {type, id, payload, error, isReply}. The host answers
// "experimental.GetURLPluginData" with the keys of its URL hash that start with "p.<plugin name>.", and
// broadcasts "experimental.DataReloaded" when the user presses TensorBoard's reload button.
//
// A dynamic plugin cannot change TensorBoard's URL through that API, so the selection lives in the
// iframe's own location.hash (it survives TensorBoard hiding and showing the tab). To make a link that
// can be shared, the same keys are mirrored into the TensorBoard page's hash as p.paddle_profile.<key>
// (the page is same-origin) while our tab is the active one; a new iframe reads them back from the
// page's hash (TensorBoard 2.21's GetURLPluginData answers {} even when they are there, so it is only
// the fallback for a page we cannot read).

export const PLUGIN_NAME = "paddle_profile";
const URL_PREFIX = `p.${PLUGIN_NAME}.`;

interface Envelope {
  type: string;
  id: number;
  payload: unknown;
  error: string | null;
  isReply: boolean;
}

type Listener = (payload: unknown) => unknown;

class HostChannel {
  private port: MessagePort;
  private nextId = 0;
  private waiting = new Map<number, (value: unknown) => void>();
  private listeners = new Map<string, Listener>();

  constructor(port: MessagePort) {
    this.port = port;
    port.onmessage = (event) => this.onMessage(event);
  }

  private onMessage(event: MessageEvent): void {
    let message: Envelope;
    try {
      message = JSON.parse(String(event.data)) as Envelope;
    } catch {
      return;
    }
    if (message.isReply) {
      const resolve = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      resolve?.(message.error ? undefined : message.payload);
      return;
    }
    const listener = this.listeners.get(message.type);
    let payload: unknown = null;
    try {
      payload = listener ? listener(message.payload) ?? null : null;
    } catch {
      payload = null;
    }
    this.port.postMessage(JSON.stringify({ type: message.type, id: message.id, payload, error: null, isReply: true }));
  }

  send(type: string, payload: unknown, timeoutMs = 1500): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = window.setTimeout(() => {
        this.waiting.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.waiting.set(id, (value) => {
        window.clearTimeout(timer);
        resolve(value);
      });
      this.port.postMessage(JSON.stringify({ type, id, payload, error: null, isReply: false }));
    });
  }

  listen(type: string, listener: Listener): void {
    this.listeners.set(type, listener);
  }
}

let channel: HostChannel | null = null;

function parentWindow(): Window | null {
  try {
    return window.parent && window.parent !== window ? window.parent : null;
  } catch {
    return null;
  }
}

/** Connects to TensorBoard when we run inside its iframe; a no-op when the page is opened alone. */
export function connectHost(onReload: () => void): void {
  const parent = parentWindow();
  if (!parent || channel) return;
  const { port1, port2 } = new MessageChannel();
  channel = new HostChannel(port1);
  channel.listen("experimental.DataReloaded", () => {
    onReload();
    return null;
  });
  // The host checks event.source.frameElement, so the target origin is our own (same-origin page).
  parent.postMessage("experimental.bootstrap", window.location.origin, [port2]);
}

/** The p.paddle_profile.* keys of the TensorBoard page's hash, read directly (same origin); {} otherwise. */
export function hostHashKeys(): Record<string, string> {
  const parent = parentWindow();
  const out: Record<string, string> = {};
  if (!parent) return out;
  try {
    for (const part of parent.location.hash.replace(/^#/, "").split("&")) {
      const eq = part.indexOf("=");
      if (eq < 0) continue;
      const key = decodeURIComponent(part.slice(0, eq));
      if (key.startsWith(URL_PREFIX)) out[key.slice(URL_PREFIX.length)] = decodeURIComponent(part.slice(eq + 1));
    }
  } catch {
    /* another origin, or a malformed escape */
  }
  return out;
}

/** The p.paddle_profile.* keys as TensorBoard's plugin API reports them (empty when not inside TensorBoard). */
export async function hostUrlData(): Promise<Record<string, string>> {
  if (!channel) return {};
  const data = await channel.send("experimental.GetURLPluginData", null);
  if (!data || typeof data !== "object") return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data as Record<string, unknown>)) {
    if (typeof v === "string") out[k] = v;
  }
  return out;
}

/**
 * Calls `listener` with the p.paddle_profile.* keys of the TensorBoard page's hash whenever that hash
 * changes by a navigation: a link pasted or edited in the address bar of an open tab (only the hash
 * changes, so nothing is reloaded), or Back/Forward over such an entry. Our own mirroring uses
 * replaceState, which fires no hashchange. Returns the function that stops it; a no-op outside
 * TensorBoard or on another origin.
 */
export function onHostHashChange(listener: (keys: Record<string, string>) => void): () => void {
  const parent = parentWindow();
  if (!parent) return () => undefined;
  const handler = () => listener(hostHashKeys());
  try {
    parent.addEventListener("hashchange", handler);
  } catch {
    return () => undefined;
  }
  return () => {
    try {
      parent.removeEventListener("hashchange", handler);
    } catch {
      /* the parent is gone */
    }
  };
}

/**
 * Mirrors our keys into TensorBoard's URL hash (replaceState: no history entry, no hashchange event),
 * only while TensorBoard shows our tab. Any failure (another origin, an unexpected hash) leaves it alone.
 */
export function mirrorToHost(keys: Record<string, string>): void {
  const parent = parentWindow();
  if (!parent) return;
  try {
    const url = new URL(parent.location.href);
    const parts = url.hash.replace(/^#/, "").split("&").filter((p) => p !== "");
    if (parts.length === 0 || decodeURIComponent(parts[0]) !== PLUGIN_NAME) return;
    const kept = parts.slice(1).filter((p) => !decodeURIComponent(p.split("=")[0]).startsWith(URL_PREFIX));
    const ours = Object.entries(keys)
      .filter(([, v]) => v !== "")
      .map(([k, v]) => `${encodeURIComponent(URL_PREFIX + k)}=${encodeURIComponent(v)}`);
    const hash = [parts[0], ...kept, ...ours].join("&");
    if (url.hash !== `#${hash}`) {
      url.hash = hash;
      parent.history.replaceState(parent.history.state, "", url.toString());
    }
  } catch {
    /* not same-origin or not TensorBoard: the iframe hash still holds the selection */
  }
}

// ---------------------------------------------------------------- dark mode
//
// TensorBoard (2.12+) shows dark mode by toggling the class "dark-mode" on its page's <body> (its
// toggle offers browser default / light / dark; the default follows prefers-color-scheme). We follow
// that class live (a MutationObserver on the parent's body); a page opened alone, or a parent we cannot
// read, follows the browser's prefers-color-scheme. The mode is the class "tbpp-dark" on our <html>.

let dark = false;
const darkListeners = new Set<(dark: boolean) => void>();

function readDark(): boolean {
  const parent = parentWindow();
  if (parent) {
    try {
      if (parent.document.body) return parent.document.body.classList.contains("dark-mode");
    } catch {
      /* another origin: fall back to the browser's setting */
    }
  }
  return typeof window.matchMedia === "function" && window.matchMedia("(prefers-color-scheme: dark)").matches;
}

function applyDark(): void {
  const next = readDark();
  document.documentElement.classList.toggle("tbpp-dark", next);
  document.documentElement.style.colorScheme = next ? "dark" : "light";
  if (next === dark) return;
  dark = next;
  for (const listener of darkListeners) listener(dark);
}

let watching = false;

/** Starts following TensorBoard's dark mode (or the browser's); call once before the first render. */
export function watchDarkMode(): void {
  if (watching) return;
  watching = true;
  dark = readDark();
  applyDark();
  const parent = parentWindow();
  try {
    if (parent?.document.body) {
      new MutationObserver(applyDark).observe(parent.document.body, { attributes: true, attributeFilter: ["class"] });
    }
  } catch {
    /* another origin */
  }
  window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", applyDark);
}

export function isDark(): boolean {
  return dark;
}

/** Calls `listener` when the mode changes; returns the function that stops it. */
export function onDarkChange(listener: (dark: boolean) => void): () => void {
  darkListeners.add(listener);
  return () => darkListeners.delete(listener);
}
