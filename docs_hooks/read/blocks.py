"""Read a page into plain data: its Markdown and its trace blocks, in order, with their page lines.

A trace block is a fenced code block whose info string is ``trace-<kind>`` and
whose body is YAML, read and checked against its kind by ``read.blockspec``.
Everything else on the page is Markdown, kept as it is. A block that is never
closed and a line number typed into the page are errors too; every problem
carries the page and line. A parsed page is kept in the cache (``parse_pages``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docs_hooks.base.cachedir import Store
from docs_hooks.base.errors import TraceError
from docs_hooks.read import blockspec
from docs_hooks.read.blockspec import read_fields, valid_fields

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")  # a line that opens or closes a fenced code block
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)?.*$")
LITERAL_LINE_REF = re.compile(r"(?<![\w/.-])(?P<ref>[A-Za-z_][\w/.-]*\.py:\d+(?:-\d+)?)")
# [[module.function: statement]]; the statement may hold one level of brackets: x[0]
INLINE_REF = re.compile(r"\[\[(?P<ref>(?:[^\[\]\n]|\[[^\[\]\n]*\])+?)\]\](?!\])")


@dataclass
class Block:
    kind: str
    data: dict
    line: int  # line of the opening fence, 1-based
    end_line: int  # line of the closing fence
    body_line: int  # first line of the YAML body

    def field_line(self, name: str) -> int:
        """Best guess at the line where a field is written (for messages)."""
        return self.data.get("__lines__", {}).get(name, self.line)


@dataclass
class Markdown:
    text: str
    line: int  # first line, 1-based


@dataclass
class Page:
    path: str  # as shown in messages, e.g. docs/layer-norm.md
    segments: list[Block | Markdown] = field(default_factory=list)
    problems: list[TraceError] = field(default_factory=list)

    @property
    def blocks(self) -> list[Block]:
        return [s for s in self.segments if isinstance(s, Block)]


def slug(text: str) -> str:
    """An anchor made from a title: ``LayerNorm forward`` -> ``layernorm-forward``."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "entry"


H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


def page_title(text: str, path: str) -> str:
    """A page's first level-one heading (its front matter left out); its file name when it has none."""
    m = H1.search(FRONT_MATTER.sub("", text))
    return m.group(1) if m else Path(path).stem


def parse_page(text: str, path: str) -> Page:
    """Split a page into Markdown and trace blocks; collect every problem found."""
    page = Page(path)
    lines = text.split("\n")
    buffer: list[str] = []
    buffer_start = 1
    i = 0

    def flush(next_start: int) -> None:
        nonlocal buffer, buffer_start
        if buffer:
            page.segments.append(Markdown("\n".join(buffer), buffer_start))
        buffer = []
        buffer_start = next_start

    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if not m:
            buffer.append(line)
            i += 1
            continue
        fence, info = m.group("fence"), (m.group("info") or "")
        close = _find_close(lines, i + 1, fence)
        if not info.startswith("trace-"):
            buffer.extend(lines[i : close + 1])
            i = close + 1
            continue
        flush(close + 2)
        start = i + 1  # 1-based line of the fence
        body = "\n".join(lines[i + 1 : close])
        if close >= len(lines):
            page.problems.append(TraceError(f"block '{info}' is never closed; end it with {fence}", path, start))
        try:
            kind = info[len("trace-") :]
            page.segments.append(Block(kind, read_fields(kind, body, path, start), start, close + 1, start + 1))
        except TraceError as err:
            page.problems.append(err)
        i = close + 1
    flush(len(lines) + 1)
    page.problems.extend(literal_line_refs(text, path, 1))  # in prose and in block fields alike
    return page


def _find_close(lines: list[str], start: int, fence: str) -> int:
    for j in range(start, len(lines)):
        stripped = lines[j].strip()
        if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
            return j
    return len(lines)


def within_root(written: str, what: str) -> str:
    """``written``, a path a page gives from the project root, when it names a file inside the root.

    A page names only the project's own files: an absolute path, or one whose
    '..' climbs above the root, is an error (``what`` says which field holds it).
    """
    normal = posixpath.normpath(written.replace("\\", "/"))
    if posixpath.isabs(normal) or re.match(r"^[A-Za-z]:", normal) or normal == ".." or normal.startswith("../"):
        raise TraceError(
            f"{what}: '{written}' is outside the project root; a page names only the project's "
            "files: write the path from the project root, with no leading '/' and no '..' above it"
        )
    return written


def literal_line_refs(text: str, path: str, first_line: int) -> list[TraceError]:
    """Every ``name.py:NN`` typed into Markdown: line numbers are the build's job."""
    problems = []
    for offset, line in enumerate(text.split("\n")):
        for m in LITERAL_LINE_REF.finditer(line):
            problems.append(
                TraceError(
                    f"literal line reference '{m.group('ref')}'; line numbers are computed by the build. "
                    "Write a symbolic reference instead: [[module.function: statement text]].",
                    path,
                    first_line + offset,
                )
            )
    return problems


def prose_lines(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(index, line) of every line of Markdown outside fenced code blocks (the fences themselves left out)."""
    in_fence = None
    for i, line in enumerate(lines):
        m = FENCE_LINE.match(line)
        if m:
            in_fence = None if in_fence and m.group(1).startswith(in_fence) else (in_fence or m.group(1))
        elif not in_fence:
            yield i, line


def authored_fences(text: str) -> list[str]:
    """Each fenced code block of the page's Markdown that starts a line, but its trace blocks: the lines from its
    opening fence to its closing one, found as ``parse_page`` finds them (what SuperFences highlights of the page
    besides the generator's listings). One inside a list or an admonition (indented) is left out, and so is one
    left open."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        close = _find_close(lines, i + 1, m.group("fence"))
        if close < len(lines) and not m.group("indent") and not (m.group("info") or "").startswith("trace-"):
            out.append("\n".join(lines[i : close + 1]) + "\n")
        i = close + 1
    return out


# --------------------------------------------------------------------------- parsed pages, cached
#
# A page's parse depends on its text, its path (in messages) and the code of this module and of read.blockspec
# only, so it is kept in the cache folder under a key made from those: ``check`` then reads the site's pages back
# instead of parsing their YAML again (bench/README.md, "check"). An entry is JSON, data only; one that is not
# what _encode_page writes is a miss, and the page is parsed again.


# The YAML reader's own version is part of the key too (its __init__ names it), found without importing it.
def _yaml_init() -> Path:
    spec = importlib.util.find_spec("yaml")
    if spec is None or spec.origin is None:
        raise ImportError("docs_hooks reads its blocks with PyYAML, which is not installed: pip install PyYAML")
    return Path(spec.origin)


_SELF_DIGEST = hashlib.sha256(
    Path(__file__).read_bytes() + Path(blockspec.__file__).read_bytes() + _yaml_init().read_bytes()
).hexdigest()


def parse_pages(pages: dict[str, str], cache: Path | None = None) -> dict[str, Page]:
    """``parse_page`` of every page (path -> text), read back from ``cache`` (a cachedir.Store file) when
    the same text was parsed before."""
    if cache is None:
        return {path: parse_page(text, path) for path, text in pages.items()}
    keys = {
        path: hashlib.sha256(f"{_SELF_DIGEST}\0{path}\0{text}".encode()).hexdigest() for path, text in pages.items()
    }
    store = Store(cache)
    try:
        stored = store.get_many(list(keys.values()))
        parsed, made = {}, {}
        for path, text in pages.items():
            key = keys[path]
            page = _decode_page(stored[key], path) if key in stored else None  # None: damaged, parsed again
            if page is None:
                page = parse_page(text, path)
                entry = _encode_page(page)
                if entry is not None:
                    made[key] = entry
            parsed[path] = page
        store.put_many(made)
    finally:
        store.close()
    return parsed


def _encode_page(page: Page) -> bytes | None:
    """The page as JSON; None when a value of a block would not come back the same (a YAML date, say)."""
    segments = [
        ["block", s.kind, s.data, s.line, s.end_line, s.body_line]
        if isinstance(s, Block)
        else ["markdown", s.text, s.line]
        for s in page.segments
    ]
    problems = [[p.message, p.path, p.line] for p in page.problems]
    try:
        raw = json.dumps(
            {"segments": segments, "problems": problems}, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
    except (TypeError, ValueError):
        return None
    if json.loads(raw)["segments"] != segments:  # keys that are not text would come back as text
        return None
    return raw.encode("utf-8")


def _decode_page(raw: bytes, path: str) -> Page | None:
    """The Page an entry holds; None when the entry is damaged."""
    try:
        data = json.loads(raw)
        page = Page(path)
        for segment in data["segments"]:
            if segment[0] == "markdown" and len(segment) == 3:
                _, text, line = segment
                if type(text) is not str or type(line) is not int:
                    return None
                page.segments.append(Markdown(text, line))
            elif segment[0] == "block" and len(segment) == 6:
                _, kind, fields, line, end_line, body_line = segment
                if not valid_fields(kind, fields) or {type(line), type(end_line), type(body_line)} != {int}:
                    return None
                page.segments.append(Block(kind, fields, line, end_line, body_line))
            else:
                return None
        for message, where, line in data["problems"]:
            if type(message) is not str or type(where) not in (str, type(None)) or type(line) not in (int, type(None)):
                return None
            page.problems.append(TraceError(message, where, line))
        return page
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        return None
