"""Tests of docs_hooks.run.results: what the run stage gives the render stage, each answer made once per build.

The workers (the recorder, KaTeX, the coverage run) are stand-ins here that count what they were asked, so
each test can see what ``Results`` asked of them and in which order; the real workers are tested in
test_workers, test_record and test_math, and a whole build in test_site.
"""

from __future__ import annotations

import threading

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import Reads, WatchedDict
from docs_hooks.run.request import Request
from docs_hooks.run.results import COVERAGE, Formula, Results

RELU = Request("relu", "ops", "relu")
GELU = Request("gelu", "ops", "gelu")


class Recorder:
    def __init__(self, fail: TraceError | None = None):
        self.asked: list[list[Request]] = []
        self.fail = fail

    def record_each(self, requests):
        self.asked.append(list(requests))
        if self.fail is not None:
            raise self.fail
        return {
            req: TraceError(f"{req.name} raised") if req == GELU else f"recording of {req.name}" for req in requests
        }


class Math:
    def __init__(self, fail: TraceError | None = None):
        self.asked: list[list[tuple[str, bool]]] = []
        self.fail = fail

    def available(self) -> bool:
        return self.fail is None

    def render_many(self, formulas):
        self.asked.append(list(formulas))
        if self.fail is not None:
            raise self.fail
        return [(f"<katex>{tex}</katex>", None) for tex, _ in formulas]


class Workers:
    def __init__(self, recorder: Recorder | None = None, math: Math | None = None):
        self.recorder = recorder or Recorder()
        self.math = math or Math()
        self.events: list[str] = []
        self.jobs: list = []

    def start_coverage(self) -> None:
        self.events.append("coverage started")

    def in_background(self, jobs) -> None:
        self.jobs += jobs

    def wait(self) -> None:
        self.events.append("waited")

    def evidence(self):
        self.events.append("evidence")
        return "the runs' evidence"

    index = "the index"


def results(workers: Workers) -> Results:
    return Results(workers, site=None)  # type: ignore[arg-type]  # no block here reads the site's entries


def test_each_request_is_recorded_once_in_one_batch_and_a_failed_one_raises_its_error():
    workers = Workers()
    found = results(workers)

    got = found.recordings([RELU, GELU, RELU])
    assert got[RELU] == "recording of relu" and str(got[GELU]) == "gelu raised" and len(got) == 2
    assert workers.recorder.asked == [[RELU, GELU]]  # in one batch, each once
    assert found.recording(RELU) == "recording of relu"
    with pytest.raises(TraceError, match="^gelu raised$"):
        found.recording(GELU)
    assert found.recordings([]) == {}


def test_when_the_recording_process_fails_every_request_of_its_batch_gets_that_error():
    failed = TraceError("the recording process ended with exit code 3")
    found = results(Workers(recorder=Recorder(fail=failed)))

    assert found.recordings([RELU, GELU]) == {RELU: failed, GELU: failed}


def test_formulas_go_to_katex_in_one_batch_and_none_asks_it_nothing():
    workers = Workers()
    found = results(workers)

    assert found.formulas([]) == []
    assert workers.math.asked == []
    made = found.formulas([Formula("x^2"), Formula("\\mu", display=True)])
    assert made == [("<katex>x^2</katex>", None), ("<katex>\\mu</katex>", None)]
    assert workers.math.asked == [[("x^2", False), ("\\mu", True)]]
    assert found.math_problem() is None


def test_typesetting_a_page_s_formulas_is_no_read_of_its_trace_and_whether_katex_could_run_is():
    # What KaTeX makes of a formula follows from the formula and KaTeX, which a kept page's key names: a code edit
    # does not typeset a kept page's formulas again to tell that it holds. Whether KaTeX could run is a read.
    reads = Reads()
    found = Results(Workers(), None, reads=reads)  # type: ignore[arg-type]
    with reads.tracing() as trace:
        assert found.formulas([Formula("x")]) == [("<katex>x</katex>", None)]
        assert found.math_problem() is None
    assert [read.question for read in trace.reads.values()] == ["math_problem"]


def test_when_katex_cannot_run_each_formula_is_left_unrendered_and_the_first_problem_is_kept():
    first, second = TraceError("KaTeX is not in node_modules/"), TraceError("node exited")
    workers = Workers(math=Math(fail=first))
    found = results(workers)

    assert found.formulas([Formula("a"), Formula("b")]) == [(None, ""), (None, "")]
    workers.math.fail = second
    assert found.formulas([Formula("c")]) == [(None, "")]
    assert found.math_problem() is first


def test_a_derived_fact_is_computed_once_and_its_error_is_raised_again_at_every_use():
    found = results(Workers())
    calls = []

    def dims():
        calls.append("dims")
        return {"T": 16}

    def broken():
        calls.append("broken")
        raise TraceError("model_run: docs/examples/model_run.py does not exist", "pyproject.toml", 3)

    assert found.derived("dims", dims) == {"T": 16}
    assert found.derived("dims", dims) == {"T": 16}
    for _ in range(2):
        with pytest.raises(TraceError) as err:
            found.derived("broken", broken)
        assert (err.value.message, err.value.path, err.value.line) == (
            "model_run: docs/examples/model_run.py does not exist",
            "pyproject.toml",
            3,
        )
    assert calls == ["dims", "broken"]


def test_the_call_graph_is_made_once_after_the_background_work_is_done(monkeypatch):
    made = []
    monkeypatch.setattr(
        "docs_hooks.resolve.callgraph.CallGraph", lambda index, evidence, *_: made.append((index, evidence)) or "graph"
    )
    workers = Workers()
    found = results(workers)

    assert found.graph == "graph"
    assert found.graph == "graph"
    assert workers.events == ["waited", "evidence"]  # every run's calls are in before the graph is made
    assert made == [("the index", "the runs' evidence")]


def test_the_call_graph_made_while_a_page_renders_is_no_read_of_that_page(monkeypatch):
    # The graph is the build's: a page notes the questions it asks of it, not what making it read (here, the
    # evidence of the runs and an entry of a watched table), whichever page happened to ask first.
    reads = Reads()
    table = WatchedDict({"ops.relu": "relu", "ops.gelu": "gelu"}, reads, "index.functions")

    def made(index, evidence, *_):
        assert table["ops.gelu"] == "gelu"
        return "graph"

    monkeypatch.setattr("docs_hooks.resolve.callgraph.CallGraph", made)
    found = Results(Workers(), None, reads=reads)  # type: ignore[arg-type]
    with reads.tracing() as trace:
        assert found.graph == "graph"
        assert table["ops.relu"] == "relu"  # the page's own read, noted
    assert [read.args for read in trace.reads.values()] == [("ops.relu",)]
    assert len(trace.reads) == 1 and trace.complete


def test_a_derived_fact_is_not_kept_waiting_while_the_call_graph_is_made(monkeypatch):
    monkeypatch.setattr("docs_hooks.resolve.callgraph.CallGraph", lambda index, evidence, *_: "graph")
    reading, go_on = threading.Event(), threading.Event()
    found = Results(Workers(), None, None, lambda: reading.set() or go_on.wait(10))  # type: ignore[arg-type]
    making = threading.Thread(target=lambda: found.graph)
    making.start()
    assert reading.wait(10)  # the graph is being made: every recording is being read

    assert found.derived("dimensions", lambda: 64) == 64
    assert making.is_alive()  # the graph is still being made: the fact did not wait for it (for 10 s)

    go_on.set()
    making.join()
    assert found.graph == "graph"


def test_prefetch_starts_the_coverage_run_now_and_the_recordings_and_formulas_in_the_background():
    workers = Workers()
    found = results(workers)

    found.prefetch([RELU, COVERAGE, Formula("x"), RELU, COVERAGE])

    assert workers.events == ["coverage started"]
    assert workers.recorder.asked == [] and workers.math.asked == []  # nothing run in the caller's thread
    for job in workers.jobs:
        job()
    assert workers.math.asked == [[("x", False)]]
    assert workers.recorder.asked == [[RELU]]  # each need once


def test_prefetch_asks_katex_nothing_when_it_cannot_run():
    workers = Workers(math=Math(fail=TraceError("KaTeX is not in node_modules/")))
    found = results(workers)

    found.prefetch([Formula("x")])

    assert workers.jobs == []
