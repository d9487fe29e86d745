// One viewer for one trace: mount() builds it from its parts and returns its API. Its data is viewer/store.js, its
// page's elements viewer/controls.js; here are the first view, the captions, the exports, and mount(), which holds
// the state, the views, the drawing loop and the interaction together.

/**
 * The record and head a viewer opens on: the payload's `first` (attnlab/viz/_first.py: the last layer of the main
 * kind, the mean of its heads; a comparison's most different layer), or that same rule for a file without it.
 * @param {Payload} DATA
 * @param {Kind[]} kinds  the kinds present, in the order self, causal, cross
 * @returns {{kind: Kind, rec: number, head: number}}
 */
function firstView(DATA, kinds) {
  const f = DATA.first, kind = f && kinds.includes(f.kind) ? f.kind : kinds.includes("self") ? "self" : kinds[0];
  const recs = DATA.records.map((r, i) => (r.kind === kind ? i : -1)).filter((i) => i >= 0);
  const at = f ? recs.find((i) => DATA.records[i].layer === f.layer) : undefined;
  const rec = at === undefined ? recs[recs.length - 1] : at, head = f ? f.head : -1;
  return { kind, rec, head: head < DATA.records[rec].heads ? head : -1 };
}

/**
 * What one viewer shows and says of its tokens: the shown span (sentence-pair filter, token range), the token search,
 * the head notes, the fitted token labels and the caption above every drawing.
 * @param {Payload} DATA
 * @param {State} state
 * @param {Store["cached"]} cached
 * @param {() => View} currentView
 */
function captions(DATA, state, cached, currentView) {
  const RECORDS = DATA.records;
  /**
   * The shown tokens of record ri: the sentence-pair filter, then the token range (at least one token a side).
   * @param {number} ri
   * @returns {Span}
   */
  function span(ri) {
    const r = RECORDS[ri];
    let q0 = 0, q1 = r.q, k0 = 0, k1 = r.k;
    const sq = segments(r.query_tokens), sk = segments(r.key_tokens);
    if (state.pair !== "all" && sq && sk) {
      const [a, b] = /** @type {["A" | "B", "A" | "B"]} */ (state.pair.split(""));
      [q0, q1] = sq[a];
      [k0, k1] = sk[b];
    }
    const rg = state.range;
    if (rg) {
      q0 = Math.max(q0, Math.min(rg.from, q1 - 1)); q1 = Math.max(q0 + 1, Math.min(q1, rg.to));
      k0 = Math.max(k0, Math.min(rg.from, k1 - 1)); k1 = Math.max(k0 + 1, Math.min(k1, rg.to));
    }
    return { q0, q1, k0, k1 };
  }
  /** @param {Span} s */
  const spanKey = (s) => `${s.q0}-${s.q1}-${s.k0}-${s.k1}`;
  /** @param {Focus | null} f @param {Span} s  whether the token is shown */
  const inSpan = (f, s) => !!f && (f.side === "q" ? f.i >= s.q0 && f.i < s.q1 : f.i >= s.k0 && f.i < s.k1);
  /** @type {WeakMap<string[], {q: string, at: number[]}>} */
  const found = new WeakMap(); // the last search's matches, per token list
  /**
   * The indices of the tokens that contain the search text (case-insensitive).
   * @param {string[]} tokens
   * @returns {number[]}
   */
  function matches(tokens) {
    const q = state.search.trim().toLowerCase();
    if (!q) return [];
    const hit = found.get(tokens);
    if (hit && hit.q === q) return hit.at;
    const at = tokens.flatMap((t, i) => (visible(t).toLowerCase().includes(q) ? [i] : []));
    found.set(tokens, { q, at });
    return at;
  }
  /**
   * Head notes of attnlab.analysis (trace.meta["heads"]) for head h of record ri, when the trace has them.
   * @param {number} ri
   * @param {number} h
   * @returns {{label: string, metrics: [string, number][]} | null}
   */
  function notes(ri, h) {
    const n = DATA.heads, r = RECORDS[ri];
    if (!n || n.kind !== r.kind) return null;
    const label = (n.labels[r.layer] || [])[h] || "";
    /** @type {[string, number][]} */
    const metrics = [];
    for (const [name, rows] of Object.entries(n.metrics)) {
      const v = (rows[r.layer] || [])[h];
      if (typeof v === "number") metrics.push([name, v]);
    }
    return label || metrics.length ? { label, metrics } : null;
  }
  /** @param {{label: string, metrics: [string, number][]}} n */
  const notesText = (n) => [n.label && quote(n.label), ...n.metrics.map(([k, v]) => `${k} ${+v.toPrecision(3)}`)].filter(Boolean).join(" · ");

  /**
   * Fitted token labels and the width of the widest, per record.
   * @param {number} ri
   * @returns {{q: string[], k: string[], width: number}}
   */
  function labels(ri) {
    return cached(`l${ri}`, () => {
      const r = RECORDS[ri], q = r.query_tokens.map((t) => fit(t, LABEL_MAX)), k = r.key_tokens.map((t) => fit(t, LABEL_MAX));
      measurer.font = BOLD;
      return { q, k, width: Math.ceil(Math.max(24, ...q.concat(k).map((t) => measurer.measureText(t).width))) };
    });
  }
  /** @param {TraceRecord} r  the layer, module and kind of a record, for captions */
  const layerOf = (r) => `layer ${r.layer} (${r.name}), ${KIND_NAMES[r.kind]}`;
  /** What the current drawing shows, and of which model and text: the caption's two parts. */
  function describe() {
    const r = RECORDS[state.rec], m = DATA.meta, s = span(state.rec);
    const filters = [
      state.pair !== "all" && PAIR_NAMES[state.pair],
      state.range && `query tokens ${s.q0}–${s.q1 - 1}, key tokens ${s.k0}–${s.k1 - 1}`,
      state.scale !== "linear" && `${SCALE_NAMES[state.scale]} colour scale`,
    ].filter(Boolean);
    const what = [currentView().caption(r), ...filters].join(", ");
    const source = [m.model && `model ${flat(m.model)}`, m.text && `text ${quote(flat(m.text))}`,
      m.text_pair && `pair ${quote(flat(m.text_pair))}`].filter(Boolean).join(" · ");
    return [`${currentView().label}: ${what}`, source];
  }
  /** @param {number} w  the caption's lines at drawing width w: whole, wrapped, never cut */
  function captionLines(w) {
    const [what, source] = describe();
    const width = Math.min(w, CAPTION_MAX) - 2 * PAD; // a wide drawing keeps its caption readable without scrolling
    return cached(`c${width}\u0000${what}\u0000${source}`, () => ({ what: wrap(what, width, BOLD), source: source ? wrap(source, width) : [] }));
  }
  /** @param {number} w  the height of the caption block at drawing width w */
  const titleHeight = (w) => { const c = captionLines(w); return 8 + (c.what.length + c.source.length) * LINE_H + 10; };
  /**
   * The caption, on a white background; returns its height.
   * @param {Painter} ctx
   * @param {Size} size
   */
  function title(ctx, size) {
    const c = captionLines(size.w);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, size.w, size.h);
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    let y = 8;
    for (const [lines, font, ink] of /** @type {[string[], string, string][]} */ ([[c.what, BOLD, "#111"], [c.source, FONT, "#444"]])) {
      ctx.font = font;
      ctx.fillStyle = ink;
      for (const line of lines) { y += LINE_H; ctx.fillText(line, PAD, y - 4); }
    }
    return titleHeight(size.w);
  }
  /**
   * A token label with a white box behind it, so that it reads over anything (highlighted labels).
   * @param {Painter} ctx
   * @param {string} t
   * @param {number} x
   * @param {number} y
   */
  function boxedText(ctx, t, x, y) {
    const w = widthOf(t, ctx.font) + 4, left = ctx.textAlign === "right" ? x - w + 2 : x - 2;
    const fill = ctx.fillStyle;
    ctx.fillStyle = "#fff";
    ctx.fillRect(left, y - LABEL_PX / 2, w, LABEL_PX);
    ctx.fillStyle = fill;
    ctx.fillText(t, x, y);
  }

  function searchStatus() {
    const r = RECORDS[state.rec], s = span(state.rec);
    const q = matches(r.query_tokens).filter((i) => i >= s.q0 && i < s.q1), k = matches(r.key_tokens).filter((i) => i >= s.k0 && i < s.k1);
    const list = (/** @type {number[]} */ a) => a.slice(0, 8).join(", ") + (a.length > 8 ? ", …" : "");
    if (!q.length && !k.length) return `No shown token contains ${quote(state.search)}.`;
    return `${quote(state.search)}: ${q.length} query token(s) (${list(q)}), ${k.length} key token(s) (${list(k)}); Enter in the search box goes to the next.`;
  }
  return { span, spanKey, inSpan, matches, notes, notesText, labels, layerOf, describe, title, titleHeight, boxedText,
    searchStatus };
}

/**
 * One viewer's exports: the whole current drawing, its full caption and legend, nothing transient, as PNG (at the
 * chosen resolution, lowered where the browser could not encode it) or SVG, under a file name that says what it shows.
 * @param {Controls} ui
 * @param {Payload} DATA
 * @param {State} state
 * @param {() => View} currentView
 * @param {{exporting: boolean, placed: Placed[]}} marks  what the drawing being painted is for, and its token labels
 */
function exporter(ui, DATA, state, currentView, marks) {
  /** @param {Blob} blob @param {string} name */
  function download(blob, name) {
    const a = el("a", { href: URL.createObjectURL(blob), download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  }
  const fileName = () => [slug(DATA.meta.model || "") || "attnlab", `${state.view}-view`, state.kind, currentView().file()].join("-");
  /**
   * Draws the whole current view for export: without the hover ring, the hovered labels, the hovered thumbnail
   * and a focus that only follows the mouse (a clicked focus is a choice, and the caption names it).
   * @param {Painter} ctx
   */
  function drawForExport(ctx) {
    const view = currentView(), saved = { focus: state.focus, cell: state.cell, hover: state.hover };
    marks.placed = [];
    Object.assign(state, { focus: state.sticky ? state.focus : null, cell: null, hover: null });
    marks.exporting = true;
    try {
      const size = view.geometry();
      view.draw(ctx, size, { x0: 0, y0: 0, x1: size.w, y1: size.h });
      return size;
    } finally {
      marks.exporting = false;
      Object.assign(state, saved);
    }
  }
  /** The export's size at the chosen PNG resolution, lowered where the browser could not encode it. */
  function pngResolution() {
    const keep = { focus: state.focus, cell: state.cell, hover: state.hover };
    Object.assign(state, { focus: state.sticky ? state.focus : null, cell: null, hover: null });
    const size = currentView().geometry();
    Object.assign(state, keep);
    const wanted = Number(ui.pngScale.value);
    let s = wanted;
    while (s > 1 && (Math.max(size.w, size.h) * s > MAX_CANVAS || size.w * size.h * s * s > MAX_PIXELS)) s /= 2;
    return { wanted, s, size };
  }
  ui.pngButton.addEventListener("click", () => {
    const { wanted, s, size } = pngResolution(), out = document.createElement("canvas");
    out.width = Math.round(size.w * s);
    out.height = Math.round(size.h * s);
    const ctx = context2d(out);
    ctx.scale(s, s);
    drawForExport(ctx);
    const name = `${fileName()}${s > 1 ? `@${s}x` : ""}.png`;
    out.toBlob((b) => {
      if (!b) throw new Error(`attnlab viewer: the browser could not encode a ${out.width} x ${out.height} PNG`);
      download(b, name);
      ui.statusLine.textContent = `Saved ${name}, ${out.width} × ${out.height} pixels` +
        (s < wanted ? ` (${wanted}× would pass the browser's ${MAX_CANVAS}-pixel limit)` : "") + ".";
    }, "image/png");
  });
  ui.svgButton.addEventListener("click", () => {
    const size = currentView().geometry(), svg = new SvgContext(size.w, size.h);
    drawForExport(svg);
    download(new Blob([svg.toString()], { type: "image/svg+xml" }), fileName() + ".svg");
  });

  return { fileName };
}

/**
 * Gives one viewer's controls their behaviour: each changes the state and redraws.
 * @param {Controls} ui
 * @param {State} state
 * @param {{RECORDS: TraceRecord[], render: () => number, currentView: () => View, recordsOf: Store["recordsOf"],
 *   toRecord: (ri: number) => void, span: (ri: number) => Span, matches: (tokens: string[]) => number[],
 *   searchStatus: () => string}} viewer  what the listeners call of their viewer
 */
function listen(ui, state, viewer) {
  const { RECORDS, render, currentView, recordsOf, toRecord, span, matches, searchStatus } = viewer;
  const { tabButtons, kindSelect, recSelect, zoomSelect, scaleSelect, pairSelect, rangeInput, searchInput, statusLine } = ui;
  for (const [v, b] of Object.entries(tabButtons)) b.addEventListener("click", () => { state.view = v; render(); });
  zoomSelect.addEventListener("change", () => { state.zoom = Number(zoomSelect.value); render(); });
  scaleSelect.addEventListener("change", () => { state.scale = /** @type {Scale} */ (scaleSelect.value); render(); });
  pairSelect.addEventListener("change", () => { state.pair = /** @type {Pair} */ (pairSelect.value); render(); });
  rangeInput.addEventListener("change", () => {
    const r = parseRange(rangeInput.value);
    rangeInput.setAttribute("aria-invalid", String(r === undefined));
    if (r === undefined) {
      statusLine.textContent = `Tokens: write from:to with the end left out, e.g. 100:160 (or 100: or :50); got ${quote(rangeInput.value)}.`;
      return;
    }
    state.range = r;
    render();
  });
  let lastSeek = -1; // the match the search's Enter went to last
  searchInput.addEventListener("input", () => {
    state.search = searchInput.value;
    lastSeek = -1;
    render();
    if (state.search.trim()) statusLine.textContent = searchStatus(); // while typing, the status answers the search
  });
  searchInput.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    const r = RECORDS[state.rec], sp = span(state.rec), found = matches(r.query_tokens).filter((i) => i >= sp.q0 && i < sp.q1);
    if (!found.length) { render(); return; }
    const next = found.find((i) => i > lastSeek);
    lastSeek = next === undefined ? found[0] : next;
    if (currentView().seek(lastSeek)) render();
  });

  kindSelect.addEventListener("change", () => {
    const recs = recordsOf(kindSelect.value);
    Object.assign(state, { kind: kindSelect.value, rec: recs[0], focus: null, sticky: false, cell: null, hover: null });
    state.heads = new Set([0]);
    state.mean = false;
    render();
  });
  recSelect.addEventListener("change", () => { toRecord(Number(recSelect.value)); render(); });
}

/**
 * Sets one viewer's controls to its state: the menus, the tabs (a view whose data the trace lacks is disabled, its
 * reason in the tooltip), the head bar, the help, the status line and the stage's accessible name.
 * @param {Controls} ui
 * @param {State} state
 * @param {Readonly<Record<string, View>>} views
 * @param {View} view  the current one
 * @param {() => string[]} describe  the caption's two parts
 * @param {Store["recordsOf"]} recordsOf
 * @param {TraceRecord[]} RECORDS
 */
function sync(ui, state, views, view, describe, recordsOf, RECORDS) {
  const { tabButtons, kindSelect, recSelect, zoomSelect, zoomLabel, scaleSelect, pairSelect, rangeInput, searchInput, headBar,
    statusLine, stage, help } = ui;
  kindSelect.value = state.kind;
  recSelect.replaceChildren(...recordsOf(state.kind).map((i) => el("option", { value: String(i) }, `${RECORDS[i].layer} · ${RECORDS[i].name}`)));
  recSelect.value = String(state.rec);
  recSelect.disabled = !view.layerMenu;
  zoomLabel.hidden = !view.cellMenu;
  zoomSelect.value = String(state.zoom);
  scaleSelect.value = state.scale;
  pairSelect.value = state.pair;
  if (document.activeElement !== rangeInput) rangeInput.value = rangeText(state.range);
  if (document.activeElement !== searchInput) searchInput.value = state.search;
  for (const [v, b] of Object.entries(tabButtons)) {
    const why = views[v].available();
    b.setAttribute("aria-pressed", String(v === state.view));
    b.disabled = !!why && v !== state.view;
    b.title = why;
  }
  headBar.replaceChildren(...view.heads());
  help.textContent = view.help;
  delete statusLine.dataset.value; // the matrix and neuron views' status sets the exact value under the mouse
  statusLine.textContent = view.status();
  stage.setAttribute("aria-label", describe().join(". "));
}

/**
 * Builds one viewer for one trace inside `root`: its data (viewer/store.js), state, page (viewer/controls.js),
 * captions and exports (above), its views, the drawing loop, the interaction and the API.
 * @param {HTMLElement} root
 * @param {Payload} DATA
 * @param {Link} link  panes shown side by side share their choices through it
 * @param {string} heading  the viewer's heading
 * @returns {Api}
 */
function mount(root, DATA, link, heading) {
  const RECORDS = DATA.records;
  const LEVELS = DATA.encoding.levels;
  const MAX_ERROR = DATA.encoding.max_error;
  const { codes, vectors, load, cached, matrix, recordsOf } = store(RECORDS, LEVELS);

  // ----- state ----------------------------------------------------------------------------------
  const kinds = /** @type {Kind[]} */ (["self", "causal", "cross"]).filter((k) => RECORDS.some((r) => r.kind === k));
  const first = firstView(DATA, kinds);
  /** @type {State} */
  const state = {
    view: "head", kind: first.kind, rec: first.rec, heads: new Set([first.head < 0 ? 0 : first.head]), mean: first.head < 0,
    head: first.head, focus: null, sticky: false, cell: null, cursor: { row: 0, col: 0 }, hover: null, zoom: 0,
    scale: "linear", range: null, pair: "all", search: "",
  };
  // exporting: the drawing is an export (nothing transient: hover ring, hovered labels, hovered thumbnail);
  // placed: the token labels of the drawing being painted (tests check that none overlap)
  /** @type {{exporting: boolean, placed: Placed[]}} */
  const marks = { exporting: false, placed: [] };
  const hasPairs = RECORDS.some((r) => segments(r.query_tokens) && segments(r.key_tokens));
  const { span, spanKey, inSpan, matches, notes, notesText, labels, layerOf, describe, title, titleHeight, boxedText,
    searchStatus } = captions(DATA, state, cached, () => currentView());

  // ----- shared by the views: the search's status, the head bar's buttons -----------------------
  /** Head buttons that choose the one head drawn (or the mean). @param {boolean} withMean */
  function headChoice(withMean = true) {
    const r = RECORDS[state.rec], buttons = [];
    /** @param {number} h */
    const pick = (h) => () => { state.head = h; render(); };
    if (withMean) buttons.push(headButton("mean", state.head < 0, pick(-1), -1));
    for (let h = 0; h < r.heads; h++) buttons.push(headButton(String(h), state.head === h || (!withMean && state.head < 0 && !h), pick(h), h));
    return buttons;
  }

  // ----- the views, each built from what it may use of this viewer ---------------------------------
  /** @type {Pane} */
  const pane = {
    RECORDS, LEVELS, MAX_ERROR, state, vectors, matrix, cached, recordsOf, span, spanKey, inSpan, matches, notes, notesText,
    labels, layerOf, title, titleHeight, boxedText, headButton, headChoice, searchStatus, render, reveal,
    get exporting() { return marks.exporting; },
    get placed() { return marks.placed; },
    get statusLine() { return statusLine; },
  };
  // The views, in the order of their tabs. A new view is a file under views/ (a function of the Pane that returns a
  // View: see both types in viewer.js), its name in SCRIPTS of viz/html.py and tsconfig.json, and one entry here.
  /** @type {Readonly<Record<string, View>>} */
  const VIEWS = { head: headView(pane), model: modelView(pane), matrix: matrixView(pane), neuron: neuronView(pane) };
  /**
   * The view called `name`; an unknown name is an error, never another view's behaviour.
   * @param {string} name
   * @returns {View}
   */
  function viewNamed(name) {
    if (!Object.hasOwn(VIEWS, name)) {
      throw new Error(`attnlab viewer: unknown view ${JSON.stringify(name)}; the views are ${Object.keys(VIEWS).join(", ")}`);
    }
    return VIEWS[name];
  }
  const currentView = () => viewNamed(state.view);

  // ----- page: its elements (viewer/controls.js) and what each does -----------------------------------
  const ui = controls(root, heading, VIEWS, kinds, hasPairs, DATA.meta);
  const { statusLine, stage, spacer, canvas } = ui;
  listen(ui, state, { RECORDS, render, currentView, recordsOf, toRecord, span, matches, searchStatus });
  /**
   * Show record ri of the same kind: a clicked (sticky) focus stays on its token, so that one token can be
   * followed through the layers; a hover focus and the hovered cell go.
   * @param {number} ri
   */
  function toRecord(ri) {
    const r = RECORDS[ri], f = state.focus;
    const keep = state.sticky && !!f && f.i < (f.side === "q" ? r.q : r.k);
    Object.assign(state, { rec: ri, focus: keep ? f : null, sticky: keep, cell: null });
    if (state.head >= r.heads) state.head = 0;
    state.heads = new Set([...state.heads].filter((h) => h < r.heads));
  }
  /**
   * A button of the head bar; h (a head, -1 for the mean) gives it that head's colour and data-head.
   * @param {string} label
   * @param {boolean} pressed
   * @param {(e: MouseEvent) => void} onClick
   * @param {number} [h]
   */
  function headButton(label, pressed, onClick, h) {
    const b = el("button", { type: "button", "aria-pressed": String(pressed), class: "head" }, label);
    if (h !== undefined) {
      b.style.borderColor = colour(h);
      b.style.borderStyle = dash(h).length ? "dashed" : "solid";
      b.dataset.head = String(h);
      const n = h >= 0 ? notes(state.rec, h) : null;
      if (n) b.title = notesText(n);
    }
    b.addEventListener("click", onClick);
    return b;
  }
  /** @type {{firstView: number | null, lastRender: number | null}} */
  const timings = { firstView: null, lastRender: null };
  /** @type {Promise<unknown>} */
  let drawn = Promise.resolve();
  /** Draws the current view and syncs the controls; returns the milliseconds it took (NaN: it waits for decoding). */
  function render() {
    const view = currentView(), needs = view.needs();
    if (!needs.every((i) => codes[i])) {
      statusLine.textContent = "Decoding weights…";
      drawn = Promise.all(needs.map(load)).then(render);
      return NaN;
    }
    const start = performance.now(), size = view.geometry();
    spacer.style.width = `${size.w}px`;
    spacer.style.height = `${size.h}px`;
    stage.style.height = `${Math.min(size.h + 18, Math.max(320, Math.round(window.innerHeight * 0.8)))}px`;
    paint();
    sync(ui, state, VIEWS, view, describe, recordsOf, RECORDS);
    timings.lastRender = performance.now() - start;
    if (timings.firstView === null) timings.firstView = performance.now(); // ms since navigation start
    share();
    return timings.lastRender;
  }
  /** A linked comparison: the other pane takes this pane's choices. */
  function share() {
    if (!link.on || link.syncing || link.panes.length < 2) return;
    link.syncing = true;
    try {
      for (const p of link.panes) if (p !== api) p.adopt(state, RECORDS[state.rec].layer);
    } finally {
      link.syncing = false;
    }
  }

  function paint() { // draw the visible window of the current view
    const view = currentView(), size = view.geometry(), dpr = window.devicePixelRatio || 1;
    const w = stage.clientWidth, h = stage.clientHeight, x0 = stage.scrollLeft, y0 = stage.scrollTop;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.width = `${w}px`;
      canvas.style.height = `${h}px`;
    }
    canvas.style.left = `${stage.clientLeft}px`;
    canvas.style.top = `${stage.clientTop}px`;
    const ctx = context2d(canvas);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(dpr, 0, 0, dpr, -x0 * dpr, -y0 * dpr);
    marks.placed = [];
    view.draw(ctx, size, { x0, y0, x1: x0 + w, y1: y0 + h });
    lastPlaced = marks.placed;
  }
  /** @type {Placed[]} */
  let lastPlaced = [];
  let painting = false;
  stage.addEventListener("scroll", () => {
    if (!painting) { painting = true; requestAnimationFrame(() => { painting = false; paint(); }); }
  });
  window.addEventListener("resize", () => render());
  /** @param {number} x @param {number} y  scroll the stage so that the content point (x, y) is visible */
  function reveal(x, y) {
    if (y < stage.scrollTop + ROW || y > stage.scrollTop + stage.clientHeight - ROW) stage.scrollTop = y - stage.clientHeight / 2;
    if (x < stage.scrollLeft || x > stage.scrollLeft + stage.clientWidth) stage.scrollLeft = x - stage.clientWidth / 2;
  }

  // ----- interaction: the page passes mouse and keys to the current view -------------------------
  /** @param {MouseEvent} e @returns {Point}  mouse position in drawing coordinates */
  const point = (e) => {
    const box = stage.getBoundingClientRect();
    return [e.clientX - box.left - stage.clientLeft + stage.scrollLeft, e.clientY - box.top - stage.clientTop + stage.scrollTop];
  };
  /** @type {Record<string, Move>} */
  const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  stage.addEventListener("mousemove", (e) => { if (currentView().hover(...point(e))) render(); });
  stage.addEventListener("mouseleave", () => { if (currentView().leave()) render(); });
  stage.addEventListener("click", (e) => { if (currentView().click(...point(e))) render(); });
  stage.addEventListener("keydown", (e) => {
    const move = Object.hasOwn(MOVES, e.key) ? MOVES[e.key] : undefined;
    if (e.key === "Escape") Object.assign(state, { focus: null, sticky: false, cell: null, hover: null }); // every view's selection
    else if (!currentView().key(e.key, move)) return;
    e.preventDefault();
    render();
  });

  // ----- export (below) -----------------------------------------------------------------------------
  const { fileName } = exporter(ui, DATA, state, currentView, marks);

  // For tests, benchmarks and the other pane: set state and draw synchronously (returns the milliseconds it took).
  /** @type {Api} */
  const api = {
    state, timings, records: RECORDS, matrixOf: matrix, views: VIEWS,
    set(patch) {
      if (patch.view !== undefined) viewNamed(patch.view);
      Object.assign(state, patch);
      if (Array.isArray(patch.heads)) state.heads = new Set(patch.heads);
      return render();
    },
    where(target) { // scrolls the target into view first: the stage, then the window
      const [x, y] = currentView().spot(target);
      reveal(x, y);
      const at = () => {
        const box = stage.getBoundingClientRect();
        return { x: box.left + stage.clientLeft + x - stage.scrollLeft, y: box.top + stage.clientTop + y - stage.scrollTop };
      };
      const p = at();
      if (p.y < 0 || p.y > window.innerHeight - ROW || p.x < 0 || p.x > window.innerWidth) {
        window.scrollBy(p.x < 0 || p.x > window.innerWidth ? p.x - window.innerWidth / 2 : 0, p.y - window.innerHeight / 2);
        return at();
      }
      return p;
    },
    idle: () => drawn.then(() => Promise.all(RECORDS.map((_, i) => load(i)))),
    placed: () => lastPlaced,
    fileName,
    adopt(other, layer) {
      if (Object.hasOwn(VIEWS, other.view) && !VIEWS[other.view].available()) state.view = other.view;
      if (kinds.includes(other.kind)) {
        if (other.kind !== state.kind) Object.assign(state, { kind: other.kind, rec: recordsOf(other.kind)[0] });
        const ri = recordsOf(state.kind).find((i) => RECORDS[i].layer === layer);
        if (ri !== undefined && ri !== state.rec) toRecord(ri);
      }
      const r = RECORDS[state.rec], f = other.focus, c = other.cell;
      Object.assign(state, { scale: other.scale, range: other.range, pair: other.pair, search: other.search, zoom: other.zoom, mean: other.mean });
      state.head = other.head < r.heads ? other.head : 0;
      state.heads = new Set([...other.heads].filter((h) => h < r.heads));
      state.focus = f && f.i < (f.side === "q" ? r.q : r.k) ? { ...f } : null;
      state.sticky = !!state.focus && other.sticky;
      state.cell = c && c.i < r.q && c.j < r.k ? { ...c } : null;
      render();
    },
  };
  render();
  drawn = drawn.then(() => Promise.all(RECORDS.map((_, i) => load(i)))); // decode the rest in the background
  return api;
}
