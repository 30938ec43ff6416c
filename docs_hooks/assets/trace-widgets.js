/* Editable worked examples.
 *
 * A worked example built with `widget: true` carries its recorded call as JSON
 * (<script type="application/json" class="trace-example-data">): the inputs of
 * the first call of the function, the rows the page shows (their code, in table
 * order) and the check line. This script turns every input cell into an <input>
 * and, on each edit, recomputes every value of that example in the browser.
 *
 * The browser cannot run the Python, so each function needs a small kernel:
 * the browser's copy of it, which the site supplies, keyed by the function's
 * dotted name. A kernel takes the inputs (by parameter name) and returns an
 * object whose keys are the function's locals and the exact text of the
 * sub-expressions a page may show ("(dXhat * Xhat).mean(axis=-1, keepdims=True)");
 * spaces do not matter. A row that no key matches keeps its recorded value and
 * is marked "not recomputed".
 *
 * To add kernels, list a script of your own in mkdocs.yml's extra_javascript
 * (it loads before this one) holding:
 *   (window.traceWidgetKernels = window.traceWidgetKernels || []).push(({ nd, register }) => {
 *     register("mymodule.gelu_forward", ({ X }) => { ...; return { u, t, Y, "0.5 * X": ... }; });
 *   });
 * The build reads the names those scripts register, and warns at a `widget: true`
 * example whose function has none.
 */
(function () {
  "use strict";

  // ------------------------------------------------------------------ a tiny ndarray

  const INT = /^u?int/;

  class Nd {
    constructor(shape, data, dtype) {
      this.shape = shape;
      this.data = data;
      this.dtype = dtype || "float64";
    }
    get size() { return this.data.length; }
    get ndim() { return this.shape.length; }
    get T() { return nd.transpose(this); }
    // numpy-style methods, so kernels read like the Python they copy
    mean(axis, keepdims) { return nd.mean(this, axis, keepdims); }
    sum(axis, keepdims) { return nd.sum(this, axis, keepdims); }
    max(axis, keepdims) { return nd.max(this, axis, keepdims); }
    copy() { return new Nd(this.shape.slice(), this.data.slice(), this.dtype); }
  }

  const prod = (xs) => xs.reduce((a, b) => a * b, 1);
  const isNd = (x) => x instanceof Nd;
  const asNd = (x) => (isNd(x) ? x : new Nd([], [Number(x)], Number.isInteger(x) ? "int64" : "float64"));
  const isIntLike = (x) => (isNd(x) ? INT.test(x.dtype) : Number.isInteger(x));

  function broadcastShapes(a, b) {
    const n = Math.max(a.length, b.length);
    const out = [];
    for (let k = 0; k < n; k++) {
      const da = a[a.length - n + k] ?? 1;
      const db = b[b.length - n + k] ?? 1;
      if (da !== db && da !== 1 && db !== 1) {
        throw new Error(`shapes (${a}) and (${b}) do not broadcast`);
      }
      out.push(da === 1 ? db : da);
    }
    return out;
  }

  function stridesFor(shape, outShape) {
    // strides into an array of `shape`, indexed by a multi-index of `outShape` (0 where broadcast)
    const n = outShape.length;
    const strides = new Array(n).fill(0);
    let step = 1;
    for (let k = shape.length - 1; k >= 0; k--) {
      strides[n - shape.length + k] = shape[k] === 1 ? 0 : step;
      step *= shape[k];
    }
    return strides;
  }

  function binary(a, b, f, keepsInt) {
    const int = keepsInt && isIntLike(a) && isIntLike(b);
    if (!isNd(a) && !isNd(b)) return f(a, b);
    const A = asNd(a), B = asNd(b);
    const shape = broadcastShapes(A.shape, B.shape);
    const n = prod(shape);
    const out = int ? new Array(n) : new Float64Array(n);
    const sa = stridesFor(A.shape, shape), sb = stridesFor(B.shape, shape);
    const idx = new Array(shape.length).fill(0);
    for (let k = 0; k < n; k++) {
      let ia = 0, ib = 0;
      for (let d = 0; d < shape.length; d++) { ia += idx[d] * sa[d]; ib += idx[d] * sb[d]; }
      out[k] = f(A.data[ia], B.data[ib]);
      for (let d = shape.length - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return new Nd(shape, out, int ? "int64" : "float64");
  }

  function unary(a, f) {
    if (!isNd(a)) return f(a);
    return new Nd(a.shape.slice(), Float64Array.from(a.data, f), "float64");
  }

  function normAxis(axis, ndim) {
    const k = axis < 0 ? axis + ndim : axis;
    if (k < 0 || k >= ndim) throw new Error(`axis ${axis} is out of bounds for ${ndim} dimensions`);
    return k;
  }

  function reduce(a, axis, keepdims, init, f, finish) {
    a = asNd(a);
    if (axis === undefined || axis === null) {
      let acc = init;
      for (const v of a.data) acc = f(acc, v);
      return finish ? finish(acc, a.size) : acc;
    }
    const k = normAxis(axis, a.ndim);
    const outer = prod(a.shape.slice(0, k)), len = a.shape[k], inner = prod(a.shape.slice(k + 1));
    const out = new Float64Array(outer * inner);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        let acc = init;
        for (let j = 0; j < len; j++) acc = f(acc, a.data[(o * len + j) * inner + i]);
        out[o * inner + i] = finish ? finish(acc, len) : acc;
      }
    }
    const shape = a.shape.slice();
    if (keepdims) shape[k] = 1; else shape.splice(k, 1);
    return new Nd(shape, out, "float64");
  }

  function matmul(a, b) {
    // 2-D @ 2-D, or a stack of them (..., n, k) @ (..., k, m) with equal leading axes
    if (a.ndim < 2 || b.ndim < 2) throw new Error("matmul: only arrays of 2 or more dimensions");
    const [n, k] = a.shape.slice(-2), [k2, m] = b.shape.slice(-2);
    if (k !== k2) throw new Error(`matmul: shapes (${a.shape}) and (${b.shape}) do not match`);
    const lead = a.shape.slice(0, -2);
    if (lead.join() !== b.shape.slice(0, -2).join()) throw new Error("matmul: the leading axes differ");
    const batches = prod(lead);
    const out = new Float64Array(batches * n * m);
    for (let z = 0; z < batches; z++) {
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < m; j++) {
          let acc = 0;
          for (let q = 0; q < k; q++) acc += a.data[z * n * k + i * k + q] * b.data[z * k * m + q * m + j];
          out[z * n * m + i * m + j] = acc;
        }
      }
    }
    return new Nd([...lead, n, m], out, "float64");
  }

  function transpose(a, axes) {
    axes = axes || a.shape.map((_, i) => a.ndim - 1 - i);
    const shape = axes.map((ax) => a.shape[ax]);
    const inStrides = [];
    let step = 1;
    for (let d = a.ndim - 1; d >= 0; d--) { inStrides[d] = step; step *= a.shape[d]; }
    const n = a.size;
    const out = new Float64Array(n);
    const idx = new Array(shape.length).fill(0);
    for (let k = 0; k < n; k++) {
      let src = 0;
      for (let d = 0; d < shape.length; d++) src += idx[d] * inStrides[axes[d]];
      out[k] = a.data[src];
      for (let d = shape.length - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return new Nd(shape, out, a.dtype);
  }

  const nd = {
    Nd,
    isNd,
    add: (a, b) => binary(a, b, (x, y) => x + y, true),
    sub: (a, b) => binary(a, b, (x, y) => x - y, true),
    mul: (a, b) => binary(a, b, (x, y) => x * y, true),
    div: (a, b) => binary(a, b, (x, y) => x / y, false),
    pow: (a, b) => binary(a, b, (x, y) => x ** y, true),
    neg: (a) => unary(a, (x) => -x),
    sqrt: (a) => unary(a, Math.sqrt),
    exp: (a) => unary(a, Math.exp),
    log: (a) => unary(a, Math.log),
    tanh: (a) => unary(a, Math.tanh),
    sum: (a, axis, keepdims) => reduce(a, axis, keepdims, 0, (s, v) => s + v),
    mean: (a, axis, keepdims) => reduce(a, axis, keepdims, 0, (s, v) => s + v, (s, n) => s / n),
    max: (a, axis, keepdims) => reduce(a, axis, keepdims, -Infinity, (s, v) => (v > s || Number.isNaN(v) ? v : s)),
    matmul,
    transpose,
    zerosLike: (a) => new Nd(a.shape.slice(), new Float64Array(a.size), "float64"),
    arange: (n) => new Nd([n], Array.from({ length: n }, (_, i) => i), "int64"),
    /** a[rows, cols] for two 1-D integer arrays (numpy's paired fancy indexing of a 2-D array) */
    take2: (a, rows, cols) => {
      const out = new Float64Array(rows.size);
      for (let i = 0; i < rows.size; i++) out[i] = a.data[checkIndex(rows.data[i], a.shape[0]) * a.shape[1] + checkIndex(cols.data[i], a.shape[1])];
      return new Nd([rows.size], out, "float64");
    },
    /** a[rows, cols] = value, in place */
    put2: (a, rows, cols, value) => {
      for (let i = 0; i < rows.size; i++) a.data[checkIndex(rows.data[i], a.shape[0]) * a.shape[1] + checkIndex(cols.data[i], a.shape[1])] = value;
      return a;
    },
  };

  function checkIndex(i, n) {
    if (!Number.isInteger(i) || i < -n || i >= n) throw new Error(`index ${i} is out of bounds for an axis of size ${n}`);
    return i < 0 ? i + n : i;
  }

  // ------------------------------------------------------------------ JSON in, text out

  function parseNumber(v) {
    if (typeof v === "number") return v;
    const t = String(v).trim().toLowerCase();
    if (t === "nan") return NaN;
    if (t === "inf" || t === "+inf" || t === "infinity") return Infinity;
    if (t === "-inf" || t === "-infinity") return -Infinity;
    return Number(v);
  }

  /** A value recorded by the build (see docs_hooks.examples.jsonable) as Nd, number or tuple (Array). */
  function fromJson(v) {
    if (v && typeof v === "object" && !Array.isArray(v) && Array.isArray(v.shape)) {
      const flat = [];
      (function walk(x) { if (Array.isArray(x)) x.forEach(walk); else flat.push(parseNumber(x)); })(v.values);
      const int = INT.test(v.dtype) || v.dtype === "bool";
      return new Nd(v.shape.slice(), int ? flat : Float64Array.from(flat), v.dtype);
    }
    if (Array.isArray(v)) return v.map(fromJson);
    if (v && typeof v === "object") return mapValues(v, fromJson); // the inputs, by parameter name
    if (typeof v === "string") return parseNumber(v);
    return v;
  }

  const mapValues = (obj, f) => Object.fromEntries(Object.entries(obj).map(([k, x]) => [k, f(x)]));

  function clone(v) {
    if (isNd(v)) return v.copy();
    if (Array.isArray(v)) return v.map(clone);
    if (v && typeof v === "object") return mapValues(v, clone);
    return v;
  }

  /** numpy's round (half to even) to `digits` places. */
  function npRound(x, digits) {
    const f = 10 ** digits;
    const y = x * f;
    let r = Math.round(y);
    if (Math.abs(y % 1) === 0.5 && r % 2 !== 0) r -= 1; // Math.round goes up on .5; numpy goes to even
    return r / f + 0; // + 0 turns -0 into 0, as in the Python
  }

  /** Python's str(float) for non-finite numbers. */
  const nonFinite = (x) => (Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf");

  /** Python's f"{x:.4g}". */
  function formatG4(x) {
    if (x === 0) return "0";
    let [mant, exp] = x.toExponential(3).split("e");
    const e = Number(exp);
    if (e < -4 || e >= 4) {
      mant = mant.replace(/\.?0+$/, "");
      return `${mant}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    return x.toFixed(Math.max(0, 3 - e)).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
  }

  /** docs_hooks.examples.format_scalar */
  function formatScalar(x) {
    if (!Number.isFinite(x)) return nonFinite(x);
    const r = npRound(x, 4);
    if (r === 0 && x !== 0) return formatG4(x);
    return r.toFixed(4).replace(/0+$/, "").replace(/\.$/, "");
  }

  /** docs_hooks.examples.format_value: arrays with 4 decimals, like numpy's array2string. */
  function formatValue(v) {
    if (isNd(v)) {
      if (v.ndim === 0) return formatValue(v.data[0]);
      const int = INT.test(v.dtype);
      const cell = (x) => (int ? String(x) : Number.isFinite(x) ? npRound(x, 4).toFixed(4) : nonFinite(x));
      const nest = (level, offset) => {
        const len = v.shape[level];
        const inner = prod(v.shape.slice(level + 1));
        const items = [];
        for (let i = 0; i < len; i++) {
          items.push(level === v.ndim - 1 ? cell(v.data[offset + i]) : nest(level + 1, offset + i * inner));
        }
        const rest = v.ndim - level;
        const sep = rest === 1 ? ", " : "," + "\n".repeat(rest - 1) + " ".repeat(level + 1);
        return "[" + items.join(sep) + "]";
      };
      return nest(0, 0);
    }
    if (Array.isArray(v)) {
      const inner = v.map(formatValue).join(", ");
      return v.length === 1 ? `(${inner},)` : `(${inner})`;
    }
    if (typeof v === "boolean") return v ? "True" : "False";
    if (typeof v === "number") return formatScalar(v);
    return String(v);
  }

  /** Every number in a value, flattened (for tests and comparisons). */
  function flatten(v) {
    if (isNd(v)) return Array.from(v.data);
    if (Array.isArray(v)) return v.flatMap(flatten);
    return [Number(v)];
  }

  /** A value as plain JSON for the tests: arrays as {shape, dtype, values (flat)}, tuples as lists. */
  function toJson(v) {
    const num = (x) => (Number.isFinite(x) ? x : nonFinite(x));
    if (isNd(v)) return { shape: v.shape.slice(), dtype: v.dtype, values: Array.from(v.data, num) };
    if (Array.isArray(v)) return v.map(toJson);
    if (v && typeof v === "object") return mapValues(v, toJson);
    return typeof v === "number" ? num(v) : v;
  }

  // ------------------------------------------------------------------ the check line

  // The grammar of docs_hooks.examples._check_line: arithmetic on numbers and on
  // leaves (a name, optionally indexed: dX[0, 0]); its text is rebuilt the same way.
  const PREC = { "+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11, "**": 13 };
  const SYMBOL = { "*": "×" };

  function tokenize(text) {
    const re = /\s*(?:(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_]\w*)|(\*\*|\/\/|[-+*\/%()\[\],]))/y;
    const out = [];
    let m;
    re.lastIndex = 0;
    while (re.lastIndex < text.length) {
      const at = re.lastIndex;
      if (!(m = re.exec(text))) {
        if (/^\s*$/.test(text.slice(at))) break;
        throw new Error(`cannot read '${text.slice(at)}'`);
      }
      if (m[1] !== undefined) out.push({ kind: "num", text: m[1] });
      else if (m[2] !== undefined) out.push({ kind: "name", text: m[2] });
      else out.push({ kind: "op", text: m[3] });
    }
    return out;
  }

  function parseExpr(text) {
    const toks = tokenize(text);
    let i = 0;
    const peek = () => toks[i];
    const isOp = (t, ...ops) => t && t.kind === "op" && ops.includes(t.text);
    const expect = (op) => {
      if (!isOp(toks[i], op)) throw new Error(`expected '${op}' in '${text}'`);
      i++;
    };
    function binaryLevel(ops, next) {
      return () => {
        let left = next();
        while (isOp(peek(), ...ops)) {
          const op = toks[i++].text;
          left = { type: "bin", op, left, right: next() };
        }
        return left;
      };
    }
    const sum = () => binaryLevel(["+", "-"], term)();
    const term = binaryLevel(["*", "/", "//", "%"], factor);
    function factor() {
      if (isOp(peek(), "-", "+")) return { type: "unary", op: toks[i++].text, operand: factor() };
      return power();
    }
    function power() {
      const base = primary();
      if (isOp(peek(), "**")) { i++; return { type: "bin", op: "**", left: base, right: factor() }; }
      return base;
    }
    function primary() {
      const t = toks[i++];
      if (!t) throw new Error(`'${text}' ends too early`);
      if (t.kind === "num") return { type: "num", text: t.text, value: Number(t.text), float: /[.eE]/.test(t.text) };
      if (isOp(t, "(")) { const e = sum(); expect(")"); return e; }
      if (t.kind === "name") {
        let node = { type: "name", name: t.text, index: [] };
        while (isOp(peek(), "[")) {
          i++;
          const parts = [];
          for (;;) {
            let sign = 1;
            if (isOp(peek(), "-")) { i++; sign = -1; }
            const n = toks[i++];
            if (!n || n.kind !== "num" || /[.eE]/.test(n.text)) throw new Error(`only whole-number indexes are read, in '${text}'`);
            parts.push(sign * Number(n.text));
            if (isOp(peek(), ",")) { i++; continue; }
            expect("]");
            break;
          }
          node.index.push(parts);
        }
        return node;
      }
      throw new Error(`unexpected '${t.text}' in '${text}'`);
    }
    const tree = sum();
    if (i !== toks.length) throw new Error(`unexpected '${toks[i].text}' in '${text}'`);
    return tree;
  }

  /** Python's repr of a float literal, as ast.unparse writes it (1.0, 0.5, 1e-05). */
  function pyFloat(x) {
    if (!Number.isFinite(x)) return x > 0 ? "inf" : "nan";
    const [mant, exp] = x.toExponential().split("e");
    const e = Number(exp);
    if (e < -4 || e >= 16) return `${mant}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    const s = String(x);
    return s.includes(".") ? s : s + ".0";
  }

  function leafValue(node, env) {
    if (!(node.name in env)) throw new Error(`'${node.name}' is not computed by this example's kernel`);
    let v = env[node.name];
    for (const parts of node.index) {
      if (!isNd(v)) throw new Error(`'${node.name}' is not an array`);
      if (parts.length > v.ndim) throw new Error(`too many indexes for '${node.name}'`);
      let offset = 0, stride = v.size;
      for (let d = 0; d < parts.length; d++) {
        stride /= v.shape[d];
        offset += checkIndex(parts[d], v.shape[d]) * stride;
      }
      const shape = v.shape.slice(parts.length);
      v = new Nd(shape, v.data.slice(offset, offset + prod(shape)), v.dtype);
    }
    if (isNd(v)) {
      if (v.ndim !== 0) throw new Error(`'${node.name}' is an array, not one number`);
      v = v.data[0];
    }
    return v;
  }

  const APPLY = {
    "+": (a, b) => a + b, "-": (a, b) => a - b, "*": (a, b) => a * b, "/": (a, b) => a / b,
    "//": (a, b) => Math.floor(a / b), "%": (a, b) => a - b * Math.floor(a / b), "**": (a, b) => a ** b,
  };

  /** [value, text, precedence] of a check line's right-hand side, as _check_line's rewrite(). */
  function rewrite(node, env) {
    if (node.type === "bin") {
      const prec = PREC[node.op];
      const [lv, lt0, lp] = rewrite(node.left, env);
      const [rv, rt0, rp] = rewrite(node.right, env);
      const rightAssoc = node.op === "**";
      const lt = lp < prec || (rightAssoc && lp === prec) ? `(${lt0})` : lt0;
      const rt = rp < prec || (!rightAssoc && rp === prec) ? `(${rt0})` : rt0;
      return [APPLY[node.op](lv, rv), `${lt} ${SYMBOL[node.op] || node.op} ${rt}`, prec];
    }
    if (node.type === "unary") {
      const [v, t, p] = rewrite(node.operand, env);
      return [node.op === "-" ? -v : v, `${node.op}${p < 12 ? `(${t})` : t}`, 12];
    }
    if (node.type === "num") return [node.value, node.float ? pyFloat(node.value) : String(node.value), 14];
    const v = leafValue(node, env);
    const shown = formatScalar(v);
    return [v, shown.startsWith("-") ? `(${shown})` : shown, 14];
  }

  function evaluateCheck(check, env) {
    const eq = check.indexOf("=");
    const lhs = parseExpr(check.slice(0, eq));
    const rhs = parseExpr(check.slice(eq + 1));
    const [rv, filled] = rewrite(rhs, env);
    const [lv] = rewrite(lhs, env);
    const holds = Math.abs(rv - lv) <= 1e-12 + 1e-6 * Math.abs(lv) || (Number.isNaN(rv) && Number.isNaN(lv));
    return { filled, lhs: lv, rhs: rv, holds };
  }

  // ------------------------------------------------------------------ kernels

  const kernels = Object.create(null);

  /**
   * Register the browser's copy of a function.
   * fn(inputs) gets the inputs by parameter name (Nd arrays, numbers, tuples as Arrays)
   * and returns {local or expression text: value}.
   * options.presets: [{label, apply(inputs)}], buttons that set the inputs to telling values.
   */
  function register(name, fn, options) {
    kernels[name] = { fn, presets: (options && options.presets) || [] };
  }

  // Kernels come from the site's own scripts, which load before this one (mkdocs.yml's extra_javascript):
  // each queues a function in window.traceWidgetKernels that is given {nd, register}. One that loads
  // later registers at once.
  const queued = window.traceWidgetKernels || [];
  const api = { nd, register };
  window.traceWidgetKernels = { push: (...adders) => adders.forEach((add) => add(api)) };
  queued.forEach((add) => add(api));

  // ------------------------------------------------------------------ the widget

  const norm = (code) => String(code).replace(/\s+/g, "");
  const ASSIGN = /^\s*([A-Za-z_]\w*)\s*=(?!=)/;
  const IDENT = /^[A-Za-z_]\w*$/;

  /** The value a show row displays, from the kernel's results; undefined when the kernel has none. */
  function rowValue(code, values) {
    const byKey = Object.create(null);
    for (const [k, v] of Object.entries(values)) byKey[norm(k)] = v;
    const c = String(code).trim();
    const m = ASSIGN.exec(c);
    if (m) return byKey[m[1]];
    if (IDENT.test(c)) return byKey[c];
    return byKey[norm(c)];
  }

  /** "cache[1]" -> ["cache", 1]: where an input cell's value lives in the inputs. */
  function inputPath(name) {
    const m = /^([A-Za-z_]\w*)((?:\[\d+\])*)$/.exec(name);
    if (!m) return null;
    return [m[1], ...Array.from(m[2].matchAll(/\[(\d+)\]/g), (x) => Number(x[1]))];
  }

  function getAt(inputs, path) {
    let v = inputs[path[0]];
    for (const k of path.slice(1)) v = v && v[k];
    return v;
  }

  function setAt(inputs, path, value) {
    if (path.length === 1) { inputs[path[0]] = value; return; }
    getAt(inputs, path.slice(0, -1))[path[path.length - 1]] = value;
  }

  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };

  /** Text into an element, each line break as <br> (as the build writes multi-line values). */
  function showText(element, text) {
    const parts = [];
    text.split("\n").forEach((line, i) => {
      if (i) parts.push(document.createElement("br"));
      parts.push(document.createTextNode(line));
    });
    element.replaceChildren(...parts);
  }

  /** An input as wide as its text (within limits), so "-1.069" and "1e-05" show whole. */
  function fitWidth(input) {
    input.style.width = `${Math.min(Math.max(input.value.length, 2), 12) + 2}ch`;
  }

  class Widget {
    constructor(root, data) {
      this.root = root;
      this.data = data;
      this.kernel = kernels[data.function];
      this.recorded = fromJson(data.inputs);
      this.inputs = clone(this.recorded);
      this.values = null; // the kernel's last results
      this.rowValues = [];
      this.error = null;
      this.missing = []; // show rows the kernel cannot recompute
      this.findRows();
      this.makeInputs();
      this.makeBar();
      this.recompute();
    }

    findRows() {
      const rows = this.data.rows || [];
      const tagged = this.root.querySelectorAll("[data-row]");
      let cells;
      if (tagged.length) {
        cells = Array.from(tagged);
      } else {
        const table = this.root.querySelector("table.trace-example-steps");
        const trs = table ? Array.from(table.tBodies[0] ? table.tBodies[0].rows : []) : [];
        cells = trs.map((tr) => {
          const td = tr.cells[tr.cells.length - 1];
          return td.querySelector("code") || td;
        });
      }
      this.rows = rows.map((row, i) => ({ ...row, el: cells[i] || null, recordedText: cells[i] ? cells[i].textContent : "" }));
      this.checkEl = this.root.querySelector(".trace-example-check");
      if (this.checkEl) {
        this.checkRecordedText = this.checkEl.textContent;
        const code = this.checkEl.querySelector("code");
        // everything after the left-hand side's <code> is " = filled = value": rebuilt on each edit
        this.checkTail = code && code.nextSibling && code.nextSibling.nodeType === Node.TEXT_NODE ? code.nextSibling : null;
      }
    }

    makeInputs() {
      this.cells = [];
      const editable = Boolean(this.kernel);
      for (const td of this.root.querySelectorAll("td[data-name]")) {
        const name = td.getAttribute("data-name");
        const path = inputPath(name);
        const value = path && getAt(this.recorded, path);
        if (value === undefined) continue;
        const index = td.hasAttribute("data-index") ? td.getAttribute("data-index").split(",").map(Number) : null;
        let flat = 0;
        if (index && isNd(value)) {
          const last = value.shape[value.ndim - 1] || 1;
          flat = index.length === 2 ? index[0] * last + index[1] : index[0];
        }
        const label = index ? `${name}[${index.join(", ")}]` : name;
        const cell = { td, path, flat, int: isNd(value) ? INT.test(value.dtype) : false, label };
        if (editable) {
          const input = el("input", {
            type: "text", class: "trace-input", "aria-label": label, spellcheck: "false", autocomplete: "off",
            inputmode: cell.int ? "numeric" : "text", size: "7",
          });
          input.value = td.textContent.trim();
          fitWidth(input);
          td.textContent = "";
          td.appendChild(input);
          input.addEventListener("input", () => { fitWidth(input); this.edited(cell); });
          cell.input = input;
        }
        this.cells.push(cell);
      }
    }

    makeBar() {
      const bar = el("div", { class: "trace-widget-bar" });
      this.status = el("p", { class: "trace-widget-status", role: "status", "aria-live": "polite" });
      if (!this.kernel) {
        this.status.classList.add("trace-widget-status--missing");
        this.status.textContent = `These values cannot be recomputed in the browser: no kernel for ${this.data.function} in trace-widgets.js. They are the recorded ones.`;
        bar.appendChild(this.status);
      } else {
        bar.appendChild(el("span", { class: "trace-widget-hint" },
          `Edit any input: every value below is recomputed in your browser by a JavaScript copy of ${this.data.function}.`));
        const reset = el("button", { type: "button", class: "md-button trace-widget-button", "data-action": "reset" }, "Recorded values");
        reset.addEventListener("click", () => this.setInputs(clone(this.recorded)));
        bar.appendChild(reset);
        for (const preset of this.kernel.presets) {
          const b = el("button", { type: "button", class: "md-button trace-widget-button", "data-action": "preset", title: preset.title || "" }, preset.label);
          b.addEventListener("click", () => {
            const inputs = clone(this.inputs);
            preset.apply(inputs);
            this.setInputs(inputs);
          });
          bar.appendChild(b);
        }
        bar.appendChild(this.status);
      }
      const anchor = this.root.querySelector(".trace-example-inputs") || this.root.querySelector(".trace-example-source");
      if (anchor) anchor.after(bar); else this.root.prepend(bar);
    }

    /** Put new inputs in place (reset, presets, tests) and recompute. */
    setInputs(inputs) {
      this.inputs = inputs;
      for (const cell of this.cells) {
        if (!cell.input) continue;
        const v = getAt(inputs, cell.path);
        cell.input.value = formatValue(isNd(v) ? v.data[cell.flat] : v);
        fitWidth(cell.input);
        cell.input.classList.remove("trace-input--invalid");
        cell.input.removeAttribute("aria-invalid");
      }
      this.recompute();
    }

    edited(cell) {
      const text = cell.input.value;
      const x = parseNumber(text);
      const bad = text.trim() === "" || Number.isNaN(x) && text.trim().toLowerCase() !== "nan" || (cell.int && !Number.isInteger(x));
      cell.input.classList.toggle("trace-input--invalid", bad);
      if (bad) {
        cell.input.setAttribute("aria-invalid", "true");
        this.showError(`${cell.label}: '${text}' is not ${cell.int ? "a whole number" : "a number"}.`);
        return;
      }
      cell.input.removeAttribute("aria-invalid");
      const v = getAt(this.inputs, cell.path);
      if (isNd(v)) v.data[cell.flat] = x; else setAt(this.inputs, cell.path, x);
      this.recompute();
    }

    showError(message) {
      this.error = message;
      this.status.textContent = message;
      this.status.classList.add("trace-widget-status--error");
      for (const row of this.rows) if (row.el) row.el.classList.add("trace-value--stale");
      if (this.checkEl) this.checkEl.classList.add("trace-value--stale");
    }

    recompute() {
      this.missing = [];
      if (!this.kernel) {
        for (const row of this.rows) this.markMissing(row);
        return;
      }
      let values;
      try {
        values = this.kernel.fn(clone(this.inputs));
      } catch (err) {
        this.showError(`Cannot compute ${this.data.function} on these inputs: ${err.message}`);
        return;
      }
      this.error = null;
      this.values = values;
      this.status.classList.remove("trace-widget-status--error");
      this.status.textContent = "";
      const env = Object.assign(Object.create(null), values);
      this.rowValues = this.rows.map((row) => {
        const v = rowValue(row.code, values);
        if (v === undefined) { this.markMissing(row); return undefined; }
        if (row.name) env[row.name] = v;
        if (row.el) {
          const text = formatValue(v);
          showText(row.el, text);
          row.el.classList.remove("trace-value--stale", "trace-not-recomputed");
          row.el.classList.toggle("trace-value--changed", row.el.textContent !== row.recordedText);
        }
        return v;
      });
      this.updateCheck(env);
    }

    markMissing(row) {
      this.missing.push(row.code);
      if (row.el && !row.el.classList.contains("trace-not-recomputed")) {
        row.el.classList.add("trace-not-recomputed");
        row.el.setAttribute("title", "Recorded value: the browser cannot recompute this row");
        const td = row.el.closest("td") || row.el;
        td.appendChild(el("span", { class: "trace-not-recomputed-note" }, "not recomputed"));
      }
    }

    updateCheck(env) {
      if (!this.checkEl || !this.data.check || !this.checkTail) return;
      try {
        const r = evaluateCheck(this.data.check, env);
        this.checkTail.textContent = ` = ${r.filled} = ${formatScalar(r.lhs)}`;
        this.checkEl.classList.remove("trace-value--stale", "trace-not-recomputed");
        this.checkEl.classList.toggle("trace-check--fails", !r.holds);
        this.check = r;
      } catch (err) {
        this.missing.push(`check: ${this.data.check}`);
        this.checkEl.classList.add("trace-not-recomputed");
        this.checkEl.setAttribute("title", `Recorded values: the browser cannot recompute this line (${err.message})`);
      }
    }

    /** Plain data for tests: the inputs now, every shown row's value and text, and what is missing. */
    snapshot() {
      return {
        id: this.root.id,
        function: this.data.function,
        kernel: Boolean(this.kernel),
        error: this.error,
        missing: this.missing.slice(),
        inputs: toJson(this.inputs),
        rows: this.rows.map((row, i) => ({
          code: row.code,
          name: row.name,
          shown: Boolean(row.el),
          text: row.el ? row.el.textContent : null,
          recordedText: row.recordedText,
          value: this.rowValues[i] === undefined ? null : toJson(this.rowValues[i]),
        })),
        check: this.checkEl ? this.checkEl.textContent : null,
        checkRecordedText: this.checkEl ? this.checkRecordedText : null,
      };
    }
  }

  const widgets = [];

  /** The most input entries a widget recomputes (the build warns at the example above this, and
   *  docs_hooks.examples.WIDGET_MAX_ENTRIES says the same); the data of more is not even parsed. */
  const MAX_ENTRIES = 10000;
  const MAX_DATA_CHARS = 40 * MAX_ENTRIES;

  /** How many numbers the recorded inputs hold. */
  function inputEntries(inputs) {
    let n = 0;
    (function walk(x) {
      if (Array.isArray(x)) x.forEach(walk);
      else if (x && typeof x === "object" && Array.isArray(x.values)) walk(x.values);
      else if (x && typeof x === "object") Object.values(x).forEach(walk);
      else n += 1;
    })(inputs);
    return n;
  }

  /** In place of a widget whose inputs are too large: the recorded values stay, and a note says why. */
  function refuse(root, what) {
    root.setAttribute("data-trace-widget", "too-large");
    const note = el("p", { class: "trace-widget-status trace-widget-status--too-large", role: "status" },
      `These inputs are not editable: ${what}. The values shown are the recorded ones.`);
    const inputs = root.querySelector(":scope > .trace-example-inputs");
    if (inputs) root.insertBefore(note, inputs);
    else root.prepend(note);
  }

  function init() {
    for (const root of document.querySelectorAll(".trace-example")) {
      if (root.hasAttribute("data-trace-widget")) continue;
      const script = root.querySelector("script.trace-example-data");
      if (!script) continue;
      root.setAttribute("data-trace-widget", "");
      try {
        if (script.textContent.length > MAX_DATA_CHARS) {
          refuse(root, `their data is ${script.textContent.length} characters long, more than the ${MAX_DATA_CHARS} this page reads`);
          continue;
        }
        const data = JSON.parse(script.textContent);
        const entries = inputEntries(data.inputs);
        if (entries > MAX_ENTRIES) {
          refuse(root, `they hold ${entries} numbers, more than the ${MAX_ENTRIES} this page recomputes in your browser`);
          continue;
        }
        widgets.push(new Widget(root, data));
      } catch (err) {
        root.setAttribute("data-trace-widget", "broken");
        console.error(`trace-widgets: example '${root.id}':`, err);
      }
    }
  }

  window.traceWidgets = {
    nd, kernels, register, widgets, init, formatValue, formatScalar, fromJson, toJson, flatten, evaluateCheck,
    /** run a kernel on inputs given as JSON (as the build records them); its results as JSON */
    runKernel(name, inputs) {
      if (!kernels[name]) throw new Error(`no kernel for ${name}`);
      return toJson(kernels[name].fn(fromJson(inputs)));
    },
    /** set one input by name ("X", "cache[1]") to nested numbers, then recompute */
    setInput(widgetIndex, name, values) {
      const w = widgets[widgetIndex];
      const inputs = clone(w.inputs);
      const path = inputPath(name);
      const old = getAt(inputs, path);
      const flat = [];
      (function walk(x) { if (Array.isArray(x)) x.forEach(walk); else flat.push(Number(x)); })(values);
      setAt(inputs, path, isNd(old) ? new Nd(old.shape.slice(), INT.test(old.dtype) ? flat : Float64Array.from(flat), old.dtype) : flat[0]);
      w.setInputs(inputs);
      return w.snapshot();
    },
  };

  // Material's instant loading swaps pages without reloading scripts: it announces each page on document$.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
