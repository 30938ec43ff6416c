"""Questions the static call graph answers: who calls a function, which tests call it or reach it, and
which calls that may reach it could not be resolved.

Part of the resolve stage: it reads the code index only (the call sites griffe
and ``ast`` found), runs nothing, and answers the same question once per build.
"""

from __future__ import annotations

from docs_hooks.resolve.codeindex import CallSite, CodeIndex, Function
from docs_hooks.resolve.values import Values

REACHED_SHOWN = 100  # tests listed as reaching a function through others (see CallGraph.reached_by_tests)


class CallGraph:
    """The call graph of one code index, with each answer kept for the build (entries ask several times)."""

    def __init__(self, index: CodeIndex):
        self.index = index
        self._memo: dict[tuple, list[str]] = {}
        self._values: Values | None = None

    def _remembered(self, kind: str, functions: list[Function], compute) -> list[str]:
        key = (kind, tuple(f.name for f in functions))
        if key not in self._memo:
            self._memo[key] = compute()
        return list(self._memo[key])

    def callers(self, functions: list[Function]) -> list[str]:
        """The functions of the code (not tests) that call one of ``functions``, other than themselves."""
        names = {f.name for f in functions}
        out: list[str] = []
        for fn in functions:
            for site in self.index.calls_to(fn.name):
                if (
                    site.caller not in names
                    and not self.index.functions[site.caller].is_test
                    and site.caller not in out
                ):
                    out.append(site.caller)
        return out

    def call_rows(self, functions: list[Function]) -> list[tuple[str, CallSite]]:
        """Every call of ``functions`` from elsewhere, as ("Calls it" or "Tests it", call site): code first."""
        names = {f.name for f in functions}
        rows = []
        for fn in functions:
            for site in sorted(self.index.calls_to(fn.name), key=lambda s: (s.caller, s.line)):
                caller = self.index.functions[site.caller]
                if caller.name not in names:
                    rows.append(("Tests it" if caller.is_test else "Calls it", site))
        rows.sort(key=lambda r: (r[0] == "Tests it", self.index.functions[r[1].caller].repo_path, r[1].line))
        return rows

    def tested_by(self, functions: list[Function]) -> list[str]:
        """Tests that call one of ``functions`` directly."""
        return self._remembered("tested_by", functions, lambda: self._tested_by(functions))

    def _tested_by(self, functions: list[Function]) -> list[str]:
        out: list[str] = []
        for fn in functions:
            for site in self.index.calls_to(fn.name):
                caller = self.index.functions[site.caller]
                if self.index.runs_as_test(caller) and caller.name not in out:
                    out.append(caller.name)
        return out

    def reached_by_tests(self, functions: list[Function]) -> list[str]:
        """Tests that reach ``functions`` through other functions, not directly (at most REACHED_SHOWN + 1)."""
        return self._remembered("reached", functions, lambda: self._reached_by_tests(functions))

    def reached_shown(self, functions: list[Function]) -> tuple[list[str], bool]:
        """The tests a page lists as reaching ``functions`` through others, and whether there are more."""
        reached = self.reached_by_tests(functions)
        return reached[:REACHED_SHOWN], len(reached) > REACHED_SHOWN

    def _reached_by_tests(self, functions: list[Function]) -> list[str]:
        """A walk up the call graph from ``functions``.

        The search stops once it has found one more than ``REACHED_SHOWN``: a
        helper that everything calls is reached by most tests of a large code
        base, a list nobody reads, and finding them all would cost a walk of the
        whole call graph for every such entry. A longer list means "and more".
        """
        direct = set(self.tested_by(functions))
        seen = {f.name for f in functions}
        frontier = sorted(seen)  # a fixed order: which tests are found first must not change between builds
        found: list[str] = []
        while frontier and len(found) <= REACHED_SHOWN:
            name = frontier.pop()
            for site in self.index.calls_to(name):
                if site.caller in seen:
                    continue
                seen.add(site.caller)
                caller = self.index.functions[site.caller]
                if self.index.runs_as_test(caller):
                    if caller.name not in direct:
                        found.append(caller.name)
                else:  # code, or a helper of the tests (setUp, a fixture) that tests call
                    frontier.append(site.caller)
        return sorted(set(found))

    # ------------------------------------------------------------------ what the reading could not resolve

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
        values = self._values = self._values or Values(self.index)
        cls = values.owner(name)
        if cls is None:
            return []
        method = name.rsplit(".", 1)[-1]
        names = {method}
        for owner in [cls, *values.subclasses(cls)]:
            call = values.method_of(owner, "__call__")
            if values.method_of(owner, method) == name and (
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
