"""Training results from a real, cached run: the loss curve, the evaluations and samples.

A training run takes minutes, so the build does not train. ``python -m
docs_hooks results HISTORY OUT`` stamps a run's history (the JSON the training
script writes) with the command that made it and a digest of every source file,
and the page shows it. When the source has changed since the run, the page says
which files differ, so a reader knows the figures come from older code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from docs_hooks.base.atomic import atomic_write
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.base import Rendered, Scope
from docs_hooks.read.blocks import Block, within_root
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.render import html as R
from docs_hooks.render import sources
from docs_hooks.render.links import Links
from docs_hooks.run.results import Need, Results

RECORD = "python -m docs_hooks results"


def stamp(history_path: Path, out: Path, command: str, file_digests: dict[str, str], source_prefix: str) -> dict:
    """Write ``out``: the history, the command and the source digests, atomically."""
    try:
        history = json.loads(history_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceError(
            f"cannot read the training history: {exc}; run the training first", str(history_path)
        ) from None
    for key in ("step", "loss", "eval"):
        if key not in history:
            raise TraceError(
                f"the training history has no '{key}'; is it the file the training script wrote?", str(history_path)
            )
    source = {p: d for p, d in sorted(file_digests.items()) if p.startswith(source_prefix)}
    data = {"command": command, "source_sha256": source, "history": history}
    atomic_write(out, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def load(path: Path, shown_as: str) -> dict:
    """The stamped run at ``path``, checked to hold everything the page shows."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceError(f"no training results at {shown_as}; run '{RECORD}' to record a training run there") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read {shown_as} ({exc}); run '{RECORD}' to record a training run there") from None
    except json.JSONDecodeError as exc:
        raise TraceError(f"{shown_as} is not valid JSON ({exc.msg}); run '{RECORD}' again") from None
    missing = _missing(data)
    if missing:
        raise TraceError(f"{shown_as} is not a recorded training run: {missing}; run '{RECORD}' to record one there")
    return data


def _missing(data: object) -> str | None:
    """What a stamped run lacks that the page shows, in words; None when it has everything."""
    number = (int, float)

    def is_list_of(value: object, kind: type | tuple[type, ...]) -> bool:
        return isinstance(value, list) and all(isinstance(v, kind) and not isinstance(v, bool) for v in value)

    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}, not an object with a 'history'"
    h = data.get("history")
    if not isinstance(h, dict):
        return "it has no 'history' object"
    if not is_list_of(h.get("step"), int) or not h["step"]:
        return "its history has no 'step' list of step numbers"
    if not is_list_of(h.get("loss"), number) or len(h["loss"]) != len(h["step"]):
        return "its history has no 'loss' list with one number per step"
    if not isinstance(h.get("eval"), list):
        return "its history has no 'eval' list"
    for n, e in enumerate(h["eval"]):
        for key in ("step", "exact_match", "token_accuracy"):
            if not isinstance(e, dict) or not isinstance(e.get(key), number) or isinstance(e.get(key), bool):
                return f"its history's evaluation {n} has no number '{key}'"
        samples = e.get("samples", [])
        if not isinstance(samples, list) or not all(
            isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ("prompt", "output", "target"))
            for s in samples
        ):
            return f"its history's evaluation {n} has 'samples' without a text 'prompt', 'output' and 'target'"
    for key in ("loss_floor", "train_seconds"):
        if h.get(key) is not None and (not isinstance(h[key], number) or isinstance(h[key], bool)):
            return f"its history's '{key}' is not a number"
    if not isinstance(data.get("command", ""), str):
        return "its 'command' is not a text"
    digests = data.get("source_sha256", {})
    if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
        return "its 'source_sha256' is not a mapping of file to digest"
    return None


def stale_files(data: dict, file_digests: dict[str, str], source_prefix: str) -> list[str]:
    """Source files whose text differs from the run's (added, removed or changed)."""
    then = data.get("source_sha256", {})
    now = {p: d for p, d in file_digests.items() if p.startswith(source_prefix)}
    return sorted(p for p in set(then) | set(now) if then.get(p) != now.get(p))


def loss_curve_svg(
    steps: list[int], losses: list[float], floor: float | None = None, width: int = 640, height: int = 260
) -> str:
    """An inline SVG of the training loss against the step (deterministic text)."""
    if not steps:
        return ""
    left, right, top, bottom = 48, 12, 12, 32
    w, h = width - left - right, height - top - bottom
    lo = min(min(losses), floor if floor is not None else min(losses))
    hi = max(losses)
    span = (hi - lo) or 1.0
    x_max = max(steps) or 1  # a run of one step, step 0, still has a width

    def x(step: float) -> float:
        return left + w * step / x_max

    def y(value: float) -> float:
        return top + h * (1 - (value - lo) / span)

    # At most ~400 points keeps the page light; each point is the mean of its stretch of steps.
    stride = max(1, len(steps) // 400)
    points = []
    for i in range(0, len(steps), stride):
        chunk = losses[i : i + stride]
        points.append(f"{x(steps[i]):.1f},{y(sum(chunk) / len(chunk)):.1f}")
    ticks = []
    for k in range(5):
        value = lo + span * k / 4
        ticks.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.2f}</text>')
        ticks.append(f'<line x1="{left}" x2="{left + w}" y1="{y(value):.1f}" y2="{y(value):.1f}" class="grid"/>')
    for k in range(5):
        step = round(x_max * k / 4)
        ticks.append(f'<text x="{x(step):.1f}" y="{height - 12}" text-anchor="middle">{step}</text>')
    floor_line = ""
    if floor is not None:
        floor_line = (
            f'<line x1="{left}" x2="{left + w}" y1="{y(floor):.1f}" y2="{y(floor):.1f}" class="floor"/>'
            f'<text x="{left + w - 4}" y="{y(floor) - 4:.1f}" text-anchor="end">lowest possible loss</text>'
        )
    style = (
        "<style>.trace-curve text{font:11px sans-serif;fill:currentColor}"
        ".trace-curve .grid{stroke:currentColor;stroke-opacity:.15}"
        ".trace-curve .floor{stroke:currentColor;stroke-opacity:.6;stroke-dasharray:4 3}"
        ".trace-curve .loss{fill:none;stroke:var(--md-primary-fg-color,#3f51b5);stroke-width:1.5}</style>"
    )
    return (
        f'<svg class="trace-curve" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Training loss against step">'
        + style
        + "".join(ticks)
        + floor_line
        + f'<polyline points="{" ".join(points)}" class="loss"/>'
        + f'<text x="{left + w / 2:.0f}" y="{height}" text-anchor="middle">step</text>'
        + "</svg>"
    )


def render(data: dict, shown_as: str, stale: list[str], code_link: Callable[[str], str]) -> str:
    """The results section: provenance, curve, evaluations and samples."""
    h = data["history"]
    out = []
    command = data.get("command", "")
    out.append(f"<p>From a real run of {R.code(command)}, recorded in {R.code(shown_as)}.</p>")
    if stale:
        out.append(
            '<div class="admonition warning"><p class="admonition-title">Older code</p><p>'
            "The run was made before the last change to "
            + ", ".join(code_link(p) for p in stale)
            + ". Run <code>python -m docs_hooks results</code> to record a run of this code.</p></div>"
        )
    out.append(loss_curve_svg(h["step"], h["loss"], h.get("loss_floor")))
    rows = [[str(e["step"]), f"{e['exact_match']:.1%}", f"{e['token_accuracy']:.1%}"] for e in h["eval"]]
    out.append(R.table(["Step", "Exact match (held out)", "Answer-token accuracy"], rows))
    last = h["eval"][-1] if h["eval"] else {}
    samples = last.get("samples", [])
    if samples:
        srows = [
            [
                R.code(s["prompt"]),
                R.code(s["output"]),
                R.code(s["target"]),
                "yes" if s["output"] == s["target"] else "no",
            ]
            for s in samples
        ]
        out.append(f"<p>Samples at step {last['step']}, greedy decoding of held-out prompts:</p>")
        out.append(R.table(["Prompt", "Model's answer", "Expected", "Right"], srows))
    facts = []
    if "train_seconds" in h:
        facts.append(["Training time (seconds, on the machine that ran it)", R.esc(h["train_seconds"])])
    facts.append(["Steps", R.esc(str(len(h["step"])))])
    facts.append(["Final training loss", R.esc(f"{h['loss'][-1]:.4f}")])
    if h.get("loss_floor") is not None:
        facts.append(["Lowest possible loss on this task", R.esc(f"{h['loss_floor']:.4f}")])
    out.append(R.table(["", ""], facts, "trace-table trace-facts"))
    return "\n".join(out) + "\n"


def clipping_rows(history: dict) -> list[tuple[str, int, int, float]]:
    """How often the recorded run's gradient norm was above its clipping limit: (steps, count, clipped, mean norm).

    One row for the warmup, one for each stretch between evaluations after it,
    and one for the whole run; the limit, the warmup and the evaluation interval
    are the run's own (its ``train_config``). A norm above the limit is one that
    ``clip_grad_norm`` scaled down.
    """
    tc = history.get("train_config", {})
    for key in ("clip_norm", "warmup_steps", "eval_every"):
        if not isinstance(tc.get(key), (int, float)):
            raise TraceError(
                f"the recorded run has no train_config.{key}, which the clipping figures need; "
                "record the run again with 'python -m docs_hooks results'"
            )
    steps, norms = history.get("step", []), history.get("grad_norm", [])
    if not steps or len(steps) != len(norms):
        raise TraceError(
            "the recorded run has no grad_norm for each step, which the clipping figures need; "
            "record the run again with 'python -m docs_hooks results'"
        )
    limit, warmup, every = tc["clip_norm"], int(tc["warmup_steps"]), max(1, int(tc["eval_every"]))
    bounds = [0, warmup] if warmup > 0 else [0]
    while bounds[-1] < steps[-1]:
        bounds.append(min(steps[-1], (bounds[-1] // every + 1) * every))
    rows = []

    def row(label: str, lo: int, hi: int) -> None:
        chosen = [n for s, n in zip(steps, norms) if lo < s <= hi]
        if chosen:
            rows.append((label, len(chosen), sum(n > limit for n in chosen), sum(chosen) / len(chosen)))

    for lo, hi in zip(bounds, bounds[1:]):
        row(f"{lo + 1}-{hi}" + (" (warmup)" if hi == warmup and lo == 0 else ""), lo, hi)
    row("all steps", 0, steps[-1])
    return rows


def clipping_table(data: dict, shown_as: str, stale_html: str) -> str:
    """The share of the recorded run's steps whose gradient was clipped, by stretch of steps."""
    h = data["history"]
    rows = clipping_rows(h)
    limit = h["train_config"]["clip_norm"]
    out = [
        f"<p>From the recorded run of {R.code(data.get('command', ''))} ({R.code(shown_as)}), whose limit "
        f"{R.code('clip_norm')} was {R.esc(f'{limit:g}')}. A step is clipped when its global gradient norm, "
        "recorded before clipping, is above the limit.</p>",
        stale_html,
    ]
    out.append(
        R.table(
            ["Steps", "Steps in the stretch", "Clipped", "Share clipped", "Mean gradient norm"],
            [[R.esc(label), str(n), str(k), R.esc(f"{k / n:.0%}"), R.esc(f"{mean:.2f}")] for label, n, k, mean in rows],
        )
    )
    return "\n".join(part for part in out if part) + "\n"


def _stale_html(stale: list[str], code_link: Callable[[str], str]) -> str:
    if not stale:
        return ""
    return (
        '<div class="admonition warning"><p class="admonition-title">Older code</p><p>'
        "The run was made before the last change to "
        + ", ".join(code_link(p) for p in stale)
        + ". Record a run of this code with <code>python -m docs_hooks results</code>.</p></div>"
    )


def source_prefix(settings: Settings) -> str:
    """What the repo paths of the source files start with: ``src/``, or nothing when the source is the
    project's root (``source_root = "."``)."""
    rel = settings.rel(settings.source_root)
    return "" if rel in (".", "") else rel.rstrip("/") + "/"


@dataclass(frozen=True)
class ResultsPlan:
    path: Path  # the stamped run
    shown_as: str  # as the page names it
    show: str  # "run" or "clipping"
    page: str
    line: int  # the line of the field 'file'
    prefix: str  # the source files' repo paths start with it
    file_digests: dict[str, str]  # the code as it is now, file by file
    settings: Settings


class ResultsKind:
    name = "results"
    spec = BLOCK_KINDS["results"]

    def resolve(self, block: Block, scope: Scope) -> ResultsPlan:
        s = scope.project.settings
        shown_as = block.data["file"]
        try:
            path = s.project_root / within_root(shown_as, "field 'file' of block 'trace-results'")
        except TraceError as err:
            raise err.at(scope.page, block.field_line("file")) from None
        return ResultsPlan(
            path,
            shown_as,
            block.data.get("show", "run"),
            scope.page,
            block.field_line("file"),
            source_prefix(s),
            scope.project.index.file_digests,
            s,
        )

    def needs(self, plan: ResultsPlan, done: Mapping) -> list[Need]:
        return []

    def render(self, plan: ResultsPlan, results: Results, links: Links) -> Rendered:
        try:
            data = load(plan.path, plan.shown_as)
        except TraceError as err:
            raise err.at(plan.page, plan.line) from None
        stale = stale_files(data, plan.file_digests, plan.prefix)

        def code_link(repo_path: str) -> str:
            return R.link(R.code(repo_path), plan.settings.github_url(repo_path) or sources.target(repo_path))

        if plan.show == "clipping":
            return Rendered(clipping_table(data, plan.shown_as, _stale_html(stale, code_link)))
        return Rendered(render(data, plan.shown_as, stale, code_link))
