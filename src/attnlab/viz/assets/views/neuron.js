// The neuron view: the query and key vectors and the q·k terms behind one weight.
// One function of its viewer's Pane that returns the View (both types in viewer.js); viewer/pane.js calls it.

/**
 * The neuron view of a viewer.
 * @param {Pane} P  what the view uses of its viewer
 * @returns {View}
 */
function neuronView(P) {
  const { RECORDS, MAX_ERROR, state, vectors, matrix, cached, span, inSpan, labels, layerOf, title, titleHeight, headChoice, reveal } = P;
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
    const hov = P.exporting ? null : state.cell;
    for (let i = sp.q0; i < sp.q1; i++) { // query labels, left
      const y = rowAt(i - sp.q0);
      if (!seen(y)) continue;
      const focused = !!f && f.i === i;
      if (focused) { ctx.fillStyle = FOCUS_FILL; ctx.fillRect(g.xq - lab.width - 2, y - ROW / 2 + 1, lab.width + 4, ROW - 2); }
      ctx.fillStyle = "#111";
      ctx.font = focused ? BOLD : FONT;
      ctx.fillText(lab.q[i], g.xq, y);
      P.placed.push({ axis: "q", i, at: y, bold: focused });
    }
    ctx.font = FONT;
    for (let j = sp.k0; j < sp.k1; j++) { // key labels
      const y = rowAt(j - sp.k0);
      if (!seen(y)) continue;
      const bold = !!hov && hov.j === j;
      ctx.font = bold ? BOLD : FONT;
      ctx.fillStyle = "#111";
      ctx.fillText(lab.k[j], g.xk, y);
      P.placed.push({ axis: "k", i: j, at: y, bold });
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
    P.statusLine.dataset.value = String(n.scores[c.j]);
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
  return NEURON_VIEW;
}
