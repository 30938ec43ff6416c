"""What ``mkdocs serve`` does while it waits for the author's edit (``WarmUp``): make the call graph, and
render once each page that shows code (an entry, a block) that the build read back from the kept pages, through
the build, which keeps what the rendering read of the code for the build after a code edit (``kept.TracedPages``);
then write to the cache folder what the build took as it was under new keys: the pages (``KeptPages.put_later``)
and the line map carried over (``MapsRead.write_later``; see ``Build.write_later``).

The rebuild after a prose edit keeps the build: it then finds the graph made, and the facts the edited page's
blocks read (the model run's dimensions, the inventories, the calls by line: ``Results.derived``, made once
per build), where a build that read every page back had made none of them. The next rebuild stops the
rendering first (``stop``), so that nothing renders beside it; it waits at most for the page under way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from docs_hooks.core.page import BlockPart, PagePlan
from docs_hooks.run.results import Results
from docs_hooks.run.workers import Workers


class WarmUp:
    def __init__(self) -> None:
        self.read_back: set[str] = set()  # the pages whose expansion the build took from the kept pages
        self._going = threading.Event()  # set while it may render; cleared to stop it
        self._rendering = threading.Lock()  # held for each page it renders

    def start(
        self,
        workers: Workers,
        results: Results,
        plans: list[PagePlan],
        render: Callable[[PagePlan], object],
        then: Callable[[], None] | None = None,
    ) -> None:
        """Make the graph, then render (``render``: the build's) each of ``plans`` that was read back and shows
        code (an entry, or a block), then do ``then`` (write what the build took as it was), in the
        background."""
        ahead = [
            p
            for p in plans
            if p.page in self.read_back and (p.entries or any(isinstance(x, BlockPart) for x in p.parts))
        ]
        self._going.set()

        def warm() -> None:
            _ = results.graph  # made now, for every page
            for plan in ahead:
                with self._rendering:
                    if not self._going.is_set():
                        return
                    render(plan)
                self.read_back.discard(plan.page)
            if then is not None:
                with self._rendering:
                    if self._going.is_set():
                        then()

        workers.in_background([warm])

    def stop(self) -> None:
        """Stop rendering, once the page under way is done: a rebuild of the build is starting."""
        self._going.clear()
        with self._rendering:
            pass
