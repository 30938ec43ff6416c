"""The kinds that show inventories read from the code and from running it: ``trace-params``, ``trace-config``
and ``trace-inventory``.

``trace-params`` shows the parameters (``kinds.params``, or ``kinds.layerparams``
for a layer class; their table: ``kinds.paramtable``), ``trace-config`` the config
values (``kinds.config``; their table: ``kinds.configtable``), each the rows its
block asks for; ``trace-inventory`` a whole table: ``of: parameters``, ``of:
config``, and the site-wide tables of ``render.matrix`` (``of: matrix``,
``uncovered``, ``undocumented``, ``spec``, ``pages``). Each reads the model run's
recordings through ``kinds.modelrun.Evidence``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Project, Rendered, Scope
from docs_hooks.kinds.config import config_requests, constructor_config
from docs_hooks.kinds.configtable import config_fields_table, config_table
from docs_hooks.kinds.layerparams import class_decay_request, class_parameters
from docs_hooks.kinds.modelrun import (
    RUN,
    Evidence,
    entry_class,
    model_requests,
    model_run,
    requests_of,
)
from docs_hooks.kinds.params import inventory_requests, parameters
from docs_hooks.kinds.paramtable import choose_params, param_table, parameters_table
from docs_hooks.read.blocks import Block
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.render import matrix
from docs_hooks.render.links import Links
from docs_hooks.render.matrix import Site
from docs_hooks.run.request import Request
from docs_hooks.run.results import COVERAGE, Need, Results

# ----------------------------------------------------------------------------- the kinds


def parameter_requests(project: Project) -> dict[str, Request | TraceError]:
    """What the parameter inventory records: the model run's config and init_params, with the decay rule."""
    return {**model_requests(project.settings), **inventory_requests(project.settings, project.index)}


def config_requests_of(project: Project) -> dict[str, Request | TraceError]:
    """What the config inventory records: the model run's config, and a loader function's dict."""
    return {**model_requests(project.settings), **config_requests(project.settings, project.index)}


@dataclass(frozen=True)
class InventoryPlan:
    """A block that shows an inventory: which, the requests it reads, and what of the block it needs."""

    of: str  # "params", "config", or a trace-inventory table ("parameters", "matrix", ...)
    page: str
    block: Block
    project: Project
    requests: dict
    owner: str | None = None  # a class-based project: the layer class whose objects hold what is shown

    @property
    def reads_site(self) -> bool:
        """A site-wide table reads every page's entries."""
        return self.of in matrix.TABLES

    def evidence(self, results: Results, links: Links) -> Evidence:
        return Evidence(self.project, results, links, self.requests)


NO_PARAMS = (
    "trace-params shows the parameters init_params(cfg, rng) creates (set init_params in [tool.docs_hooks]), or, "
    "in an entry of a layer class's method, the arrays that class's objects hold in the model run"
)


class ParamsKind:
    name = "params"
    spec = BLOCK_KINDS["params"]

    def resolve(self, block: Block, scope: Scope) -> InventoryPlan:
        if scope.project.settings.init_params:
            return InventoryPlan("params", scope.page, block, scope.project, parameter_requests(scope.project))
        owner = entry_class(scope)
        if owner is None:
            raise TraceError(NO_PARAMS)
        requests = model_requests(scope.project.settings)
        return InventoryPlan("params", scope.page, block, scope.project, requests, owner)

    def needs(self, plan: InventoryPlan, done: Mapping) -> list[Need]:
        return requests_of(plan.requests) + _class_decay_needs(plan, done, [plan.owner] if plan.owner else [])

    def render(self, plan: InventoryPlan, results: Results, links: Links) -> Rendered:
        ev = plan.evidence(results, links)
        inv = class_parameters(ev, plan.owner) if plan.owner else parameters(ev)
        chosen, roles = choose_params(inv, plan.block)
        return Rendered(param_table(ev, chosen, roles, model_run(ev).dims, inv.rule))


def _class_decay_needs(plan: InventoryPlan, done: Mapping, classes: list[str]) -> list[Need]:
    """The decay rule's requests of the layer classes, once the model run they read is recorded."""
    run = plan.requests.get(RUN)
    rec = done.get(run) if isinstance(run, Request) else None
    if rec is None or isinstance(rec, TraceError):
        return []
    out: list[Need] = []
    for cls in classes:
        request = class_decay_request(plan.project, cls, rec)
        if isinstance(request, Request):
            out.append(request)
    return out


class ConfigKind:
    name = "config"
    spec = BLOCK_KINDS["config"]

    def resolve(self, block: Block, scope: Scope) -> InventoryPlan:
        s = scope.project.settings
        owner = None if s.model_config or s.config_module else entry_class(scope)
        return InventoryPlan("config", scope.page, block, scope.project, config_requests_of(scope.project), owner)

    def needs(self, plan: InventoryPlan, done: Mapping) -> list[Request]:
        return requests_of(plan.requests)

    def render(self, plan: InventoryPlan, results: Results, links: Links) -> Rendered:
        ev = plan.evidence(results, links)
        names = plan.block.data.get("fields") or []
        if plan.owner is not None:
            return Rendered(config_fields_table(ev, names, constructor_config(ev, plan.owner)))
        return Rendered(config_fields_table(ev, names))


def _site(plan: InventoryPlan, results: Results, links: Links) -> Site:
    s = plan.project.settings
    tests_running = results.tests_running if s.coverage_tests else None
    return Site(
        results.site,
        plan.project.index,
        results.graph,  # the calls the runs saw too, as the entry pages show them
        links,
        results.spec,
        s.spec_pdf or "spec.pdf",
        tests_running,
    )


# trace-inventory of: ... -> (what it records, how it is made)
TABLES = {
    "parameters": (parameter_requests, lambda plan, results, links: parameters_table(plan.evidence(results, links))),
    "config": (config_requests_of, lambda plan, results, links: config_table(plan.evidence(results, links))),
    **{
        name: (
            lambda project: {},
            lambda plan, results, links, table=table: table(_site(plan, results, links), plan.page),
        )
        for name, table in matrix.TABLES.items()
    },
}


class InventoryKind:
    name = "inventory"
    spec = BLOCK_KINDS["inventory"]

    def resolve(self, block: Block, scope: Scope) -> InventoryPlan:
        of = block.data["of"]
        if of not in TABLES:
            raise TraceError(
                f"trace-inventory of: {of} has no generator in this build; available: {', '.join(sorted(TABLES))}"
            )
        return InventoryPlan(of, scope.page, block, scope.project, TABLES[of][0](scope.project))

    def needs(self, plan: InventoryPlan, done: Mapping) -> list[Need]:
        needs: list[Need] = list(requests_of(plan.requests))
        if plan.of == "matrix" and plan.project.settings.coverage_tests:
            needs.append(COVERAGE)
        return needs

    def render(self, plan: InventoryPlan, results: Results, links: Links) -> Rendered:
        return Rendered(TABLES[plan.of][1](plan, results, links))
