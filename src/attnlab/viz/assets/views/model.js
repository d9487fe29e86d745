// The model view: every layer x head of the selected kind as a thumbnail.
// One function of its viewer's Pane that returns the View (both types in viewer.js); viewer/pane.js calls it.

/**
 * The model view of a viewer.
 * @param {Pane} P  what the view uses of its viewer
 * @returns {View}
 */
function modelView(P) {
  const { RECORDS, state, matrix, cached, recordsOf, span, spanKey, notes, notesText, title, titleHeight } = P;
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
    const g = modelGeometry(), hov = P.exporting ? null : state.hover;
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
  return MODEL_VIEW;
}
