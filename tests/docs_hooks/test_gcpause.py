"""Tests of docs_hooks.gcpause: the collector is paused while a build makes its long-lived objects, and
those objects are kept out of collections until the next build of the process."""

from __future__ import annotations

import gc

from docs_hooks.base import gcpause
from docs_hooks.base.settings import load_settings


def test_paused_turns_the_collector_back_on_only_at_the_outermost_block():
    gc.enable()
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block found it off and leaves it off
    assert gc.isenabled()


def test_paused_turns_the_collector_back_on_when_the_block_fails():
    gc.enable()
    try:
        with gcpause.paused():
            raise ValueError("a failed step")
    except ValueError:
        pass
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off():
    gc.disable()
    try:
        with gcpause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_build_keeps_its_objects_out_of_garbage_collection_and_hands_them_back_at_its_end(make_project):
    import gc

    from docs_hooks.core.site import expand_site, make_build

    gc.unfreeze()
    settings = load_settings(make_project())
    builder = make_build(settings)
    assert gc.isenabled()  # paused only while the builder was made
    assert gc.get_freeze_count() > 0  # the index and the parsed pages are skipped by collections

    expand_site(settings, builder)

    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_the_mkdocs_plugin_keeps_a_build_frozen_until_the_next_build_of_the_process(make_project, monkeypatch):
    """After `mkdocs build` the process ends: unfreezing then would only make the collector walk everything."""
    import gc
    from types import SimpleNamespace

    from mkdocs.plugins import PluginCollection

    from docs_hooks.base import gcpause
    from docs_hooks.plugin import TracePlugin

    gc.unfreeze()
    plugin = TracePlugin()
    plugin.load_config({})
    root = make_project()
    config = SimpleNamespace(
        config_file_path=str(root / "mkdocs.yml"),
        docs_dir=str(root / "docs"),
        extra_css=[],
        extra_javascript=[],
        markdown_extensions=[],
        mdx_configs={},
        strict=False,
        plugins=PluginCollection(),
        theme=SimpleNamespace(name="mkdocs", dirs=[]),
    )
    plugin.on_config(config)
    plugin.on_post_build(config=config)
    frozen = gc.get_freeze_count()
    assert frozen > 0  # still frozen after the build

    calls = []
    monkeypatch.setattr(gcpause, "unfreeze", lambda: calls.append("unfreeze") or gc.unfreeze())
    monkeypatch.setattr(gcpause, "freeze", lambda: calls.append("freeze") or gc.freeze())
    (root / "src/ops.py").write_text((root / "src/ops.py").read_text() + "\n")  # a new builder is made
    plugin.on_config(config)  # the next build of a serve process
    assert calls[0] == "unfreeze" and calls[-1] == "freeze"

    plugin.on_build_error(error=RuntimeError("a failed build"))
    plugin.on_shutdown()
    assert gc.get_freeze_count() == 0 and gc.isenabled()
