// Entry point: TensorBoard imports this module inside the plugin's iframe and calls render().
import { render as mount } from "preact";
import { App } from "./App";
import { watchDarkMode } from "./host";
import "./styles.css";

// The built stylesheet sits next to this module. The name is held in a variable so that the bundler
// leaves the URL to be resolved at run time against wherever the module was served from.
const STYLESHEET = "index.css";

function loadStylesheet(): Promise<void> {
  if (!import.meta.env.PROD) return Promise.resolve(); // the dev server injects styles itself
  const href = new URL(STYLESHEET, import.meta.url).href;
  if (document.querySelector(`link[data-tbpp]`)) return Promise.resolve();
  return new Promise((resolve) => {
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = href;
    link.setAttribute("data-tbpp", "");
    link.onload = () => resolve();
    link.onerror = () => resolve();
    document.head.appendChild(link);
  });
}

export async function render(): Promise<void> {
  await loadStylesheet();
  document.documentElement.classList.add("tbpp");
  watchDarkMode();
  let root = document.getElementById("tbpp-root");
  if (!root) {
    root = document.createElement("div");
    root.id = "tbpp-root";
    document.body.appendChild(root);
  }
  mount(<App />, root);
}
