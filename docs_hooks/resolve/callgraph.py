"""Questions the static call graph answers: who calls a function, which tests call it or reach it.

Part of the resolve stage: it reads the code index only (the call sites griffe
and ``ast`` found), runs nothing, and answers the same question once per build.
"""

from __future__ import annotations

from docs_hooks.resolve.codeindex import CallSite, CodeIndex, Function

REACHED_SHOWN = 100  # tests listed as reaching a function through others (see CallGraph.reached_by_tests)


class CallGraph:
    """The call graph of one code index, with each answer kept for the build (entries ask several times)."""

    def __init__(self, index: CodeIndex):
        self.index = index
        self._memo: dict[tuple, list[str]] = {}

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
