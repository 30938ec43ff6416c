"""The static call graph: who calls a function and which tests call it or reach it, in both import styles,
through methods and constructors; and 'Reached by tests through other functions' for a helper most tests
reach: the first hundred, then 'and more', folded under their count."""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for, make_build
from docs_hooks.resolve.callgraph import (
    REACHED_SHOWN,
    CallGraph,
    GraphInputs,
    ObservedCall,
    RunCalls,
    RunEvidence,
    seen_at_run_time,
)

from .conftest import BWD_ENTRY, FWD_ENTRY, connection_rows, expand_page, page, write_tree

HUB = """\
def hub(x):
    return x + 1


def wrapper(x):
    return hub(x) * 2
"""


def reaching_tests(n: int) -> str:
    lines = ["from hub import wrapper", ""]
    for i in range(n):
        lines += ["", f"def test_{i:03d}():", f"    assert wrapper({i}) == {2 * (i + 1)}", ""]
    return "\n".join(lines)


PAGE = "# Hub\n\n```trace-entry\ntitle: The hub\nfunction: hub.hub\nstatus: implemented\n```\n\nText.\n"


def facts_row(markdown: str) -> str:
    start = markdown.index("<td>Reached by tests through other functions</td><td>")
    return markdown[start : markdown.index("</tr>", start)]


def test_a_long_list_of_reaching_tests_stops_after_the_first_hundred(make_project):
    root = make_project({"src/hub.py": HUB, "tests/test_hub.py": reaching_tests(REACHED_SHOWN + 20)})
    builder = make_build(load_settings(root))

    row = facts_row(builder.expand("docs/hub.md", PAGE).markdown)

    assert row.count("<code>test_") == REACHED_SHOWN
    assert f"<summary>more than {REACHED_SHOWN} tests</summary>" in row
    assert row.endswith(", and more</details></td>")


def test_a_short_list_is_complete(make_project):
    root = make_project({"src/hub.py": HUB, "tests/test_hub.py": reaching_tests(3)})
    builder = make_build(load_settings(root))

    row = facts_row(builder.expand("docs/hub.md", PAGE).markdown)

    assert row.count("<code>test_") == 3
    assert "<summary>3 tests</summary>" in row
    assert "and more" not in row


def test_a_site_that_shows_no_recorded_evidence_starts_no_recording_process(make_project):
    root = make_project({"src/hub.py": HUB, "tests/test_hub.py": reaching_tests(3), "docs/hub.md": PAGE})
    builder = make_build(load_settings(root))

    builder.expand("docs/hub.md", PAGE)

    assert builder.workers._recorder is None  # no recording process, early or late


def test_calls_and_tests_rows_for_both_import_styles(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + BWD_ENTRY})

    markdown = expand_page(root).markdown
    fwd, bwd = markdown.split("## Layer norm backward")

    # `from ops import layer_norm_forward`, called inside a method; comments kept
    assert connection_rows(fwd) == [
        "Layer norm forward | Calls it | model.py:18 | "
        "return layer_norm_forward(X, gamma, beta, self.cfg.eps)  # pre-norm",
        "Layer norm forward | Tests it | tests/test_ops.py:8 | "
        "Y, _ = layer_norm_forward(X, np.ones(4), np.zeros(4))  # the worked example",
        "Layer norm forward | Tests it | tests/test_ops.py:13 | "
        "_, cache = layer_norm_forward(np.eye(4), np.ones(4), np.zeros(4))",
    ]
    # `import ops` then `ops.layer_norm_backward(...)` over three lines: one row for the whole statement, its
    # span, its lines as written and its trailing comment on the last line
    assert connection_rows(bwd) == [
        "Layer norm backward | Calls it | model.py:34-36 | grads = ops.layer_norm_backward(\ndY, cache, gamma,\n)"
        "  # through the module name",
        "Layer norm backward | Tests it | tests/test_ops.py:14 | "
        "grads = layer_norm_backward(np.ones((4, 4)), cache, np.ones(4))",
    ]


def test_method_called_through_self_is_a_call_site(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-entry
        title: Norm of a block
        function: model.Block.norm
        status: illustrative
        ```
        """)
        }
    )

    expanded = expand_page(root)

    assert expanded.problems == []
    assert connection_rows(expanded.markdown) == [
        "Norm of a block | Calls it | model.py:21 | Y, _ = self.norm(X, gamma, beta)",
    ]
    assert connection_rows(expanded.markdown, "Where is it used?")[1:3] == [  # no spec configured: no PDF row
        "Called by | model.Block.forward",
        "Tested by | no test calls it directly",
    ]


def test_class_called_like_a_function_is_a_call_of_its_constructor(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-entry
        title: Config
        function: model.Config.__init__
        status: illustrative
        ```
        """)
        }
    )

    assert connection_rows(expand_page(root).markdown) == [
        "Config | Calls it | model.py:26-29 | cfg = Config(\nd=d,\neps=1e-5,\n)",  # one row: the statement
    ]


CHAIN = """\
def a(x):
    return x + 1


def b(x):
    return a(x) * 2


def c(x):
    if x > 10:
        return c(x - 1)  # calls itself
    return b(x)
"""

CHAIN_TESTS = """\
from chain import b, c


def test_b():
    assert b(1) == 4


def test_c():
    assert c(1) == 4
"""


def chain_graph(make_project) -> tuple[CallGraph, dict]:
    root = make_project({"src/chain.py": CHAIN, "tests/test_chain.py": CHAIN_TESTS})
    index = index_for(load_settings(root))
    return CallGraph(index), {name: index.functions[f"chain.{name}"] for name in "abc"}


def test_callers_are_the_code_that_calls_a_function_not_tests_and_not_itself(make_project):
    graph, fn = chain_graph(make_project)

    assert graph.callers([fn["a"]]) == ["chain.b"]
    assert graph.callers([fn["b"]]) == ["chain.c"]
    assert graph.callers([fn["c"]]) == []  # its own recursive call and the test that calls it are not callers
    assert graph.callers([fn["a"], fn["b"]]) == ["chain.c"]  # b calls a, but b is one of the functions asked about


def test_tested_by_lists_the_tests_that_call_it_and_reached_by_those_that_call_it_through_others(make_project):
    graph, fn = chain_graph(make_project)

    assert graph.tested_by([fn["a"]]) == []
    assert graph.reached_by_tests([fn["a"]]) == ["tests.test_chain.test_b", "tests.test_chain.test_c"]
    assert graph.tested_by([fn["b"]]) == ["tests.test_chain.test_b"]
    assert graph.reached_by_tests([fn["b"]]) == ["tests.test_chain.test_c"]  # test_b calls it directly
    assert graph.tested_by([fn["c"]]) == ["tests.test_chain.test_c"]
    assert graph.reached_by_tests([fn["c"]]) == []


def test_call_rows_put_the_code_first_then_the_tests(make_project):
    graph, fn = chain_graph(make_project)

    rows = [(what, site.caller, site.line) for what, site in graph.call_rows([fn["b"]])]

    assert rows == [("Calls it", "chain.c", 12), ("Tests it", "tests.test_chain.test_b", 5)]


# ------------------------------------------------------------------ calls the reading could not resolve

UNRESOLVED = """\
class Module:
    def __call__(self, x):
        return self.forward(x)


class Scale(Module):
    def forward(self, x):
        return 2 * x

    def backward(self, g):
        return 2 * g


class Shift:
    def forward(self, x):
        return x + 1


def run_all(layers, x):
    for layer in layers:
        x = layer.forward(x)
    return x


def apply(fn, x):
    return fn(x)


def known(x):
    layer = Scale()
    return layer.forward(x), layer(x)


def maybe(layer, x):
    if layer is None:
        layer = Scale()
    return layer.backward(x)


def helper(x):
    return x
"""


def test_unresolved_calls_that_may_reach_a_method_are_listed_with_their_place_and_how_they_are_written(tmp_path):
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": '[tool.docs_hooks]\nsource_root = "."\n',
            "layers.py": UNRESOLVED,
            "test_layers.py": "from layers import apply\n\n\ndef test_apply():\n    apply(lambda x: x, 1)\n",
        },
    )
    graph = CallGraph(index_for(load_settings(root)))

    def sites(name):
        return [(s.caller, s.line, s.callee, s.written) for s in graph.unresolved_calls_to(name)]

    # layer.forward(x) on an item of a parameter; fn(x) calls an object, and calling a Scale runs forward
    assert sites("layers.Scale.forward") == [
        ("layers.apply", 26, "layers.Scale.forward", "fn"),
        ("layers.run_all", 21, "layers.Scale.forward", "layer.forward"),
    ]
    assert sites("layers.Shift.forward") == [("layers.run_all", 21, "layers.Shift.forward", "layer.forward")]
    assert sites("layers.Module.__call__") == [("layers.apply", 26, "layers.Module.__call__", "fn")]
    # layer may be a Scale, or what the caller passed: resolved, so not counted as unresolved again
    assert [s.caller for s in graph.index.calls_to("layers.Scale.backward")] == ["layers.maybe"]
    assert sites("layers.Scale.backward") == []
    assert sites("layers.helper") == []  # a module-level function: fn(x) could be any function at all
    fns = [graph.index.function("layers.Scale.forward"), graph.index.function("layers.Shift.forward")]
    assert [(s.caller, s.line) for s in graph.unresolved_calls(fns)] == [("layers.apply", 26), ("layers.run_all", 21)]


# ----------------------------------------------------------------------------- merged with the calls seen at run time


def net_graph(make_project, calls=(), lines=None) -> tuple[CallGraph, CallGraph, dict]:
    """The NET project's static graph, the graph merged with ``calls`` (and ``lines``), and its functions."""
    from .test_observed import NET, NET_TESTS

    root = make_project({"src/net.py": NET, "tests/test_net.py": NET_TESTS})
    index = index_for(load_settings(root))
    evidence = RunEvidence(tuple(calls), lines or {})
    return CallGraph(index), CallGraph(index, evidence), index.functions


def test_a_call_through_a_list_seen_at_run_time_is_a_caller_shown_at_its_line_and_said_to_be_seen_at_run_time(
    make_project,
):
    from .test_observed import NET, line_of

    loop = line_of(NET, "x = layer.forward(x)")
    seen = [ObservedCall("net.Net.forward_pass", "net.Scale.forward", loop, "tests.test_net.test_net")]
    static, merged, fn = net_graph(make_project, seen)
    forward = [fn["net.Scale.forward"]]

    assert static.callers(forward) == []  # "Called by nothing in the source"
    assert merged.callers(forward) == ["net.Net.forward_pass"]
    assert merged.callers_seen_only_at_run_time(forward) == ["net.Net.forward_pass"]
    [(role, site)] = merged.call_rows(forward)
    assert role == "Calls it (seen at run time)" and seen_at_run_time(site)
    assert (site.caller, site.line, site.statement.text) == ("net.Net.forward_pass", loop, "x = layer.forward(x)")
    assert merged.sites_to("net.Scale.forward") == [site]  # what trace-shapes reads
    assert merged.reached_by_tests(forward) == ["tests.test_net.test_net"]  # the test the run saw reach it
    assert static.reached_by_tests(forward) == []


def test_a_test_that_calls_an_instance_seen_at_run_time_tests_the_method_its_call_runs(make_project):
    from .test_observed import NET, NET_TESTS, line_of

    line = line_of(NET_TESTS, "assert shift(1.0) == 2.0")
    test = "tests.test_net.test_module_level_instance"
    inside = line_of(NET, "return self.forward(x)")
    seen = [
        ObservedCall(test, "net.Layer.__call__", line, test),
        ObservedCall("net.Layer.__call__", "net.Shift.forward", inside, test),
        ObservedCall(test, "net.Shift.forward", line, test, "net.Layer.__call__"),
    ]
    static, merged, fn = net_graph(make_project, seen)
    forward = [fn["net.Shift.forward"]]

    assert static.tested_by(forward) == []  # "no test calls it"
    assert merged.tested_by(forward) == [test]
    assert merged.tested_only_at_run_time(forward) == [test]
    assert merged.callers(forward) == ["net.Layer.__call__"]
    rows = [(role, site.caller, site.line, site.via) for role, site in merged.call_rows(forward)]
    assert rows == [
        ("Calls it (seen at run time)", "net.Layer.__call__", inside, ""),
        ("Tests it (seen at run time)", test, line, "net.Layer.__call__"),
    ]


def test_a_call_the_index_found_keeps_its_own_site_when_a_run_sees_it_too(make_project):
    from .test_observed import NET, line_of

    line = line_of(NET, "return Scale(2.0)")
    static, merged, fn = net_graph(make_project, [ObservedCall("net.default_scale", "net.Scale.__init__", line, None)])
    init = [fn["net.Scale.__init__"]]

    assert merged.call_rows(init) == static.call_rows(init)  # one row, the index's, not marked
    assert merged.callers_seen_only_at_run_time(init) == []


def test_a_call_from_outside_the_index_or_of_no_function_of_it_adds_only_the_test_that_reached_it(make_project):
    seen = [
        ObservedCall(None, "net.Scale.forward", 7, "tests.test_net.test_made_by_a_factory"),  # pytest, a helper
        ObservedCall("net.Net.forward_pass", "numpy.mean", 3, None),  # not a function of the index
        ObservedCall("elsewhere.f", "net.Shift.forward", 1, None),
    ]
    static, merged, fn = net_graph(make_project, seen)

    assert merged.callers([fn["net.Scale.forward"]]) == [] == merged.callers([fn["net.Shift.forward"]])
    assert merged.reached_by_tests([fn["net.Scale.forward"]]) == ["tests.test_net.test_made_by_a_factory"]


def test_a_call_site_is_unobserved_when_no_run_executed_its_line(make_project):
    from types import SimpleNamespace

    from .test_observed import NET, line_of

    loop, by_dict = line_of(NET, "x = layer.forward(x)"), line_of(NET, "return build_layer(ACTIVATIONS[name])(x)")
    seen = [ObservedCall("net.Net.forward_pass", "net.Scale.forward", loop, None)]
    _, merged, _ = net_graph(make_project, seen, {"src/net.py": {by_dict}})
    sites = [
        SimpleNamespace(caller="net.Net.forward_pass", line=loop),
        SimpleNamespace(caller="net.activate", line=by_dict),
    ]
    never = SimpleNamespace(caller="net.Net.all_at_once", line=loop + 4)

    assert merged.runs.unobserved([*sites, never]) == [never]  # a call seen there, a line covered, a line never run
    static, _, _ = net_graph(make_project)
    assert static.runs.unobserved(sites) == sites  # no run: nothing is known of them


def test_the_runs_calls_keep_the_sites_only_a_run_saw_and_the_tests_seen_reaching_each_function(make_project):
    from .test_observed import NET, line_of

    loop, made = line_of(NET, "x = layer.forward(x)"), line_of(NET, "return Scale(2.0)")
    test = "tests.test_net.test_net"
    seen = [
        ObservedCall("net.Net.forward_pass", "net.Scale.forward", loop, test),
        ObservedCall("net.Net.forward_pass", "net.Scale.forward", loop, test),  # the same call again: one site
        ObservedCall("net.default_scale", "net.Scale.__init__", made, None),  # the index has it
    ]
    _, merged, fn = net_graph(make_project, seen)
    runs = RunCalls(merged.index, RunEvidence(tuple(seen)))

    assert [(s.caller, s.callee, s.line) for sites in runs.sites.values() for s in sites] == [
        ("net.Net.forward_pass", "net.Scale.forward", loop)
    ]
    assert runs.reached == {"net.Scale.forward": {test}}
    assert RunCalls(merged.index).sites == {} == RunCalls(merged.index).reached  # no evidence: nothing seen


def test_the_implemented_check_reads_the_merged_graph(make_project):
    from docs_hooks.resolve.entries import EntryData, status_problem

    from .test_observed import NET_TESTS, line_of

    test = "tests.test_net.test_made_by_a_factory"
    seen = [ObservedCall(test, "net.Scale.forward", line_of(NET_TESTS, "assert layer.forward(1.0)"), test)]
    static, merged, fn = net_graph(make_project, seen)
    entry = EntryData("docs/net.md", "scale", "Scale", "implemented", [fn["net.Scale.forward"]], [], 3)

    assert str(status_problem(entry, static)) == (
        "docs/net.md:3: entry 'Scale' is marked implemented, but no test calls net.Scale.forward; add a test or "
        "change its status"
    )
    assert status_problem(entry, merged) is None


def test_a_page_built_with_the_merged_graph_shows_the_calls_the_tests_made_through_a_list(make_project):
    """What the pipeline does with the run stage's evidence: check, which runs nothing and finds no line map
    yet, reads the code alone; a build reads the graph merged with what its runs saw."""
    from .test_observed import NET, NET_TESTS, line_of

    root = make_project(
        {
            "src/net.py": NET,
            "tests/test_net.py": NET_TESTS,
            "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
            'coverage_tests = ["tests/test_net.py"]\n',
        }
    )
    text = "# Scale\n\n```trace-entry\ntitle: Scale\nfunction: net.Scale.forward\nstatus: implemented\n```\n"
    static = make_build(load_settings(root), static=True)
    merged = make_build(load_settings(root))
    try:
        assert [str(p) for p in static.expand("docs/net.md", text).problems] == [
            "docs/net.md:3: entry 'Scale' is marked implemented, but no test calls net.Scale.forward; add a test "
            "or change its status"
        ]
        page_md = merged.expand("docs/net.md", text)
    finally:
        static.close()
        merged.close()

    assert page_md.problems == []
    loop = line_of(NET, "x = layer.forward(x)")
    factory = line_of(NET_TESTS, "assert layer.forward(1.0) == 2.0")
    assert connection_rows(page_md.markdown) == [
        f"Scale | Calls it (seen at run time) | net.py:{loop} | x = layer.forward(x)",
        f"Scale | Tests it (seen at run time) | tests/test_net.py:{factory} | assert layer.forward(1.0) == 2.0",
    ]
    never = line_of(NET, "return [layer.forward(x) for layer in self.layers]")
    assert connection_rows(page_md.markdown, "Where is it used?")[1:5] == [
        "Called by | net.Net.forward_pass (seen at run time)",
        "Tested by | tests.test_net.test_made_by_a_factory (seen at run time)",
        # a call no test runs, through the same list: the lists above are not complete, and the page says so
        "Calls it may be reached by, not followed | 1 call the code index could not resolve, and no run executed"
        f"net.py:{never} layer.forward: what they call is known neither from the code nor from a run, so the "
        "lists above may miss callers or tests",
        "Reached by tests through other functions | 1 testtests/test_net.py: test_net",
    ]


def test_graphs_with_equal_inputs_answer_the_same_and_a_new_call_a_test_that_no_longer_runs_or_a_run_differs(
    make_project,
):
    """``GraphInputs.of`` takes in all that its questions of ``FROM_INPUTS`` read: a function appended that
    nothing calls leaves them equal, and every answer with them; a new call, a test class that no longer runs as
    one (its names unchanged) and a call a run saw each change both."""
    checks = (
        "import unittest\n\nimport numpy as np\n\nfrom ops import layer_norm_forward\n\n\n"
        "class Checks(unittest.TestCase):\n    def test_it(self):\n"
        "        layer_norm_forward(np.eye(2), np.ones(2), np.zeros(2))\n"
    )
    root = make_project({"tests/test_checks.py": checks})

    def graph(evidence: RunEvidence | None = None) -> CallGraph:
        return CallGraph(index_for(load_settings(root)), evidence)

    def answers(g: CallGraph) -> list:
        fns = [[g.index.functions["ops.layer_norm_forward"]], [g.index.functions["ops.layer_norm_backward"]]]
        return [getattr(g, q)(f) for q in sorted(CallGraph.FROM_INPUTS - {"sites_to"}) for f in fns]

    def edited(rel: str, edit) -> CallGraph:
        path = root / rel
        path.write_text(edit(path.read_text()))
        return graph()

    base = graph()
    appended = edited("src/ops.py", lambda t: t + "\n\ndef appended():\n    return 1\n")
    assert GraphInputs.of(appended) == GraphInputs.of(base) and answers(appended) == answers(base)

    called = edited(
        "src/model.py", lambda t: t + "\n\ndef caller(X, g, b):\n    return ops.layer_norm_forward(X, g, b)\n"
    )
    assert GraphInputs.of(called) != GraphInputs.of(appended) and answers(called) != answers(appended)

    not_run = edited("tests/test_checks.py", lambda t: t.replace("(unittest.TestCase)", ""))
    assert GraphInputs.of(not_run) != GraphInputs.of(called) and answers(not_run) != answers(called)

    test = "tests.test_ops.test_rows_have_zero_mean"
    seen = graph(RunEvidence((ObservedCall(None, "ops.layer_norm_backward", 1, test),)))
    assert GraphInputs.of(seen) != GraphInputs.of(not_run) and answers(seen) != answers(not_run)
