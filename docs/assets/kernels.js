/*
 * Browser copies of this site's model functions, for the editable worked examples
 * (docs_hooks' trace-widgets.js runs them). Each is written line by line after the
 * function in src/ and returns its locals and the sub-expressions a page shows; the
 * browser tests compare every value with the one Python recorded, so a kernel that
 * drifts from the code fails them.
 *
 * This script is listed in mkdocs.yml's extra_javascript, so it loads before the
 * plugin's own scripts: it queues its kernels in window.traceWidgetKernels, and
 * trace-widgets.js registers them when it starts.
 */
(window.traceWidgetKernels = window.traceWidgetKernels || []).push(({ nd, register }) => {
  const { add, sub, mul, div, pow, neg, sqrt, exp, log, tanh, matmul: mm } = nd;

  register("ops.layer_norm_forward", ({ X, gamma, beta, epsilon }) => {
    const mu = X.mean(-1, true);
    const centred = sub(X, mu);
    const sq = pow(centred, 2);
    const v = sq.mean(-1, true);
    const shifted = add(v, epsilon);
    const root = sqrt(shifted);
    const s = div(1.0, root);
    const Xhat = mul(centred, s);
    const scaled = mul(gamma, Xhat);
    const Y = add(scaled, beta);
    return {
      X, gamma, beta, epsilon, mu, var: v, s, Xhat,
      "X.mean(axis=-1, keepdims=True)": mu,
      "X - mu": centred,
      "(X - mu) ** 2": sq,
      "((X - mu) ** 2).mean(axis=-1, keepdims=True)": v,
      "var + epsilon": shifted,
      "np.sqrt(var + epsilon)": root,
      "1.0 / np.sqrt(var + epsilon)": s,
      "(X - mu) * s": Xhat,
      "gamma * Xhat": scaled,
      "gamma * Xhat + beta": Y,
      "(Xhat, s)": [Xhat, s],
      "gamma * Xhat + beta, (Xhat, s)": [Y, [Xhat, s]],
    };
  }, {
    presets: [{
      label: "Make every row of X constant",
      title: "Sets each entry of X to the first entry of its row: the variance is 0, so s = 1 / sqrt(epsilon)",
      apply: (inputs) => {
        const X = inputs.X, d = X.shape[X.ndim - 1];
        for (let k = 0; k < X.size; k++) X.data[k] = X.data[k - (k % d)];
      },
    }],
  });

  register("ops.layer_norm_backward", ({ dY, cache, gamma }) => {
    const [Xhat, s] = cache;
    const dXhat = mul(dY, gamma);
    const m1 = dXhat.mean(-1, true);
    const prodXhat = mul(dXhat, Xhat);
    const m2 = prodXhat.mean(-1, true);
    const first = sub(dXhat, m1);
    const second = mul(Xhat, m2);
    const inner = sub(first, second);
    const dX = mul(s, inner);
    const dYXhat = mul(dY, Xhat);
    const dgamma = dYXhat.sum(0);
    const dbeta = dY.sum(0);
    return {
      dY, cache, gamma, Xhat, s, dXhat, dX, dgamma, dbeta,
      "dY * gamma": dXhat,
      "dXhat.mean(axis=-1, keepdims=True)": m1,
      "dXhat * Xhat": prodXhat,
      "(dXhat * Xhat).mean(axis=-1, keepdims=True)": m2,
      "dXhat - dXhat.mean(axis=-1, keepdims=True)": first,
      "Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True)": second,
      "dXhat - dXhat.mean(axis=-1, keepdims=True) - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True)": inner,
      "dY * Xhat": dYXhat,
      "(dY * Xhat).sum(axis=0)": dgamma,
      "dY.sum(axis=0)": dbeta,
      "dX, dgamma, dbeta": [dX, dgamma, dbeta],
    };
  });

  register("ops.linear_forward", ({ X, W, b }) => {
    const XW = mm(X, W);
    const Y = add(XW, b);
    return { X, W, b, Y, "X @ W": XW, "X @ W + b": Y, "Y, X": [Y, X] };
  });

  register("ops.linear_backward", ({ dY, cache, W }) => {
    const X = cache;
    const dX = mm(dY, W.T);
    const dW = mm(X.T, dY);
    const db = dY.sum(0);
    return {
      dY, cache, W, X, dX, dW, db,
      "W.T": W.T, "X.T": X.T, "dY @ W.T": dX, "X.T @ dY": dW, "dY.sum(axis=0)": db, "dX, dW, db": [dX, dW, db],
    };
  });

  const GELU_C = Math.sqrt(2.0 / Math.PI); // ops.GELU_C
  const GELU_A = 0.044715; // ops.GELU_A

  register("ops.gelu_forward", ({ X }) => {
    const X3 = pow(X, 3);
    const aX3 = mul(GELU_A, X3);
    const inner = add(X, aX3);
    const u = mul(GELU_C, inner);
    const t = tanh(u);
    const half = mul(0.5, X);
    const onePlus = add(1.0, t);
    const Y = mul(half, onePlus);
    return {
      X, u, t, Y,
      "X ** 3": X3, "GELU_A * X ** 3": aX3, "X + GELU_A * X ** 3": inner, "GELU_C * (X + GELU_A * X ** 3)": u,
      "np.tanh(u)": t, "0.5 * X": half, "1.0 + t": onePlus, "0.5 * X * (1.0 + t)": Y, "(X, t)": [X, t],
    };
  });

  register("ops.gelu_backward", ({ dY, cache }) => {
    const [X, t] = cache;
    const X2 = pow(X, 2);
    const du_dX = mul(GELU_C, add(1.0, mul(mul(3.0, GELU_A), X2)));
    const onePlus = add(1.0, t);
    const oneMinusT2 = sub(1.0, pow(t, 2));
    const left = mul(0.5, onePlus);
    const right = mul(mul(mul(0.5, X), oneMinusT2), du_dX);
    const dY_dX = add(left, right);
    const dX = mul(dY, dY_dX);
    return {
      dY, cache, X, t, du_dX, dY_dX, dX,
      "X ** 2": X2, "1.0 + 3.0 * GELU_A * X ** 2": add(1.0, mul(mul(3.0, GELU_A), X2)),
      "GELU_C * (1.0 + 3.0 * GELU_A * X ** 2)": du_dX, "1.0 + t": onePlus, "t ** 2": pow(t, 2),
      "1.0 - t ** 2": oneMinusT2, "0.5 * (1.0 + t)": left, "0.5 * X * (1.0 - t ** 2) * du_dX": right,
      "0.5 * (1.0 + t) + 0.5 * X * (1.0 - t ** 2) * du_dX": dY_dX, "dY * dY_dX": dX,
    };
  });

  register("ops.softmax_forward", ({ X }) => {
    const M = X.max(-1, true);
    const Z = sub(X, M);
    const E = exp(Z);
    const S = E.sum(-1, true);
    const P = div(E, S);
    return {
      X, Z, E, P,
      "X.max(axis=-1, keepdims=True)": M, "X - X.max(axis=-1, keepdims=True)": Z, "np.exp(Z)": E,
      "E.sum(axis=-1, keepdims=True)": S, "E / E.sum(axis=-1, keepdims=True)": P, "P, P": [P, P],
    };
  }, {
    presets: [{
      label: "Add 1000 to every entry",
      title: "Softmax ignores a constant added to a row; subtracting the row's max keeps exp from overflowing",
      apply: (inputs) => { inputs.X.data.forEach((v, k) => { inputs.X.data[k] = v + 1000; }); },
    }],
  });

  register("ops.softmax_backward", ({ dP, cache }) => {
    const P = cache;
    const dPP = mul(dP, P);
    const rowSum = dPP.sum(-1, true);
    const diff = sub(dP, rowSum);
    const dX = mul(P, diff);
    return {
      dP, cache, P, dX,
      "dP * P": dPP, "(dP * P).sum(axis=-1, keepdims=True)": rowSum,
      "dP - (dP * P).sum(axis=-1, keepdims=True)": diff, "P * (dP - (dP * P).sum(axis=-1, keepdims=True))": dX,
    };
  });

  register("ops.cross_entropy_forward", ({ logits, targets }) => {
    const T = logits.shape[0];
    const M = logits.max(-1, true);
    const Z = sub(logits, M);
    const E = exp(Z);
    const S = E.sum(-1, true);
    const logS = log(S);
    const log_P = sub(Z, logS);
    const rows = nd.arange(T);
    const picked = nd.take2(log_P, rows, targets);
    const loss = -picked.mean();
    const P = exp(log_P);
    return {
      logits, targets, T, Z, log_P, loss, P,
      "logits.shape[0]": T, "logits.max(axis=-1, keepdims=True)": M, "logits - logits.max(axis=-1, keepdims=True)": Z,
      "np.exp(Z)": E, "np.exp(Z).sum(axis=-1, keepdims=True)": S, "np.log(np.exp(Z).sum(axis=-1, keepdims=True))": logS,
      "Z - np.log(np.exp(Z).sum(axis=-1, keepdims=True))": log_P, "np.arange(T)": rows,
      "log_P[np.arange(T), targets]": picked, "log_P[np.arange(T), targets].mean()": picked.mean(),
      "-log_P[np.arange(T), targets].mean()": loss, "np.exp(log_P)": P, "(P, targets)": [P, targets],
    };
  });

  register("ops.cross_entropy_backward", ({ dloss, cache }) => {
    const [P, targets] = cache;
    const T = P.shape[0];
    const onehot = nd.put2(nd.zerosLike(P), nd.arange(T), targets, 1.0);
    const diff = sub(P, onehot);
    const scaled = mul(dloss, diff);
    const dlogits = div(scaled, T);
    return {
      dloss, cache, P, targets, T, onehot, dlogits,
      "P.shape[0]": T, "np.zeros_like(P)": nd.zerosLike(P), "P - onehot": diff,
      "dloss * (P - onehot)": scaled, "dloss * (P - onehot) / T": dlogits,
    };
  });
});
