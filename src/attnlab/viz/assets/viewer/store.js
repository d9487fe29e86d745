// One viewer's data: each record's weights decoded on demand (once), matrices and images in a small cache.

/**
 * @typedef {Object} Store  what a viewer reads of its records' weights
 * @property {(Uint8Array | undefined)[]} codes  per record, the uint8 codes (heads, q, k) once decoded
 * @property {({q: Float32Array, k: Float32Array} | undefined)[]} vectors  per record, its query and key vectors (heads, len, d), when captured
 * @property {(ri: number) => Promise<Uint8Array>} load  decodes record ri (once; later calls share the promise)
 * @property {<T>(key: string, make: () => T) => T} cached  a least-recently-used cache of matrices and images
 * @property {(ri: number, h: number) => Float32Array} matrix  the (q, k) weights of head h of record ri, h = -1 the mean
 * @property {(kind: string) => number[]} recordsOf  the indices of the records of that kind
 */

/**
 * @param {TraceRecord[]} RECORDS
 * @param {number} LEVELS  a weight is its code / LEVELS
 * @returns {Store}
 */
function store(RECORDS, LEVELS) {
  /** @type {(Uint8Array | undefined)[]} */
  const codes = new Array(RECORDS.length);
  /** @type {({q: Float32Array, k: Float32Array} | undefined)[]} */
  const vectors = new Array(RECORDS.length);
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
  return { codes, vectors, load, cached, matrix, recordsOf };
}
