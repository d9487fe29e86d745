// The head view: query tokens left, key tokens right, one line per weight.
// One function of its viewer's Pane that returns the View (both types in viewer.js); viewer/pane.js calls it.

/**
 * The head view of a viewer.
 * @param {Pane} P  what the view uses of its viewer
 * @returns {View}
 */
function headView(P) {
  const { RECORDS, LEVELS, state, matrix, span, inSpan, matches, labels, layerOf, title, titleHeight, headButton, searchStatus, render, reveal } = P;
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
        P.placed.push({ axis: side, i, at: y, bold: focused });
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
      "It starts with the mean of the heads: click a head to show it, then more to add or hide them, double-click to show only one, “all” for every head, “mean” for their mean. " +
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
  return HEAD_VIEW;
}
