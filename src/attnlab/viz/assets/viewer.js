// attnlab attention viewer: head view, model view, matrix view and neuron view of one AttentionTrace, or of
// two traces side by side. Plain JavaScript, no dependencies, no network. The data is the JSON block
// #attnlab-data written by attnlab/viz/html.py: per record, uint8 codes (weight = code / levels)
// gzip-compressed and base64-encoded, and, when captured, float16 query and key vectors.
// Tokens and metadata are user text: they are rendered only with textContent and canvas fillText.
// Types are JSDoc, checked by `make lint` (tsc --checkJs, strict; tsconfig.json at the repository root).
(() => {
  "use strict";

  // ----- types ------------------------------------------------------------------------------------
  /** @typedef {"self" | "causal" | "cross"} Kind */
  /** @typedef {"linear" | "power" | "log"} Scale  the colour scale of weights (heatmaps, thumbnails, line opacity) */
  /** @typedef {"all" | "AB" | "BA" | "AA" | "BB"} Pair  which sentence's queries attend to which sentence's keys */
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
   * @property {{d: number, q: string, k: string}} [qk]  query and key vectors, base64 of the gzip of float16 (heads, len, d)
   */
  /**
   * @typedef {Object} HeadNotes  what attnlab.analysis says of each head (trace.meta["heads"])
   * @property {string} kind  the kind of records the notes describe
   * @property {string[][]} labels  per layer, per head
   * @property {Record<string, (number | null)[][]>} metrics  name -> per layer, per head
   */
  /**
   * @typedef {Object} Payload
   * @property {TraceRecord[]} records
   * @property {{levels: number, max_error: number}} encoding
   * @property {Record<string, string>} meta
   * @property {HeadNotes} [heads]
   */
  /** @typedef {{format: string, panes: Payload[]}} Compare  two traces side by side */
  /** @typedef {"q" | "k"} Side */
  /** @typedef {{side: Side, i: number}} Focus  a token of the head or neuron view (absolute index) */
  /** @typedef {{i: number, j: number}} Cell  a (query, key) cell of the matrix or neuron view (absolute indices) */
  /** @typedef {{row: number, col: number}} Cursor  a thumbnail of the model view (row of the kind's records, head) */
  /** @typedef {Focus | Cell | Cursor} Target  what a view's hit-testing finds */
  /** @typedef {[number, number]} Point  (x, y) in drawing coordinates */
  /** @typedef {[number, number]} Move  (rows, columns) of an arrow key */
  /** @typedef {{w: number, h: number}} Size  of a whole drawing, in CSS pixels */
  /** @typedef {{x0: number, y0: number, x1: number, y1: number}} Area  the part of a drawing to draw */
  /** @typedef {{q0: number, q1: number, k0: number, k1: number}} Span  the shown query and key tokens, [q0, q1) and [k0, k1) */
  /** @typedef {{from: number, to: number}} Range  the token range control: tokens from..to-1 */
  /** @typedef {{axis: Side, i: number, at: number, bold: boolean}} Placed  a token label drawn, at its centre along its axis */
  /**
   * @typedef {Object} State
   * @property {string} view  a key of VIEWS
   * @property {Kind} kind
   * @property {number} rec  the shown record (an index of RECORDS)
   * @property {Set<number>} heads  head view: the shown heads
   * @property {boolean} mean  head view: the mean of the heads instead
   * @property {number} head  matrix and neuron views: the head, -1 for the mean
   * @property {Focus | null} focus  head and neuron views: the focused token
   * @property {boolean} sticky  the focus was clicked, it stays when the mouse leaves and when the layer changes
   * @property {Cell | null} cell  matrix and neuron views: the hovered cell
   * @property {Cursor} cursor  model view: the selected thumbnail
   * @property {Cursor | null} hover  model view: the hovered thumbnail
   * @property {number} zoom  matrix view: cell size in pixels, 0 to fit
   * @property {Scale} scale  the colour scale
   * @property {Range | null} range  the shown tokens (null: all)
   * @property {Pair} pair  sentence-pair filter
   * @property {string} search  token search text ("" none)
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
   * @property {() => string} available  "" when the trace has what it draws, else why not (its tab is disabled)
   * @property {() => number[]} needs  the records that must be decoded before it can draw
   * @property {() => Size} geometry  the size of the whole drawing
   * @property {(ctx: Painter, size: Size, win: Area) => void} draw  draws the drawing; only what is in `win` must be drawn
   * @property {(r: TraceRecord) => string} caption  what it shows of the record, for the title and screen readers
   * @property {() => string} file  what it shows, as part of an export's file name
   * @property {() => string} status  the status line
   * @property {() => HTMLButtonElement[]} heads  the buttons of the head bar
   * @property {(x: number, y: number) => boolean} hover  the mouse moved to drawing point (x, y); true: redraw
   * @property {() => boolean} leave  the mouse left the drawing; true: redraw
   * @property {(x: number, y: number) => boolean} click  a click at drawing point (x, y); true: redraw
   * @property {(key: string, move: Move | undefined) => boolean} key  a key on the drawing (an arrow gives its move; Escape is the page's); true: handled, redraw
   * @property {(i: number) => boolean} seek  go to query token i (the token search's Enter); true: redraw
   * @property {(target: Target) => Point} spot  the drawing point of one of its targets (tests aim the mouse with it)
   */
  /**
   * What a viewer offers to tests, benchmarks and the other pane of a comparison (window.attnlab).
   * @typedef {Object} Api
   * @property {State} state
   * @property {{firstView: number | null, lastRender: number | null}} timings
   * @property {TraceRecord[]} records
   * @property {(ri: number, h: number) => Float32Array} matrixOf
   * @property {Readonly<Record<string, View>>} views
   * @property {(patch: Omit<Partial<State>, "heads"> & {heads?: number[]}) => number} set
   * @property {(target: Target) => {x: number, y: number}} where  page coordinates of a target, scrolled into view
   * @property {() => Promise<unknown>} idle
   * @property {() => Placed[]} placed  the token labels of the last drawing on screen
   * @property {() => string} fileName  the name of an export, without its extension
   * @property {(other: State, layer: number) => void} adopt  take another pane's choices (linked panes; layer: its shown layer)
   * @property {Api[]} [panes]  a comparison's two viewers
   */
  /** @typedef {{panes: Api[], on: boolean, syncing: boolean}} Link  the panes of a comparison and whether they are linked */

  // Paul Tol's "muted" palette (colour-blind safe); heads past the ninth reuse it with dashed lines.
  const PALETTE = ["#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE", "#882255", "#44AA99", "#999933", "#AA4499"];
  const MEAN_COLOUR = "#222222";
  const FOCUS_FILL = "#F0E442";
  const MATCH_COLOUR = "#E69F00"; // token search: Okabe-Ito orange
  const FONT = '12px system-ui, "Noto Sans", "Noto Sans CJK SC", "WenQuanYi Zen Hei", "Noto Color Emoji", sans-serif';
  const BOLD = "bold " + FONT;
  const ROW = 18, LINE_H = 17, PAD = 12, GAP = 240, LABEL_MAX = 150, THUMB = 64, LABEL_PX = 13;
  const LINE_MIN_CODE = 4; // head-view lines below 4/255 (1.6 %) are too faint to see and are not drawn
  const LOG_DECADES = 3; // the log colour scale spans the largest weight down to 1/1000 of it
  const MIN_W = 600; // pixels: the narrowest drawing, so that a small matrix still has a readable caption
  const CAPTION_MAX = 960; // pixels: captions wrap at this width at most
  const MAX_CANVAS = 16384, MAX_PIXELS = 120e6; // what browsers can encode as one PNG
  const SEPARATORS = new Set(["[SEP]", "</s>", "<sep>", "<|endoftext|>"]); // where sentence A of a pair ends
  /** @type {Record<Kind, string>} */
  const KIND_NAMES = { self: "self-attention", causal: "causal self-attention", cross: "cross-attention" };
  /** @type {Record<Scale, string>} */
  const SCALE_NAMES = { linear: "linear", power: "power (√w)", log: `log (${LOG_DECADES} decades)` };
  /** @type {Record<Pair, string>} */
  const PAIR_NAMES = { all: "all tokens", AB: "sentence A → B", BA: "sentence B → A", AA: "sentence A → A", BB: "sentence B → B" };
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
  /**
   * A weight relative to the largest shown (t in [0, 1]) on the chosen colour scale, in [0, 1].
   * @param {Scale} scale
   * @param {number} t
   */
  function tone(scale, t) {
    if (!(t > 0)) return 0;
    if (scale === "power") return Math.sqrt(Math.min(1, t));
    if (scale === "log") return Math.max(0, 1 + Math.log10(Math.min(1, t)) / LOG_DECADES);
    return Math.min(1, t);
  }
  /**
   * The inverse of tone: the relative weight drawn at u.
   * @param {Scale} scale
   * @param {number} u
   */
  function untone(scale, u) {
    if (scale === "power") return u * u;
    if (scale === "log") return u > 0 ? Math.pow(10, (u - 1) * LOG_DECADES) : 0;
    return u;
  }
  /** @param {number} h  a float16 as its 16 bits */
  function half(h) {
    const e = (h >> 10) & 31, f = h & 1023, s = h & 32768 ? -1 : 1;
    if (e === 0) return s * f * 2 ** -24;
    if (e === 31) return f ? NaN : s * Infinity;
    return s * (1 + f / 1024) * 2 ** (e - 15);
  }
  /** @param {string} b64  base64 of gzip bytes, inflated by the browser */
  async function inflate(b64) {
    const U8 = /** @type {typeof Uint8Array & {fromBase64?: (s: string) => Uint8Array<ArrayBuffer>}} */ (Uint8Array);
    const packed = U8.fromBase64 ? U8.fromBase64(b64) : Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  /** @param {string} b64  float16 vectors as float32 */
  async function inflateHalf(b64) {
    const bytes = await inflate(b64), bits = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
    const out = new Float32Array(bits.length);
    for (let i = 0; i < bits.length; i++) out[i] = half(bits[i]);
    return out;
  }

  // ----- text helpers -----------------------------------------------------------------------------
  /** @param {string} s */
  const visible = (s) => String(s).replace(/[\u0000-\u001f\u007f]/g, (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
  const measurer = context2d(document.createElement("canvas"));
  /** @param {string} text @param {string} font */
  const widthOf = (text, font) => { measurer.font = font; return measurer.measureText(text).width; };
  /**
   * Text cut with an ellipsis to fit width pixels.
   * @param {string} text
   * @param {number} width
   */
  function fit(text, width, font = FONT) {
    let s = visible(text);
    if (widthOf(s, font) <= width) return s;
    const chars = Array.from(s);
    let lo = 0, hi = chars.length; // binary search for the longest prefix that fits with the ellipsis
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (widthOf(chars.slice(0, mid).join("") + "…", font) <= width) lo = mid;
      else hi = mid - 1;
    }
    return chars.slice(0, lo).join("") + "…";
  }
  /**
   * Text broken into lines of at most width pixels: at spaces, and inside words too long for a line
   * (Chinese and Japanese have no spaces). Nothing is cut.
   * @param {string} text
   * @param {number} width
   * @returns {string[]}
   */
  function wrap(text, width, font = FONT) {
    /** @type {string[]} */
    const lines = [];
    let line = "";
    for (const word of visible(text).split(/(?<=\s)/)) { // each word keeps its trailing space
      if (widthOf(line + word, font) <= width) { line += word; continue; }
      if (line) lines.push(line.trimEnd());
      line = "";
      for (const ch of Array.from(word)) { // a word wider than a line: break it between characters
        if (line && widthOf(line + ch, font) > width) { lines.push(line); line = ""; }
        line += ch;
      }
    }
    if (line.trim() || !lines.length) lines.push(line.trimEnd());
    return lines;
  }
  /** @param {string} t */
  const quote = (t) => `“\u2068${visible(t)}\u2069”`; // first-strong isolate: right-to-left tokens stay inside their quotes
  /** @param {string} t */
  const flat = (t) => String(t).replace(/\s+/g, " ").trim();
  /** @param {string} t  a file-name part: letters, digits and dashes */
  const slug = (t) => flat(t).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-+|-+$/g, "").slice(0, 40);
  /** @param {number} h */
  const headName = (h) => (h < 0 ? "mean of heads" : `head ${h}`);
  /** @param {number} h */
  const colour = (h) => (h < 0 ? MEAN_COLOUR : PALETTE[h % PALETTE.length]);
  /** @param {number} h */
  const dash = (h) => (h >= PALETTE.length ? [5, 3] : []);
  /** @param {number} v @param {number} n  v clamped to [0, n) */
  const clamp = (v, n) => Math.max(0, Math.min(n - 1, v));
  /** @param {unknown} a @param {unknown} b */
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  /**
   * A target of the wrong kind for a view's spot().
   * @param {string} view
   * @param {string} wanted
   * @param {Target} got
   */
  const wrongTarget = (view, wanted, got) => new Error(`attnlab viewer: the ${view} locates ${wanted}, got ${JSON.stringify(got)}`);
  /**
   * The two sentences of a pair, [start, end) each, split after the first separator; null for one sentence.
   * @param {string[]} tokens
   * @returns {{A: [number, number], B: [number, number]} | null}
   */
  function segments(tokens) {
    const s = tokens.findIndex((t) => SEPARATORS.has(t));
    return s < 0 || s >= tokens.length - 1 ? null : { A: [0, s + 1], B: [s + 1, tokens.length] };
  }
  /**
   * "100:160" (end excluded, either side may be left out) as a Range; "" is null (every token); else undefined.
   * @param {string} text
   * @returns {Range | null | undefined}
   */
  function parseRange(text) {
    if (!text.trim()) return null;
    const m = /^\s*(\d*)\s*:\s*(\d*)\s*$/.exec(text);
    if (!m || (!m[1] && !m[2])) return undefined;
    const from = m[1] ? Number(m[1]) : 0, to = m[2] ? Number(m[2]) : Infinity;
    return to > from ? { from, to } : undefined;
  }
  /** @param {Range | null} r */
  const rangeText = (r) => (r ? `${r.from}:${r.to === Infinity ? "" : r.to}` : "");
  /**
   * A colour of the blue-white-red diverging scale for v in [-1, 1] (query and key vector entries).
   * @param {number} v
   */
  function diverging(v) {
    const t = Math.max(-1, Math.min(1, v)), a = Math.abs(t);
    const [r, g, b] = t < 0 ? [33, 102, 172] : [178, 24, 43];
    /** @param {number} c */
    const mix = (c) => Math.round(255 + (c - 255) * a);
    return `rgb(${mix(r)},${mix(g)},${mix(b)})`;
  }

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


  const BUNDLE = /** @type {Payload | Compare} */ (JSON.parse(byId("attnlab-data").textContent || ""));

  /**
   * Builds one viewer (its controls, drawing and state) for one trace inside `root`.
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

    // ----- data: decode on demand, cache -----------------------------------------------------------
    /** @type {(Uint8Array | undefined)[]} */
    const codes = new Array(RECORDS.length); // Uint8Array (heads, q, k) once decoded
    /** @type {({q: Float32Array, k: Float32Array} | undefined)[]} */
    const vectors = new Array(RECORDS.length); // query and key vectors (heads, len, d), when captured
    /** @type {Map<number, Promise<Uint8Array>>} */
    const pending = new Map();
    /** @param {number} ri  the codes (and vectors) of record ri, decoded once */
    function load(ri) {
      const done = codes[ri];
      if (done) return Promise.resolve(done);
      let p = pending.get(ri);
      if (!p) {
        const r = RECORDS[ri];
        const qk = r.qk ? Promise.all([inflateHalf(r.qk.q), inflateHalf(r.qk.k)]).then(([q, k]) => (vectors[ri] = { q, k })) : null;
        p = Promise.all([inflate(r.data), qk]).then(([bytes]) => (codes[ri] = bytes));
        pending.set(ri, p);
      }
      return p;
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
      if (lru.size > 64 && oldest !== undefined) lru.delete(oldest);
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

    // ----- state ----------------------------------------------------------------------------------
    const kinds = /** @type {Kind[]} */ (["self", "causal", "cross"]).filter((k) => RECORDS.some((r) => r.kind === k));
    /** @type {State} */
    const state = {
      view: "head", kind: kinds[0], rec: recordsOf(kinds[0])[0], heads: new Set([0]), mean: false, head: 0,
      focus: null, sticky: false, cell: null, cursor: { row: 0, col: 0 }, hover: null, zoom: 0,
      scale: "linear", range: null, pair: "all", search: "",
    };
    let exporting = false; // drawing an export: nothing transient (hover ring, hovered labels, hovered thumbnail)
    /** @type {Placed[]} */
    let placed = []; // token labels of the drawing being painted (tests check that none overlap)
    const hasPairs = RECORDS.some((r) => segments(r.query_tokens) && segments(r.key_tokens));

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

    // ----- head view: query tokens left, key tokens right, one line per weight --------------------
    const shownHeads = () => (state.mean ? [-1] : [...state.heads].sort((a, b) => a - b));
    /**
     * The legend of head colours: entries of one line sample and a name, in rows of width w.
     * @param {number} w
     * @returns {{h: number, x: number, row: number}[]}
     */
    function legendLayout(w) {
      let x = PAD, row = 0;
      return shownHeads().map((h) => {
        const width = 30 + widthOf(headName(h), FONT) + 14;
        if (x + width > w - PAD && x > PAD) { x = PAD; row++; }
        const at = { h, x, row };
        x += width;
        return at;
      });
    }
    function headGeometry() {
      const r = RECORDS[state.rec], lab = labels(state.rec), sp = span(state.rec);
      const x1 = PAD + lab.width + 6, x2 = x1 + GAP, w = Math.max(x2 + lab.width + PAD + 6, 720);
      const legend = legendLayout(w), rows = legend.length ? legend[legend.length - 1].row + 1 : 0;
      const legendTop = titleHeight(w), top = legendTop + rows * ROW + 6;
      return { r, lab, sp, x1, x2, w, legend, legendTop, top, h: top + Math.max(sp.q1 - sp.q0, sp.k1 - sp.k0) * ROW + PAD };
    }
    /** @typedef {ReturnType<typeof headGeometry>} HeadGeometry */
    /** @param {HeadGeometry} g @param {Side} side @param {number} i  the y of token i's row */
    const rowY = (g, side, i) => g.top + (i - (side === "q" ? g.sp.q0 : g.sp.k0)) * ROW + ROW / 2;
    /** @param {Painter} ctx @param {HeadGeometry} g */
    function drawLegend(ctx, g) {
      ctx.textBaseline = "middle";
      ctx.textAlign = "left";
      ctx.font = FONT;
      ctx.lineWidth = 2.5;
      for (const { h, x, row } of g.legend) {
        const y = g.legendTop + row * ROW + ROW / 2, p = ctx.newPath ? ctx.newPath() : new Path2D();
        p.moveTo(x, y);
        p.lineTo(x + 24, y);
        ctx.strokeStyle = colour(h);
        ctx.setLineDash(dash(h));
        ctx.stroke(p);
        ctx.setLineDash([]);
        ctx.fillStyle = "#111";
        ctx.fillText(headName(h), x + 30, y);
      }
    }
    /** @param {Painter} ctx @param {Size} size @param {Area} win */
    function drawHead(ctx, size, win) {
      const g = headGeometry(), { r, lab, sp } = g, f = inSpan(state.focus, sp) ? state.focus : null;
      /** @param {number} ya @param {number} yb */
      const seen = (ya, yb) => Math.min(ya, yb) < win.y1 + ROW && Math.max(ya, yb) > win.y0 - ROW; // crosses the window
      title(ctx, size);
      drawLegend(ctx, g);
      const heads = shownHeads();
      const shade = f ? focusWeights(f, heads, sp) : null; // mean weight of each shown token of the other side
      // Unfocused, a line's opacity is its weight (on the colour scale); focused on one token, it is the weight
      // relative to the token's largest, so that the 512 faint lines of a long input stay visible.
      const top = shade ? Math.max(...shade, 1 / LEVELS) : 1, minCode = shade ? 1 : LINE_MIN_CODE;
      ctx.lineWidth = 1.5;
      for (const h of heads) {
        const m = matrix(state.rec, h);
        /** @type {Map<number, Path2D | SvgPath>} */
        const paths = new Map(); // alpha bucket -> path
        const iFrom = f && f.side === "q" ? f.i : sp.q0, iTo = f && f.side === "q" ? f.i + 1 : sp.q1;
        const jFrom = f && f.side === "k" ? f.i : sp.k0, jTo = f && f.side === "k" ? f.i + 1 : sp.k1;
        for (let i = iFrom; i < iTo; i++) {
          const yi = rowY(g, "q", i);
          for (let j = jFrom; j < jTo; j++) {
            const c = Math.round(tone(state.scale, m[i * r.k + j] / top) * LEVELS), yj = rowY(g, "k", j);
            if (c < minCode || !seen(yi, yj)) continue;
            const b = (c + 4) >> 3;
            let p = paths.get(b);
            if (!p) paths.set(b, (p = ctx.newPath ? ctx.newPath() : new Path2D()));
            p.moveTo(g.x1, yi);
            p.lineTo(g.x2, yj);
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
      /** @type {[Side, string[], number, CanvasTextAlign, number[], number][]} */
      const sides = [["q", lab.q, g.x1 - 6, "right", matches(r.query_tokens), sp.q0], ["k", lab.k, g.x2 + 6, "left", matches(r.key_tokens), sp.k0]];
      for (const [side, toks, x, align, found, from] of sides) {
        ctx.textAlign = align;
        const hits = new Set(found), to = side === "q" ? sp.q1 : sp.k1;
        for (let i = from; i < to; i++) {
          const y = rowY(g, side, i);
          if (!seen(y, y)) continue;
          const focused = !!f && f.side === side && f.i === i;
          const weight = shade && f && f.side !== side ? tone(state.scale, shade[i - from] / top) : 0;
          const bx = align === "right" ? x - lab.width - 2 : x - 2, by = y - ROW / 2 + 1;
          if (focused || weight > 0) {
            ctx.fillStyle = focused ? FOCUS_FILL : "#88CCEE";
            ctx.globalAlpha = focused ? 1 : Math.min(1, weight);
            ctx.fillRect(bx, by, lab.width + 4, ROW - 2);
            ctx.globalAlpha = 1;
          }
          if (hits.has(i)) {
            ctx.strokeStyle = MATCH_COLOUR;
            ctx.lineWidth = 2;
            ctx.strokeRect(bx, by, lab.width + 4, ROW - 2);
          }
          ctx.font = focused ? BOLD : FONT;
          ctx.fillStyle = "#111";
          ctx.fillText(toks[i], x, y);
          placed.push({ axis: side, i, at: y, bold: focused });
        }
      }
    }
    /** @param {number} x @param {number} y @returns {Focus | null} */
    function hitHead(x, y) {
      const g = headGeometry(), row = Math.floor((y - g.top) / ROW);
      if (row < 0) return null;
      if (x < g.x1 + 20 && row < g.sp.q1 - g.sp.q0) return { side: "q", i: g.sp.q0 + row }; // the label or the first stretch of its lines
      if (x > g.x2 - 20 && row < g.sp.k1 - g.sp.k0) return { side: "k", i: g.sp.k0 + row };
      return null;
    }
    /**
     * The focused token's weights to each shown token of the other side, mean of `heads`.
     * @param {Focus} f
     * @param {number[]} heads
     * @param {Span} sp
     */
    function focusWeights(f, heads, sp) {
      const r = RECORDS[state.rec], from = f.side === "q" ? sp.k0 : sp.q0, sum = new Float32Array(f.side === "q" ? sp.k1 - sp.k0 : sp.q1 - sp.q0);
      for (const h of heads) {
        const m = matrix(state.rec, h);
        for (let j = 0; j < sum.length; j++) sum[j] += (f.side === "q" ? m[f.i * r.k + from + j] : m[(from + j) * r.k + f.i]) / heads.length;
      }
      return sum;
    }
    function searchStatus() {
      const r = RECORDS[state.rec], s = span(state.rec);
      const q = matches(r.query_tokens).filter((i) => i >= s.q0 && i < s.q1), k = matches(r.key_tokens).filter((i) => i >= s.k0 && i < s.k1);
      const list = (/** @type {number[]} */ a) => a.slice(0, 8).join(", ") + (a.length > 8 ? ", …" : "");
      if (!q.length && !k.length) return `No shown token contains ${quote(state.search)}.`;
      return `${quote(state.search)}: ${q.length} query token(s) (${list(q)}), ${k.length} key token(s) (${list(k)}); Enter in the search box goes to the next.`;
    }
    function describeFocus() {
      const sp = span(state.rec), f = inSpan(state.focus, sp) ? state.focus : null, r = RECORDS[state.rec];
      if (!f) return state.search.trim() ? searchStatus() : "Hover or click a token to see only its attention; arrow keys move between tokens.";
      const heads = shownHeads();
      if (!heads.length) return "No head is shown: click a head number.";
      const other = f.side === "q" ? r.key_tokens : r.query_tokens, sum = focusWeights(f, heads, sp), from = f.side === "q" ? sp.k0 : sp.q0;
      const top = [...sum.keys()].sort((a, b) => sum[b] - sum[a]).slice(0, 3).map((j) => `${quote(other[from + j])} ${sum[j].toFixed(3)}`);
      const token = (f.side === "q" ? r.query_tokens : r.key_tokens)[f.i];
      return `${f.side === "q" ? "Query" : "Key"} ${f.i} ${quote(token)} ${f.side === "q" ? "attends most to" : "is attended most by"} ${top.join(", ")}` +
        (heads.length > 1 ? " (mean of the shown heads)" : "") + (state.sticky ? " · kept when the layer changes; Escape releases it" : "");
    }
    /** Head buttons that show and hide heads: click toggles one, double-click shows only it; all, none. */
    function headToggles() {
      const r = RECORDS[state.rec], buttons = [];
      /** @param {number} h @returns {(e: MouseEvent) => void} */
      const pick = (h) => (e) => {
        if (h < 0) state.mean = !state.mean;
        else if (e.detail === 2 || state.mean) { state.heads = new Set([h]); state.mean = false; } // double click: only this head
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
      help: "Lines join each query token (left) to the key tokens (right) it attends to; opacity is the weight on the colour scale (lines under 1.6 % are not drawn). " +
        "It starts with head 0: click a head to show or hide it, double-click to show only it, “all” for every head, “mean” for their mean. " +
        "On a focused token, opacity is relative to its largest weight. Hover a token to focus on it, click to keep the focus (it stays when the layer changes).",
      layerMenu: true,
      cellMenu: false,
      available: () => "",
      needs: () => [state.rec],
      geometry: headGeometry,
      draw: drawHead,
      caption: (r) => {
        const f = state.sticky && state.focus, toks = f && (f.side === "q" ? r.query_tokens : r.key_tokens);
        return `${layerOf(r)}, ` + (state.mean ? "mean of heads" : `heads ${shownHeads().join(", ") || "none"}`) +
          (f && toks ? `, lines of ${f.side === "q" ? "query" : "key"} ${f.i} ${quote(toks[f.i])}` : "");
      },
      file: () => `layer${RECORDS[state.rec].layer}-` + (state.mean ? "mean" : state.heads.size === RECORDS[state.rec].heads ? "all-heads" : `heads${shownHeads().join("-")}`),
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
        const sp = span(state.rec);
        /** @type {Focus} */
        const f = inSpan(state.focus, sp) && state.focus ? state.focus : { side: "q", i: sp.q0 - move[0] };
        /** @type {Side} */
        const side = move[1] ? (move[1] > 0 ? "k" : "q") : f.side, [a, b] = side === "q" ? [sp.q0, sp.q1] : [sp.k0, sp.k1];
        const i = a + clamp(f.i + move[0] - a, b - a);
        state.focus = { side, i };
        state.sticky = true;
        reveal(0, rowY(headGeometry(), side, i));
        return true;
      },
      seek(i) {
        state.focus = { side: "q", i };
        state.sticky = true;
        reveal(0, rowY(headGeometry(), "q", i));
        return true;
      },
      spot(t) {
        if (!("side" in t)) throw wrongTarget("head view", "tokens {side, i}", t);
        const g = headGeometry();
        return [t.side === "q" ? g.x1 - 12 : g.x2 + 12, rowY(g, t.side, t.i)];
      },
    };

    // ----- matrix view: heatmap of one head or the mean, keys along x, queries along y -------------
    function matrixGeometry() {
      const r = RECORDS[state.rec], lab = labels(state.rec), sp = span(state.rec), n = Math.max(sp.q1 - sp.q0, sp.k1 - sp.k0);
      const cell = Math.min(state.zoom, Math.floor(8192 / n)) || Math.max(1, Math.min(28, Math.floor(640 / n))); // at most 8192 px
      const left = PAD + lab.width + 6, w = Math.max(left + (sp.k1 - sp.k0) * cell + 110, MIN_W), top = titleHeight(w) + lab.width + 6;
      const bar = Math.min(200, Math.max(60, (sp.q1 - sp.q0) * cell)); // the colour bar's height; its scale's name goes under it
      return { r, lab, sp, cell, left, top, w, bar, h: top + Math.max((sp.q1 - sp.q0) * cell, bar + 22) + PAD };
    }
    /**
     * A (k x q) canvas of viridis colours of the shown tokens, on the colour scale, 0 to their largest weight.
     * @param {number} ri
     * @param {number} h
     * @param {Span} sp
     * @returns {{canvas: HTMLCanvasElement, max: number}}
     */
    function heatImage(ri, h, sp) {
      return cached(`i${ri}:${h}:${spanKey(sp)}:${state.scale}`, () => {
        const r = RECORDS[ri], m = matrix(ri, h), canvas = document.createElement("canvas"), nq = sp.q1 - sp.q0, nk = sp.k1 - sp.k0;
        canvas.width = nk;
        canvas.height = nq;
        const ctx = context2d(canvas), img = ctx.createImageData(nk, nq), px = new Uint32Array(img.data.buffer);
        let max = 0;
        for (let i = sp.q0; i < sp.q1; i++) for (let j = sp.k0; j < sp.k1; j++) max = Math.max(max, m[i * r.k + j]);
        for (let i = 0; i < nq; i++) {
          for (let j = 0; j < nk; j++) px[i * nk + j] = VIRIDIS32[Math.round(255 * tone(state.scale, max > 0 ? m[(sp.q0 + i) * r.k + sp.k0 + j] / max : 0))];
        }
        ctx.putImageData(img, 0, 0);
        return { canvas, max };
      });
    }
    /**
     * Token labels along one axis of the matrix: every `step`-th, plus the highlighted ones (hovered, search
     * matches) in bold on a white box; a label that would overlap a highlighted one is left out.
     * @param {Painter} ctx
     * @param {Side} axis
     * @param {string[]} toks
     * @param {[number, number]} shownRange  [from, to) token indices
     * @param {number[]} highlighted  in order of priority
     * @param {number} cell
     * @param {(t: string, at: number, bold: boolean) => void} place  draws label t centred at `at` along the axis
     * @param {[number, number]} visibleAt  the window along the axis, in the axis's coordinates
     */
    function axisLabels(ctx, axis, toks, shownRange, highlighted, cell, place, visibleAt) {
      const [from, to] = shownRange, step = Math.max(1, Math.ceil(LABEL_PX / cell)), at = (/** @type {number} */ i) => (i - from + 0.5) * cell;
      /** @type {number[]} */
      const bold = [];
      for (const i of highlighted) if (i >= from && i < to && bold.every((b) => Math.abs(at(b) - at(i)) >= LABEL_PX)) bold.push(i);
      const seen = (/** @type {number} */ i) => at(i) + cell / 2 > visibleAt[0] - LABEL_PX && at(i) - cell / 2 < visibleAt[1] + LABEL_PX;
      ctx.font = FONT;
      for (let i = from; i < to; i++) {
        if ((i - from) % step || !seen(i) || bold.some((b) => Math.abs(at(b) - at(i)) < LABEL_PX)) continue;
        place(toks[i], at(i), false);
        placed.push({ axis, i, at: at(i), bold: false });
      }
      ctx.font = BOLD;
      for (const i of bold) {
        if (!seen(i)) continue;
        place(toks[i], at(i), true);
        placed.push({ axis, i, at: at(i), bold: true });
      }
    }
    /** @param {Painter} ctx @param {Size} size @param {Area} win */
    function drawMatrix(ctx, size, win) {
      const g = matrixGeometry(), { r, lab, sp, cell } = g, hov = exporting ? null : state.cell;
      title(ctx, size);
      const heat = heatImage(state.rec, state.head, sp), nq = sp.q1 - sp.q0, nk = sp.k1 - sp.k0;
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(heat.canvas, g.left, g.top, nk * cell, nq * cell);
      ctx.fillStyle = "#111";
      ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      const hq = [...(hov ? [hov.i] : []), ...matches(r.query_tokens)], hk = [...(hov ? [hov.j] : []), ...matches(r.key_tokens)];
      axisLabels(ctx, "q", lab.q, [sp.q0, sp.q1], hq, cell, (t, at, bold) => (bold ? boxedText(ctx, t, g.left - 4, g.top + at) : ctx.fillText(t, g.left - 4, g.top + at)),
        [win.y0 - g.top, win.y1 - g.top]);
      ctx.save();
      ctx.translate(g.left, g.top - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      axisLabels(ctx, "k", lab.k, [sp.k0, sp.k1], hk, cell, (t, at, bold) => (bold ? boxedText(ctx, t, 0, at) : ctx.fillText(t, 0, at)),
        [win.x0 - g.left, win.x1 - g.left]);
      ctx.restore();
      if (hov && hov.i >= sp.q0 && hov.i < sp.q1 && hov.j >= sp.k0 && hov.j < sp.k1) { // a black and a white ring: visible on every colour
        ctx.lineWidth = 2;
        /** @type {[string, number][]} */
        const rings = [["#000", 2], ["#fff", 0]];
        for (const [c, d] of rings) {
          ctx.strokeStyle = c;
          ctx.strokeRect(g.left + (hov.j - sp.k0) * cell - 1 - d, g.top + (hov.i - sp.q0) * cell - 1 - d, cell + 2 + 2 * d, cell + 2 + 2 * d);
        }
      }
      const bx = g.left + nk * cell + 16, bh = g.bar; // colour bar
      for (let y = 0; y < bh; y++) {
        const c = VIRIDIS[Math.round((255 * (bh - 1 - y)) / (bh - 1))];
        ctx.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`;
        ctx.fillRect(bx, g.top + y, 12, 1);
      }
      ctx.font = FONT;
      ctx.fillStyle = "#111";
      ctx.textAlign = "left";
      ctx.fillText(heat.max.toFixed(3), bx + 16, g.top + 4);
      ctx.fillText((heat.max * untone(state.scale, 0.5)).toPrecision(2), bx + 16, g.top + bh / 2);
      ctx.fillText(state.scale === "log" ? `≤${(heat.max / 10 ** LOG_DECADES).toPrecision(1)}` : "0", bx + 16, g.top + bh - 4);
      ctx.fillText(state.scale, bx, g.top + bh + 14);
    }
    /** @param {number} x @param {number} y @returns {Cell | null} */
    function hitMatrix(x, y) {
      const g = matrixGeometry(), i = Math.floor((y - g.top) / g.cell), j = Math.floor((x - g.left) / g.cell);
      return i >= 0 && j >= 0 && i < g.sp.q1 - g.sp.q0 && j < g.sp.k1 - g.sp.k0 ? { i: g.sp.q0 + i, j: g.sp.k0 + j } : null;
    }
    function describeCell() {
      const c = state.cell, r = RECORDS[state.rec];
      if (!c) return state.search.trim() ? searchStatus() : "Hover a cell for its exact weight; arrow keys move the cell.";
      const v = matrix(state.rec, state.head)[c.i * r.k + c.j];
      statusLine.dataset.value = String(v);
      return `Query ${c.i} ${quote(r.query_tokens[c.i])} → key ${c.j} ${quote(r.key_tokens[c.j])}: ` +
        `${v.toFixed(4)} (±${MAX_ERROR.toFixed(4)}, ${headName(state.head)})`;
    }
    /** Head buttons that choose the one head drawn (or the mean). @param {boolean} withMean */
    function headChoice(withMean = true) {
      const r = RECORDS[state.rec], buttons = [];
      /** @param {number} h */
      const pick = (h) => () => { state.head = h; render(); };
      if (withMean) buttons.push(headButton("mean", state.head < 0, pick(-1), -1));
      for (let h = 0; h < r.heads; h++) buttons.push(headButton(String(h), state.head === h || (!withMean && state.head < 0 && !h), pick(h), h));
      return buttons;
    }
    /** @type {View} */
    const MATRIX_VIEW = {
      label: "Matrix view",
      help: "Rows are queries, columns keys; colour is the weight (viridis, 0 to the largest weight shown, on the colour scale). " +
        `Values are stored in 8 bits: each is within ±${MAX_ERROR.toFixed(4)} of the captured weight.`,
      layerMenu: true,
      cellMenu: true,
      available: () => "",
      needs: () => [state.rec],
      geometry: matrixGeometry,
      draw: drawMatrix,
      caption: (r) => `${layerOf(r)}, ${headName(state.head)}`,
      file: () => `layer${RECORDS[state.rec].layer}-${state.head < 0 ? "mean" : "head" + state.head}`,
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
        const sp = span(state.rec), c = state.cell || { i: sp.q0, j: sp.k0 };
        state.cell = { i: sp.q0 + clamp(c.i + move[0] - sp.q0, sp.q1 - sp.q0), j: sp.k0 + clamp(c.j + move[1] - sp.k0, sp.k1 - sp.k0) };
        const [x, y] = MATRIX_VIEW.spot(state.cell);
        reveal(x, y);
        return true;
      },
      seek(i) {
        const sp = span(state.rec);
        state.cell = { i, j: state.cell ? state.cell.j : sp.k0 };
        const [x, y] = MATRIX_VIEW.spot(state.cell);
        reveal(x, y);
        return true;
      },
      spot(t) {
        if (!("j" in t)) throw wrongTarget("matrix view", "cells {i, j}", t);
        const g = matrixGeometry();
        return [g.left + (t.j - g.sp.k0 + 0.5) * g.cell, g.top + (t.i - g.sp.q0 + 0.5) * g.cell];
      },
    };

    // ----- model view: every layer x head of the selected kind as a thumbnail ----------------------
    function modelGeometry() {
      const recs = recordsOf(state.kind), heads = Math.max(...recs.map((i) => RECORDS[i].heads));
      const noted = recs.some((ri) => notes(ri, 0)), pitch = THUMB + 8 + (noted ? LINE_H : 0);
      const w = Math.max(PAD + 40 + heads * (THUMB + 8) + PAD, MIN_W), left = PAD + 40, top = titleHeight(w) + 18;
      return { recs, heads, left, top, pitch, noted, w, h: top + recs.length * pitch + PAD };
    }
    /**
     * Head h of record ri over the shown tokens, max-pooled to at most THUMB x THUMB, on the colour scale
     * from 0 to the head's largest weight.
     * @param {number} ri
     * @param {number} h
     * @returns {HTMLCanvasElement}
     */
    function thumbnail(ri, h) {
      const sp = span(ri);
      return cached(`t${ri}:${h}:${spanKey(sp)}:${state.scale}`, () => {
        const r = RECORDS[ri], m = matrix(ri, h), nq = sp.q1 - sp.q0, nk = sp.k1 - sp.k0, th = Math.min(nq, THUMB), tw = Math.min(nk, THUMB);
        const pooled = new Float32Array(th * tw);
        for (let i = 0; i < nq; i++) {
          const row = Math.floor((i * th) / nq) * tw;
          for (let j = 0; j < nk; j++) {
            const o = row + Math.floor((j * tw) / nk), v = m[(sp.q0 + i) * r.k + sp.k0 + j];
            if (v > pooled[o]) pooled[o] = v;
          }
        }
        let max = 0;
        for (const v of pooled) max = Math.max(max, v);
        const canvas = document.createElement("canvas");
        canvas.width = tw;
        canvas.height = th;
        const ctx = context2d(canvas), img = ctx.createImageData(tw, th), px = new Uint32Array(img.data.buffer);
        pooled.forEach((v, o) => (px[o] = VIRIDIS32[max > 0 ? Math.round(255 * tone(state.scale, v / max)) : 0]));
        ctx.putImageData(img, 0, 0);
        return canvas;
      });
    }
    /** @param {Painter} ctx @param {Size} size */
    function drawModel(ctx, size) {
      const g = modelGeometry(), hov = exporting ? null : state.hover;
      title(ctx, size);
      ctx.font = FONT;
      ctx.fillStyle = "#111";
      ctx.textBaseline = "middle";
      ctx.textAlign = "center";
      for (let h = 0; h < g.heads; h++) ctx.fillText(`H${h}`, g.left + h * (THUMB + 8) + THUMB / 2, g.top - 9);
      ctx.imageSmoothingEnabled = false;
      g.recs.forEach((ri, row) => {
        const y = g.top + row * g.pitch;
        ctx.textAlign = "right";
        ctx.fillStyle = "#111";
        ctx.fillText(`L${RECORDS[ri].layer}`, g.left - 8, y + THUMB / 2);
        for (let h = 0; h < RECORDS[ri].heads; h++) {
          const t = thumbnail(ri, h), s = THUMB / Math.max(t.width, t.height), x = g.left + h * (THUMB + 8);
          ctx.drawImage(t, x, y, t.width * s, t.height * s);
          const n = notes(ri, h);
          if (n && n.label) {
            ctx.textAlign = "center";
            ctx.fillStyle = "#333";
            ctx.fillText(fit(n.label, THUMB + 6), x + THUMB / 2, y + THUMB + 2 + LINE_H / 2);
          }
          /** @type {[Cursor | null, string][]} */
          const marks = [[state.cursor, "#F0E442"], [hov, "#0072B2"]];
          for (const [c, ink] of marks) {
            if (!c || c.row !== row || c.col !== h) continue;
            ctx.strokeStyle = ink;
            ctx.lineWidth = 3;
            ctx.strokeRect(x - 2, y - 2, THUMB + 4, THUMB + 4);
          }
        }
      });
    }
    /** @param {number} x @param {number} y @returns {Cursor | null} */
    function hitModel(x, y) {
      const g = modelGeometry(), row = Math.floor((y - g.top) / g.pitch), col = Math.floor((x - g.left) / (THUMB + 8));
      const inside = (x - g.left) % (THUMB + 8) < THUMB && (y - g.top) % g.pitch < THUMB;
      return inside && row >= 0 && col >= 0 && row < g.recs.length && col < RECORDS[g.recs[row]].heads ? { row, col } : null;
    }
    /** @param {Cursor} c  the thumbnail to open in the matrix view */
    function openThumb(c) {
      Object.assign(state, { rec: modelGeometry().recs[c.row], head: c.col, view: "matrix", cell: null, cursor: c, hover: null });
    }
    /** @param {Cursor} c @param {string} what */
    function describeThumb(c, what) {
      const ri = modelGeometry().recs[c.row], n = notes(ri, c.col);
      return `Layer ${RECORDS[ri].layer}, head ${c.col}${n ? " — " + notesText(n) : ""}: ${what}`;
    }
    /** @type {View} */
    const MODEL_VIEW = {
      label: "Model view",
      help: "Each thumbnail is one head (rows: layers, columns: heads), scaled to its own largest weight on the colour scale. " +
        "Hover one to name it (with its label and metrics when the trace carries them); click one, or use the arrow keys and Enter, to open it.",
      layerMenu: false,
      cellMenu: false,
      available: () => "",
      needs: () => recordsOf(state.kind),
      geometry: modelGeometry,
      draw: drawModel,
      caption: (r) => `all layers × heads of ${KIND_NAMES[r.kind]}`,
      file: () => "all-layers",
      status: () => (state.hover ? describeThumb(state.hover, "click to open it.") : describeThumb(state.cursor, "selected, Enter opens it.")),
      heads: () => [],
      hover(x, y) {
        const c = hitModel(x, y);
        if (same(c, state.hover)) return false;
        state.hover = c;
        return true;
      },
      leave() {
        if (!state.hover) return false;
        state.hover = null;
        return true;
      },
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
      seek: () => false,
      spot(t) {
        if (!("row" in t)) throw wrongTarget("model view", "thumbnails {row, col}", t);
        const g = modelGeometry();
        return [g.left + t.col * (THUMB + 8) + THUMB / 2, g.top + t.row * g.pitch + THUMB / 2];
      },
    };

    // ----- neuron view: the query and key vectors and the q·k terms behind one weight --------------
    const neuronHead = () => Math.max(0, state.head);
    function neuronGeometry() {
      const r = RECORDS[state.rec], lab = labels(state.rec), sp = span(state.rec), d = r.qk ? r.qk.d : 0;
      const cw = Math.max(2, Math.min(8, Math.floor(256 / Math.max(1, d)))), vw = d * cw, col = Math.max(vw, 140);
      const lw = Math.max(lab.width, 56), xq = PAD + lw, xk = xq + 40 + lw, xv = xk + 10, xp = xv + col + 20, xs = xp + col + 20, xw = xs + 70;
      const w = Math.max(xw + 150, 720), top = titleHeight(w), rows = Math.max(sp.q1 - sp.q0, sp.k1 - sp.k0);
      return { r, lab, sp, d, cw, vw, xq, xk, xv, xp, xs, xw, w, top, body: top + 3 * ROW, h: top + 3 * ROW + rows * ROW + PAD };
    }
    /**
     * Query i's vector, key vectors, their products and scaled dot products, and the softmax of the row (causal
     * records mask the keys after the query), for head h of the shown record.
     * @param {number} i
     * @param {number} h
     */
    function neuron(i, h) {
      return cached(`n${state.rec}:${h}:${i}`, () => {
        const r = RECORDS[state.rec], v = vectors[state.rec], d = r.qk ? r.qk.d : 0;
        if (!v) throw new Error(`attnlab viewer: record ${state.rec} has no query and key vectors`);
        const q = v.q.subarray((h * r.q + i) * d, (h * r.q + i + 1) * d);
        /** @param {number} j */
        const key = (j) => v.k.subarray((h * r.k + j) * d, (h * r.k + j + 1) * d);
        const scores = new Float64Array(r.k), allowed = (/** @type {number} */ j) => r.kind !== "causal" || j <= i + r.k - r.q;
        let top = -Infinity;
        for (let j = 0; j < r.k; j++) {
          const kj = key(j);
          let s = 0;
          for (let c = 0; c < d; c++) s += q[c] * kj[c];
          scores[j] = s / Math.sqrt(d);
          if (allowed(j)) top = Math.max(top, scores[j]);
        }
        const soft = new Float64Array(r.k);
        let total = 0;
        for (let j = 0; j < r.k; j++) total += soft[j] = allowed(j) ? Math.exp(scores[j] - top) : 0;
        for (let j = 0; j < r.k; j++) soft[j] /= total || 1;
        return { q, key, scores, soft };
      });
    }
    /** @param {Painter} ctx @param {Size} size @param {Area} win */
    function drawNeuron(ctx, size, win) {
      const g = neuronGeometry(), { r, lab, sp, d, cw } = g, h = neuronHead();
      title(ctx, size);
      ctx.textBaseline = "middle";
      ctx.font = FONT;
      ctx.fillStyle = "#111";
      if (!r.qk) {
        ctx.textAlign = "left";
        ctx.fillText(NEURON_VIEW.available() || "This record has no query and key vectors: capture it with capture(model, qk=True).", PAD, g.top + ROW);
        return;
      }
      const f = state.focus && state.focus.side === "q" && inSpan(state.focus, sp) ? state.focus : null;
      const rowAt = (/** @type {number} */ n) => g.body + n * ROW + ROW / 2, seen = (/** @type {number} */ y) => y > win.y0 - ROW && y < win.y1 + ROW;
      ctx.textAlign = "left";
      /** @type {[number, string][]} */
      const heads = [[g.xv, `key vector k (${d})`], [g.xp, "q × k, term by term"], [g.xs, "q·k / √d"], [g.xw, "weight (softmax)"]];
      for (const [x, t] of heads) ctx.fillText(t, x, g.top + ROW / 2);
      ctx.textAlign = "right";
      ctx.fillText("queries", g.xq, g.top + ROW / 2);
      ctx.fillText("keys", g.xk, g.top + ROW / 2);
      const hov = exporting ? null : state.cell;
      for (let i = sp.q0; i < sp.q1; i++) { // query labels, left
        const y = rowAt(i - sp.q0);
        if (!seen(y)) continue;
        const focused = !!f && f.i === i;
        if (focused) { ctx.fillStyle = FOCUS_FILL; ctx.fillRect(g.xq - lab.width - 2, y - ROW / 2 + 1, lab.width + 4, ROW - 2); }
        ctx.fillStyle = "#111";
        ctx.font = focused ? BOLD : FONT;
        ctx.fillText(lab.q[i], g.xq, y);
        placed.push({ axis: "q", i, at: y, bold: focused });
      }
      ctx.font = FONT;
      for (let j = sp.k0; j < sp.k1; j++) { // key labels
        const y = rowAt(j - sp.k0);
        if (!seen(y)) continue;
        const bold = !!hov && hov.j === j;
        ctx.font = bold ? BOLD : FONT;
        ctx.fillStyle = "#111";
        ctx.fillText(lab.k[j], g.xk, y);
        placed.push({ axis: "k", i: j, at: y, bold });
      }
      ctx.font = FONT;
      if (!f) {
        ctx.textAlign = "left";
        ctx.fillText("Hover or click a query token (left) to see its vector and the q·k terms behind each of its weights.", g.xv, g.top + 1.5 * ROW);
        return;
      }
      const n = neuron(f.i, h), m = matrix(state.rec, h);
      let vmax = 1e-9, pmax = 1e-9, wmax = 1e-9;
      for (let c = 0; c < d; c++) vmax = Math.max(vmax, Math.abs(n.q[c]));
      for (let j = sp.k0; j < sp.k1; j++) {
        const kj = n.key(j);
        for (let c = 0; c < d; c++) { vmax = Math.max(vmax, Math.abs(kj[c])); pmax = Math.max(pmax, Math.abs(n.q[c] * kj[c])); }
        wmax = Math.max(wmax, m[f.i * r.k + j]);
      }
      ctx.textAlign = "right";
      ctx.fillText(`q of ${fit(r.query_tokens[f.i], LABEL_MAX)}`, g.xv - 6, g.top + 1.5 * ROW);
      for (let c = 0; c < d; c++) { ctx.fillStyle = diverging(n.q[c] / vmax); ctx.fillRect(g.xv + c * cw, g.top + ROW + 3, cw, ROW - 6); }
      ctx.textAlign = "left";
      for (let j = sp.k0; j < sp.k1; j++) {
        const y = rowAt(j - sp.k0);
        if (!seen(y)) continue;
        const kj = n.key(j), wt = m[f.i * r.k + j];
        for (let c = 0; c < d; c++) {
          ctx.fillStyle = diverging(kj[c] / vmax);
          ctx.fillRect(g.xv + c * cw, y - ROW / 2 + 2, cw, ROW - 4);
          ctx.fillStyle = diverging((n.q[c] * kj[c]) / pmax);
          ctx.fillRect(g.xp + c * cw, y - ROW / 2 + 2, cw, ROW - 4);
        }
        ctx.fillStyle = "#111";
        ctx.fillText(n.scores[j].toFixed(2), g.xs, y);
        ctx.fillStyle = colour(h);
        ctx.fillRect(g.xw, y - 5, Math.max(0.5, 80 * tone(state.scale, wt / wmax)), 10);
        ctx.fillStyle = "#111";
        ctx.fillText(wt.toFixed(3), g.xw + 86, y);
      }
      if (hov && hov.j >= sp.k0 && hov.j < sp.k1) {
        ctx.strokeStyle = "#000";
        ctx.lineWidth = 1.5;
        ctx.strokeRect(g.xk - lab.width - 2, rowAt(hov.j - sp.k0) - ROW / 2, g.xw + 130 - g.xk + lab.width, ROW);
      }
    }
    /** @param {number} x @param {number} y @returns {Focus | Cell | null} */
    function hitNeuron(x, y) {
      const g = neuronGeometry(), n = Math.floor((y - g.body) / ROW);
      if (n < 0) return null;
      if (x < g.xq + 20) return n < g.sp.q1 - g.sp.q0 ? { side: "q", i: g.sp.q0 + n } : null;
      const f = state.focus;
      if (x > g.xk - g.lab.width && f && f.side === "q" && n < g.sp.k1 - g.sp.k0) return { i: f.i, j: g.sp.k0 + n };
      return null;
    }
    function describeNeuron() {
      const r = RECORDS[state.rec], c = state.cell, h = neuronHead(), f = state.focus;
      if (!r.qk) return NEURON_VIEW.available() || "This record has no query and key vectors.";
      if (!f || f.side !== "q") return "Hover or click a query token (left), then hover a key for the terms of its weight.";
      if (!c || c.i !== f.i) return `Query ${f.i} ${quote(r.query_tokens[f.i])}, head ${h}: hover a key for q·k and its weight.`;
      const n = neuron(c.i, h), d = r.qk.d, w = matrix(state.rec, h)[c.i * r.k + c.j], kj = n.key(c.j);
      let dot = 0;
      const terms = [...n.q].map((v, t) => v * kj[t]);
      for (const t of terms) dot += t;
      const big = terms.map((t, i) => [i, t]).sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])).slice(0, 3).map(([i, t]) => `q[${i}]k[${i}] ${t.toFixed(2)}`);
      statusLine.dataset.value = String(n.scores[c.j]);
      return `Query ${c.i} ${quote(r.query_tokens[c.i])} · key ${c.j} ${quote(r.key_tokens[c.j])}, head ${h}: q·k = ${dot.toFixed(3)} ` +
        `(largest terms ${big.join(", ")}), ÷ √${d} = ${n.scores[c.j].toFixed(3)}; softmax ${n.soft[c.j].toFixed(4)}, captured weight ${w.toFixed(4)} (±${MAX_ERROR.toFixed(4)})`;
    }
    /** @type {View} */
    const NEURON_VIEW = {
      label: "Neuron view",
      help: "For one query token (click it, left) and one head: its query vector q, each key's vector k, their term-by-term products " +
        "(blue negative, red positive; each block scaled to its largest magnitude), q·k/√d and the weight. Hover a key for the numbers. Vectors are stored as float16.",
      layerMenu: true,
      cellMenu: false,
      available: () => (RECORDS.some((r) => r.qk) ? "" : "this trace has no query and key vectors: capture it with capture(model, qk=True)"),
      needs: () => [state.rec],
      geometry: neuronGeometry,
      draw: drawNeuron,
      caption: (r) => {
        const f = state.focus && state.focus.side === "q" ? state.focus : null;
        return `${layerOf(r)}, head ${neuronHead()}` + (f ? `, query ${f.i} ${quote(r.query_tokens[f.i])}` : "");
      },
      file: () => `layer${RECORDS[state.rec].layer}-head${neuronHead()}` + (state.focus && state.focus.side === "q" ? `-query${state.focus.i}` : ""),
      status: describeNeuron,
      heads: () => headChoice(false),
      hover(x, y) {
        const t = hitNeuron(x, y);
        if (t && "side" in t) {
          if (state.sticky || same(t, state.focus)) return false;
          state.focus = t;
          state.cell = null;
          return true;
        }
        if (same(t, state.cell)) return false;
        state.cell = t;
        return true;
      },
      leave() {
        const had = !!state.cell || (!state.sticky && !!state.focus);
        state.cell = null;
        if (!state.sticky) state.focus = null;
        return had;
      },
      click(x, y) {
        const t = hitNeuron(x, y);
        if (!t || !("side" in t)) return false;
        state.sticky = !(state.sticky && same(t, state.focus));
        state.focus = t;
        return true;
      },
      key(_, move) {
        if (!move) return false;
        const sp = span(state.rec), f = state.focus && state.focus.side === "q" ? state.focus : { side: "q", i: sp.q0 - move[0] };
        if (move[1] || state.cell) {
          const c = state.cell || { i: f.i, j: sp.k0 - move[0] };
          state.cell = { i: f.i, j: sp.k0 + clamp(c.j + move[0] - sp.k0, sp.k1 - sp.k0) };
          return true;
        }
        state.focus = { side: "q", i: sp.q0 + clamp(f.i + move[0] - sp.q0, sp.q1 - sp.q0) };
        state.sticky = true;
        return true;
      },
      seek(i) {
        state.focus = { side: "q", i };
        state.sticky = true;
        state.cell = null;
        const [x, y] = NEURON_VIEW.spot(state.focus);
        reveal(x, y);
        return true;
      },
      spot(t) {
        const g = neuronGeometry();
        if ("side" in t) return [g.xq - 12, g.body + (t.i - g.sp.q0) * ROW + ROW / 2];
        if ("j" in t) return [g.xs + 10, g.body + (t.j - g.sp.k0) * ROW + ROW / 2];
        throw wrongTarget("neuron view", "query tokens {side: 'q', i} or keys {i, j}", t);
      },
    };

    // The views, in the order of their tabs. A new view is one entry here (a View: see its type above).
    /** @type {Readonly<Record<string, View>>} */
    const VIEWS = { head: HEAD_VIEW, model: MODEL_VIEW, matrix: MATRIX_VIEW, neuron: NEURON_VIEW };
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

    // ----- page ------------------------------------------------------------------------------------
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
    root.replaceChildren();
    const header = el("header");
    header.append(el("h1", {}, heading));
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
    const kindSelect = menu("attention kind", kinds.map((k) => [k, KIND_NAMES[k]]));
    const recSelect = menu("layer", []);
    const zoomSelect = menu("cell size", [["0", "fit"], ...[2, 4, 8, 12, 16, 24].map((z) => /** @type {[string, string]} */ ([String(z), `${z} px`]))]);
    zoomSelect.addEventListener("change", () => { state.zoom = Number(zoomSelect.value); render(); });
    const scaleSelect = menu("colour scale", /** @type {[Scale, string][]} */ (Object.entries(SCALE_NAMES)));
    scaleSelect.addEventListener("change", () => { state.scale = /** @type {Scale} */ (scaleSelect.value); render(); });
    const pairSelect = menu("sentence pair", /** @type {[Pair, string][]} */ (Object.entries(PAIR_NAMES)));
    pairSelect.addEventListener("change", () => { state.pair = /** @type {Pair} */ (pairSelect.value); render(); });
    const rangeInput = el("input", { type: "text", "aria-label": "token range", placeholder: "all, or 100:160", size: "10", spellcheck: "false" });
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
    const searchInput = el("input", { type: "search", "aria-label": "find token", placeholder: "find token", size: "12", spellcheck: "false" });
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
    const zoomLabel = labelled("cell", zoomSelect), pairLabel = labelled("pair", pairSelect);
    const headBar = el("div", { class: "heads", role: "group", "aria-label": "heads" });
    const exportBar = el("div", { class: "export" });
    const pngScale = menu("PNG resolution", [["1", "1×"], ["2", "2×"], ["4", "4×"]]);
    pngScale.value = "2";
    const pngButton = el("button", { type: "button" }, "Save PNG"), svgButton = el("button", { type: "button" }, "Save SVG");
    exportBar.append(pngButton, pngScale, svgButton);
    const controls = el("div", { class: "controls" });
    /** @param {string} text @param {HTMLElement} control */
    function labelled(text, control) { const l = el("label", {}, text + " "); l.append(control); return l; }
    const filters = el("div", { class: "controls filters" });
    filters.append(labelled("tokens", rangeInput), pairLabel, labelled("colour", scaleSelect), labelled("find", searchInput));
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
    root.append(header, controls, filters, headBar, statusLine, frame, help);
    info.textContent = Object.entries(DATA.meta).map(([k, v]) => `${k}: ${v}`).join(" · ") || "no metadata";
    pairLabel.hidden = !hasPairs;

    kindSelect.addEventListener("change", () => {
      const recs = recordsOf(kindSelect.value);
      Object.assign(state, { kind: kindSelect.value, rec: recs[0], focus: null, sticky: false, cell: null, hover: null });
      state.heads = new Set([0]);
      state.mean = false;
      render();
    });
    recSelect.addEventListener("change", () => { toRecord(Number(recSelect.value)); render(); });
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
    function syncControls() {
      const view = currentView();
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
        const why = VIEWS[v].available();
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
      placed = [];
      view.draw(ctx, size, { x0, y0, x1: x0 + w, y1: y0 + h });
      lastPlaced = placed;
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

    // ----- export: the whole drawing, its full caption and legend, nothing transient ----------------
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
      placed = [];
      Object.assign(state, { focus: state.sticky ? state.focus : null, cell: null, hover: null });
      exporting = true;
      try {
        const size = view.geometry();
        view.draw(ctx, size, { x0: 0, y0: 0, x1: size.w, y1: size.h });
        return size;
      } finally {
        exporting = false;
        Object.assign(state, saved);
      }
    }
    /** The export's size at the chosen PNG resolution, lowered where the browser could not encode it. */
    function pngResolution() {
      const keep = { focus: state.focus, cell: state.cell, hover: state.hover };
      Object.assign(state, { focus: state.sticky ? state.focus : null, cell: null, hover: null });
      const size = currentView().geometry();
      Object.assign(state, keep);
      const wanted = Number(pngScale.value);
      let s = wanted;
      while (s > 1 && (Math.max(size.w, size.h) * s > MAX_CANVAS || size.w * size.h * s * s > MAX_PIXELS)) s /= 2;
      return { wanted, s, size };
    }
    pngButton.addEventListener("click", () => {
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
        statusLine.textContent = `Saved ${name}, ${out.width} × ${out.height} pixels` +
          (s < wanted ? ` (${wanted}× would pass the browser's ${MAX_CANVAS}-pixel limit)` : "") + ".";
      }, "image/png");
    });
    svgButton.addEventListener("click", () => {
      const size = currentView().geometry(), svg = new SvgContext(size.w, size.h);
      drawForExport(svg);
      download(new Blob([svg.toString()], { type: "image/svg+xml" }), fileName() + ".svg");
    });

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

  // ----- the page: one viewer, or two side by side with linked controls -----------------------------
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
