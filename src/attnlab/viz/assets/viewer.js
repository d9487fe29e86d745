// attnlab attention viewer: head view, model view and matrix view of one AttentionTrace.
// Plain JavaScript, no dependencies, no network. The data is the JSON block #attnlab-data written by
// attnlab/viz/html.py: per record, uint8 codes (weight = code / levels) gzip-compressed and base64-encoded.
// Tokens and metadata are user text: they are rendered only with textContent and canvas fillText.
// Types are JSDoc, checked by `make lint` (tsc --checkJs, strict; tsconfig.json at the repository root).
(() => {
  "use strict";

  // ----- types ------------------------------------------------------------------------------------
  /** @typedef {"self" | "causal" | "cross"} Kind */
  /**
   * @typedef {Object} TraceRecord  one captured attention module, as attnlab/viz/html.py writes it
   * @property {string} name  its module's name
   * @property {Kind} kind
   * @property {number} layer
   * @property {number} heads
   * @property {number} q  query tokens
   * @property {number} k  key tokens
   * @property {string[]} query_tokens
   * @property {string[]} key_tokens
   * @property {string} data  base64 of the gzip of the uint8 codes, (heads, q, k)
   */
  /**
   * @typedef {Object} Payload
   * @property {TraceRecord[]} records
   * @property {{levels: number, max_error: number}} encoding
   * @property {Record<string, string>} meta
   */
  /** @typedef {"q" | "k"} Side */
  /** @typedef {{side: Side, i: number}} Focus  a token of the head view */
  /** @typedef {{i: number, j: number}} Cell  a (query, key) cell of the matrix view */
  /** @typedef {{row: number, col: number}} Cursor  a thumbnail of the model view (row of the kind's records, head) */
  /** @typedef {Focus | Cell | Cursor} Target  what a view's hit-testing finds */
  /** @typedef {[number, number]} Point  (x, y) in drawing coordinates */
  /** @typedef {[number, number]} Move  (rows, columns) of an arrow key */
  /** @typedef {{w: number, h: number}} Size  of a whole drawing, in CSS pixels */
  /** @typedef {{x0: number, y0: number, x1: number, y1: number}} Area  the part of a drawing to draw */
  /**
   * @typedef {Object} State
   * @property {string} view  a key of VIEWS
   * @property {Kind} kind
   * @property {number} rec  the shown record (an index of RECORDS)
   * @property {Set<number>} heads  head view: the shown heads
   * @property {boolean} mean  head view: the mean of the heads instead
   * @property {number} head  matrix view: the head, -1 for the mean
   * @property {Focus | null} focus  head view: the focused token
   * @property {boolean} sticky  head view: the focus was clicked, it stays when the mouse leaves
   * @property {Cell | null} cell  matrix view: the hovered cell
   * @property {Cursor} cursor  model view: the selected thumbnail
   * @property {number} zoom  matrix view: cell size in pixels, 0 to fit
   */
  /**
   * What the drawings use of a canvas 2D context; SvgContext records the same calls as SVG elements.
   * @typedef {{
   *   fillStyle: string | CanvasGradient | CanvasPattern, strokeStyle: string | CanvasGradient | CanvasPattern,
   *   lineWidth: number, globalAlpha: number, font: string, textAlign: CanvasTextAlign,
   *   textBaseline: CanvasTextBaseline, imageSmoothingEnabled: boolean,
   *   save(): void, restore(): void, translate(x: number, y: number): void, rotate(angle: number): void,
   *   setLineDash(segments: number[]): void, fillRect(x: number, y: number, w: number, h: number): void,
   *   strokeRect(x: number, y: number, w: number, h: number): void, fillText(text: string, x: number, y: number): void,
   *   stroke(path: Path2D | SvgPath): void, drawImage(image: HTMLCanvasElement, x: number, y: number, w: number, h: number): void,
   *   newPath?(): SvgPath
   * }} Painter
   */
  /**
   * One way of showing the trace: everything the page asks of a view. VIEWS holds them; a new view is one
   * entry there, and no other code branches on a view's name.
   * @typedef {Object} View
   * @property {string} label  its tab's text and its drawing's title
   * @property {string} help  the paragraph under the drawing
   * @property {boolean} layerMenu  whether the layer menu applies (false: the view shows every layer)
   * @property {boolean} cellMenu  whether the cell-size menu applies
   * @property {() => number[]} needs  the records that must be decoded before it can draw
   * @property {() => Size} geometry  the size of the whole drawing
   * @property {(ctx: Painter, size: Size, win: Area) => void} draw  draws the drawing; only what is in `win` must be drawn
   * @property {(r: TraceRecord) => string} caption  what it shows of the record, for the title and screen readers
   * @property {() => string} status  the status line
   * @property {() => HTMLButtonElement[]} heads  the buttons of the head bar
   * @property {(x: number, y: number) => boolean} hover  the mouse moved to drawing point (x, y); true: redraw
   * @property {() => boolean} leave  the mouse left the drawing; true: redraw
   * @property {(x: number, y: number) => boolean} click  a click at drawing point (x, y); true: redraw
   * @property {(key: string, move: Move | undefined) => boolean} key  a key on the drawing (an arrow gives its move; Escape is the page's); true: handled, redraw
   * @property {(target: Target) => Point} spot  the drawing point of one of its targets (tests aim the mouse with it)
   */

  const DATA = /** @type {Payload} */ (JSON.parse(byId("attnlab-data").textContent || ""));
  const RECORDS = DATA.records;
  const LEVELS = DATA.encoding.levels;
  const MAX_ERROR = DATA.encoding.max_error;
  // Paul Tol's "muted" palette (colour-blind safe); heads past the ninth reuse it with dashed lines.
  const PALETTE = ["#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE", "#882255", "#44AA99", "#999933", "#AA4499"];
  const MEAN_COLOUR = "#222222";
  const FOCUS_FILL = "#F0E442";
  const FONT = '12px system-ui, "Noto Sans", "Noto Sans CJK SC", "WenQuanYi Zen Hei", "Noto Color Emoji", sans-serif';
  const BOLD = "bold " + FONT;
  const ROW = 18, TITLE_H = 46, PAD = 12, GAP = 240, LABEL_MAX = 150, THUMB = 64;
  const LINE_MIN_CODE = 4; // head-view lines below 4/255 (1.6 %) are too faint to see and are not drawn
  /** @type {Record<Kind, string>} */
  const KIND_NAMES = { self: "self-attention", causal: "causal self-attention", cross: "cross-attention" };
  const VIRIDIS = viridis();
  const VIRIDIS32 = new Uint32Array(new Uint8ClampedArray(VIRIDIS.flatMap((c) => [...c])).buffer); // RGBA as one word

  /** @param {string} id */
  function byId(id) {
    const e = document.getElementById(id);
    if (!e) throw new Error(`attnlab viewer: the page has no #${id} element; write it with attnlab.viz.save_html`);
    return e;
  }
  /** @param {HTMLCanvasElement} canvas */
  function context2d(canvas) {
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error("attnlab viewer: this browser gives no 2D canvas context");
    return ctx;
  }

  // ----- data: decode on demand, cache -------------------------------------------------------------
  /** @type {(Uint8Array | undefined)[]} */
  const codes = new Array(RECORDS.length); // Uint8Array (heads, q, k) once decoded
  /** @type {Map<number, Promise<Uint8Array>>} */
  const pending = new Map();
  /** @param {number} ri  the codes of record ri, decoded once */
  function load(ri) {
    const done = codes[ri];
    if (done) return Promise.resolve(done);
    let p = pending.get(ri);
    if (!p) {
      p = inflate(RECORDS[ri].data).then((bytes) => (codes[ri] = bytes));
      pending.set(ri, p);
    }
    return p;
  }
  /** @param {string} b64 */
  async function inflate(b64) {
    const U8 = /** @type {typeof Uint8Array & {fromBase64?: (s: string) => Uint8Array<ArrayBuffer>}} */ (Uint8Array);
    const packed = U8.fromBase64 ? U8.fromBase64(b64) : Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  /** @param {number} ri */
  function decoded(ri) {
    const c = codes[ri];
    if (!c) throw new Error(`attnlab viewer: record ${ri} is drawn before it is decoded`);
    return c;
  }
  /** @type {Map<string, unknown>} */
  const lru = new Map();
  /**
   * A small least-recently-used cache of matrices and images.
   * @template T
   * @param {string} key
   * @param {() => T} make
   * @returns {T}
   */
  function cached(key, make) {
    if (lru.has(key)) { const v = /** @type {T} */ (lru.get(key)); lru.delete(key); lru.set(key, v); return v; }
    const v = make();
    lru.set(key, v);
    const oldest = lru.keys().next().value;
    if (lru.size > 48 && oldest !== undefined) lru.delete(oldest);
    return v;
  }
  /**
   * The (q, k) weights of head h of record ri as a Float32Array; h = -1 is the mean over heads.
   * @param {number} ri
   * @param {number} h
   * @returns {Float32Array}
   */
  function matrix(ri, h) {
    return cached(`m${ri}:${h}`, () => {
      const r = RECORDS[ri], n = r.q * r.k, c = decoded(ri), out = new Float32Array(n);
      const heads = h < 0 ? [...Array(r.heads).keys()] : [h];
      for (const hh of heads) for (let i = 0, o = hh * n; i < n; i++) out[i] += c[o + i];
      const scale = 1 / (LEVELS * heads.length);
      for (let i = 0; i < n; i++) out[i] *= scale;
      return out;
    });
  }
  /** @param {string} kind  the indices of the records of that kind */
  const recordsOf = (kind) => RECORDS.map((_, i) => i).filter((i) => RECORDS[i].kind === kind);

  // ----- state ------------------------------------------------------------------------------------
  const kinds = /** @type {Kind[]} */ (["self", "causal", "cross"]).filter((k) => RECORDS.some((r) => r.kind === k));
  /** @type {State} */
  const state = {
    view: "head", kind: kinds[0], rec: recordsOf(kinds[0])[0],
    heads: new Set([...Array(RECORDS[recordsOf(kinds[0])[0]].heads).keys()]), mean: false, head: 0,
    focus: null, sticky: false, cell: null, cursor: { row: 0, col: 0 }, zoom: 0,
  };

  // ----- text helpers -----------------------------------------------------------------------------
  /** @param {string} s */
  const visible = (s) => String(s).replace(/[\u0000-\u001f\u007f]/g, (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
  const measurer = context2d(document.createElement("canvas"));
  /**
   * Text cut with an ellipsis to fit width pixels.
   * @param {string} text
   * @param {number} width
   */
  function fit(text, width, font = FONT) {
    measurer.font = font;
    let s = visible(text);
    if (measurer.measureText(s).width <= width) return s;
    const chars = Array.from(s);
    let lo = 0, hi = chars.length; // binary search for the longest prefix that fits with the ellipsis
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (measurer.measureText(chars.slice(0, mid).join("") + "…").width <= width) lo = mid;
      else hi = mid - 1;
    }
    return chars.slice(0, lo).join("") + "…";
  }
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
  /** @param {number} h */
  const headName = (h) => (h < 0 ? "mean of heads" : `head ${h}`);
  /** @param {number} h */
  const colour = (h) => (h < 0 ? MEAN_COLOUR : PALETTE[h % PALETTE.length]);
  /** @param {number} h */
  const dash = (h) => (h >= PALETTE.length ? [5, 3] : []);
  /** @param {string} t */
  const quote = (t) => `“\u2068${visible(t)}\u2069”`; // first-strong isolate: right-to-left tokens stay inside their quotes
  /** @param {TraceRecord} r  the layer, module and kind of a record, for captions */
  const layerOf = (r) => `layer ${r.layer} (${r.name}), ${KIND_NAMES[r.kind]}`;
  /** The caption of the current drawing: what it shows, and of which model and text. */
  function describe() {
    const r = RECORDS[state.rec], m = DATA.meta;
    const what = currentView().caption(r);
    /** @param {string} t */
    const flat = (t) => String(t).replace(/\s+/g, " ").trim();
    const source = [m.model && `model ${flat(m.model)}`, m.text && `text ${quote(flat(m.text))}`,
      m.text_pair && `pair ${quote(flat(m.text_pair))}`].filter(Boolean).join(" · ");
    return [what, source];
  }
  /**
   * @param {Painter} ctx
   * @param {Size} size
   */
  function title(ctx, size) {
    const [what, source] = describe();
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, size.w, size.h);
    ctx.fillStyle = "#111";
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.font = BOLD;
    ctx.fillText(fit(`${currentView().label}: ${what}`, size.w - 2 * PAD, BOLD), PAD, 18);
    ctx.font = FONT;
    ctx.fillStyle = "#444";
    ctx.fillText(fit(source, size.w - 2 * PAD), PAD, 36);
  }
  /**
   * A target of the wrong kind for a view's spot().
   * @param {string} view
   * @param {string} wanted
   * @param {Target} got
   */
  const wrongTarget = (view, wanted, got) => new Error(`attnlab viewer: the ${view} locates ${wanted}, got ${JSON.stringify(got)}`);
  /** @param {number} v @param {number} n  v clamped to [0, n) */
  const clamp = (v, n) => Math.max(0, Math.min(n - 1, v));

  // ----- head view: query tokens left, key tokens right, one line per weight ----------------------
  function headGeometry() {
    const r = RECORDS[state.rec], lab = labels(state.rec);
    const x1 = PAD + lab.width + 6, x2 = x1 + GAP;
    return { r, lab, x1, x2, w: Math.max(x2 + lab.width + PAD + 6, 720), h: TITLE_H + Math.max(r.q, r.k) * ROW + PAD };
  }
  /** @param {number} i */
  const rowY = (i) => TITLE_H + i * ROW + ROW / 2;
  /** @param {Painter} ctx @param {Size} size @param {Area} win */
  function drawHead(ctx, size, win) {
    const g = headGeometry(), { r, lab } = g, f = state.focus;
    /** @param {number} ya @param {number} yb */
    const seen = (ya, yb) => Math.min(ya, yb) < win.y1 + ROW && Math.max(ya, yb) > win.y0 - ROW; // crosses the window
    title(ctx, size);
    const heads = state.mean ? [-1] : [...state.heads].sort((a, b) => a - b);
    const shade = f ? focusWeights(f, heads) : null; // mean weight of each token of the other side
    // Unfocused, a line's opacity is its weight; focused on one token, it is the weight relative to the
    // token's largest, so that the 512 faint lines of a long input stay visible.
    const top = shade ? Math.max(...shade, 1 / LEVELS) : 1, minCode = shade ? 1 : LINE_MIN_CODE;
    ctx.lineWidth = 1.5;
    for (const h of heads) {
      const m = matrix(state.rec, h);
      /** @type {Map<number, Path2D | SvgPath>} */
      const paths = new Map(); // alpha bucket -> path
      const iFrom = f && f.side === "q" ? f.i : 0, iTo = f && f.side === "q" ? f.i + 1 : r.q;
      const jFrom = f && f.side === "k" ? f.i : 0, jTo = f && f.side === "k" ? f.i + 1 : r.k;
      for (let i = iFrom; i < iTo; i++) {
        for (let j = jFrom; j < jTo; j++) {
          const c = Math.round((Math.min(1, m[i * r.k + j] / top)) * LEVELS);
          if (c < minCode || !seen(rowY(i), rowY(j))) continue;
          const b = (c + 4) >> 3;
          let p = paths.get(b);
          if (!p) paths.set(b, (p = ctx.newPath ? ctx.newPath() : new Path2D()));
          p.moveTo(g.x1, rowY(i));
          p.lineTo(g.x2, rowY(j));
        }
      }
      ctx.strokeStyle = colour(h);
      ctx.setLineDash(dash(h));
      for (const [b, p] of paths) {
        ctx.globalAlpha = Math.min(1, (b * 8) / LEVELS);
        ctx.stroke(p);
      }
      ctx.globalAlpha = 1;
      ctx.setLineDash([]);
    }
    ctx.textBaseline = "middle";
    /** @type {[Side, string[], number, CanvasTextAlign][]} */
    const sides = [["q", lab.q, g.x1 - 6, "right"], ["k", lab.k, g.x2 + 6, "left"]];
    for (const [side, toks, x, align] of sides) {
      ctx.textAlign = align;
      toks.forEach((t, i) => {
        if (!seen(rowY(i), rowY(i))) return;
        const focused = f && f.side === side && f.i === i;
        const weight = shade && f && f.side !== side ? shade[i] / top : 0;
        if (focused || weight > 0) {
          ctx.fillStyle = focused ? FOCUS_FILL : "#88CCEE";
          ctx.globalAlpha = focused ? 1 : Math.min(1, weight);
          ctx.fillRect(align === "right" ? x - lab.width - 2 : x - 2, TITLE_H + i * ROW + 1, lab.width + 4, ROW - 2);
          ctx.globalAlpha = 1;
        }
        ctx.font = focused ? BOLD : FONT;
        ctx.fillStyle = "#111";
        ctx.fillText(t, x, rowY(i));
      });
    }
  }
  /** @param {number} x @param {number} y @returns {Focus | null} */
  function hitHead(x, y) {
    const g = headGeometry(), i = Math.floor((y - TITLE_H) / ROW);
    if (i < 0) return null;
    if (x < g.x1 + 20 && i < g.r.q) return { side: "q", i }; // the label or the first stretch of its lines
    if (x > g.x2 - 20 && i < g.r.k) return { side: "k", i };
    return null;
  }
  /**
   * The focused token's weights to each token of the other side, mean of `heads`.
   * @param {Focus} f
   * @param {number[]} heads
   */
  function focusWeights(f, heads) {
    const r = RECORDS[state.rec], sum = new Float32Array(f.side === "q" ? r.k : r.q);
    for (const h of heads) {
      const m = matrix(state.rec, h);
      for (let j = 0; j < sum.length; j++) sum[j] += (f.side === "q" ? m[f.i * r.k + j] : m[j * r.k + f.i]) / heads.length;
    }
    return sum;
  }
  function describeFocus() {
    const f = state.focus, r = RECORDS[state.rec];
    if (!f) return "Hover or click a token to see only its attention; arrow keys move between tokens.";
    const heads = state.mean ? [-1] : [...state.heads];
    if (!heads.length) return "No head is shown: click a head number.";
    const other = f.side === "q" ? r.key_tokens : r.query_tokens, sum = focusWeights(f, heads);
    const top = [...sum.keys()].sort((a, b) => sum[b] - sum[a]).slice(0, 3).map((j) => `${quote(other[j])} ${sum[j].toFixed(3)}`);
    const token = (f.side === "q" ? r.query_tokens : r.key_tokens)[f.i];
    return `${f.side === "q" ? "Query" : "Key"} ${f.i} ${quote(token)} ${f.side === "q" ? "attends most to" : "is attended most by"} ${top.join(", ")}` +
      (heads.length > 1 ? " (mean of the shown heads)" : "");
  }
  /** Head buttons that show and hide heads: click toggles one, double-click shows only it; all, none. */
  function headToggles() {
    const r = RECORDS[state.rec], buttons = [];
    /** @param {number} h @returns {(e: MouseEvent) => void} */
    const pick = (h) => (e) => {
      if (h < 0) state.mean = !state.mean;
      else if (e.detail === 2) state.heads = new Set([h]); // double click: only this head
      else if (state.heads.has(h)) state.heads.delete(h);
      else state.heads.add(h);
      render();
    };
    buttons.push(headButton("mean", state.mean, pick(-1), -1));
    for (let h = 0; h < r.heads; h++) buttons.push(headButton(String(h), state.heads.has(h) && !state.mean, pick(h), h));
    buttons.push(headButton("all", false, () => { state.heads = new Set([...Array(r.heads).keys()]); state.mean = false; render(); }));
    buttons.push(headButton("none", false, () => { state.heads.clear(); state.mean = false; render(); }));
    return buttons;
  }
  /** @type {View} */
  const HEAD_VIEW = {
    label: "Head view",
    help: "Lines join each query token (left) to the key tokens (right) it attends to; opacity is the weight (lines under 1.6 % are not drawn). " +
      "On a focused token, opacity is relative to its largest weight. Click a head to show or hide it, double-click to show only it. Hover a token to focus on it, click to keep the focus.",
    layerMenu: true,
    cellMenu: false,
    needs: () => [state.rec],
    geometry: headGeometry,
    draw: drawHead,
    caption: (r) => `${layerOf(r)}, ` + (state.mean ? "mean of heads" : `heads ${[...state.heads].sort((a, b) => a - b).join(", ") || "none"}`),
    status: describeFocus,
    heads: headToggles,
    hover(x, y) {
      if (state.sticky) return false;
      const f = hitHead(x, y);
      if (same(f, state.focus)) return false;
      state.focus = f;
      return true;
    },
    leave() {
      if (state.sticky || !state.focus) return false;
      state.focus = null;
      return true;
    },
    click(x, y) {
      const f = hitHead(x, y);
      state.sticky = !!f && !(state.sticky && same(f, state.focus)); // a second click on the same token releases it
      state.focus = f;
      return true;
    },
    key(_, move) {
      if (!move) return false;
      const r = RECORDS[state.rec], f = state.focus || { side: "q", i: -move[0] };
      const side = move[1] ? (move[1] > 0 ? "k" : "q") : f.side;
      state.focus = { side, i: clamp(f.i + move[0], side === "q" ? r.q : r.k) };
      state.sticky = true;
      reveal(0, rowY(state.focus.i));
      return true;
    },
    spot(t) {
      if (!("side" in t)) throw wrongTarget("head view", "tokens {side, i}", t);
      const g = headGeometry();
      return [t.side === "q" ? g.x1 - 12 : g.x2 + 12, rowY(t.i)];
    },
  };

  // ----- matrix view: heatmap of one head or the mean, keys along x, queries along y ---------------
  function matrixGeometry() {
    const r = RECORDS[state.rec], lab = labels(state.rec), n = Math.max(r.q, r.k);
    const cell = Math.min(state.zoom, Math.floor(8192 / n)) || Math.max(1, Math.min(28, Math.floor(640 / n))); // at most 8192 px
    const left = PAD + lab.width + 6, top = TITLE_H + lab.width + 6;
    return { r, lab, cell, left, top, w: left + r.k * cell + 90, h: top + r.q * cell + PAD };
  }
  /**
   * A (k x q) canvas of viridis colours, scaled to the matrix's largest weight.
   * @param {number} ri
   * @param {number} h
   * @returns {{canvas: HTMLCanvasElement, max: number}}
   */
  function heatImage(ri, h) {
    return cached(`i${ri}:${h}`, () => {
      const r = RECORDS[ri], m = matrix(ri, h), canvas = document.createElement("canvas");
      canvas.width = r.k;
      canvas.height = r.q;
      const ctx = context2d(canvas), img = ctx.createImageData(r.k, r.q), px = new Uint32Array(img.data.buffer);
      let max = 0;
      for (const v of m) max = Math.max(max, v);
      const s = max > 0 ? 255 / max : 0;
      for (let i = 0; i < m.length; i++) px[i] = VIRIDIS32[Math.round(m[i] * s)];
      ctx.putImageData(img, 0, 0);
      return { canvas, max };
    });
  }
  /** @param {Painter} ctx @param {Size} size @param {Area} win */
  function drawMatrix(ctx, size, win) {
    const g = matrixGeometry(), { r, lab, cell } = g, hov = state.cell;
    title(ctx, size);
    const heat = heatImage(state.rec, state.head);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(heat.canvas, g.left, g.top, r.k * cell, r.q * cell);
    const step = Math.max(1, Math.ceil(12 / cell));
    ctx.fillStyle = "#111";
    ctx.textBaseline = "middle";
    /** @param {number} i @param {number} from @param {number} to */
    const shown = (i, from, to) => g.top + (i + 1) * cell > from && g.top + i * cell < to; // in the window
    /**
     * @param {string[]} toks
     * @param {number | null} hovered
     * @param {(t: string, y: number, i: number) => void} place
     * @param {number} from
     * @param {number} to
     */
    const axis = (toks, hovered, place, from, to) => toks.forEach((t, i) => {
      if ((i % step && i !== hovered) || !shown(i, from, to)) return;
      ctx.font = i === hovered ? BOLD : FONT;
      place(t, g.top + (i + 0.5) * cell, i);
    });
    ctx.textAlign = "right";
    axis(lab.q, hov && hov.i, (t, y) => ctx.fillText(t, g.left - 4, y), win.y0, win.y1);
    ctx.save();
    ctx.translate(g.left, g.top - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    axis(lab.k, hov && hov.j, (t, _, j) => ctx.fillText(t, 0, (j + 0.5) * cell), win.x0 - g.left + g.top, win.x1 - g.left + g.top);
    ctx.restore();
    if (hov) { // a black and a white ring: visible on every colour of the map
      ctx.lineWidth = 2;
      /** @type {[string, number][]} */
      const rings = [["#000", 2], ["#fff", 0]];
      for (const [colour, d] of rings) {
        ctx.strokeStyle = colour;
        ctx.strokeRect(g.left + hov.j * cell - 1 - d, g.top + hov.i * cell - 1 - d, cell + 2 + 2 * d, cell + 2 + 2 * d);
      }
    }
    const bx = g.left + r.k * cell + 16, bh = Math.min(200, Math.max(60, r.q * cell)); // colour bar
    for (let y = 0; y < bh; y++) {
      const c = VIRIDIS[Math.round((255 * (bh - 1 - y)) / (bh - 1))];
      ctx.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`;
      ctx.fillRect(bx, g.top + y, 12, 1);
    }
    ctx.font = FONT;
    ctx.fillStyle = "#111";
    ctx.textAlign = "left";
    ctx.fillText(heat.max.toFixed(3), bx + 16, g.top + 4);
    ctx.fillText("0", bx + 16, g.top + bh - 4);
  }
  /** @param {number} x @param {number} y @returns {Cell | null} */
  function hitMatrix(x, y) {
    const g = matrixGeometry(), i = Math.floor((y - g.top) / g.cell), j = Math.floor((x - g.left) / g.cell);
    return i >= 0 && j >= 0 && i < g.r.q && j < g.r.k ? { i, j } : null;
  }
  function describeCell() {
    const c = state.cell, r = RECORDS[state.rec];
    if (!c) return "Hover a cell for its exact weight; arrow keys move the cell.";
    const v = matrix(state.rec, state.head)[c.i * r.k + c.j];
    statusLine.dataset.value = String(v);
    return `Query ${c.i} ${quote(r.query_tokens[c.i])} → key ${c.j} ${quote(r.key_tokens[c.j])}: ` +
      `${v.toFixed(4)} (±${MAX_ERROR.toFixed(4)}, ${headName(state.head)})`;
  }
  /** Head buttons that choose the one head drawn (or the mean). */
  function headChoice() {
    const r = RECORDS[state.rec], buttons = [];
    /** @param {number} h */
    const pick = (h) => () => { state.head = h; render(); };
    buttons.push(headButton("mean", state.head < 0, pick(-1), -1));
    for (let h = 0; h < r.heads; h++) buttons.push(headButton(String(h), state.head === h, pick(h), h));
    return buttons;
  }
  /** @type {View} */
  const MATRIX_VIEW = {
    label: "Matrix view",
    help: "Rows are queries, columns keys; colour is the weight (viridis, 0 to the largest weight shown). " +
      `Values are stored in 8 bits: each is within ±${MAX_ERROR.toFixed(4)} of the captured weight.`,
    layerMenu: true,
    cellMenu: true,
    needs: () => [state.rec],
    geometry: matrixGeometry,
    draw: drawMatrix,
    caption: (r) => `${layerOf(r)}, ${headName(state.head)}`,
    status: describeCell,
    heads: headChoice,
    hover(x, y) {
      const c = hitMatrix(x, y);
      if (same(c, state.cell)) return false;
      state.cell = c;
      return true;
    },
    leave: () => false,
    click: () => false,
    key(_, move) {
      if (!move) return false;
      const r = RECORDS[state.rec], c = state.cell || { i: 0, j: 0 };
      state.cell = { i: clamp(c.i + move[0], r.q), j: clamp(c.j + move[1], r.k) };
      const g = matrixGeometry();
      reveal(g.left + state.cell.j * g.cell, g.top + state.cell.i * g.cell);
      return true;
    },
    spot(t) {
      if (!("j" in t)) throw wrongTarget("matrix view", "cells {i, j}", t);
      const g = matrixGeometry();
      return [g.left + (t.j + 0.5) * g.cell, g.top + (t.i + 0.5) * g.cell];
    },
  };

  // ----- model view: every layer x head of the selected kind as a thumbnail ------------------------
  function modelGeometry() {
    const recs = recordsOf(state.kind), heads = Math.max(...recs.map((i) => RECORDS[i].heads));
    const left = PAD + 40, top = TITLE_H + 18;
    return { recs, heads, left, top, w: left + heads * (THUMB + 8) + PAD, h: top + recs.length * (THUMB + 8) + PAD };
  }
  /**
   * Head h of record ri max-pooled to at most THUMB x THUMB, scaled to the head's largest weight.
   * @param {number} ri
   * @param {number} h
   * @returns {HTMLCanvasElement}
   */
  function thumbnail(ri, h) {
    return cached(`t${ri}:${h}`, () => {
      const r = RECORDS[ri], m = matrix(ri, h), th = Math.min(r.q, THUMB), tw = Math.min(r.k, THUMB);
      const pooled = new Float32Array(th * tw);
      for (let i = 0; i < r.q; i++) {
        const row = Math.floor((i * th) / r.q) * tw;
        for (let j = 0; j < r.k; j++) {
          const o = row + Math.floor((j * tw) / r.k), v = m[i * r.k + j];
          if (v > pooled[o]) pooled[o] = v;
        }
      }
      let max = 0;
      for (const v of pooled) max = Math.max(max, v);
      const canvas = document.createElement("canvas");
      canvas.width = tw;
      canvas.height = th;
      const ctx = context2d(canvas), img = ctx.createImageData(tw, th), px = new Uint32Array(img.data.buffer);
      pooled.forEach((v, o) => (px[o] = VIRIDIS32[max > 0 ? Math.round((255 * v) / max) : 0]));
      ctx.putImageData(img, 0, 0);
      return canvas;
    });
  }
  /** @param {Painter} ctx @param {Size} size */
  function drawModel(ctx, size) {
    const g = modelGeometry();
    title(ctx, size);
    ctx.font = FONT;
    ctx.fillStyle = "#111";
    ctx.textBaseline = "middle";
    ctx.textAlign = "center";
    for (let h = 0; h < g.heads; h++) ctx.fillText(`H${h}`, g.left + h * (THUMB + 8) + THUMB / 2, g.top - 9);
    ctx.imageSmoothingEnabled = false;
    g.recs.forEach((ri, row) => {
      const y = g.top + row * (THUMB + 8);
      ctx.textAlign = "right";
      ctx.fillStyle = "#111";
      ctx.fillText(`L${RECORDS[ri].layer}`, g.left - 8, y + THUMB / 2);
      for (let h = 0; h < RECORDS[ri].heads; h++) {
        const t = thumbnail(ri, h), s = THUMB / Math.max(t.width, t.height), x = g.left + h * (THUMB + 8);
        ctx.drawImage(t, x, y, t.width * s, t.height * s);
        if (state.cursor.row === row && state.cursor.col === h) {
          ctx.strokeStyle = "#F0E442";
          ctx.lineWidth = 3;
          ctx.strokeRect(x - 2, y - 2, THUMB + 4, THUMB + 4);
        }
      }
    });
  }
  /** @param {number} x @param {number} y @returns {Cursor | null} */
  function hitModel(x, y) {
    const g = modelGeometry(), row = Math.floor((y - g.top) / (THUMB + 8)), col = Math.floor((x - g.left) / (THUMB + 8));
    const inside = (x - g.left) % (THUMB + 8) < THUMB && (y - g.top) % (THUMB + 8) < THUMB;
    return inside && row >= 0 && col >= 0 && row < g.recs.length && col < RECORDS[g.recs[row]].heads ? { row, col } : null;
  }
  /** @param {Cursor} c  the thumbnail to open in the matrix view */
  function openThumb(c) {
    Object.assign(state, { rec: modelGeometry().recs[c.row], head: c.col, view: "matrix", cell: null, cursor: c });
  }
  /** @type {View} */
  const MODEL_VIEW = {
    label: "Model view",
    help: "Each thumbnail is one head (rows: layers, columns: heads), scaled to its own largest weight. Click one, or use the arrow keys and Enter, to open it.",
    layerMenu: false,
    cellMenu: false,
    needs: () => recordsOf(state.kind),
    geometry: modelGeometry,
    draw: drawModel,
    caption: (r) => `all layers × heads of ${KIND_NAMES[r.kind]}`,
    status: () => `Layer ${RECORDS[modelGeometry().recs[state.cursor.row]].layer}, head ${state.cursor.col} selected: Enter opens it.`,
    heads: () => [],
    hover: () => false,
    leave: () => false,
    click(x, y) {
      const c = hitModel(x, y);
      if (!c) return false;
      openThumb(c);
      return true;
    },
    key(key, move) {
      if (key === "Enter") {
        openThumb(state.cursor);
        return true;
      }
      if (!move) return false;
      const g = modelGeometry(), row = clamp(state.cursor.row + move[0], g.recs.length);
      state.cursor = { row, col: clamp(state.cursor.col + move[1], RECORDS[g.recs[row]].heads) };
      return true;
    },
    spot(t) {
      if (!("row" in t)) throw wrongTarget("model view", "thumbnails {row, col}", t);
      const g = modelGeometry();
      return [g.left + t.col * (THUMB + 8) + THUMB / 2, g.top + t.row * (THUMB + 8) + THUMB / 2];
    },
  };

  // The views, in the order of their tabs. A new view is one entry here (a View: see its type above).
  /** @type {Readonly<Record<string, View>>} */
  const VIEWS = { head: HEAD_VIEW, model: MODEL_VIEW, matrix: MATRIX_VIEW };
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

  // ----- SVG export: the same drawing code, recorded into SVG elements ----------------------------
  const SVG_NS = "http://www.w3.org/2000/svg";
  class SvgPath {
    constructor() {
      /** @type {string[]} */
      this.d = [];
    }
    /** @param {number} x @param {number} y */
    moveTo(x, y) { this.d.push(`M${+x.toFixed(2)} ${+y.toFixed(2)}`); }
    /** @param {number} x @param {number} y */
    lineTo(x, y) { this.d.push(`L${+x.toFixed(2)} ${+y.toFixed(2)}`); }
  }
  /** @implements {Painter} */
  class SvgContext {
    /** @param {number} w @param {number} h */
    constructor(w, h) {
      this.doc = document.implementation.createDocument(SVG_NS, "svg", null);
      this.root = this.doc.documentElement;
      for (const [k, v] of [["width", String(w)], ["height", String(h)], ["viewBox", `0 0 ${w} ${h}`]]) this.root.setAttribute(k, v);
      /** @type {string} */
      this.fillStyle = "#000";
      /** @type {string} */
      this.strokeStyle = "#000";
      this.lineWidth = 1;
      this.globalAlpha = 1;
      this.font = FONT;
      /** @type {CanvasTextAlign} */
      this.textAlign = "start";
      /** @type {CanvasTextBaseline} */
      this.textBaseline = "alphabetic";
      this.imageSmoothingEnabled = true;
      /** @type {number[]} */
      this.dash = [];
      this.transform = "";
      /** @type {Partial<SvgContext>[]} */
      this.stack = [];
    }
    newPath() { return new SvgPath(); }
    save() {
      const { fillStyle, strokeStyle, lineWidth, globalAlpha, font, textAlign, textBaseline, dash, transform } = this;
      this.stack.push({ fillStyle, strokeStyle, lineWidth, globalAlpha, font, textAlign, textBaseline, dash, transform });
    }
    restore() {
      const saved = this.stack.pop();
      if (!saved) throw new Error("attnlab viewer: SvgContext.restore() without a save()");
      Object.assign(this, saved);
    }
    setTransform() { this.transform = ""; } // the canvas uses it only for the device pixel ratio
    /** @param {number} x @param {number} y */
    translate(x, y) { this.transform += ` translate(${x} ${y})`; }
    /** @param {number} a */
    rotate(a) { this.transform += ` rotate(${(a * 180) / Math.PI})`; }
    /** @param {number[]} d */
    setLineDash(d) { this.dash = d.slice(); }
    /** @param {string} t */
    measureText(t) { measurer.font = this.font; return measurer.measureText(t); }
    /**
     * @param {string} tag
     * @param {Record<string, string | number | undefined>} attrs  undefined: left out
     */
    add(tag, attrs) {
      const e = this.doc.createElementNS(SVG_NS, tag);
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined) continue;
        if (k === "xml:space") e.setAttributeNS("http://www.w3.org/XML/1998/namespace", k, String(v));
        else e.setAttribute(k, String(v));
      }
      if (this.transform) e.setAttribute("transform", this.transform.trim());
      this.root.appendChild(e);
      return e;
    }
    opacity() { return this.globalAlpha < 1 ? +this.globalAlpha.toFixed(3) : undefined; }
    /** @param {number} x @param {number} y @param {number} w @param {number} h */
    fillRect(x, y, w, h) { this.add("rect", { x, y, width: w, height: h, fill: this.fillStyle, "fill-opacity": this.opacity() }); }
    /** @param {number} x @param {number} y @param {number} w @param {number} h */
    strokeRect(x, y, w, h) { this.add("rect", { x, y, width: w, height: h, fill: "none", stroke: this.strokeStyle, "stroke-width": this.lineWidth }); }
    /** @param {SvgPath} p */
    stroke(p) {
      this.add("path", { d: p.d.join(""), fill: "none", stroke: this.strokeStyle, "stroke-width": this.lineWidth,
        "stroke-opacity": this.opacity(), "stroke-dasharray": this.dash.length ? this.dash.join(" ") : undefined });
    }
    /** @param {string} t @param {number} x @param {number} y */
    fillText(t, x, y) {
      const anchor = { left: "start", start: "start", right: "end", end: "end", center: "middle" }[this.textAlign];
      /** @type {Partial<Record<CanvasTextBaseline, string>>} */
      const baselines = { middle: "central", alphabetic: "alphabetic", top: "hanging" };
      const font = /^(bold )?(\d+)px (.*)$/.exec(this.font); // presentation attributes, not style=
      if (!font) throw new Error(`attnlab viewer: the SVG export reads fonts as "[bold ]<n>px <family>", got ${JSON.stringify(this.font)}`);
      const [, weight, size, family] = font;
      this.add("text", { x, y, fill: this.fillStyle, "font-family": family, "font-size": size, "font-weight": weight ? "bold" : undefined,
        "xml:space": "preserve", "text-anchor": anchor, "dominant-baseline": baselines[this.textBaseline] }).textContent = t;
    }
    /** @param {HTMLCanvasElement} img @param {number} x @param {number} y @param {number} w @param {number} h */
    drawImage(img, x, y, w, h) {
      this.add("image", { x, y, width: w, height: h, href: img.toDataURL("image/png"), preserveAspectRatio: "none",
        "image-rendering": this.imageSmoothingEnabled ? undefined : "pixelated" });
    }
    toString() { return new XMLSerializer().serializeToString(this.doc); }
  }

  // ----- page --------------------------------------------------------------------------------------
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
  const root = byId("attnlab-viewer");
  root.replaceChildren();
  const header = el("header");
  header.append(el("h1", {}, "attnlab attention viewer"));
  const info = el("p", { class: "info" });
  header.append(info);
  const tabs = el("div", { class: "tabs", role: "group", "aria-label": "view" });
  /** @type {Record<string, HTMLButtonElement>} */
  const tabButtons = {};
  for (const [v, spec] of Object.entries(VIEWS)) {
    tabButtons[v] = el("button", { type: "button", "data-view": v }, spec.label);
    tabButtons[v].addEventListener("click", () => { state.view = v; render(); });
    tabs.append(tabButtons[v]);
  }
  const kindSelect = el("select", { "aria-label": "attention kind" });
  kinds.forEach((k) => kindSelect.append(el("option", { value: k }, KIND_NAMES[k])));
  const recSelect = el("select", { "aria-label": "layer" });
  const zoomSelect = el("select", { "aria-label": "cell size" });
  /** @type {[string, string][]} */
  const zooms = [["0", "fit"], ...[2, 4, 8, 12, 16, 24].map((z) => /** @type {[string, string]} */ ([String(z), `${z} px`]))];
  zooms.forEach(([v, t]) => zoomSelect.append(el("option", { value: v }, t)));
  zoomSelect.addEventListener("change", () => { state.zoom = Number(zoomSelect.value); render(); });
  const zoomLabel = el("label", {}, "cell ");
  zoomLabel.append(zoomSelect);
  const headBar = el("div", { class: "heads", role: "group", "aria-label": "heads" });
  const exportBar = el("div", { class: "export" });
  const pngButton = el("button", { type: "button" }, "Save PNG"), svgButton = el("button", { type: "button" }, "Save SVG");
  exportBar.append(pngButton, svgButton);
  const controls = el("div", { class: "controls" });
  /** @param {string} text @param {HTMLElement} control */
  const labelled = (text, control) => { const l = el("label", {}, text + " "); l.append(control); return l; };
  controls.append(tabs, labelled("kind", kindSelect), labelled("layer", recSelect), zoomLabel, exportBar);
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
  root.append(header, controls, headBar, statusLine, frame, help);
  info.textContent = Object.entries(DATA.meta).map(([k, v]) => `${k}: ${v}`).join(" · ") || "no metadata";
  document.title = `attnlab viewer${DATA.meta.model ? " · " + DATA.meta.model : ""}`;

  kindSelect.addEventListener("change", () => {
    const recs = recordsOf(kindSelect.value);
    Object.assign(state, { kind: kindSelect.value, rec: recs[0], focus: null, sticky: false, cell: null });
    state.heads = new Set([...Array(RECORDS[recs[0]].heads).keys()]);
    render();
  });
  recSelect.addEventListener("change", () => {
    Object.assign(state, { rec: Number(recSelect.value), focus: null, sticky: false, cell: null });
    render();
  });
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
    }
    b.addEventListener("click", onClick);
    return b;
  }
  function syncControls() {
    const view = currentView();
    kindSelect.value = state.kind;
    recSelect.replaceChildren(...recordsOf(state.kind).map((i) => el("option", { value: String(i) }, `${RECORDS[i].layer} · ${RECORDS[i].name}`)));
    recSelect.value = String(state.rec);
    recSelect.disabled = !view.layerMenu;
    zoomLabel.hidden = !view.cellMenu;
    zoomSelect.value = String(state.zoom);
    for (const [v, b] of Object.entries(tabButtons)) b.setAttribute("aria-pressed", String(v === state.view));
    headBar.replaceChildren(...view.heads());
    help.textContent = view.help;
    delete statusLine.dataset.value; // the matrix view's status sets the exact value of the hovered cell
    statusLine.textContent = view.status();
    stage.setAttribute("aria-label", describe().join(". "));
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
    syncControls();
    timings.lastRender = performance.now() - start;
    if (timings.firstView === null) timings.firstView = performance.now(); // ms since navigation start
    return timings.lastRender;
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
    view.draw(ctx, size, { x0, y0, x1: x0 + w, y1: y0 + h });
  }
  let painting = false;
  stage.addEventListener("scroll", () => {
    if (!painting) { painting = true; requestAnimationFrame(() => { painting = false; paint(); }); }
  });
  window.addEventListener("resize", () => render());
  /**
   * The whole drawing, for export.
   * @param {View} view
   * @returns {{size: Size, win: Area}}
   */
  function full(view) {
    const size = view.geometry();
    return { size, win: { x0: 0, y0: 0, x1: size.w, y1: size.h } };
  }
  /** @param {number} x @param {number} y  scroll the stage so that the content point (x, y) is visible */
  function reveal(x, y) {
    if (y < stage.scrollTop + ROW || y > stage.scrollTop + stage.clientHeight - ROW) stage.scrollTop = y - stage.clientHeight / 2;
    if (x < stage.scrollLeft || x > stage.scrollLeft + stage.clientWidth) stage.scrollLeft = x - stage.clientWidth / 2;
  }

  // ----- interaction: the page passes mouse and keys to the current view ---------------------------
  /** @param {unknown} a @param {unknown} b */
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
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
    if (e.key === "Escape") Object.assign(state, { focus: null, sticky: false, cell: null }); // every view's selection
    else if (!currentView().key(e.key, move)) return;
    e.preventDefault();
    render();
  });

  /** @param {Blob} blob @param {string} name */
  function download(blob, name) {
    const a = el("a", { href: URL.createObjectURL(blob), download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  }
  const fileName = () => `attention-${state.view}-${RECORDS[state.rec].kind}-layer${RECORDS[state.rec].layer}`;
  pngButton.addEventListener("click", () => {
    const view = currentView(), { size, win } = full(view), out = document.createElement("canvas");
    out.width = size.w;
    out.height = size.h;
    view.draw(context2d(out), size, win);
    out.toBlob((b) => {
      if (!b) throw new Error(`attnlab viewer: the browser could not encode a ${size.w} x ${size.h} PNG`);
      download(b, fileName() + ".png");
    }, "image/png");
  });
  svgButton.addEventListener("click", () => {
    const view = currentView(), { size, win } = full(view), svg = new SvgContext(size.w, size.h);
    view.draw(svg, size, win);
    download(new Blob([svg.toString()], { type: "image/svg+xml" }), fileName() + ".svg");
  });

  // For tests and benchmarks: set state and draw synchronously (returns the milliseconds it took).
  const api = {
    state, timings, records: RECORDS, matrixOf: matrix, views: VIEWS,
    /**
     * @param {Omit<Partial<State>, "heads"> & {heads?: number[]}} patch  a view name must be a key of VIEWS (else it throws, and nothing changes)
     */
    set(patch) {
      if (patch.view !== undefined) viewNamed(patch.view);
      Object.assign(state, patch);
      if (Array.isArray(patch.heads)) state.heads = new Set(patch.heads);
      return render();
    },
    /** @param {Target} target  page coordinates of the middle of a token label, cell or thumbnail of the current view */
    where(target) {
      const box = stage.getBoundingClientRect(), [x, y] = currentView().spot(target);
      return { x: box.left + stage.clientLeft + x - stage.scrollLeft, y: box.top + stage.clientTop + y - stage.scrollTop };
    },
    idle: () => drawn.then(() => Promise.all(RECORDS.map((_, i) => load(i)))),
  };
  Object.assign(window, { attnlab: api });
  render();
  drawn = drawn.then(() => Promise.all(RECORDS.map((_, i) => load(i)))); // decode the rest in the background

  function viridis() { // polynomial fit of matplotlib's viridis (within 4/255), as 256 RGBA entries
    const c = [[0.27773, 0.00541, 0.33410], [0.10509, 1.40461, 1.38459], [-0.33086, 0.21485, 0.09510],
      [-4.63423, -5.79910, -19.33244], [6.22827, 14.17993, 56.69055], [4.77638, -13.74515, -65.35303], [-5.43546, 4.64585, 26.31244]];
    return Array.from({ length: 256 }, (_, i) => {
      const t = i / 255;
      const rgb = [0, 1, 2].map((ch) => c.reduceRight((acc, k) => acc * t + k[ch], 0));
      return new Uint8ClampedArray([...rgb.map((v) => Math.round(255 * Math.min(1, Math.max(0, v)))), 255]);
    });
  }
})();
