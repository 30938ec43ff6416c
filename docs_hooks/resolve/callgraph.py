"""Questions the call graph answers: who calls a function, which tests call it or reach it, and which calls
that may reach it could not be resolved.

Part of the resolve stage: it reads the code index (the call sites griffe and
``ast`` found) and runs nothing. The run stage sees calls as the tests and the
model run execute (``ObservedCall``, plain data defined here so that the run
stage can fill it without this stage importing a later one); a graph made with
that evidence (``RunEvidence``) answers from both: a call the index resolved
shows its statement, a call only seen at run time shows the caller's line of the
call and says that it was seen at run time. What the runs saw, set beside the
index, is ``RunCalls``; ``CallGraph`` asks it and the index together.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from docs_hooks.base.reads import Reads, traced
from docs_hooks.resolve.codeindex import CallSite, CodeIndex, Function, Statement
from docs_hooks.resolve.hierarchy import Hierarchy

REACHED_SHOWN = 100  # tests listed as reaching a function through others (see CallGraph.reached_by_tests)

#: How a row of the code-and-math table says that its call was seen at run time, not found in the code.
SEEN_AT_RUN_TIME = "seen at run time"


@dataclass(frozen=True)
class ObservedCall:
    """A call seen while code ran: ``caller`` called ``callee`` at ``line`` (of the caller's file) while ``test``
    ran.

    Names are dotted as the code index names functions. ``caller`` is None when
    the call came from code the index does not hold (pytest, a helper of the
    docs); ``test`` is None for a run that is not a test (the model run). ``via``
    names the ``__call__`` a call of an instance went through (``layer(X)``
    reaching ``Layer.forward`` through ``Layer.__call__``), as the index's own
    call sites do.
    """

    caller: str | None
    callee: str
    line: int
    test: str | None = None
    via: str = ""


@dataclass(frozen=True)
class RunEvidence:
    """What the runs of one build saw: the calls, and the lines they executed (repo path -> line numbers)."""

    calls: tuple[ObservedCall, ...] = ()
    lines: Mapping[str, Collection[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSite:
    """A call site the index did not find and a run saw, shaped as ``CallSite``: ``statement`` is the caller's
    statement that holds ``line``."""

    plain_repr: ClassVar[bool] = True  # its repr shows all it holds (base.reads)

    caller: str
    callee: str
    statement: Statement
    line: int
    via: str = ""
    written: str = ""


def seen_at_run_time(site) -> bool:
    """Whether a call site (of ``CallGraph.sites_to``) was only seen at run time."""
    return isinstance(site, RunSite)


class RunCalls:
    """What the runs of one build saw of the calls (``evidence``), set beside the code index's: the call sites
    only a run saw, the tests seen running each function, and the lines at which a call was seen."""

    def __init__(self, index: CodeIndex, evidence: RunEvidence | None = None):
        self.index = index
        self.lines: Mapping[str, Collection[int]] = evidence.lines if evidence is not None else {}
        self.sites: dict[str, list[RunSite]] = {}  # callee -> call sites only seen at run time
        self.reached: dict[str, set[str]] = {}  # function -> tests seen running it
        self._ran: set[tuple[str, int]] = set()  # (caller, line) of every call seen
        if evidence is not None:
            self._merge(evidence.calls)

    def _merge(self, calls: Iterable[ObservedCall]) -> None:
        # Read as a plain table: a build's index may be watched (see ``base.reads``), and the graph is the build's,
        # not any page's read.
        functions: dict[str, Function] = dict.copy(self.index.functions)
        static = {(s.caller, s.callee, s.statement.start) for s in self.index.calls}
        seen: set[tuple[str, str, int]] = set()
        statements: dict[tuple[str, int], Statement | None] = {}  # a line of a caller is seen calling again and again
        for call in calls:
            if call.callee not in functions:
                continue
            if call.test is not None and call.test in functions:
                self.reached.setdefault(call.callee, set()).add(call.test)
            caller = functions.get(call.caller) if call.caller is not None else None
            if caller is None:
                continue
            self._ran.add((caller.name, call.line))
            at = (caller.name, call.line)
            if at not in statements:
                statements[at] = _statement_at(caller, call.line)
            statement = statements[at]
            if statement is None:
                continue
            key = (caller.name, call.callee, statement.start)
            if key in static or key in seen:
                continue  # the index has this call: its own site shows it
            seen.add(key)
            site = RunSite(caller.name, call.callee, statement, call.line, call.via)
            self.sites.setdefault(call.callee, []).append(site)
        for sites in self.sites.values():
            sites.sort(key=lambda s: (s.caller, s.line))

    def unobserved(self, sites: Iterable) -> list:
        """The call sites (anything with ``caller`` and ``line``, such as calls the index could not resolve) whose
        line no run executed: what they call is known neither from the code nor from a run."""
        out = []
        for site in sites:
            fn = self.index.functions.get(site.caller)
            if (site.caller, site.line) in self._ran:
                continue
            if fn is not None and site.line in self.lines.get(fn.repo_path, ()):
                continue
            out.append(site)
        return out


@dataclass
class GraphInputs:
    """What the questions of ``CallGraph.FROM_INPUTS`` read of a graph, whole: two graphs whose inputs are equal
    answer each of them the same (``GraphInputs.of``). An edit that changes no call and no test, and no line
    of a function that calls (a function added that nothing calls, a value changed inside a line), leaves them
    equal."""

    calls_to: dict[str, list[CallSite]]  # callee -> the index's call sites
    run_sites: dict[str, list[RunSite]]  # callee -> the call sites only a run saw
    reached: dict[str, set[str]]  # function -> the tests seen running it
    # Each function those questions look up (a caller of a call site, a test seen running a function) -> what
    # they ask of it (of the tests, run as a test, its file); None when the index has none of that name.
    functions: dict[str, tuple[bool, bool, str] | None]

    @classmethod
    def of(cls, graph: CallGraph) -> GraphInputs:
        """All that ``graph``'s questions of ``FROM_INPUTS`` read: the call sites, the tests the runs saw running
        each function, and what those questions ask of each function they look up. Read as plain tables (see
        ``RunCalls._merge``)."""
        index, runs = graph.index, graph.runs
        calls_to = index.calls_by_callee()
        looked_up = {site.caller for sites in calls_to.values() for site in sites}
        looked_up.update(site.caller for sites in runs.sites.values() for site in sites)
        looked_up.update(test for tests in runs.reached.values() for test in tests)
        functions: dict[str, tuple[bool, bool, str] | None] = {}
        for name in looked_up:
            fn = dict.get(index.functions, name)
            functions[name] = (fn.is_test, index.runs_as_test(fn), fn.repo_path) if fn is not None else None
        return cls(calls_to, runs.sites, runs.reached, functions)


class CallGraph:
    """The call graph of one code index, merged with what the runs saw (``evidence``), each answer kept for the
    build (entries ask several times)."""

    trace_token = "CallGraph"  # what a digest of a read's answer takes it for (base.reads)
    # The questions whose answers are made from their ``GraphInputs`` alone (those of the calls left unresolved read the
    # classes and the methods of the code as well, ``unobserved`` the lines the runs executed).
    FROM_INPUTS: ClassVar[frozenset[str]] = frozenset(
        {
            "sites_to",
            "callers",
            "callers_seen_only_at_run_time",
            "call_rows",
            "tested_by",
            "tested_only_at_run_time",
            "reached_by_tests",
            "reached_shown",
        }
    )

    def __init__(
        self, index: CodeIndex, evidence: RunEvidence | None = None, reads: Reads | None = None, role: str = "graph"
    ):
        self.index = index
        self.runs = RunCalls(index, evidence)
        self._memo: dict[tuple, list[str]] = {}
        self._hierarchy: Hierarchy | None = None
        self.reads = reads  # where its answers are noted while a page renders (see ``base.reads``)
        self.role = role  # which graph of a build it is: the code's ("graph") or the runs' ("results.graph")

    @traced
    def sites_to(self, name: str) -> list[CallSite | RunSite]:
        """Every call site of ``name``: the index's, then those only seen at run time (``seen_at_run_time``)."""
        return [*self.index.calls_to(name), *self.runs.sites.get(name, ())]

    # ------------------------------------------------------------------ questions

    def _remembered(self, kind: str, functions: list[Function], compute) -> list[str]:
        key = (kind, tuple(f.name for f in functions))
        if key not in self._memo:
            self._memo[key] = compute()
        return list(self._memo[key])

    @traced
    def callers(self, functions: list[Function]) -> list[str]:
        """The functions of the code (not tests) that call one of ``functions``, other than themselves: those the
        index found, then those only seen at run time."""
        names = {f.name for f in functions}
        out: list[str] = []
        for fn in functions:
            for site in self.sites_to(fn.name):
                if (
                    site.caller not in names
                    and not self.index.functions[site.caller].is_test
                    and site.caller not in out
                ):
                    out.append(site.caller)
        return out

    @traced
    def callers_seen_only_at_run_time(self, functions: list[Function]) -> list[str]:
        """The callers (see ``callers``) that no call site of the index shows: only a run saw them call."""
        static = {s.caller for fn in functions for s in self.index.calls_to(fn.name)}
        return [c for c in self.callers(functions) if c not in static]

    @traced
    def call_rows(self, functions: list[Function]) -> list[tuple[str, CallSite | RunSite]]:
        """Every call of ``functions`` from elsewhere, as (role, call site), code first. The role is "Calls it" or
        "Tests it", followed by "(seen at run time)" for a call the index did not find."""
        names = {f.name for f in functions}
        rows = []
        for fn in functions:
            for site in sorted(self.sites_to(fn.name), key=lambda s: (s.caller, s.line)):
                caller = self.index.functions[site.caller]
                if caller.name not in names:
                    role = "Tests it" if caller.is_test else "Calls it"
                    rows.append((f"{role} ({SEEN_AT_RUN_TIME})" if seen_at_run_time(site) else role, site))
        rows.sort(key=lambda r: (r[0].startswith("Tests it"), self.index.functions[r[1].caller].repo_path, r[1].line))
        return rows

    @traced
    def tested_by(self, functions: list[Function]) -> list[str]:
        """Tests that call one of ``functions`` directly (in the code, or seen at run time)."""
        return self._remembered("tested_by", functions, lambda: self._tested_by(functions))

    def _tested_by(self, functions: list[Function]) -> list[str]:
        out: list[str] = []
        for fn in functions:
            for site in self.sites_to(fn.name):
                caller = self.index.functions[site.caller]
                if self.index.runs_as_test(caller) and caller.name not in out:
                    out.append(caller.name)
        return out

    @traced
    def tested_only_at_run_time(self, functions: list[Function]) -> list[str]:
        """The tests (see ``tested_by``) that no call site of the index shows calling ``functions``."""
        static = {s.caller for fn in functions for s in self.index.calls_to(fn.name)}
        return [t for t in self.tested_by(functions) if t not in static]

    @traced
    def reached_by_tests(self, functions: list[Function]) -> list[str]:
        """Tests that reach ``functions`` through other functions, not directly (at most REACHED_SHOWN + 1)."""
        return self._remembered("reached", functions, lambda: self._reached_by_tests(functions))

    @traced
    def reached_shown(self, functions: list[Function]) -> tuple[list[str], bool]:
        """The tests a page lists as reaching ``functions`` through others, and whether there are more."""
        reached = self.reached_by_tests(functions)
        return reached[:REACHED_SHOWN], len(reached) > REACHED_SHOWN

    def _reached_by_tests(self, functions: list[Function]) -> list[str]:
        """A walk up the call graph from ``functions``, with the tests a run saw reaching them.

        The search stops once it has found one more than ``REACHED_SHOWN``: a
        helper that everything calls is reached by most tests of a large code
        base, a list nobody reads, and finding them all would cost a walk of the
        whole call graph for every such entry. A longer list means "and more".
        """
        direct = set(self.tested_by(functions))
        seen = {f.name for f in functions}
        found: set[str] = set()
        for fn in functions:  # what the runs saw, whatever called it in between
            found.update(
                t for t in self.runs.reached.get(fn.name, ()) if self.index.runs_as_test(self.index.functions[t])
            )
        found -= direct
        frontier = sorted(seen)  # a fixed order: which tests are found first must not change between builds
        while frontier and len(found) <= REACHED_SHOWN:
            name = frontier.pop()
            for site in self.sites_to(name):
                if site.caller in seen:
                    continue
                seen.add(site.caller)
                caller = self.index.functions[site.caller]
                if self.index.runs_as_test(caller):
                    if caller.name not in direct:
                        found.add(caller.name)
                else:  # code, or a helper of the tests (setUp, a fixture) that tests call
                    frontier.append(site.caller)
        return sorted(found)

    # ------------------------------------------------------------------ what the reading could not resolve

    @traced
    def unresolved_calls_to(self, name: str) -> list[CallSite]:
        """The calls the code index could not resolve that may reach function ``name``: rule 5 of the design
        wants them counted where the function's evidence is shown, never hidden.

        A call is counted for a method ``C.m`` when it calls a method named ``m`` on something the reading
        cannot tell (``layer.forward_pass(X)``, ``layer`` an item of a list filled from a parameter), or
        calls an object the reading cannot tell (``self.activation(X)``, ``fn(X)``) and calling an instance
        of ``C`` runs ``m`` (``m`` is ``__call__``, or what the ``__call__`` of ``C`` calls on ``self``).
        A call resolved to ``name`` as well is not counted again. Module-level functions get none: an
        unresolved ``f(X)`` could be any function at all. Each site is a CallSite whose ``callee`` is
        ``name`` and whose ``written`` is the callee as written (``layer.forward_pass``), in the order of
        the callers' names and lines.
        """
        classes = self._hierarchy = self._hierarchy or Hierarchy(
            self.index.functions, self.index.classes, self.index.bases
        )
        cls = classes.owner(name)
        if cls is None:
            return []
        method = name.rsplit(".", 1)[-1]
        names = {method}
        for owner in [cls, *classes.subclasses(cls)]:
            call = classes.method_of(owner, "__call__")
            if classes.method_of(owner, method) == name and (
                call == name or (call is not None and method in self.index.on_self.get(call, ()))
            ):
                names.add("__call__")
        resolved = {(site.caller, site.line) for site in self.index.calls_to(name)}
        out: dict[tuple, CallSite] = {}
        for called in sorted(names):
            for site in self.index.unresolved_calling(called):
                where = (site.caller, site.line)
                if where not in resolved and where not in out:
                    out[where] = CallSite(site.caller, name, site.statement, site.line, written=site.written)
        return [out[k] for k in sorted(out)]

    @traced
    def unobserved(self, sites: list) -> list:
        """Those of ``sites`` whose line no run executed (see ``RunCalls.unobserved``)."""
        return self.runs.unobserved(sites)

    @traced
    def unresolved_calls(self, functions: list[Function]) -> list[CallSite]:
        """The unresolved calls that may reach one of ``functions`` (an entry's), from other functions than
        these, each call once (see unresolved_calls_to)."""
        names = {f.name for f in functions}
        out: dict[tuple, CallSite] = {}
        for fn in functions:
            for site in self.unresolved_calls_to(fn.name):
                if site.caller not in names:
                    out.setdefault((site.caller, site.line), site)
        return [out[k] for k in sorted(out)]


def _statement_at(fn: Function, line: int) -> Statement | None:
    """The innermost statement of ``fn`` that holds ``line`` (its header when the line is in the ``def``)."""
    best = None
    for stmt in fn.statements:
        if stmt.start <= line <= stmt.end and (best is None or stmt.end - stmt.start <= best.end - best.start):
            best = stmt
    if best is None and fn.header is not None and fn.header.start <= line <= fn.header.end:
        return fn.header
    return best
