// The page: one viewer, or two side by side with linked controls.

/**
 * Draws one trace's payload, or two side by side with linked controls, inside `host` (replacing what it held).
 * The static page calls it once; `attnlab serve`'s page calls it after every run.
 * @param {HTMLElement} host
 * @param {Payload | Compare} bundle
 * @param {string} [heading]  the single viewer's heading
 * @returns {Api}
 */
function showBundle(host, bundle, heading = "attnlab attention viewer") {
  /** @type {Link} */
  const link = { panes: [], on: true, syncing: false };
  host.replaceChildren();
  host.classList.toggle("compare", "panes" in bundle);
  if (!("panes" in bundle)) return mount(host, bundle, link, heading);
  const bar = document.createElement("div"), toggle = document.createElement("input"), label = document.createElement("label");
  bar.className = "link";
  toggle.type = "checkbox";
  toggle.checked = true;
  label.append(toggle, " link the two viewers (view, layer, heads, tokens, colour scale, search and focus follow each other)");
  bar.append(label);
  const grid = document.createElement("div");
  grid.className = "panes";
  host.append(bar, grid);
  bundle.panes.forEach((p, n) => {
    const pane = document.createElement("section");
    pane.className = "pane";
    grid.append(pane);
    const name = [p.meta.model, p.meta.text && `“${flat(p.meta.text).slice(0, 60)}”`].filter(Boolean).join(" · ");
    link.panes.push(mount(pane, p, link, `${"AB"[n]}: ${name || "trace " + "AB"[n]}`));
  });
  toggle.addEventListener("change", () => { link.on = toggle.checked; if (link.on) link.panes[0].set({}); });
  link.panes[0].set({}); // B takes A's first choices
  const panes = link.panes;
  return { ...panes[0], panes, idle: () => Promise.all(panes.map((p) => p.idle())) };
}

const DATA_ELEMENT = document.getElementById("attnlab-data"); // the static page's trace (the lab's page has none)
if (DATA_ELEMENT) {
  const BUNDLE = /** @type {Payload | Compare} */ (JSON.parse(DATA_ELEMENT.textContent || ""));
  const api = showBundle(byId("attnlab-viewer"), BUNDLE);
  document.title = "panes" in BUNDLE ? "attnlab viewer · comparison"
    : `attnlab viewer${BUNDLE.meta.model ? " · " + BUNDLE.meta.model : ""}`;
  Object.assign(window, { attnlab: api });
}
