// The page: one viewer, or two side by side with linked controls.

const BUNDLE = /** @type {Payload | Compare} */ (JSON.parse(byId("attnlab-data").textContent || ""));

const host = byId("attnlab-viewer");
/** @type {Link} */
const link = { panes: [], on: true, syncing: false };
/** @type {Api} */
let api;
if ("panes" in BUNDLE) {
  host.replaceChildren();
  host.classList.add("compare");
  const bar = document.createElement("div"), toggle = document.createElement("input"), label = document.createElement("label");
  bar.className = "link";
  toggle.type = "checkbox";
  toggle.checked = true;
  label.append(toggle, " link the two viewers (view, layer, heads, tokens, colour scale, search and focus follow each other)");
  bar.append(label);
  const grid = document.createElement("div");
  grid.className = "panes";
  host.append(bar, grid);
  BUNDLE.panes.forEach((p, n) => {
    const pane = document.createElement("section");
    pane.className = "pane";
    grid.append(pane);
    const name = [p.meta.model, p.meta.text && `“${flat(p.meta.text).slice(0, 60)}”`].filter(Boolean).join(" · ");
    link.panes.push(mount(pane, p, link, `${"AB"[n]}: ${name || "trace " + "AB"[n]}`));
  });
  toggle.addEventListener("change", () => { link.on = toggle.checked; if (link.on) link.panes[0].set({}); });
  link.panes[0].set({}); // B takes A's first choices
  const panes = link.panes;
  api = { ...panes[0], panes, idle: () => Promise.all(panes.map((p) => p.idle())) };
  document.title = "attnlab viewer · comparison";
} else {
  api = mount(host, BUNDLE, link, "attnlab attention viewer");
  document.title = `attnlab viewer${BUNDLE.meta.model ? " · " + BUNDLE.meta.model : ""}`;
}
Object.assign(window, { attnlab: api });
