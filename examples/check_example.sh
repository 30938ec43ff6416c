#!/usr/bin/env bash
# The generator as a user gets it: its wheel, installed (not editable) in a fresh virtual environment with
# what the examples need, documenting a copy of each example project. examples/layers (flat modules, tests
# beside the code) must build with --strict and pass check; code that only moves must still pass; a
# referenced statement that changes must fail check with "changed since reviewed". examples/nnpkg (a package
# that imports itself by its full name, tests/ without __init__.py) must build with --strict and pass check.
#
#   bash examples/check_example.sh        (PYTHON=python3.12 to choose the interpreter)
#
# CHECK_EXAMPLE_SITES=DIR keeps each built site as DIR/<example>/site (the tests read the pages there).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export NO_MKDOCS_2_WARNING=1

step() { printf 'check_example: %s\n' "$*"; }
fail() { printf 'check_example: FAILED: %s\n' "$*" >&2; exit 1; }

# What the wheel and the example need from the package index is kept in a folder of wheels, fetched
# once: later runs install from it without the network (a run that finds something missing fetches it).
wheels="${CHECK_EXAMPLE_WHEELS:-$repo/.cache/check_example/wheels}"
mkdir -p "$wheels"
offline() { PIP_NO_INDEX=1 PIP_FIND_LINKS="$wheels" "$@"; }

step "building the wheel"
# setuptools builds in the source tree's build/: removed afterwards unless it was there before.
[ -e "$repo/build" ] || trap 'rm -rf "$work" "$repo/build"' EXIT
if ! offline "$python" -m pip wheel --quiet --no-deps -w "$work/wheel" "$repo" 2>/dev/null; then
    "$python" -m pip download --quiet -d "$wheels" "setuptools>=68" wheel
    offline "$python" -m pip wheel --quiet --no-deps -w "$work/wheel" "$repo"
fi
wheel=$(ls "$work"/wheel/*.whl)

step "installing $(basename "$wheel") in a fresh virtual environment"
"$python" -m venv "$work/venv"
venv_python="$work/venv/bin/python"
# The examples' own needs: numpy, and pytest, which runs their tests for the line coverage (coverage_tests).
needs=(numpy pytest)
if ! offline "$venv_python" -m pip install --quiet "$wheel" "${needs[@]}" 2>/dev/null; then
    "$venv_python" -m pip download --quiet -d "$wheels" "$wheel" "${needs[@]}"
    rm -f "$wheels/$(basename "$wheel")"  # the generator itself always comes from this run's build
    offline "$venv_python" -m pip install --quiet "$wheel" "${needs[@]}"
fi

project="$work/layers"
cp -R "$repo/examples/layers" "$project"
rm -rf "$project/site" "$project/.cache" "$project/node_modules"
# No node_modules in the copy: the math is rendered with the KaTeX the wheel carries (and node).
cd "$project"
"$venv_python" -c 'import docs_hooks, sys; sys.exit("site-packages" not in docs_hooks.__file__)' \
    || fail "docs_hooks is not imported from the installed wheel"

step "mkdocs build --strict"
"$work/venv/bin/mkdocs" build --strict --quiet
[ -f site/layer-norm/index.html ] || fail "the build wrote no site/layer-norm/index.html"
grep -q 'class="katex"' site/layer-norm/index.html || fail "the LayerNorm page holds no rendered formula"
[ -f site/assets/docs_hooks/katex/katex.min.css ] || fail "the site lacks the KaTeX stylesheet the wheel carries"
keep_site() {
    if [ -n "${CHECK_EXAMPLE_SITES:-}" ]; then
        mkdir -p "$CHECK_EXAMPLE_SITES/$1"
        rm -rf "$CHECK_EXAMPLE_SITES/$1/site"
        cp -R site "$CHECK_EXAMPLE_SITES/$1/site"
    fi
}
keep_site layers

step "python -m docs_hooks check"
"$venv_python" -m docs_hooks check

step "moving code: lines inserted above LayerNorm.forward; check must pass"
"$venv_python" - <<'EOF'
from pathlib import Path
path = Path("layers.py")
text = path.read_text()
anchor = "    def forward(self, X):\n        mu = "
assert text.count(anchor) == 1, "layers.py changed: update check_example.sh"
path.write_text(text.replace(anchor, "    # Moved down by three lines.\n    #\n    #\n" + anchor))
EOF
"$venv_python" -m docs_hooks check || fail "check failed after code only moved"

step "changing a referenced statement; check must fail with 'changed since reviewed'"
"$venv_python" - <<'EOF'
from pathlib import Path
path = Path("layers.py")
text = path.read_text()
old = "mu = X.mean(axis=-1, keepdims=True)"
assert text.count(old) == 1, "layers.py changed: update check_example.sh"
path.write_text(text.replace(old, "mu = X.mean(axis=-1, keepdims=True) * 1.0"))
EOF
set +e
output=$("$venv_python" -m docs_hooks check 2>&1)
code=$?
set -e
printf '%s\n' "$output"
[ "$code" -ne 0 ] || fail "check passed although a referenced statement changed"
grep -q "changed since reviewed" <<<"$output" || fail "check failed without saying 'changed since reviewed'"

project="$work/nnpkg"
cp -R "$repo/examples/nnpkg" "$project"
rm -rf "$project/site" "$project/.cache" "$project/node_modules"
cd "$project"

step "nnpkg: mkdocs build --strict"
"$work/venv/bin/mkdocs" build --strict --quiet
[ -f site/dense/index.html ] || fail "the nnpkg build wrote no site/dense/index.html"
keep_site nnpkg

step "nnpkg: python -m docs_hooks check"
"$venv_python" -m docs_hooks check

step "passed"
