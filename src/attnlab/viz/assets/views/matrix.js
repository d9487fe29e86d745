// The matrix view: heatmap of one head or the mean, keys along x, queries along y.
// One function of its viewer's Pane that returns the View (both types in viewer.js); viewer/pane.js calls it.

/**
 * The matrix view of a viewer.
 * @param {Pane} P  what the view uses of its viewer
 * @returns {View}
 */
function matrixView(P) {
  const { RECORDS, MAX_ERROR, state, matrix, cached, span, spanKey, matches, labels, layerOf, title, titleHeight, boxedText, headChoice, searchStatus, reveal } = P;
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
      P.placed.push({ axis, i, at: at(i), bold: false });
    }
    ctx.font = BOLD;
    for (const i of bold) {
      if (!seen(i)) continue;
      place(toks[i], at(i), true);
      P.placed.push({ axis, i, at: at(i), bold: true });
    }
  }
  /** @param {Painter} ctx @param {Size} size @param {Area} win */
  function drawMatrix(ctx, size, win) {
    const g = matrixGeometry(), { r, lab, sp, cell } = g, hov = P.exporting ? null : state.cell;
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
    P.statusLine.dataset.value = String(v);
    return `Query ${c.i} ${quote(r.query_tokens[c.i])} → key ${c.j} ${quote(r.key_tokens[c.j])}: ` +
      `${v.toFixed(4)} (±${MAX_ERROR.toFixed(4)}, ${headName(state.head)})`;
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
  return MATRIX_VIEW;
}
