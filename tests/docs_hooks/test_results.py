"""Tests of docs_hooks.results: the clipping figures computed from a recorded training run."""

from __future__ import annotations

import json

import pytest

from docs_hooks.errors import TraceError
from docs_hooks.results import clipping_rows

from .conftest import expand_page


def history(norms, clip_norm=1.0, warmup_steps=2, eval_every=4):
    return {"step": list(range(1, len(norms) + 1)), "grad_norm": norms, "loss": [1.0] * len(norms), "eval": [],
            "train_config": {"clip_norm": clip_norm, "warmup_steps": warmup_steps, "eval_every": eval_every}}


def test_clipping_rows_count_the_steps_above_the_limit_by_stretch():
    rows = clipping_rows(history([3.0, 0.5, 2.0, 2.0, 1.0, 0.1, 0.2, 1.5, 0.3]))

    assert [(label, n, k) for label, n, k, _ in rows] == [
        ("1-2 (warmup)", 2, 1),
        ("3-4", 2, 2),
        ("5-8", 4, 1),  # 1.0 is at the limit, not above it: not clipped
        ("9-9", 1, 0),
        ("all steps", 9, 4),
    ]
    assert rows[1][3] == pytest.approx(2.0)


def test_a_run_without_its_limit_is_named():
    h = history([1.0])
    del h["train_config"]["clip_norm"]

    with pytest.raises(TraceError) as err:
        clipping_rows(h)

    assert err.value.message == ("the recorded run has no train_config.clip_norm, which the clipping figures need; "
                                 "record the run again with 'python -m docs_hooks results'")


def test_the_clipping_table_on_a_page(make_project):
    run = {"command": "python train.py", "source_sha256": {}, "history": history([3.0, 0.5, 2.0, 0.2])}
    root = make_project({
        "runs/run.json": json.dumps(run),
        "docs/page.md": "# Clipping\n\n```trace-results\nfile: runs/run.json\nshow: clipping\n```\n",
    })

    result = expand_page(root)

    assert [str(p) for p in result.problems] == []
    assert ("<tr><td>1-2 (warmup)</td><td>2</td><td>1</td><td>50%</td><td>1.75</td></tr>"
            "<tr><td>3-4</td><td>2</td><td>1</td><td>50%</td><td>1.10</td></tr>"
            "<tr><td>all steps</td><td>4</td><td>2</td><td>50%</td><td>1.43</td></tr>") in result.markdown
    assert "whose limit <code>clip_norm</code> was 1." in result.markdown
