"""Tests of docs_hooks.base.reads: what a page's rendering read, noted so that a later build can tell, without
rendering the page again, that it would come out the same.

A trace that holds when an answer changed would keep a page that shows old code: every test here that says a
trace holds has a twin that changes one answer and says it no longer does."""

import gc
import threading
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from docs_hooks.base.errors import TraceError
from docs_hooks.base.reads import (
    ALL,
    Digests,
    Reads,
    Role,
    Untraceable,
    WatchedDict,
    WatchedList,
    ask_again,
    attached,
    detached_within,
    traced,
)


@dataclass
class Item:
    name: str
    lines: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()
    cache: dict = field(default_factory=dict, compare=False)  # not what it is: left out of its digest


class Graph:
    """A traced object, as the call graph is one: its questions are noted, with their answers."""

    trace_token = "Graph"
    role = "graph"

    def __init__(self, reads: Reads | None, table: WatchedDict, callers: dict[str, list[str]]):
        self.reads = reads
        self.table = table
        self.callers_of = callers
        self.asked = 0

    @traced
    def callers(self, name: str) -> list[str]:
        self.asked += 1
        return [c for c in self.callers_of.get(name, []) if c in self.table]  # a read inside: the question's own

    @traced
    def only(self, name: str) -> str:
        found = self.callers_of.get(name, [])
        if len(found) != 1:
            raise TraceError(f"{name} has {len(found)} callers")
        return found[0]


def ask_in(objects: dict):
    """What a later build answers: the object of each role in ``objects``."""
    reads = Reads()
    return lambda read: ask_again(reads, objects.get(read.role), read, lambda a: a)


# ----------------------------------------------------------------------------- digests


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.tuples(inner, inner)
            | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_equal_plain_values_have_equal_digests_whatever_object_holds_them(value):
    import copy

    assert Digests().of(value) == Digests().of(copy.deepcopy(value))


@pytest.mark.parametrize(
    "one, other",
    [
        (1, True),  # equal in Python, not on a page
        (1, 1.0),
        ("1", 1),
        ([1, 2], (1, 2)),
        ([1, 2], [2, 1]),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # a table shows its rows in order
        (Item("f", ("a",)), Item("f", ("b",))),
        (Item("f", tags=frozenset({"x"})), Item("f", tags=frozenset({"y"}))),
        (np.arange(2000.0), np.arange(2000.0) + np.eye(1, 2000, 1000)[0]),  # one entry in the middle
        (np.zeros(3, np.float32), np.zeros(3, np.float64)),
        (np.zeros((2, 3)), np.zeros((3, 2))),
        (TraceError("gone", "a.md", 1), TraceError("gone", "a.md", 2)),
    ],
)
def test_values_a_page_would_show_differently_have_different_digests(one, other):
    assert Digests().of(one) != Digests().of(other)


def test_a_set_is_digested_by_its_items_not_by_the_order_it_was_filled_in():
    filled = set()
    for word in ["zeta", "alpha", "mid"] * 3:
        filled.add(word)
    assert Digests().of(frozenset(filled)) == Digests().of(frozenset(["mid", "alpha", "zeta"]))
    assert Digests().of(Item("f", tags=frozenset(filled))) == Digests().of(Item("f", tags=frozenset(sorted(filled))))


def test_a_field_left_out_of_comparison_is_left_out_of_the_digest():
    assert Digests().of(Item("f", cache={"a": 1})) == Digests().of(Item("f", cache={"b": 2}))


def test_an_object_of_a_kind_it_cannot_take_in_whole_is_untraceable_not_digested_by_its_address():
    class Opaque:
        pass

    with pytest.raises(Untraceable):
        Digests().of([1, Opaque()])
    with pytest.raises(Untraceable):
        Digests().of(lambda: 1)  # a function made at run time: what it does is not in its name
    with pytest.raises(Untraceable):
        Digests().of(threading.Lock())


def test_an_object_whose_reads_are_traced_is_digested_by_its_role_not_by_what_it_holds():
    table = WatchedDict({"a": Item("a")}, Reads(), "index.functions")
    one, other = Graph(None, table, {"f": ["a"]}), Graph(None, table, {"f": ["b"]})
    assert Digests().of([one]) == Digests().of([other])


def test_a_plain_object_marked_so_is_digested_by_its_attributes():
    class Named:
        trace_vars: ClassVar[bool] = True

        def __init__(self, real: dict):
            self.real = real

    assert Digests().of(Named({"d": 4})) == Digests().of(Named({"d": 4}))
    assert Digests().of(Named({"d": 4})) != Digests().of(Named({"d": 8}))


def test_a_module_function_is_digested_by_its_name():
    assert Digests().of(ask_in) == Digests().of(ask_in)
    assert Digests().of(ask_in) != Digests().of(test_a_module_function_is_digested_by_its_name)


def test_an_object_digested_again_while_it_lives_gives_its_first_digest_whatever_builds_went_by():
    digests = Digests()
    item = Item("f", ("a",))
    first = digests.of(item)
    object.__setattr__(item, "lines", ("changed",))  # nothing changes a digested object: the digest is kept
    assert digests.of(item) == first
    for _ in range(3):  # builds that did not use it (prose edits): it lives, so its digest is kept
        digests.new_build()
    assert digests.of(item) == first


def test_a_digested_object_that_is_gone_is_forgotten():
    digests = Digests()
    item = Item("f", ("a",))
    digests.of(item)
    assert len(digests._live) == 1
    del item
    gc.collect()
    assert digests._live == {}  # its id may be another object's next


@dataclass(slots=True)
class Slotted:  # takes no weak reference
    name: str


def test_an_object_that_takes_no_weak_reference_is_kept_while_the_last_two_builds_used_it():
    digests = Digests()
    item = Slotted("f")
    first = digests.of(item)
    item.name = "changed"
    digests.new_build()
    assert digests.of(item) == first  # the rebuild after the one that digested it still has it
    digests.new_build()
    digests.of("x")  # a build that used the memo, not for it
    digests.of(Slotted("other"))
    digests.new_build()
    digests.of(Slotted("another"))
    digests.new_build()
    assert digests.of(item) != first  # two rebuilds that used others: made again


# ----------------------------------------------------------------------------- traces


def test_reads_are_noted_only_while_a_trace_is_open_each_once_with_its_answer():
    reads = Reads()
    table = WatchedDict({"a": Item("a"), "b": Item("b")}, reads, "index.functions")
    assert table["a"].name == "a"  # no trace open: nothing noted, nothing fails
    with reads.tracing() as trace:
        table["a"]
        table.get("a")
        assert "c" not in table
    assert [(r.role, r.args) for r in trace.reads.values()] == [
        ("index.functions", ("a",)),
        ("index.functions", ("c",)),
    ]
    assert trace.holds(ask_in({"index.functions": table}))


def test_a_trace_holds_until_the_answer_of_one_of_its_reads_changes():
    reads = Reads()
    table = WatchedDict({"a": Item("a", ("x = 1",)), "b": Item("b")}, reads, "index.functions")
    with reads.tracing() as trace:
        table["a"]
    other = Reads()
    same = WatchedDict({"a": Item("a", ("x = 1",)), "b": Item("b", ("changed",)), "new": Item("new")}, other, "t")
    edited = WatchedDict({"a": Item("a", ("x = 2",)), "b": Item("b")}, other, "t")
    gone = WatchedDict({"b": Item("b")}, other, "t")
    assert trace.holds(ask_in({"index.functions": same}))  # what it did not read changed
    assert not trace.holds(ask_in({"index.functions": edited}))
    assert not trace.holds(ask_in({"index.functions": gone}))
    assert not trace.holds(ask_in({}))  # no object of that role any more


def test_walking_a_table_reads_all_of_it():
    reads = Reads()
    table = WatchedDict({"a": Item("a")}, reads, "index.functions")
    calls = WatchedList(["a -> b"], reads, "index.calls")
    with reads.tracing() as trace:
        sorted(table.values(), key=lambda i: i.name)
        list(calls)
    assert {(r.role, r.args) for r in trace.reads.values()} == {("index.functions", (ALL,)), ("index.calls", (ALL,))}
    bigger = WatchedDict({"a": Item("a"), "new": Item("new")}, Reads(), "t")
    assert trace.holds(ask_in({"index.functions": table, "index.calls": calls}))
    assert not trace.holds(ask_in({"index.functions": bigger, "index.calls": calls}))
    assert not trace.holds(ask_in({"index.functions": table, "index.calls": WatchedList([], Reads(), "t")}))


def test_a_traced_question_is_noted_by_its_answer_and_what_answering_it_read_is_its_own():
    reads = Reads()
    table = WatchedDict({"a": Item("a"), "b": Item("b")}, reads, "index.functions")
    graph = Graph(reads, table, {"f": ["a", "b"]})
    with reads.tracing() as trace:
        assert graph.callers("f") == ["a", "b"]
    assert [(r.role, r.question, r.args) for r in trace.reads.values()] == [("graph", "callers", ("f",))]

    # Asked again of a later build's graph: the same answer from other tables holds, another does not.
    later = Graph(None, WatchedDict({"a": Item("a"), "b": Item("b"), "c": Item("c")}, Reads(), "t"), {"f": ["a", "b"]})
    assert trace.holds(ask_in({"graph": later}))
    assert later.asked == 1
    fewer = Graph(None, WatchedDict({"a": Item("a")}, Reads(), "t"), {"f": ["a", "b"]})
    assert not trace.holds(ask_in({"graph": fewer}))


def test_a_question_that_raised_is_noted_with_its_error_and_holds_while_it_raises_the_same():
    reads = Reads()
    graph = Graph(reads, WatchedDict({}, reads, "t"), {"f": []})
    with reads.tracing() as trace, pytest.raises(TraceError):
        graph.only("f")
    table = WatchedDict({}, Reads(), "t")
    assert trace.holds(ask_in({"graph": Graph(None, table, {"f": []})}))
    assert not trace.holds(ask_in({"graph": Graph(None, table, {"f": ["a", "b"]})}))  # another message
    assert not trace.holds(ask_in({"graph": Graph(None, table, {"f": ["a"]})}))  # an answer now


def test_an_answer_it_cannot_digest_makes_the_trace_hold_for_nothing():
    reads = Reads()
    table = WatchedDict({"a": object()}, reads, "index.functions")
    with reads.tracing() as trace:
        table["a"]
    assert not trace.complete
    assert not trace.holds(ask_in({"index.functions": table}))


def test_a_read_in_another_thread_is_not_noted_in_this_threads_trace():
    reads = Reads()
    table = WatchedDict({"a": Item("a"), "b": Item("b")}, reads, "index.functions")
    with reads.tracing() as trace:
        other = threading.Thread(target=lambda: table["b"])
        other.start()
        other.join()
        table["a"]
    assert [r.args for r in trace.reads.values()] == [("a",)]


class Asker:
    trace_token = "Asker"
    role = "asker"

    def __init__(self, reads):
        self.reads = reads

    @traced
    def callers_in(self, graph: Graph, name: str) -> list[str]:
        return graph.callers(name)


def test_a_later_build_is_asked_with_its_own_objects_in_place_of_the_earlier_builds():
    reads = Reads()
    first = Graph(reads, WatchedDict({"a": Item("a")}, reads, "t"), {"f": ["a"]})
    with reads.tracing() as trace:
        Asker(reads).callers_in(first, "f")
    (read,) = trace.reads.values()
    assert read.args == (Role("Graph", "graph"), "f")  # kept by its role, not as the object

    same = Graph(None, WatchedDict({"a": Item("a")}, Reads(), "t"), {"f": ["a"]})
    later = Graph(None, WatchedDict({}, Reads(), "t"), {"f": ["a"]})  # "a" is gone from the later build

    def in_build(graph):
        def rebind(arg):
            return graph if arg == Role("Graph", "graph") else arg

        return lambda read: ask_again(Reads(), Asker(None), read, rebind)

    assert trace.holds(in_build(same))
    assert not trace.holds(in_build(later))


def test_a_kept_trace_does_not_keep_the_objects_of_the_build_that_made_it():
    import gc
    import weakref

    @dataclass
    class Evidence:  # as a block's render holds its build's objects
        graph: Graph
        requests: dict

    reads = Reads()
    graph = Graph(reads, WatchedDict({"a": Item("a")}, reads, "t"), {"f": ["a"]})

    class Facts:
        trace_token = "Facts"
        role = "facts"

        def __init__(self, reads):
            self.reads = reads

        @traced
        def callers_of(self, ev: Evidence, name: str) -> list[str]:
            return ev.graph.callers(name)

    with reads.tracing() as trace:
        Facts(reads).callers_of(Evidence(graph, {"k": 1}), "f")
    (read,) = trace.reads.values()
    assert read.args[0] == Evidence(Role("Graph", "graph"), {"k": 1})
    gone = weakref.ref(graph)
    del graph
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize(
    "walk",
    [
        lambda t: list(t),
        lambda t: dict(t),
        lambda t: {**t},
        lambda t: t.copy(),
        lambda t: list(reversed(t)),
        lambda t: t == {},
        lambda t: bool(t),
        lambda t: sorted(t.items()),
    ],
)
def test_every_way_of_walking_a_table_reads_all_of_it(walk):
    reads = Reads()
    table = WatchedDict({"a": 1}, reads, "index.functions")
    with reads.tracing() as trace:
        walk(table)
    assert (ALL,) in [r.args for r in trace.reads.values()]  # a copy reads each entry as well


@pytest.mark.parametrize(
    "walk",
    [
        lambda c: [*c],
        lambda c: sorted(c),
        lambda c: "x" in c,
        lambda c: c + [],
        lambda c: c[0],
        lambda c: c[:1],
        lambda c: list(reversed(c)),
        lambda c: c.copy(),
        lambda c: c.index("x"),
        lambda c: c.count("x"),
        lambda c: c == [],
    ],
)
def test_every_way_of_reading_a_list_reads_all_of_it(walk):
    reads = Reads()
    calls = WatchedList(["x"], reads, "index.calls")
    with reads.tracing() as trace:
        walk(calls)
    assert [r.args for r in trace.reads.values()] == [(ALL,)]


def test_what_detached_within_took_out_is_put_back_walking_only_what_held_a_role():
    class Build:
        trace_token = "Build"

        def __init__(self, role: str):
            self.role = role

    @dataclass
    class Plan:
        page: str
        parts: list
        build: object

    old, new = Build("project"), Build("project")
    shared = [Item("a"), (1, 2)]
    plan = Plan("p", [shared, {"k": old}], old)
    away, within = detached_within(plan)
    assert away.build == Role("Build", "project") and away.parts[1] == {"k": Role("Build", "project")}
    assert away.parts[0] is shared  # held no role: not copied
    back = attached(away, lambda role: new, within)
    assert back.build is new and back.parts[1]["k"] is new and back.parts[0] is shared
    assert attached(away, lambda role: new) == back  # the same as walking all of it
    assert plan.build is old  # the plan detached is not changed


def test_a_kept_trace_included_in_the_open_one_counts_as_read_there_and_only_there():
    reads = Reads()
    table = WatchedDict({"a": Item("a"), "b": Item("b")}, reads, "index.functions")
    with reads.tracing() as kept:
        table["a"]
    with reads.tracing() as incomplete:
        reads.cannot_tell()
    reads.include(kept)  # no trace open: nothing to note it in
    with reads.tracing() as page:
        table["b"]
        reads.include(kept)
    assert [r.args for r in page.reads.values()] == [("b",), ("a",)] and page.complete
    with reads.tracing() as other:
        reads.include(incomplete)
    assert not other.complete  # a kept trace that could not tell makes the open one unable to
