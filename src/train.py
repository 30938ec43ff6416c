"""Training: teach the transformer to sort digit strings, with AdamW written by hand.

Why this module exists: it shows that the hand-written gradients actually
train a model, on a task whose learning can be measured. The task is made up
here, not downloaded: an example is n random digits, "=", and the same digits
sorted, e.g. "47139082=01234789", read as next-character prediction. The prompt
digits are random (their loss cannot fall below log 10); the answer is fully
determined by the prompt, so the metric is the answer: exact match of the
whole answer under greedy generation, and per-token accuracy of the answer,
both on held-out prompts that training never sees.

What it follows: nanoGPT's training loop, scaled down: AdamW with decoupled
weight decay on matrices only, linear warmup then cosine decay, global
gradient-norm clipping, periodic evaluation and checkpoints. A batch is a
Python loop over sequences because the model works on one sequence at a time.

Run it with ``python src/train.py`` (options: ``--help``; defaults in config.py).
"""

import argparse
import dataclasses
import json
import math
import os
import tempfile
import time

import numpy as np

from config import TrainConfig
from transformer import ModelConfig, forward, generate, init_params, loss_and_grads

VOCAB = "0123456789="  # token id i is the character VOCAB[i]: a digit's id is the digit itself
EQUALS = VOCAB.index("=")  # the token between the digits and their sorted copy


# --------------------------------------------------------------------------- data


def decode(ids):
    """Token ids as text, e.g. [4, 7, 10] -> "47="."""
    return "".join(VOCAB[i] for i in ids)


def make_example(rng, n_digits):
    """One sequence of 2 n_digits + 1 token ids: random digits, "=", the digits sorted."""
    digits = rng.integers(0, 10, size=n_digits)  # (n_digits,)
    return np.concatenate([digits, [EQUALS], np.sort(digits)])  # (2 n_digits + 1,)


def make_eval_set(rng, n_examples, n_digits):
    """n_examples held-out sequences with distinct prompts, shape (n_examples, 2 n_digits + 1)."""
    if n_examples > 10**n_digits // 2:
        raise ValueError(f"n_eval = {n_examples} is too many for {n_digits}-digit prompts")
    examples = {}
    while len(examples) < n_examples:
        seq = make_example(rng, n_digits)
        examples.setdefault(decode(seq[:n_digits]), seq)
    return np.stack(list(examples.values()))


def make_batch(rng, batch_size, n_digits, held_out):
    """batch_size training sequences (batch_size, 2 n_digits + 1), none with a prompt in held_out."""
    rows = []
    while len(rows) < batch_size:
        seq = make_example(rng, n_digits)
        if decode(seq[:n_digits]) not in held_out:
            rows.append(seq)
    return np.stack(rows)


# --------------------------------------------------------------------------- optimisation


def batch_loss_and_grads(batch, params, cfg):
    """Mean loss and mean gradients over a batch of sequences (B, T + 1), one sequence at a time.

    Each sequence is read as inputs seq[:-1] and next-token targets seq[1:].
    """
    total_loss = 0.0
    total_grads = {name: np.zeros_like(value) for name, value in params.items()}
    for seq in batch:
        loss, grads = loss_and_grads(seq[:-1], seq[1:], params, cfg)
        total_loss += loss
        for name, grad in grads.items():
            total_grads[name] += grad
    B = len(batch)
    return total_loss / B, {name: grad / B for name, grad in total_grads.items()}


def clip_grad_norm(grads, max_norm):
    """Scale all gradients in place so that their global norm is at most max_norm; return the norm before."""
    norm = math.sqrt(sum(float((grad**2).sum()) for grad in grads.values()))
    if norm > max_norm:
        scale = max_norm / norm
        for grad in grads.values():
            grad *= scale
    return norm


def decays(name, array):
    """Whether AdamW applies weight decay to this parameter: matrices (ndim >= 2) yes, never 1-D ones.

    Matrices (embeddings, projections) are decayed; biases and LayerNorm gains and
    shifts are not: pulling a gain towards 0 or a bias towards 0 is not a useful
    prior. The rule depends on the shape only; the name is there for callers.
    """
    return array.ndim >= 2


class AdamW:
    """Adam with decoupled weight decay (Loshchilov & Hutter), the update of torch.optim.AdamW."""

    def __init__(self, params, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.01):
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.weight_decay = weight_decay
        self.m = {name: np.zeros_like(value) for name, value in params.items()}  # first moments
        self.v = {name: np.zeros_like(value) for name, value in params.items()}  # second moments
        self.t = 0  # steps taken

    def step(self, params, grads, lr):
        """Update every parameter in place."""
        self.t += 1
        for name, theta in params.items():
            g = grads[name]
            self.m[name] = self.beta1 * self.m[name] + (1.0 - self.beta1) * g
            self.v[name] = self.beta2 * self.v[name] + (1.0 - self.beta2) * g * g
            m_hat = self.m[name] / (1.0 - self.beta1**self.t)  # bias-corrected moments
            v_hat = self.v[name] / (1.0 - self.beta2**self.t)
            if decays(name, theta):
                theta -= lr * self.weight_decay * theta  # decoupled: shrinks the weight, not via the gradient
            theta -= lr * m_hat / (np.sqrt(v_hat) + self.eps)


def lr_schedule(step, lr, min_lr, warmup_steps, total_steps):
    """Learning rate at step (counted from 1): linear warmup to lr, then cosine decay to min_lr at total_steps."""
    if step <= warmup_steps:
        return lr * step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))  # 0 -> 1
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


# --------------------------------------------------------------------------- evaluation


def evaluate(params, cfg, examples, n_digits, n_samples=0):
    """Held-out metrics of the sorting task.

    exact_match: fraction of examples whose whole answer greedy generation gets right.
    token_accuracy: fraction of answer tokens predicted right (argmax) when the
    model is given the correct earlier tokens. samples: the first n_samples as text.
    """
    exact = 0
    correct_tokens = 0
    samples = []
    for seq in examples:
        prompt = seq[: n_digits + 1]  # the digits and "="
        answer = seq[n_digits + 1 :]  # the sorted digits
        generated = generate(prompt, params, cfg, n_digits, temperature=0.0)
        exact += int(np.array_equal(generated, answer))
        logits, _ = forward(seq[:-1], params, cfg)  # (2 n_digits, V)
        predicted = logits[n_digits:].argmax(axis=-1)  # (n_digits,), the predictions of the answer tokens
        correct_tokens += int((predicted == answer).sum())
        if len(samples) < n_samples:
            samples.append({"prompt": decode(prompt), "output": decode(generated), "target": decode(answer)})
    n = len(examples)
    return {"exact_match": exact / n, "token_accuracy": correct_tokens / (n * n_digits), "samples": samples}


# --------------------------------------------------------------------------- checkpoints


def atomic_write(path, write):
    """Call write(file) on a temporary file next to path, then rename it over path.

    os.replace is atomic on one file system, so path holds either the old
    complete file or the new complete one, never a half-written one.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.chmod(tmp_path, 0o644)  # mkstemp makes the file private (0600); a checkpoint is an ordinary file
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        os.unlink(tmp_path)
        raise


def save_checkpoint(path, params, cfg):
    """Write params and the ModelConfig (as JSON) to an .npz file, atomically."""
    config_json = np.array(json.dumps(cfg.to_dict()))
    atomic_write(path, lambda f: np.savez(f, __config__=config_json, **params))


def load_checkpoint(path, cfg):
    """The params saved at path, checked against cfg; ValueError if the file is corrupt or from another config."""
    try:
        with np.load(path, allow_pickle=False) as data:
            saved_cfg = json.loads(str(data["__config__"]))
            params = {name: data[name] for name in data.files if name != "__config__"}
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ValueError(f"checkpoint {path} is corrupt or not a checkpoint of this model ({exc})") from exc
    expected_cfg = cfg.to_dict()
    differing = [
        f"{key} (checkpoint {saved_cfg.get(key)!r}, expected {expected_cfg.get(key)!r})"
        for key in sorted(set(saved_cfg) | set(expected_cfg))
        if saved_cfg.get(key) != expected_cfg.get(key)
    ]
    if differing:
        raise ValueError(f"checkpoint {path} was made with another config; differing fields: " + ", ".join(differing))
    expected_shapes = {name: value.shape for name, value in init_params(cfg, np.random.default_rng(0)).items()}
    shapes = {name: value.shape for name, value in params.items()}
    if shapes != expected_shapes:
        raise ValueError(f"checkpoint {path} is corrupt: its parameter names or shapes do not match its config")
    return {name: params[name] for name in expected_shapes}


def history_path(checkpoint_path):
    """Where the training history goes: next to the checkpoint, e.g. sort.npz -> sort.history.json."""
    return os.path.splitext(checkpoint_path)[0] + ".history.json"


def save_history(path, history):
    """Write the training history (loss per step, evaluations, samples) as JSON, atomically."""
    text = json.dumps(history)
    atomic_write(path, lambda f: f.write(text.encode()))


# --------------------------------------------------------------------------- main


def parse_args(argv):
    """A TrainConfig from the command line: every field of config.TrainConfig is a --flag."""
    parser = argparse.ArgumentParser(description="Train the NumPy transformer to sort digit strings.")
    for field in dataclasses.fields(TrainConfig):
        flag = "--" + field.name.replace("_", "-")
        parser.add_argument(flag, type=type(field.default), default=field.default, help=f"default: {field.default}")
    args = parser.parse_args(argv)
    return TrainConfig(**vars(args))


def log_eval(step, params, cfg, eval_set, tc, history):
    """Evaluate on the held-out set, print the result and a few samples, and record it in history."""
    result = evaluate(params, cfg, eval_set, tc.n_digits, tc.n_samples)
    history["eval"].append({"step": step, **result})
    print(
        f"eval  {step:5d} | exact match {result['exact_match']:6.1%} "
        f"| answer-token accuracy {result['token_accuracy']:6.1%}"
    )
    for sample in result["samples"]:
        mark = "ok" if sample["output"] == sample["target"] else "expected " + sample["target"]
        print(f"        {sample['prompt']}{sample['output']}  {mark}")
    return result


def model_config(tc):
    """The ModelConfig of a training run: the model fields of tc, and the task's vocabulary size."""
    return ModelConfig(
        vocab_size=len(VOCAB),
        seq_len=tc.seq_len,
        emb_dim=tc.emb_dim,
        n_heads=tc.n_heads,
        n_layers=tc.n_layers,
        ff_dim=tc.ff_dim,
        init_std=tc.init_std,
    )


def main(argv=None):
    """Train with the settings of config.TrainConfig (overridable by flags); returns the history dict."""
    tc = parse_args(argv)
    if tc.steps < 1:
        raise ValueError(f"steps must be at least 1, got {tc.steps}")
    if 2 * tc.n_digits > tc.seq_len:
        raise ValueError(f"n_digits = {tc.n_digits} needs seq_len >= {2 * tc.n_digits}, got {tc.seq_len}")
    cfg = model_config(tc)
    rng = np.random.default_rng(tc.seed)
    params = init_params(cfg, rng)
    eval_set = make_eval_set(np.random.default_rng([tc.seed, 1]), tc.n_eval, tc.n_digits)
    held_out = {decode(seq[: tc.n_digits]) for seq in eval_set}
    optimizer = AdamW(params, tc.beta1, tc.beta2, tc.adam_eps, tc.weight_decay)
    history = {
        "train_config": dataclasses.asdict(tc),
        "model_config": cfg.to_dict(),
        "step": [],
        "loss": [],
        "lr": [],
        "grad_norm": [],
        "eval": [],
    }
    n_params = sum(value.size for value in params.values())
    loss_floor = (tc.n_digits - 1) * math.log(10) / (2 * tc.n_digits)  # the random prompt digits cost log 10 each
    history["loss_floor"] = loss_floor
    print(
        f"{n_params:,} parameters; task: sort {tc.n_digits} digits, e.g. {decode(eval_set[0])}; "
        f"lowest possible loss {loss_floor:.4f}"
    )
    first = log_eval(0, params, cfg, eval_set, tc, history)
    train_seconds = 0.0
    n_tokens = 0
    for step in range(1, tc.steps + 1):
        start = time.perf_counter()
        batch = make_batch(rng, tc.batch_size, tc.n_digits, held_out)  # (B, 2 n_digits + 1)
        lr = lr_schedule(step, tc.lr, tc.min_lr, tc.warmup_steps, tc.steps)
        loss, grads = batch_loss_and_grads(batch, params, cfg)
        grad_norm = clip_grad_norm(grads, tc.clip_norm)
        optimizer.step(params, grads, lr)
        train_seconds += time.perf_counter() - start
        n_tokens += batch.shape[0] * (batch.shape[1] - 1)
        history["step"].append(step)
        history["loss"].append(round(float(loss), 5))
        history["lr"].append(round(lr, 8))
        history["grad_norm"].append(round(grad_norm, 5))
        if step % tc.log_every == 0 or step == tc.steps:
            print(
                f"step  {step:5d} | loss {loss:.4f} | lr {lr:.2e} | grad norm {grad_norm:6.3f} "
                f"| {n_tokens / train_seconds:,.0f} tokens/s"
            )
        if step % tc.eval_every == 0 or step == tc.steps:
            last = log_eval(step, params, cfg, eval_set, tc, history)
            history["train_seconds"] = round(train_seconds, 2)
            save_checkpoint(tc.out, params, cfg)
            save_history(history_path(tc.out), history)
    print(
        f"exact match {first['exact_match']:.1%} -> {last['exact_match']:.1%}, "
        f"answer-token accuracy {first['token_accuracy']:.1%} -> {last['token_accuracy']:.1%}, "
        f"{train_seconds:.0f} s of training; saved {tc.out} and {history_path(tc.out)}"
    )
    return history


if __name__ == "__main__":
    main()
