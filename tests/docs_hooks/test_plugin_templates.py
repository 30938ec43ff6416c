"""The theme's templates compiled once while ``mkdocs serve`` runs (docs_hooks.plugin_templates)."""

from __future__ import annotations

import jinja2
from jinja2 import pass_context

from docs_hooks.plugin_templates import WAYS, CompiledTemplates, compiled_alike

from .test_cli import MKDOCS_YML
from .test_plugin import SERVE_REBUILD, run_script

PAGE = "{% for x in xs %}[{{ x | twice }}]{% endfor %}"


def twice(x):
    return 2 * x


def environment(templates: dict[str, str], cache: CompiledTemplates | None = None, **options) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.DictLoader(templates), **options)
    env.filters["twice"] = twice
    if cache is not None:
        cache.attach(env)
    return env


def test_a_template_is_compiled_once_for_environments_that_compile_alike_and_comes_out_the_same():
    cache = CompiledTemplates()
    first = environment({"page.html": PAGE}, cache).get_template("page.html").render(xs=[1, 2])
    second = environment({"page.html": PAGE}, cache).get_template("page.html").render(xs=[1, 2])
    assert first == second == "[2][4]"
    assert (cache.compiled, cache.reused) == (1, 1)


def test_an_edited_template_is_compiled_again():
    cache = CompiledTemplates()
    environment({"page.html": PAGE}, cache).get_template("page.html").render(xs=[1])
    edited = environment({"page.html": PAGE + "!"}, cache).get_template("page.html").render(xs=[1])
    assert edited == "[2]!"
    assert (cache.compiled, cache.reused) == (2, 0)
    environment({"page.html": PAGE + "!"}, cache).get_template("page.html")
    assert (cache.compiled, cache.reused) == (2, 1)  # the edit's, kept in turn


def test_an_environment_that_compiles_differently_finds_nothing_another_compiled():
    cache = CompiledTemplates()
    environment({"page.html": PAGE}, cache).get_template("page.html")
    # Other delimiters: the same source is other text to this environment.
    other = environment({"page.html": PAGE}, cache, variable_start_string="<<", variable_end_string=">>")
    assert other.get_template("page.html").render(xs=[1]) == "[{{ x | twice }}]"
    # Autoescaping is compiled into the template.
    escaping = environment({"page.html": "{{ s }}"}, cache, autoescape=True)
    plain = environment({"page.html": "{{ s }}"}, cache)
    assert escaping.get_template("page.html").render(s="<b>") == "&lt;b&gt;"
    assert plain.get_template("page.html").render(s="<b>") == "<b>"
    assert (cache.compiled, cache.reused) == (4, 0)


def test_the_key_holds_what_jinja_reads_of_an_environment_while_it_compiles():
    base = compiled_alike(environment({}))
    assert compiled_alike(environment({})) == base
    assert compiled_alike(environment({}, trim_blocks=True)) != base
    assert compiled_alike(environment({}, extensions=["jinja2.ext.i18n"])) != base
    # What an extension adds to the environment: i18n's newstyle calls are compiled in.
    old_style, new_style = (
        environment({}, extensions=["jinja2.ext.i18n"]),
        environment({}, extensions=["jinja2.ext.i18n"]),
    )
    new_style.install_null_translations(newstyle=True)
    old_style.install_null_translations(newstyle=False)
    assert compiled_alike(new_style) != compiled_alike(old_style)
    with_filter = environment({})
    with_filter.filters["more"] = twice
    assert compiled_alike(with_filter) != base
    passed = environment({})
    passed.filters["twice"] = pass_context(lambda context, x: x)  # the compiled call passes the context first
    assert compiled_alike(passed) != base

    def escape(name):
        return True

    # A callable setting by its identity: the same one, alike; another (even doing the same), not.
    assert compiled_alike(environment({}, autoescape=escape)) == compiled_alike(environment({}, autoescape=escape))
    assert compiled_alike(environment({}, autoescape=escape)) != compiled_alike(
        environment({}, autoescape=lambda name: True)
    )


def test_only_the_ways_of_compiling_used_last_are_kept():
    """An environment with a callable setting compiles a way of its own: one made at every build (a theme's
    ``select_autoescape``, say) must not add a compiled theme to the process at each rebuild."""
    cache = CompiledTemplates()
    first = environment({"page.html": PAGE}, cache)
    first.get_template("page.html")
    for _ in range(WAYS):  # as many other ways
        escaping = environment({"page.html": PAGE}, cache, autoescape=lambda name: True)
        escaping.get_template("page.html")
    assert (cache.compiled, cache.reused) == (WAYS + 1, 0)
    assert len(cache._code) == WAYS
    environment({"page.html": PAGE}, cache).get_template("page.html")  # the first way, no longer kept
    assert (cache.compiled, cache.reused) == (WAYS + 2, 0)
    environment({"page.html": PAGE}, cache).get_template("page.html")  # and now kept again
    assert (cache.compiled, cache.reused) == (WAYS + 2, 1)


def test_an_environment_with_a_cache_of_its_own_keeps_it():
    theirs = jinja2.FileSystemBytecodeCache()
    env = environment({})
    env.bytecode_cache = theirs
    CompiledTemplates().attach(env)
    assert env.bytecode_cache is theirs


# Builds a Material site three times in one process, as mkdocs serve does; before the third, the site's override
# of main.html is edited. After each build: the plugin's counts and the page's HTML.
SERVE_THRICE = (
    SERVE_REBUILD
    + r"""
override = root / "overrides" / "main.html"
for n in range(int(sys.argv[2])):
    if n == 2:
        override.write_text(override.read_text().replace("first override", "second override"))
    templates = rebuild()["docs_hooks"].templates
    html = (root / "site" / "page" / "index.html").read_text()
    print(json.dumps({"compiled": templates.compiled, "reused": templates.reused, "html": html}), flush=True)
plugins.on_shutdown()
"""
)

MATERIAL_YML = MKDOCS_YML.replace("  name: mkdocs\n", "  name: material\n  custom_dir: overrides\n")
OVERRIDE = '{% extends "base.html" %}\n{% block footer %}<p class="marker">first override</p>{% endblock %}\n'


def test_under_mkdocs_serve_a_rebuild_compiles_no_template_but_an_edited_one(make_project):
    from .conftest import FWD_ENTRY

    root = make_project({"mkdocs.yml": MATERIAL_YML, "docs/page.md": FWD_ENTRY, "overrides/main.html": OVERRIDE})
    first, second, third = run_script(SERVE_THRICE, root, "3")
    assert first["compiled"] > 5 and first["reused"] == 0  # main.html, base.html, its partials, 404.html
    assert second["compiled"] == first["compiled"] and second["reused"] == first["compiled"]
    assert second["html"] == first["html"]
    assert '<p class="marker">first override</p>' in first["html"]
    # The edited override is compiled again, and only it: base.html and the partials are reused.
    assert third["compiled"] == first["compiled"] + 1
    assert '<p class="marker">second override</p>' in third["html"]
    assert third["html"] == first["html"].replace("first override", "second override")
    (fresh,) = run_script(SERVE_THRICE, root, "1")  # a new process compiles it all, to the same page
    assert fresh["html"] == third["html"]
