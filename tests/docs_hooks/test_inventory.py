"""Tests of docs_hooks.kinds.inventory: the kinds that show inventories, as a build resolves and renders them
(the parameters and config values they read: test_params, test_layerparams, test_paramtable, test_config,
test_configfields, test_configreaders, test_configtable)."""

from __future__ import annotations

import re

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build

from .test_shapes import REPO, build, dedent, table_rows, tiny_project


def test_an_inventory_nobody_generates_fails(tmp_path, monkeypatch):
    from docs_hooks.kinds import inventory

    root = tiny_project(
        tmp_path,
        """
        ```trace-inventory
        of: spec
        ```
        """,
    )
    monkeypatch.delitem(inventory.TABLES, "spec")  # as if no table of that name were made
    _, problems, _ = build(root)
    assert problems == [
        "docs/page.md:1: trace-inventory of: spec has no generator in this build; available: "
        + ", ".join(sorted(inventory.TABLES))
    ]


# ----------------------------------------------------------------------------- the real project


def test_smoke_on_the_real_project(tmp_path):
    settings = load_settings(REPO, {"cache_dir": str(tmp_path / "cache")})
    builder = make_build(settings)
    page = dedent("""
        ```trace-params
        match: [ln]
        ```

        ```trace-config
        fields: [ln_eps]
        ```
        """)
    result = builder.expand("docs/smoke.md", page)
    assert [str(p) for p in result.problems] == []
    rows = table_rows(result.markdown, "trace-params")
    assert [re.match(r"<code>(.*?)</code>", r[0]).group(1) for r in rows] == [
        "b{l}.ln1_g",
        "b{l}.ln1_b",
        "b{l}.ln2_g",
        "b{l}.ln2_b",
        "lnf_g",
        "lnf_b",
    ]
    assert {r[1] for r in rows} == {"<code>(d,)</code>"}
    assert [r[4] for r in rows] == ["ones", "zeros"] * 3
    assert {r[5] for r in rows} == {"no"}
    (eps,) = table_rows(result.markdown, "trace-config")
    assert eps[0].startswith("<code>ModelConfig.ln_eps</code>")
    assert "layer_norm_forward" not in eps[5] and "transformer.block_forward" in eps[5]
