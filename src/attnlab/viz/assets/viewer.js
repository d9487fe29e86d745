// attnlab attention viewer: head view, model view, matrix view and neuron view of one AttentionTrace, or of
// two traces side by side. Plain JavaScript, no dependencies, no network. The data is the JSON block
// #attnlab-data written by attnlab/viz/html.py: per record, uint8 codes (weight = code / levels)
// gzip-compressed and base64-encoded, and, when captured, float16 query and key vectors.
// Tokens and metadata are user text: they are rendered only with textContent and canvas fillText.
//
// The script is several files, one job each, that html.py joins in a fixed order (SCRIPTS there) inside one
// strict-mode function, so what one file declares at its top level the next ones see and the page does not:
//   viewer.js          the types, constants and drawing helpers every view shares (this file)
//   views/head.js, views/model.js, views/matrix.js, views/neuron.js
//                      one view each: a function of the pane (a Pane) that returns the view (a View)
//   viewer/store.js    one viewer's data: records decoded on demand, a cache of matrices
//   viewer/controls.js one viewer's page elements (no behaviour)
//   viewer/pane.js     one viewer: its first view, captions, exports, and mount(): state, views, drawing loop, API
//   viewer/page.js     the page: one viewer, or two side by side with linked controls
// Types are JSDoc, checked by `make lint` (tsc --checkJs, strict, over every file; tsconfig.json at the
// repository root).

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
 * @property {FirstView} [first]  the view it opens on (attnlab/viz/_first.py; files written before it have none)
 */
/**
 * @typedef {Object} FirstView  what every surface shows first: the last layer of the main kind, the mean of its heads
 * (a comparison: the layer where the two traces differ most)
 * @property {Kind} kind
 * @property {number} layer  a record's layer number
 * @property {number} head  -1 for the mean of the heads
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
/** @typedef {{from: number, to: number}} TokenRange  the token range control: tokens from..to-1 */
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
 * @property {TokenRange | null} range  the shown tokens (null: all)
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
/**
 * What a view may use of the viewer it belongs to (viewer/pane.js builds one per viewer and hands it to each view).
 * @typedef {Object} Pane
 * @property {TraceRecord[]} RECORDS  the trace's records
 * @property {number} LEVELS  a weight is code / LEVELS
 * @property {number} MAX_ERROR  the largest error of a shown weight
 * @property {State} state  the viewer's choices, shared by every view
 * @property {({q: Float32Array, k: Float32Array} | undefined)[]} vectors  query and key vectors per record, when captured and decoded
 * @property {(ri: number, h: number) => Float32Array} matrix  the (q, k) weights of head h of record ri (h = -1: the mean)
 * @property {<T>(key: string, make: () => T) => T} cached  a small least-recently-used cache of matrices and images
 * @property {(kind: string) => number[]} recordsOf  the indices of the records of a kind
 * @property {(ri: number) => Span} span  the shown tokens of record ri
 * @property {(s: Span) => string} spanKey
 * @property {(f: Focus | null, s: Span) => boolean} inSpan  whether the token is shown
 * @property {(tokens: string[]) => number[]} matches  the tokens that contain the search text
 * @property {(ri: number, h: number) => {label: string, metrics: [string, number][]} | null} notes  attnlab.analysis's notes on a head
 * @property {(n: {label: string, metrics: [string, number][]}) => string} notesText
 * @property {(ri: number) => {q: string[], k: string[], width: number}} labels  fitted token labels and the widest's width
 * @property {(r: TraceRecord) => string} layerOf  the layer, module and kind of a record, for captions
 * @property {(ctx: Painter, size: Size) => number} title  draws the caption; returns its height
 * @property {(w: number) => number} titleHeight  the caption's height at drawing width w
 * @property {(ctx: Painter, t: string, x: number, y: number) => void} boxedText  a token label on a white box
 * @property {(label: string, pressed: boolean, onClick: (e: MouseEvent) => void, h?: number) => HTMLButtonElement} headButton
 * @property {(withMean?: boolean) => HTMLButtonElement[]} headChoice  head buttons that choose the one head drawn
 * @property {() => string} searchStatus  the status line while a search is on
 * @property {() => number} render  draw the current view again
 * @property {(x: number, y: number) => void} reveal  scroll so that drawing point (x, y) is visible
 * @property {boolean} exporting  drawing an export: nothing transient
 * @property {Placed[]} placed  the token labels of the drawing being painted
 * @property {HTMLElement} statusLine
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
 * "100:160" (end excluded, either side may be left out) as a TokenRange; "" is null (every token); else undefined.
 * @param {string} text
 * @returns {TokenRange | null | undefined}
 */
function parseRange(text) {
  if (!text.trim()) return null;
  const m = /^\s*(\d*)\s*:\s*(\d*)\s*$/.exec(text);
  if (!m || (!m[1] && !m[2])) return undefined;
  const from = m[1] ? Number(m[1]) : 0, to = m[2] ? Number(m[2]) : Infinity;
  return to > from ? { from, to } : undefined;
}
/** @param {TokenRange | null} r */
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

function viridis() { // polynomial fit of matplotlib's viridis (within 4/255), as 256 RGBA entries
  const c = [[0.27773, 0.00541, 0.33410], [0.10509, 1.40461, 1.38459], [-0.33086, 0.21485, 0.09510],
    [-4.63423, -5.79910, -19.33244], [6.22827, 14.17993, 56.69055], [4.77638, -13.74515, -65.35303], [-5.43546, 4.64585, 26.31244]];
  return Array.from({ length: 256 }, (_, i) => {
    const t = i / 255;
    const rgb = [0, 1, 2].map((ch) => c.reduceRight((acc, k) => acc * t + k[ch], 0));
    return new Uint8ClampedArray([...rgb.map((v) => Math.round(255 * Math.min(1, Math.max(0, v)))), 255]);
  });
}
