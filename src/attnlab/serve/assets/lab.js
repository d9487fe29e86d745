// attnlab serve's page: pick a model, type, see the task output (a language model's continuation too) and the viewer
// redraw; compare two texts; step through a translator's decoding; download. Joined after the viewer's files (viz/html.py viewer_script), so it calls
// their functions (showBundle, byId, flat) and keeps its own names inside one more function. Every text from the server or the user is shown with
// textContent, never as HTML.

/**
 * @typedef {Object} LabModel  one entry of GET /api/models
 * @property {string} name
 * @property {string} kind  "encoder", "classifier", "translator" or "lm" (how to name it; what it can do is `can`)
 * @property {string[]} can  what the model can do (attnlab.kinds.CAPABILITIES: "sample", "ablate", "attribute", ...)
 * @property {string[]} languages
 * @property {string | null} example  a text to start with (bundled models), or null
 * @property {LabSampling} [sampling]  a language model's default sampling settings
 */
/**
 * @typedef {Object} LabSampling  how a language model writes (attnlab generate's options)
 * @property {number} temperature
 * @property {number} top_k
 * @property {number} top_p
 * @property {number} [repetition_penalty]
 * @property {number} [no_repeat_ngram]
 * @property {boolean} [greedy]
 * @property {number} seed
 */
/**
 * @typedef {Object} LabOutput  a run's task output (null for an encoder)
 * @property {string} [label]
 * @property {number} [probability]
 * @property {boolean} [calibrated]
 * @property {string} [translation]
 * @property {number} [confidence]
 * @property {string[]} [doubts]
 * @property {string[]} [source_tokens]
 * @property {string[]} [target_tokens]
 * @property {number[][]} [alignment]  (T, S)
 * @property {string} [continuation]  a language model's continuation of the text
 * @property {number} [log_probability]  its mean log-probability per unit
 * @property {string} [unit]  what one token of its text is: "character" (attnlab's language models) or "token"
 * @property {LabSampling} [settings]  how it was sampled
 * @property {string | null} [loop]  the loop it ended in, said in words, or null
 */
/**
 * @typedef {Object} LabSide  what a run says of one text
 * @property {string} text
 * @property {string[]} tokens
 * @property {LabOutput | null} output
 */
/**
 * @typedef {Object} LabRun  the answer of POST /api/run
 * @property {string} model
 * @property {string} kind
 * @property {string} text
 * @property {string[]} tokens
 * @property {LabOutput | null} output
 * @property {{kind: string, labels: string[][], metrics: Record<string, number[][]>}} labels  attnlab.analysis's head notes
 * @property {{layer: number, head: number, n_layers: number, n_heads: number}} view
 * @property {Payload | Compare} viewer
 * @property {string[]} warnings
 * @property {LabSide} [compare]
 * @property {{kind: string, tv: number[][] | null, reason: string | null}} [difference]
 * @property {number} server_ms
 */
/**
 * @typedef {Object} LabState  what tests read (window.attnlabLab)
 * @property {LabRun | null} last  the run on screen
 * @property {number} runs  runs drawn so far
 * @property {boolean} busy  a request is on its way
 * @property {string} error  the last error shown ("" none)
 * @property {number} ablations  head ablations drawn so far
 * @property {number} attributions  attributions drawn so far
 * @property {number} qks  QK attributions drawn so far (a clicked attention cell)
 */
/**
 * @typedef {Object} LabAblation  the answer of POST /api/ablate
 * @property {string} model
 * @property {number} layer
 * @property {number} head
 * @property {{token: string, before: number, after: number}[]} outputs  the likeliest next characters, or every label
 * @property {string} output  what an output is: "next" (character) or "label"
 * @property {number} total_variation  between the output distributions before and after
 */
/**
 * @typedef {Object} LabQK  the answer of POST /api/qk: one head's score at one attention cell, split into terms
 * @property {string} model
 * @property {string[]} tokens  the text's tokens as the model read them (the positions count these)
 * @property {number} layer
 * @property {number} head
 * @property {number} query
 * @property {number} key
 * @property {string} query_token
 * @property {string} key_token
 * @property {string[]} sources  "embed", "L.H" (a head's output), "mL" (an MLP's), "bias" (the rest of the stream)
 * @property {number} score  the score before the softmax: the table's sum (plus mask_bias)
 * @property {number} mask_bias  what the mask adds to the score, apart from the table
 * @property {Record<string, number>} query_side  each query-side source's row total
 * @property {Record<string, number>} key_side  each key-side source's column total
 * @property {{query_source: string, key_source: string, term: number}[]} top  the largest terms by size
 */
/**
 * @typedef {Object} LabAttribution  the answer of POST /api/attribute
 * @property {string} model
 * @property {string} kind
 * @property {string[]} rows  the output tokens
 * @property {string[]} columns  what they read: the prompt or source (the first `split`), then the output before them
 * @property {number} split
 * @property {string} reading  what the columns are, said for the reader ("the prompt | the characters generated before")
 * @property {Record<string, (number | null)[][]>} methods  each method's signed scores, rows x columns (null: not read)
 * @property {number | null} agreement  the methods' mean Spearman correlation, null when one method applies
 */

(() => {
  const DEBOUNCE_MS = 300;
  const root = byId("attnlab-lab");
  /** @type {LabState} */
  const lab = { last: null, runs: 0, busy: false, error: "", ablations: 0, attributions: 0, qks: 0 };
  Object.assign(window, { attnlabLab: lab });

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Record<string, string>} [attrs]
   * @param {...(string | Node)} children
   * @returns {HTMLElementTagNameMap[K]}
   */
  function node(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    e.append(...children);
    return e;
  }
  /** @param {string} text @param {HTMLElement} control */
  const field = (text, control) => node("label", { class: "lab-field" }, text, control);

  const modelSelect = node("select", { id: "model", "aria-label": "model" });
  const textBox = node("textarea", { id: "text", rows: "2", spellcheck: "false", "aria-label": "text" });
  const compareOn = node("input", { id: "compare-on", type: "checkbox" });
  const compareBox = node("textarea", { id: "compare", rows: "2", spellcheck: "false", "aria-label": "second text", hidden: "" });
  const status = node("p", { id: "status", role: "status" });
  const output = node("section", { id: "output", "aria-label": "task output" });
  const tokens = node("p", { id: "tokens", class: "lab-tokens" });
  const warningsList = node("ul", { id: "warnings" });
  const difference = node("p", { id: "difference" });
  const steps = node("input", { id: "steps", type: "range", min: "1", max: "1", value: "1", "aria-label": "decoding step" });
  const stepText = node("p", { id: "step-text", class: "lab-tokens" });
  const stepsBox = node("section", { id: "steps-box", "aria-label": "decoding steps", hidden: "" },
    node("h2", {}, "Decoding, one step at a time"), field("step ", steps), stepText);
  const traceButton = node("button", { id: "dl-trace", type: "button" }, "Download trace");
  const viewerButton = node("button", { id: "dl-viewer", type: "button" }, "Download viewer.html");
  const host = node("div", { id: "attnlab-viewer" });
  const ablateOn = node("input", { id: "ablate-on", type: "checkbox" });
  const ablateField = node("label", { class: "lab-field", title: "on a language model or a classifier: pick one head "
    + "in the viewer and see the output without it (its output zeroed at every position)" }, ablateOn, " click a head to ablate it");
  const ablation = node("section", { id: "ablation", "aria-label": "head ablation" });
  const attributeOn = node("input", { id: "attribute-on", type: "checkbox" });
  const attributeField = node("label", { class: "lab-field", title: "on a language model or a translator: which tokens "
    + "each output token used (ALTI-Logit, gradient x input; red pushed it up, blue down)" }, attributeOn, " attribute the output");
  const attribution = node("section", { id: "attribution", "aria-label": "attribution of the output" });
  const qkBox = node("section", { id: "qk", "aria-label": "QK attribution of an attention cell" });
  // a language model's sampling controls, shown for a model of kind "lm", set from its defaults (GET /api/models)
  const number = (/** @type {string} */ id, /** @type {string} */ min, /** @type {string} */ step, max = "") =>
    node("input", { id, type: "number", min, step, ...(max ? { max } : {}), "aria-label": id.replace("-", " ") });
  const temperatureBox = number("temperature", "0.05", "0.05");
  const topKBox = number("top-k", "0", "1");
  const topPBox = number("top-p", "0.05", "0.05", "1");
  const seedBox = number("seed", "0", "1");
  // greedy decoding (always the likeliest character): the temperature, top-k, top-p and seed then do nothing, so
  // they are greyed out; a model whose defaults are greedy (induction-2l) starts with it on
  const greedyBox = node("input", { id: "greedy", type: "checkbox" });
  const samplingBox = node("section", { id: "sampling", class: "lab-bar", "aria-label": "sampling", hidden: "" },
    node("label", { class: "lab-field", title: "always the likeliest next character" }, greedyBox, " greedy"),
    field("temperature ", temperatureBox), field("top-k ", topKBox), field("top-p ", topPBox), field("seed ", seedBox));
  const greyOut = () => {
    for (const box of [temperatureBox, topKBox, topPBox, seedBox]) box.disabled = greedyBox.checked;
  };
  root.replaceChildren(
    node("header", { class: "lab-bar" }, node("h1", {}, "attnlab lab"), field("model ", modelSelect),
      node("label", { class: "lab-field" }, compareOn, " compare with a second text"), ablateField, attributeField, traceButton,
      viewerButton),
    node("div", { class: "lab-texts" }, textBox, compareBox), samplingBox,
    status, output, ablation, attribution, tokens, warningsList, difference, stepsBox, qkBox, host);

  /** `x.toFixed(digits)` without a minus sign on a number that rounds to zero ("-0.000") */
  const fixed = (/** @type {number} */ x, /** @type {number} */ digits) => {
    const s = x.toFixed(digits);
    return Number(s) === 0 ? s.replace("-", "") : s;
  };

  /** @param {string} message */
  function showError(message) {
    lab.error = message;
    status.textContent = message;
    status.className = "lab-error";
  }

  /** @returns {Record<string, unknown>} */
  function request() {
    /** @type {Record<string, unknown>} */
    const body = { model: modelSelect.value, text: textBox.value };
    if (compareOn.checked && compareBox.value.trim()) body.compare = compareBox.value;
    if (!samplingBox.hidden) {
      body.sampling = { greedy: greedyBox.checked, temperature: Number(temperatureBox.value),
        top_k: Number(topKBox.value), top_p: Number(topPBox.value), seed: Number(seedBox.value) };
    }
    return body;
  }

  /**
   * POSTs a JSON body; the answer, or an Error carrying the server's one-line message.
   * @param {string} path
   * @param {Record<string, unknown>} body
   * @returns {Promise<Response>}
   */
  async function post(path, body) {
    const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!r.ok) {
      /** @type {{error?: string}} */
      let answer = {};
      try { answer = await r.json(); } catch { /* not JSON: the status says it */ }
      throw new Error(answer.error || `the server answered ${r.status} ${r.statusText}`);
    }
    return r;
  }

  let sequence = 0; // only the latest request's answer is drawn
  async function run() {
    if (!textBox.value.trim()) { clear(); showError("Type some text."); return; }
    const mine = ++sequence;
    lab.busy = true;
    lab.error = ""; // the status shows this run now, not the last error
    status.className = "";
    status.textContent = "running…";
    try {
      const answer = /** @type {LabRun} */ (await (await post("/api/run", request())).json());
      if (mine !== sequence) return;
      draw(answer);
    } catch (e) {
      if (mine === sequence) { clear(); showError(e instanceof Error ? e.message : String(e)); }
    } finally {
      if (mine === sequence) lab.busy = false;
    }
  }
  /** A failed run leaves nothing of the previous one on screen: its output, tokens, warnings, steps and viewer go. */
  function clear() {
    output.replaceChildren();
    attribution.replaceChildren();
    qkBox.replaceChildren();
    qkAsked = "";
    attributed = "";
    tokens.textContent = "";
    warningsList.replaceChildren();
    difference.textContent = "";
    stepsBox.hidden = true;
    host.replaceChildren();
    Object.assign(window, { attnlab: undefined });
    lab.last = null;
    previousModel = "";
    lastDiffers = -1;
  }
  /** @type {number | undefined} */
  let timer;
  function later() {
    window.clearTimeout(timer);
    timer = window.setTimeout(run, DEBOUNCE_MS);
  }

  /** @param {LabOutput | null} out @param {string} who @param {string} text  the text the model ran on */
  function outputLine(out, who, text) {
    const line = node("p", { class: "lab-output" });
    if (out && out.label !== undefined && out.probability !== undefined) {
      line.append(node("strong", {}, `${who}${out.label}`),
        ` ${out.probability.toFixed(2)} (${out.calibrated ? "calibrated " : ""}probability)`);
    } else if (out && out.translation !== undefined && out.confidence !== undefined) {
      line.append(node("strong", {}, `${who}${out.translation}`), ` confidence ${fixed(out.confidence, 3)} (mean log-probability per token)`);
      for (const d of out.doubts || []) line.append(node("span", { class: "lab-doubt" }, ` ⚠ ${d}`));
    } else if (out && out.continuation !== undefined && out.log_probability !== undefined) {
      const s = out.settings;
      const how = !s ? "" : s.greedy ? "greedy; " : `temperature ${s.temperature}, top-k ${s.top_k}, top-p ${s.top_p}, seed ${s.seed}; `;
      line.append(`${who}${text}`, node("strong", { class: "lab-continuation" }, out.continuation),
        ` (${how}mean log-probability ${fixed(out.log_probability, 3)} per ${out.unit || "character"})`);
      if (out.loop) line.append(node("span", { class: "lab-doubt" }, ` ⚠ ${out.loop}`));
    } else {
      line.append(`${who}tokens and attention (an encoder has no task output)`);
    }
    return line;
  }

  /** @returns {Api | undefined} the viewer on screen */
  const currentApi = () => /** @type {Api | undefined} */ (/** @type {Record<string, unknown>} */ (/** @type {unknown} */ (window)).attnlab);
  /** @param {Api} api @param {string} kind  the indices of the records of that kind, by layer */
  const recordsOfKind = (api, kind) => api.records.map((r, i) => (r.kind === kind ? i : -1)).filter((i) => i >= 0);
  let previousModel = "";
  let lastDiffers = -1; // the most different layer of the last comparison drawn (-1: none)

  /** @param {LabRun} answer */
  function draw(answer) {
    status.className = "";
    status.textContent = `${answer.model}: ${answer.tokens.length} tokens, ${answer.server_ms.toFixed(0)} ms on the server`;
    output.replaceChildren(outputLine(answer.output, answer.compare ? "A: " : "", answer.text));
    if (answer.compare) output.append(outputLine(answer.compare.output, "B: ", answer.compare.text));
    tokens.textContent = answer.tokens.join(" · ");
    warningsList.replaceChildren(...answer.warnings.map((w) => node("li", {}, w)));
    const d = answer.difference;
    let differs = -1; // the layer where the two texts differ most (-1: they cannot be compared, or do not differ)
    if (!d) difference.textContent = "";
    else if (!d.tv) difference.textContent = d.reason || "";
    else {
      const per = d.tv.map((row) => row.reduce((a, b) => a + b, 0) / row.length), most = Math.max(...per);
      differs = most > 0 ? answer.view.layer : -1; // the server's first view of two texts (viz/_first.py)
      difference.textContent = `difference of the two attentions (total variation, 0 same to 1 disjoint, mean over heads): `
        + per.map((x, i) => `layer ${i} ${x.toFixed(3)}`).join(", ") + (most > 0 ? `; most in layer ${differs}` : "; none: the same");
    }
    const before = currentApi(), same = lab.last !== null && before !== undefined && lab.runs > 0 && previousModel === answer.model;
    const api = showBundle(host, answer.viewer, `${answer.model} · ${flat(answer.text).slice(0, 60)}`);
    Object.assign(window, { attnlab: api });
    const follow = differs >= 0 && differs !== lastDiffers; // two texts: go where they differ most, when that moves
    if (same && before && before.state.rec < api.records.length) {
      // the same model again: keep the reader's place (view, layer, heads, colour scale)
      const s = before.state, kind = follow && d ? /** @type {Kind} */ (d.kind) : s.kind;
      const at = follow ? recordsOfKind(api, kind)[differs] : undefined;
      api.set({ view: s.view, kind, rec: at === undefined ? s.rec : at, heads: [...s.heads], mean: s.mean, head: s.head, scale: s.scale });
    } // else the viewer opened on the first view (viz/_first.py), the one the answer's "view" names
    lastDiffers = differs;

    previousModel = answer.model;
    lab.last = answer;
    drawSteps(answer);
    lab.runs += 1;
    ablated = ""; // a new run: the ablation shown was of the last one
    ablation.replaceChildren();
    if (ablateOn.checked) ablate();
    attributed = "";
    attribution.replaceChildren();
    if (attributeOn.checked) attribute();
    qkAsked = ""; // a new run: the cell shown was of the last one
    qkBox.replaceChildren(...(lastCan("qk") ? [node("p", { class: "lab-hint" }, "QK attribution: in the matrix view of one head, "
      + "click a cell to see why that query looks at that key (its score split into what the query and the key read)")] : []));
  }

  /** The decoding-step slider of a translator: the tokens generated so far and where the model looked for the last. */
  function drawSteps(/** @type {LabRun} */ answer) {
    const out = answer.output;
    const targets = out && out.target_tokens, sources = out && out.source_tokens, rows = out && out.alignment;
    stepsBox.hidden = !(targets && sources && rows && targets.length);
    if (stepsBox.hidden || !targets || !sources || !rows) return;
    steps.max = String(targets.length);
    steps.value = String(targets.length);
    showStep(targets, sources, rows);
    steps.oninput = () => showStep(targets, sources, rows);
  }
  /** @param {string[]} targets @param {string[]} sources @param {number[][]} rows */
  function showStep(targets, sources, rows) {
    const t = Number(steps.value);
    const row = rows[t - 1] || [];
    const top = Math.max(...row, 1e-9);
    stepText.replaceChildren(node("span", {}, `step ${t} of ${targets.length}: ${targets.slice(0, t).join(" ")} ← looked at: `),
      ...sources.map((s, i) => {
        const span = node("span", { class: "lab-source", title: `${((row[i] || 0) * 100).toFixed(1)} %` }, s);
        span.style.backgroundColor = `rgba(230, 159, 0, ${((row[i] || 0) / top).toFixed(3)})`;
        return span;
      }));
    const api = currentApi();
    const cross = api ? recordsOfKind(api, "cross") : [];
    if (api && cross.length) api.set({ view: "head", kind: "cross", rec: cross[cross.length - 1], focus: { side: "q", i: t - 1 }, sticky: true });
  }

  /** @param {string} what "trace" or "viewer" */
  async function download(what) {
    try {
      const body = request();
      body.what = what;
      if (what === "trace") delete body.compare;
      const blob = await (await post("/api/download", body)).blob();
      const a = node("a", { href: URL.createObjectURL(blob), download: what === "trace" ? "trace.attn" : "viewer.html" });
      document.body.append(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (e) {
      showError(e instanceof Error ? e.message : String(e));
    }
  }

  /** @returns {{layer: number, head: number} | null} the one head on screen (its layer among its kind's records) */
  function chosenHead() {
    const api = currentApi();
    if (!api) return null;
    const s = api.state;
    const head = s.view === "head" ? (!s.mean && s.heads.size === 1 ? [...s.heads][0] : -1) : s.head;
    if (head < 0) return null;
    return { layer: recordsOfKind(api, s.kind).indexOf(s.rec), head };
  }
  let ablated = "";
  /** @param {string} capability @returns {boolean} whether the model of the last run can do it (GET /api/models) */
  const lastCan = (capability) => {
    const m = lab.last ? models.get(lab.last.model) : undefined;
    return Boolean(m && m.can.includes(capability));
  };
  async function ablate() {
    if (!ablateOn.checked || !lastCan("ablate")) {
      if (ablateOn.checked) ablation.replaceChildren(node("p", { class: "lab-doubt" }, `ablation needs a model that can be ablated (${canDo("ablate")})`));
      return;
    }
    const chosen = chosenHead();
    if (!chosen || chosen.layer < 0) {
      ablation.replaceChildren(node("p", { class: "lab-doubt" }, "pick one head (one in the head bar, or the matrix view) to ablate it"));
      return;
    }
    const body = { model: modelSelect.value, text: textBox.value, layer: chosen.layer, head: chosen.head };
    const key = JSON.stringify(body);
    if (key === ablated) return;
    ablated = key;
    try {
      const answer = /** @type {LabAblation} */ (await (await post("/api/ablate", body)).json());
      if (ablated !== key) return;
      const rows = answer.outputs.map((o) => node("tr", {}, node("td", {}, o.token), node("td", {}, o.before.toFixed(3)),
        node("td", {}, o.after.toFixed(3)), node("td", {}, `${o.after >= o.before ? "+" : ""}${(o.after - o.before).toFixed(3)}`)));
      ablation.replaceChildren(
        node("p", {}, node("strong", {}, `head ${answer.layer}.${answer.head} ablated`),
          ` (its output zeroed): the output moves by ${fixed(answer.total_variation, 3)} (total variation)`),
        node("table", { class: "lab-ablation" }, node("tr", {}, node("th", {}, answer.output),
          node("th", {}, "before"), node("th", {}, "after"), node("th", {}, "change")), ...rows));
      lab.ablations += 1;
    } catch (e) {
      ablated = "";
      showError(e instanceof Error ? e.message : String(e));
    }
  }
  let attributed = ""; // the request whose attribution is on screen (or on its way)
  let method = ""; // the method the reader chose, kept across runs
  async function attribute() {
    if (!attributeOn.checked || !lab.last) return;
    if (!lastCan("attribute")) {
      attribution.replaceChildren(node("p", { class: "lab-doubt" }, `attribution of output tokens needs a model that writes them (${canDo("attribute")})`));
      return;
    }
    const body = request();
    delete body.compare;
    const key = JSON.stringify(body);
    if (key === attributed) return;
    attributed = key;
    attribution.replaceChildren(node("p", {}, "attributing…"));
    try {
      const answer = /** @type {LabAttribution} */ (await (await post("/api/attribute", body)).json());
      if (attributed !== key) return;
      drawAttribution(answer);
      lab.attributions += 1;
    } catch (e) {
      attributed = "";
      attribution.replaceChildren();
      showError(e instanceof Error ? e.message : String(e));
    }
  }
  /** One method's table: output tokens (rows) x what they read (columns), red up, blue down, grey not read. */
  function drawAttribution(/** @type {LabAttribution} */ answer) {
    const names = Object.keys(answer.methods);
    if (!names.includes(method)) method = names[0];
    const picker = node("select", { id: "attribution-method", "aria-label": "attribution method" },
      ...names.map((n) => node("option", { value: n }, n)));
    picker.value = method;
    picker.addEventListener("change", () => { method = picker.value; drawAttribution(answer); });
    const values = answer.methods[method];
    const top = Math.max(1e-9, ...values.flat().map((v) => (v === null ? 0 : Math.abs(v))));
    const head = node("tr", {}, node("th", {}, ""), ...answer.columns.map((c, j) =>
      node("th", { class: j === answer.split ? "lab-split" : "" }, c)));
    const rows = answer.rows.map((r, i) => node("tr", {}, node("th", {}, r), ...values[i].map((v, j) => {
      const cell = node("td", { class: j === answer.split ? "lab-split" : "", title: v === null ? "not read" : `${answer.columns[j]} → ${r}: ${fixed(v, 4)}` });
      if (v === null) cell.classList.add("lab-unread");
      else cell.style.backgroundColor = v >= 0 ? `rgba(178, 24, 43, ${(v / top).toFixed(3)})` : `rgba(33, 102, 172, ${(-v / top).toFixed(3)})`;
      return cell;
    })));
    const said = answer.agreement === null ? "" : `; the two methods agree with a mean Spearman correlation of ${answer.agreement.toFixed(2)}`;
    attribution.replaceChildren(
      node("p", {}, node("strong", {}, "which tokens each output token used"), " ", picker,
        ` (rows: the output; columns: ${answer.reading}; red pushed it up, blue down${said})`),
      node("table", { class: "lab-attribution" }, head, ...rows));
  }
  let qkAsked = ""; // the request whose QK table is on screen (or on its way)
  /**
   * The clicked attention cell of one head's matrix view, as POST /api/qk reads it: the head, the query and key, and
   * the text: the run's own while the cell lies in it, else (a language model's continuation, which the heatmap
   * draws too) the text and its continuation, read again, whose tokens from the continuation on must then be the
   * viewer's (`written`: those tokens; a token boundary may move when a written text is read again).
   * @returns {{body: Record<string, unknown>, from: number, written: string[]} | null}
   */
  function clickedCell() {
    const api = currentApi(), last = lab.last;
    if (!api || !last) return null;
    const s = api.state;
    if (s.view !== "matrix" || s.head < 0 || !s.cell) return null;
    const layer = recordsOfKind(api, s.kind).indexOf(s.rec), { i, j } = s.cell, n = last.tokens.length;
    const cell = { model: last.model, layer, head: s.head, query: i, key: j };
    const more = last.output && last.output.continuation !== undefined ? last.output.continuation : "";
    if (Math.max(i, j) < n || !more) return { body: { ...cell, text: last.text }, from: n, written: [] };
    return { body: { ...cell, text: last.text + more }, from: n, written: api.records[s.rec].key_tokens.slice(n, Math.max(i, j) + 1) };
  }
  async function qk() {
    if (!lastCan("qk")) return;
    const asked = clickedCell();
    if (!asked) return;
    const key = JSON.stringify(asked.body);
    if (key === qkAsked) return;
    qkAsked = key;
    qkBox.replaceChildren(node("p", {}, "splitting the score…"));
    try {
      const answer = /** @type {LabQK} */ (await (await post("/api/qk", asked.body)).json());
      if (qkAsked !== key) return;
      const reread = answer.tokens.slice(asked.from, asked.from + asked.written.length);
      if (reread.join("\u0000") !== asked.written.join("\u0000")) {
        qkBox.replaceChildren(node("p", { class: "lab-doubt" }, "this cell lies in the continuation, and the continuation "
          + "read again as text gives other tokens than the model wrote, so its score cannot be split from the text; pick a cell within the text"));
        return;
      }
      drawQK(answer);
      lab.qks += 1;
    } catch (e) {
      if (qkAsked !== key) return;
      qkAsked = "";
      qkBox.replaceChildren();
      showError(e instanceof Error ? e.message : String(e));
    }
  }
  /** A term's cell: its value, red when it raises the score and blue when it lowers it (shaded by size). */
  function termCell(/** @type {number} */ v, /** @type {number} */ top) {
    const cell = node("td", { class: "lab-term" }, `${v >= 0 ? "+" : "−"}${fixed(Math.abs(v), 2)}`);
    const a = Math.min(1, Math.abs(v) / top);
    cell.style.backgroundColor = v >= 0 ? `rgba(178, 24, 43, ${(0.6 * a).toFixed(3)})` : `rgba(33, 102, 172, ${(0.6 * a).toFixed(3)})`;
    return cell;
  }
  /** The cell's score, its largest terms (query source x key source), and each side's largest totals. */
  function drawQK(/** @type {LabQK} */ answer) {
    const said = (/** @type {string} */ t) => `“${flat(t)}”`;
    const top = Math.max(1e-9, ...answer.top.map((t) => Math.abs(t.term)));
    const rows = answer.top.map((t) => node("tr", {}, node("td", {}, t.query_source), node("td", {}, t.key_source), termCell(t.term, top)));
    /** @param {string} title @param {Record<string, number>} side */
    const sideTable = (title, side) => {
      const terms = Object.entries(side).sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])).slice(0, 5);
      const most = Math.max(1e-9, ...terms.map(([, v]) => Math.abs(v)));
      return node("table", { class: "lab-qk" }, node("tr", {}, node("th", {}, title), node("th", {}, "total")),
        ...terms.map(([name, v]) => node("tr", {}, node("td", {}, name), termCell(v, most))));
    };
    const bias = answer.mask_bias !== 0 ? ` + ${fixed(answer.mask_bias, 3)} from the mask` : "";
    qkBox.replaceChildren(
      node("p", {}, node("strong", {}, `head ${answer.layer}.${answer.head}, query ${answer.query} ${said(answer.query_token)} → key ${answer.key} ${said(answer.key_token)}`),
        `: score ${fixed(answer.score, 3)} before the softmax = the sum of ${answer.sources.length}² terms${bias}, one per source the query reads × source the key reads `
        + "(embed: the embeddings; L.H: a head's output; mL: an MLP's; bias: the rest of the stream). The largest, and each side's totals:"),
      node("div", { class: "lab-qk-tables" },
        node("table", { class: "lab-qk" }, node("tr", {}, node("th", {}, "query reads"), node("th", {}, "key reads"), node("th", {}, "term")), ...rows),
        sideTable("query side", answer.query_side), sideTable("key side", answer.key_side)));
    qkBox.scrollIntoView({ block: "nearest" }); // just above the viewer: in sight, whatever the page's scroll
  }
  attributeOn.addEventListener("change", () => { attributed = ""; if (attributeOn.checked) attribute(); else attribution.replaceChildren(); });
  host.addEventListener("click", (e) => {
    // a click on the drawing picks a cell (QK attribution); one on the head bar picks a head (ablation)
    const onDrawing = e.target instanceof Element && e.target.closest(".stage") !== null;
    void currentApi()?.idle().then(() => { ablate(); if (onDrawing) qk(); });
  });
  ablateOn.addEventListener("change", () => { ablated = ""; if (ablateOn.checked) ablate(); else ablation.replaceChildren(); });

  textBox.addEventListener("input", later);
  for (const box of [temperatureBox, topKBox, topPBox, seedBox]) box.addEventListener("input", later);
  greedyBox.addEventListener("change", () => { greyOut(); later(); });
  /** @type {Map<string, LabModel>} */
  const models = new Map();
  /** @param {string} capability @returns {string} the models of the lab that can do it, named */
  const canDo = (capability) => [...models.values()].filter((m) => m.can.includes(capability)).map((m) => m.name).join(", ") || "none here";
  /** The sampling controls: shown for a language model, at its defaults when the model changes. */
  function showSampling() {
    const m = models.get(modelSelect.value);
    const s = m && m.can.includes("sample") ? m.sampling : undefined;
    samplingBox.hidden = !s;
    if (!s) return;
    temperatureBox.value = String(s.temperature);
    topKBox.value = String(s.top_k);
    topPBox.value = String(s.top_p);
    seedBox.value = String(s.seed);
    greedyBox.checked = Boolean(s.greedy);
    greyOut();
  }
  compareBox.addEventListener("input", later);
  /** @type {Map<string, string | null>} each model's example text */
  const examples = new Map();
  let shownModel = "";
  modelSelect.addEventListener("change", () => {
    // the box still holds the last model's example (or nothing): start the new model on its own
    const text = textBox.value.trim();
    const example = examples.get(modelSelect.value);
    if (example && (!text || text === examples.get(shownModel))) textBox.value = example;
    shownModel = modelSelect.value;
    showSampling();
    run();
  });
  compareOn.addEventListener("change", () => {
    compareBox.hidden = !compareOn.checked;
    if (compareOn.checked && !compareBox.value) compareBox.value = textBox.value;
    run();
  });
  traceButton.addEventListener("click", () => download("trace"));
  viewerButton.addEventListener("click", () => download("viewer"));

  fetch("/api/models").then((r) => r.json()).then((/** @type {{models: LabModel[]}} */ answer) => {
    for (const m of answer.models) {
      const langs = m.languages.length ? `, ${m.languages.join("/")}` : "";
      modelSelect.append(node("option", { value: m.name }, `${m.name} (${m.kind}${langs})`));
      examples.set(m.name, m.example);
      models.set(m.name, m);
    }
    shownModel = modelSelect.value;
    showSampling();
    textBox.value = examples.get(shownModel) || "The cat sat on the mat because it was tired.";
    run();
  }).catch((e) => showError(`cannot list the models: ${e instanceof Error ? e.message : String(e)}`));
})();
