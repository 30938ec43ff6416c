"""For sites that prefer MkDocs' ``hooks:`` to ``plugins:``: the plugin's events as a hooks module.

    hooks:
      - path/to/this/file (or a file of your own holding ``from docs_hooks.hooks import *``)

The plugin (docs_hooks.plugin) does the work, with its default options.
"""

from docs_hooks.plugin import TracePlugin

_plugin = TracePlugin()
_plugin.load_config({})

on_startup = _plugin.on_startup
on_config = _plugin.on_config
on_files = _plugin.on_files
on_nav = _plugin.on_nav
on_page_markdown = _plugin.on_page_markdown
on_page_content = _plugin.on_page_content
on_env = _plugin.on_env
on_page_context = _plugin.on_page_context
on_post_build = _plugin.on_post_build
on_build_error = _plugin.on_build_error
on_serve = _plugin.on_serve
on_shutdown = _plugin.on_shutdown
