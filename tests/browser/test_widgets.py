"""The editable worked examples: the browser's arithmetic against the Python's.

Three checks, each against the real code, never against numbers typed here:

- every kernel in docs/assets/kernels.js, run in chromium on the inputs
  of the project's worked-example test (and on perturbed inputs), returns for
  each of its keys (a local, or the text of a sub-expression of the function)
  what the Python function computes;
- every widget on the built site (and on the fixture page, which has one per
  kernel) shows, for the recorded inputs, the values recorded at build time; after
  an edit typed into an input cell, and after each preset button, it shows what
  the real Python function gives for the new inputs; nothing is marked "not
  recomputed";
- a bad entry is reported and "Recorded values" restores the page.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import math
import re
import sys

import numpy as np
import pytest

from docs_hooks.kinds import example as examples
from docs_hooks.kinds.checkline import check_line
from docs_hooks.render.numbers import format_scalar, format_value, jsonable
from docs_hooks.run.recording import Call

from . import fixture_page
from .conftest import REPO, numbers_and_skeleton

RECORDED_ATOL = 1e-4  # the recorded values against the browser's, as the page rounds them
EXACT_RTOL, EXACT_ATOL = 1e-9, 1e-12  # the browser against the Python on the same inputs


# ---------------------------------------------------------------------------- the Python side


def function_for(dotted: str):
    module, _, name = dotted.rpartition(".")
    return importlib.import_module(module), getattr(importlib.import_module(module), name)


def run_with_locals(fn, args: dict) -> dict:
    """Call fn(**args) on copies of args; its locals as they were when it returned."""
    seen: dict = {}
    code = fn.__code__

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code and "locals" not in seen:
            seen["locals"] = dict(frame.f_locals)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn(**copy.deepcopy(args))
    finally:
        sys.setprofile(previous)
    return seen["locals"]


def worked_example_inputs(dotted: str) -> dict | None:
    """The arguments of the first call of ``dotted`` in tests/test_<module>.py's worked-example tests."""
    module_name = dotted.rpartition(".")[0]
    path = REPO / "tests" / f"test_{module_name}.py"
    if not path.exists():
        return None
    tests = importlib.import_module(f"tests.test_{module_name}")
    _, fn = function_for(dotted)
    code = fn.__code__
    first: dict = {}

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code and not first:
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            first.update({n: copy.deepcopy(frame.f_locals[n]) for n in names})

    for name, test in sorted(vars(tests).items()):
        if not (name.startswith("test_") and name.endswith("_worked_example") and callable(test)):
            continue
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            test()
        finally:
            sys.setprofile(previous)
        if first:
            return first
    return None


def decode(value, like=None):
    """The browser's JSON (traceWidgets.toJson) as NumPy values; scalars take the type of ``like``."""
    if isinstance(value, dict) and "shape" in value:
        flat = [float(v) if isinstance(v, str) else v for v in value["values"]]
        return np.array(flat, dtype=np.dtype(value.get("dtype") or "float64")).reshape(value["shape"])
    if isinstance(value, list):
        likes = like if isinstance(like, (list, tuple)) else [None] * len(value)
        return tuple(decode(v, lk) for v, lk in zip(value, likes))
    if isinstance(value, str):
        return float(value)
    if isinstance(like, float) or (like is None and isinstance(value, (int, float)) and not isinstance(value, bool)):
        return float(value)
    return value


def decode_inputs(inputs: dict, recorded: dict | None = None) -> dict:
    recorded = recorded or {}
    return {k: decode(v, _plain(recorded.get(k))) for k, v in inputs.items()}


def _plain(recorded):
    """A recorded input from the page's JSON, as the Python type it had (for scalars' int/float)."""
    if isinstance(recorded, list):
        return [_plain(v) for v in recorded]
    return recorded


def row_value(code: str, local_values: dict):
    """What the page shows for a show row: docs_hooks.examples' rules, on the given locals."""
    code = code.strip()
    if code.isidentifier():
        return local_values[code]
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        tree = ast.parse(code, mode="exec")
        return local_values[tree.body[0].targets[0].id]
    return eval(
        compile(tree, "<row>", "eval"),
        {"np": np, "__builtins__": __builtins__},
        {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in local_values.items()},
    )


def python_truth(function: str, inputs: dict, rows: list[dict], check: str | None):
    """(row values, check line or None) from the real Python function on ``inputs``."""
    _, fn = function_for(function)
    local_values = run_with_locals(fn, inputs)
    values = [row_value(r["code"], local_values) for r in rows]
    line = None
    if check:
        call = Call(function, None, 0, dict(inputs), local_values, None)
        shown = [examples.Row(r["code"], r["code"], v, r.get("name")) for r, v in zip(rows, values)]
        line = check_line(check, call, shown, "the edited inputs", AssertionError)
    return values, line


def compare(js, py, where: str, rtol: float, atol: float) -> list[str]:
    """Differences between a value from the browser (JSON) and one from Python."""
    if isinstance(py, tuple):
        if not isinstance(js, list) or len(js) != len(py):
            return [f"{where}: the browser has {js!r}, Python a tuple of {len(py)}"]
        return [p for i, (j, q) in enumerate(zip(js, py)) for p in compare(j, q, f"{where}[{i}]", rtol, atol)]
    got = decode(js)
    want = np.asarray(py, dtype=float)
    got = np.asarray(got, dtype=float)
    if got.shape != want.shape:
        return [f"{where}: shape {got.shape} in the browser, {want.shape} in Python"]
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        gap = np.max(np.abs(got - want)) if got.size else 0.0
        return [f"{where}: the browser gives {got.tolist()}, Python {want.tolist()} (largest gap {gap:.3g})"]
    return []


def compare_text(shown: str, expected: str, where: str, tol: float = 1.01e-4) -> list[str]:
    """Two renderings of a value: the same text around the numbers, the numbers equal to ``tol``."""
    a, sa = numbers_and_skeleton(shown)
    b, sb = numbers_and_skeleton(expected)
    if sa != sb or len(a) != len(b) or not np.allclose(a, b, rtol=0, atol=tol, equal_nan=True):
        return [f"{where}: shows {shown!r}, expected {expected!r}"]
    return []


# ---------------------------------------------------------------------------- kernels


def kernel_keys_in_source(fn, keys) -> list[str]:
    source = re.sub(r"\s+", "", inspect.getsource(fn))
    return [k for k in keys if not k.isidentifier() and re.sub(r"\s+", "", k) not in source]


def test_every_kernel_computes_what_its_python_function_computes(open_page, site):
    page, watch = open_page(fixture_page.URL)
    names = page.evaluate("Object.keys(traceWidgets.kernels)")
    assert names, "trace-widgets.js registers no kernel"
    problems = []
    rng = np.random.default_rng(0)
    for name in names:
        module, fn = function_for(name)
        args = worked_example_inputs(name)
        if args is None:
            problems.append(f"{name}: no worked-example test in tests/test_{name.rpartition('.')[0]}.py calls it")
            continue
        cases = {"the worked example": args, "perturbed inputs": _perturbed(args, rng)}
        if name == "ops.layer_norm_forward":  # a row of equal values: var = 0, s = 1 / sqrt(epsilon)
            equal = copy.deepcopy(args)
            equal["X"][...] = equal["X"][..., :1]
            cases["a row of equal values"] = equal
        for case, inputs in cases.items():
            try:
                got = page.evaluate("([n, x]) => traceWidgets.runKernel(n, x)", [name, jsonable(inputs)])
            except Exception as exc:  # the kernel threw in the browser
                problems.append(f"{name} on {case}: the kernel failed: {exc}")
                continue
            local_values = run_with_locals(fn, inputs)
            missing = [k for k in got if k.isidentifier() and k not in local_values]
            problems += [f"{name}: kernel key '{k}' is not a local of {name}" for k in missing]
            problems += [
                f"{name}: kernel key '{k}' is not an expression in {name}'s source"
                for k in kernel_keys_in_source(fn, got)
            ]
            for key, value in got.items():
                if key in missing:
                    continue
                try:
                    want = (
                        local_values[key]
                        if key.isidentifier()
                        else eval(key, {**vars(module), "__builtins__": __builtins__}, dict(local_values))
                    )
                except Exception as exc:
                    problems.append(f"{name}: '{key}' cannot be evaluated in Python: {exc}")
                    continue
                problems += compare(value, want, f"{name} on {case}: '{key}'", EXACT_RTOL, EXACT_ATOL)
            if name == "ops.layer_norm_forward" and case == "a row of equal values":
                s = np.asarray(decode(got["s"]))
                assert np.allclose(s, 1 / math.sqrt(inputs["epsilon"])), s
                assert np.allclose(decode(got["Xhat"]), 0.0)
    assert not problems, "\n".join(problems)
    assert not watch.problems, "\n".join(watch.problems)


def _perturbed(args: dict, rng) -> dict:
    out = {}
    for k, v in args.items():
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            out[k] = v + rng.normal(scale=0.5, size=v.shape)
        elif isinstance(v, tuple):
            out[k] = _perturbed(dict(enumerate(v)), rng)
            out[k] = tuple(out[k][i] for i in range(len(v)))
        elif isinstance(v, float):
            out[k] = v * 1.5
        else:
            out[k] = copy.deepcopy(v)
    return out


# ---------------------------------------------------------------------------- widgets on pages


def widget_pages(site) -> list[str]:
    found = []
    for html in sorted(site.root.rglob("*.html")):
        rel = html.relative_to(site.root).as_posix()
        if rel.startswith(fixture_page.URL):
            continue
        if 'class="trace-example-data"' in html.read_text(encoding="utf-8"):
            found.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return found


def check_widgets(open_page, path: str) -> tuple[int, list[str]]:
    """Every widget of one page, checked; (how many widgets, problems)."""
    page, watch = open_page(path)
    problems: list[str] = []
    snaps = page.evaluate("traceWidgets.widgets.map(w => w.snapshot())")
    scripts = page.locator("script.trace-example-data")
    if len(snaps) != scripts.count():
        problems.append(f"{path}: {scripts.count()} examples carry data, but {len(snaps)} became widgets")
    for i, snap in enumerate(snaps):
        data = json.loads(
            page.evaluate("i => traceWidgets.widgets[i].root.querySelector('script.trace-example-data').textContent", i)
        )
        where = f"{path} example '{snap['id']}' ({snap['function']})"
        problems += check_widget(page, i, snap, data, where)
    if page.locator(".trace-not-recomputed").count():
        problems.append(f"{path}: {page.locator('.trace-not-recomputed').count()} value(s) marked 'not recomputed'")
    problems += [f"{path}: {p}" for p in watch.problems]
    return len(snaps), problems


def check_widget(page, i: int, snap: dict, data: dict, where: str) -> list[str]:
    problems: list[str] = []
    if not snap["kernel"]:
        return [f"{where}: no browser kernel for {snap['function']} in docs/assets/kernels.js"]
    if snap["error"] or snap["missing"]:
        return [f"{where}: error {snap['error']!r}, not recomputed: {snap['missing']}"]
    if "rows" not in data:
        return [f"{where}: the widget data has no 'rows' (docs_hooks.examples emits them)"]
    # 1. the recorded inputs: the browser shows what Python recorded at build time
    for row, recorded in zip(snap["rows"], data["rows"]):
        problems += compare(
            row["value"], _as_python(recorded["value"]), f"{where}: row '{row['code']}'", 0, RECORDED_ATOL
        )
        if row["shown"]:
            problems += compare_text(row["text"], row["recordedText"], f"{where}: row '{row['code']}' as shown")
    if snap["check"] is not None:
        problems += compare_text(snap["check"], snap["checkRecordedText"], f"{where}: check line")
    recorded_inputs = data["inputs"]

    def against_python(state: dict, what: str) -> list[str]:
        inputs = decode_inputs(state["inputs"], recorded_inputs)
        if state["error"] or state["missing"]:
            return [f"{where} after {what}: error {state['error']!r}, not recomputed: {state['missing']}"]
        values, line = python_truth(state["function"], inputs, data["rows"], data.get("check"))
        out = []
        for row, value in zip(state["rows"], values):
            out += compare(row["value"], value, f"{where} after {what}: row '{row['code']}'", EXACT_RTOL, 1e-9)
            if row["shown"]:
                out += compare_text(row["text"], format_value(value), f"{where} after {what}: '{row['code']}'")
        if line is not None and state["check"] is not None:
            expected = f" = {line.filled} = {format_scalar(line.lhs_value)}"
            out += compare_text(state["check"].split(line.lhs, 1)[-1], expected, f"{where} after {what}: check line")
        return out

    root = page.locator(".trace-example[data-trace-widget]").nth(i)
    # 2. an edit typed into the first cell that takes any number
    cell = root.locator("input.trace-input[inputmode=text]").first
    if cell.count():
        old = float(cell.input_value())
        cell.fill(format_scalar(old + 1.5 if abs(old) < 100 else old * 0.5))
        state = page.evaluate("i => traceWidgets.widgets[i].snapshot()", i)
        problems += against_python(state, f"typing into {cell.get_attribute('aria-label')}")
        if all(r["text"] == r["recordedText"] for r in state["rows"] if r["shown"]):
            problems.append(f"{where}: typing into {cell.get_attribute('aria-label')} changed no shown value")
    # 3. every preset button
    for b in range(root.locator("button[data-action=preset]").count()):
        button = root.locator("button[data-action=preset]").nth(b)
        label = button.inner_text()
        button.click()
        state = page.evaluate("i => traceWidgets.widgets[i].snapshot()", i)
        problems += against_python(state, f"the button '{label}'")
        if snap["function"] == "ops.layer_norm_forward" and "constant" in label:
            problems += _equal_row_shows_epsilon(state, where)
    # 4. a bad entry is reported; "Recorded values" restores the page
    if cell.count():
        cell.fill("two")
        state = page.evaluate("i => traceWidgets.widgets[i].snapshot()", i)
        if not state["error"] or cell.get_attribute("aria-invalid") != "true":
            problems.append(f"{where}: typing 'two' is not reported as an error")
        root.locator("button[data-action=reset]").click()
        state = page.evaluate("i => traceWidgets.widgets[i].snapshot()", i)
        if state["error"] or any(r["text"] != r["recordedText"] for r in state["rows"] if r["shown"]):
            problems.append(f"{where}: 'Recorded values' does not restore the recorded values")
    return problems


def _equal_row_shows_epsilon(state: dict, where: str) -> list[str]:
    """X with every row constant: var is 0, s is 1/sqrt(epsilon), Xhat is 0."""
    inputs = decode_inputs(state["inputs"])
    values = {r["code"]: decode(r["value"]) for r in state["rows"]}
    out = []
    if "s" in values and not np.allclose(values["s"], 1 / np.sqrt(inputs["epsilon"])):
        out.append(f"{where}: with equal values s is {values['s']}, not 1/sqrt(epsilon)")
    if "var" in values and not np.allclose(values["var"], 0.0):
        out.append(f"{where}: with equal values var is {values['var']}, not 0")
    if "Xhat" in values and not np.allclose(values["Xhat"], 0.0):
        out.append(f"{where}: with equal values Xhat is {values['Xhat']}, not 0")
    return out


def _as_python(recorded):
    """A value as docs_hooks.render.numbers.jsonable wrote it, back to NumPy."""
    if isinstance(recorded, dict) and "shape" in recorded:
        return (
            np.array(recorded["values"], dtype=float).reshape(recorded["shape"])
            if recorded["values"] != []
            else np.zeros(recorded["shape"])
        )
    if isinstance(recorded, list):
        return tuple(_as_python(v) for v in recorded)
    if isinstance(recorded, str):
        return float(recorded)
    return recorded


def test_the_widgets_on_the_site_recompute_like_the_python(open_page, site):
    pages = widget_pages(site)
    if not pages:
        pytest.skip(
            "no page of the site has an editable example yet (a trace-example with 'widget: true'); "
            "the fixture page's widgets are tested below"
        )
    total, problems = 0, []
    for path in pages:
        n, found = check_widgets(open_page, path)
        total += n
        problems += found
    assert total > 0
    assert not problems, "\n".join(problems)


def test_one_widget_for_every_kernel_recomputes_like_the_python(open_page, site):
    n, problems = check_widgets(open_page, fixture_page.URL)
    assert n == len(fixture_page.EXAMPLES)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- inputs too large


def test_a_widget_with_inputs_over_its_limit_is_refused_with_a_note_and_the_recorded_values_stay(browser):
    script = (REPO / "docs_hooks/assets/trace-widgets.js").read_text(encoding="utf-8")
    big = {"shape": [10001], "dtype": "float64", "values": [0.5] * 10001}
    small = {"shape": [2], "dtype": "float64", "values": [0.5, 1.5]}

    def example(name: str, inputs: dict) -> str:
        data = json.dumps(
            {
                "test": "t",
                "function": "ops.layer_norm_forward",
                "inputs": inputs,
                "outputs": None,
                "rows": [],
                "check": None,
            }
        )
        return (
            f'<div class="trace-example" id="example-{name}"><h4>{name}</h4>'
            f'<div class="trace-example-inputs"><table><tr><td>recorded</td></tr></table></div>'
            f'<script type="application/json" class="trace-example-data">{data}</script></div>'
        )

    long = example("long", {"X": {"shape": [1], "dtype": "float64", "values": ["x" * 400001]}})
    chars = len(long.split('class="trace-example-data">')[1].split("</script>")[0])
    page = browser.new_page()
    try:
        page.set_content(
            "<html><body>" + example("big", {"X": big}) + example("small", {"X": small}) + long + "</body></html>"
        )
        page.add_script_tag(content=script)
        notes = page.locator(".trace-widget-status--too-large").all_text_contents()
        states = page.evaluate(
            "[...document.querySelectorAll('.trace-example')].map(e => e.getAttribute('data-trace-widget'))"
        )
        recorded = page.locator("#example-big .trace-example-inputs td").all_text_contents()
    finally:
        page.close()

    assert notes == [
        "These inputs are not editable: they hold 10001 numbers, more than the 10000 this page recomputes in your "
        "browser. The values shown are the recorded ones.",
        f"These inputs are not editable: their data is {chars} characters long, more than the 400000 this page "
        "reads. The values shown are the recorded ones.",
    ]
    assert states[0] == "too-large" and states[1] != "too-large" and states[2] == "too-large"
    assert recorded == ["recorded"]
