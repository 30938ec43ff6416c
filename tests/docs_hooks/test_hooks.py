"""Tests of docs_hooks.hooks: the module a ``hooks:`` entry of mkdocs.yml loads hands MkDocs the plugin's own
events, bound to one plugin with its default options."""

from __future__ import annotations

from mkdocs.plugins import BasePlugin

import docs_hooks.hooks as shim
from docs_hooks.plugin import TracePlugin


def plugin_events() -> set[str]:
    """The events TracePlugin handles: the ``on_*`` methods it defines over BasePlugin's."""
    return {
        name
        for name in dir(TracePlugin)
        if name.startswith("on_") and getattr(TracePlugin, name) is not getattr(BasePlugin, name, None)
    }


def test_the_shim_has_every_event_of_the_plugin_and_no_other():
    assert {name for name in dir(shim) if name.startswith("on_")} == plugin_events()
    assert "on_page_markdown" in plugin_events()


def test_each_event_of_the_shim_is_the_plugins_method_bound_to_one_plugin():
    for name in plugin_events():
        event = getattr(shim, name)
        assert event.__func__ is getattr(TracePlugin, name), name
        assert event.__self__ is shim._plugin, name


def test_the_shims_plugin_has_the_default_options():
    default = TracePlugin()
    default.load_config({})

    assert dict(shim._plugin.config) == dict(default.config)
