// One viewer's page elements: its heading, tabs, menus, filters, head bar, status line, drawing stage and help. Built
// here without behaviour; viewer/pane.js gives them their listeners.

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string>} [attrs]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, attrs = {}, text = "") {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.textContent = text;
  return e;
}

/**
 * A select of (value, text) options.
 * @param {string} label  its accessible name
 * @param {[string, string][]} options
 */
function menu(label, options) {
  const s = el("select", { "aria-label": label });
  for (const [v, t] of options) s.append(el("option", { value: v }, t));
  return s;
}

/** @param {string} text @param {HTMLElement} control  the control inside a label that names it */
function labelled(text, control) {
  const l = el("label", {}, text + " ");
  l.append(control);
  return l;
}

/**
 * @typedef {ReturnType<typeof controls>} Controls  the elements of one viewer's page
 */

/**
 * Builds the page of one viewer inside `root` (replacing what it held).
 * @param {HTMLElement} root
 * @param {string} heading
 * @param {Readonly<Record<string, View>>} views  the tabs, in order
 * @param {Kind[]} kinds  the kinds the trace has
 * @param {boolean} hasPairs  whether the sentence-pair filter applies
 * @param {Record<string, string>} meta  the trace's metadata, shown under the heading
 */
function controls(root, heading, views, kinds, hasPairs, meta) {
  root.replaceChildren();
  const header = el("header");
  header.append(el("h1", {}, heading));
  const info = el("p", { class: "info" }, Object.entries(meta).map(([k, v]) => `${k}: ${v}`).join(" · ") || "no metadata");
  header.append(info);
  const tabs = el("div", { class: "tabs", role: "group", "aria-label": "view" });
  /** @type {Record<string, HTMLButtonElement>} */
  const tabButtons = {};
  for (const [v, spec] of Object.entries(views)) {
    tabButtons[v] = el("button", { type: "button", "data-view": v }, spec.label);
    tabs.append(tabButtons[v]);
  }
  const kindSelect = menu("attention kind", kinds.map((k) => [k, KIND_NAMES[k]]));
  const recSelect = menu("layer", []);
  const zoomSelect = menu("cell size", [["0", "fit"], ...[2, 4, 8, 12, 16, 24].map((z) => /** @type {[string, string]} */ ([String(z), `${z} px`]))]);
  const scaleSelect = menu("colour scale", /** @type {[Scale, string][]} */ (Object.entries(SCALE_NAMES)));
  const pairSelect = menu("sentence pair", /** @type {[Pair, string][]} */ (Object.entries(PAIR_NAMES)));
  const rangeInput = el("input", { type: "text", "aria-label": "token range", placeholder: "all, or 100:160", size: "10", spellcheck: "false" });
  const searchInput = el("input", { type: "search", "aria-label": "find token", placeholder: "find token", size: "12", spellcheck: "false" });
  const zoomLabel = labelled("cell", zoomSelect), pairLabel = labelled("pair", pairSelect);
  pairLabel.hidden = !hasPairs;
  const headBar = el("div", { class: "heads", role: "group", "aria-label": "heads" });
  const exportBar = el("div", { class: "export" });
  const pngScale = menu("PNG resolution", [["1", "1×"], ["2", "2×"], ["4", "4×"]]);
  pngScale.value = "2";
  const pngButton = el("button", { type: "button" }, "Save PNG"), svgButton = el("button", { type: "button" }, "Save SVG");
  exportBar.append(pngButton, pngScale, svgButton);
  const bar = el("div", { class: "controls" });
  bar.append(tabs, labelled("kind", kindSelect), labelled("layer", recSelect), zoomLabel, exportBar);
  const filters = el("div", { class: "controls filters" });
  filters.append(labelled("tokens", rangeInput), pairLabel, labelled("colour", scaleSelect), labelled("find", searchInput));
  const statusLine = el("p", { class: "status", role: "status", "aria-live": "polite" });
  // The stage scrolls over a spacer as large as the drawing; the canvas above it is only as large as what is
  // visible, so a 512-token view draws a window of it, not a 9000-pixel-high canvas.
  const frame = el("div", { class: "frame" });
  const stage = el("div", { class: "stage", tabindex: "0", role: "img" });
  const spacer = el("div", { class: "spacer" });
  const canvas = el("canvas", { "aria-hidden": "true" });
  stage.append(spacer);
  frame.append(stage, canvas);
  const help = el("p", { class: "help" });
  root.append(header, bar, filters, headBar, statusLine, frame, help);
  return {
    tabButtons, kindSelect, recSelect, zoomSelect, zoomLabel, scaleSelect, pairSelect, rangeInput, searchInput,
    headBar, pngScale, pngButton, svgButton, statusLine, stage, spacer, canvas, help,
  };
}
