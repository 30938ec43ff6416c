"""The trace-results block: a recorded training run, read only from inside the project and checked whole, and the
clipping figures computed from it."""

from __future__ import annotations

import json
import re

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.results import clipping_rows

from .conftest import expand_page

RUN = {
    "command": "python src/train.py",
    "source_sha256": {},
    "history": {
        "step": [0, 1, 2],
        "loss": [2.5, 2.0, 1.5],
        "loss_floor": 1.0,
        "eval": [
            {
                "step": 2,
                "exact_match": 0.5,
                "token_accuracy": 0.75,
                "samples": [{"prompt": "21=", "output": "12", "target": "12"}],
            }
        ],
    },
}


def results_page(file: str) -> str:
    return f"# Results\n\nThe run:\n\n```trace-results\nfile: {file}\n```\n"


def problems(make_project, file: str, files: dict | None = None) -> list[str]:
    root = make_project({"docs/page.md": results_page(file), **(files or {})})
    return [str(p) for p in expand_page(root).problems]


def test_a_recorded_run_is_shown(make_project):
    root = make_project({"docs/page.md": results_page("docs/data/run.json"), "docs/data/run.json": json.dumps(RUN)})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert "75.0%" in expanded.markdown  # the answer-token accuracy of the evaluation


def test_a_run_of_a_single_step_is_shown(make_project):
    one = {**RUN, "history": {**RUN["history"], "step": [0], "loss": [2.5]}}
    root = make_project({"docs/page.md": results_page("run.json"), "run.json": json.dumps(one)})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert "2.5000" in expanded.markdown  # the final training loss


@pytest.mark.parametrize("file", ["/etc/passwd", "../outside.json", "docs/../../outside.json"])
def test_a_file_outside_the_project_root_is_refused_at_its_line(make_project, file):
    found = problems(make_project, file, {"../outside.json": json.dumps(RUN)})

    assert found == [
        f"docs/page.md:6: field 'file' of block 'trace-results': '{file}' is outside the project root; a page names "
        "only the project's files: write the path from the project root, with no leading '/' and no '..' above it"
    ]


@pytest.mark.parametrize(
    ("content", "missing"),
    [
        ({"a": 1}, "it has no 'history' object"),
        ([1, 2], "it holds a JSON list, not an object with a 'history'"),
        ({"history": {"loss": [1.0]}}, "its history has no 'step' list of step numbers"),
        (
            {"history": {"step": [0, 1], "loss": [1.0], "eval": []}},
            "its history has no 'loss' list with one number per step",
        ),
        ({"history": {"step": [0], "loss": [1.0]}}, "its history has no 'eval' list"),
        (
            {"history": {"step": [0], "loss": [1.0], "eval": [{"step": 0, "exact_match": 1.0}]}},
            "its history's evaluation 0 has no number 'token_accuracy'",
        ),
        (
            {
                "history": {
                    "step": [0],
                    "loss": [1.0],
                    "eval": [{"step": 0, "exact_match": 1.0, "token_accuracy": 1.0, "samples": [{"prompt": "1="}]}],
                }
            },
            "its history's evaluation 0 has 'samples' without a text 'prompt', 'output' and 'target'",
        ),
        ({**RUN, "source_sha256": ["src/ops.py"]}, "its 'source_sha256' is not a mapping of file to digest"),
    ],
)
def test_a_file_of_another_shape_names_what_it_lacks(make_project, content, missing):
    found = problems(make_project, "other.json", {"other.json": json.dumps(content)})

    assert found == [
        f"docs/page.md:6: other.json is not a recorded training run: {missing}; "
        "run 'python -m docs_hooks results' to record one there"
    ]


def test_a_missing_file_says_how_to_record_one(make_project):
    assert problems(make_project, "docs/data/run.json") == [
        "docs/page.md:6: no training results at docs/data/run.json; run 'python -m docs_hooks results' to record "
        "a training run there"
    ]


def test_a_file_that_is_not_json_is_named(make_project):
    assert problems(make_project, "run.json", {"run.json": "root:x:0:0:root:/root:/bin/bash\n"}) == [
        "docs/page.md:6: run.json is not valid JSON (Expecting value); run 'python -m docs_hooks results' again"
    ]


def history(norms, clip_norm=1.0, warmup_steps=2, eval_every=4):
    return {
        "step": list(range(1, len(norms) + 1)),
        "grad_norm": norms,
        "loss": [1.0] * len(norms),
        "eval": [],
        "train_config": {"clip_norm": clip_norm, "warmup_steps": warmup_steps, "eval_every": eval_every},
    }


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

    assert err.value.message == (
        "the recorded run has no train_config.clip_norm, which the clipping figures need; "
        "record the run again with 'python -m docs_hooks results'"
    )


def test_the_clipping_table_on_a_page(make_project):
    run = {"command": "python train.py", "source_sha256": {}, "history": history([3.0, 0.5, 2.0, 0.2])}
    root = make_project(
        {
            "runs/run.json": json.dumps(run),
            "docs/page.md": "# Clipping\n\n```trace-results\nfile: runs/run.json\nshow: clipping\n```\n",
        }
    )

    result = expand_page(root)

    assert [str(p) for p in result.problems] == []
    assert (
        "<tr><td>1-2 (warmup)</td><td>2</td><td>1</td><td>50%</td><td>1.75</td></tr>"
        "<tr><td>3-4</td><td>2</td><td>1</td><td>50%</td><td>1.10</td></tr>"
        "<tr><td>all steps</td><td>4</td><td>2</td><td>50%</td><td>1.43</td></tr>"
    ) in result.markdown
    assert "whose limit <code>clip_norm</code> was 1." in result.markdown


def test_with_the_source_at_the_project_root_a_run_records_its_files_and_the_page_names_one_changed_since(
    make_project, capsys
):
    from .conftest import BASE_FILES, run_cli

    root = make_project(
        {
            "pyproject.toml": BASE_FILES["pyproject.toml"] + 'source_root = "."\n',
            "ops.py": "def half(x):\n    return x / 2\n",
            "docs/page.md": results_page("docs/data/run.json"),
            "history.json": json.dumps(RUN["history"]),
        }
    )
    for other in ("src/ops.py", "src/model.py"):
        (root / other).unlink()
    out = root / "docs/data/run.json"

    assert run_cli(root, "results", str(root / "history.json"), str(out), "--command", "python train.py") == 0
    assert f"results: 3 steps recorded in {out}" in capsys.readouterr().out
    recorded = sorted(json.loads(out.read_text())["source_sha256"])
    assert recorded == ["ops.py", "tests/__init__.py", "tests/test_model.py", "tests/test_ops.py"]
    assert "Older code" not in expand_page(root).markdown

    (root / "ops.py").write_text("def half(x):\n    return x * 0.5\n")

    markdown = expand_page(root).markdown
    older = markdown.split("The run was made before the last change to ", 1)[1].split("</p>", 1)[0]
    assert re.sub(r"<[^>]+>", "", older) == "ops.py. Run python -m docs_hooks results to record a run of this code."
