"""What a recording is, and the form it takes between the build and the recording child and in the cache.

A ``Recording`` is what running one request saw: each ``Call`` of the project's
code (its arguments on entry, its locals on return, its result), the files whose
code ran, and the request's result; and what the run depended on and saw being
called: the functions whose code ran, the calls between them (``observed``) and
the data files it read. An argument the build process cannot make
is described by ``Made`` and made in the child; a value of the project's own
classes comes back as ``Opaque`` (type, repr and fields), because the build
process does not import the project's modules; a value of more than
``MAX_ENTRIES`` entries is kept as a ``Capped`` summary.

``pack`` writes these (with plain data and NumPy arrays) as bytes that cannot
run code when read; ``unpack`` reads them back. No pickle.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from docs_hooks.base.errors import TraceError


@dataclass(frozen=True)
class Made:
    """An argument made in the child process: ``module.function(*args)``, then ``[item]`` when given.

    ``module`` is a dotted module name or the path of a ``.py`` file (absolute,
    or from the project root); ``args`` may hold further ``Made`` values.
    """

    module: str
    function: str
    args: tuple = ()
    item: Any = None


@dataclass
class Opaque:
    """A value of a class defined in the project's own code, as the build process sees it."""

    type: str  # module.qualname of its class (or of the function or class itself)
    text: str  # its repr
    fields: dict = field(default_factory=dict)  # dataclass fields or instance attributes

    def __hash__(self) -> int:
        """Hashable, as the object it stands for may have been (a class or an instance used as a dict key)."""
        return hash((self.__dict__.get("type"), self.__dict__.get("text")))

    def __getattr__(self, name: str) -> Any:
        """``cfg.n_layers`` reads a recorded field, so expressions of the code evaluate on recordings."""
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"recorded {self.__dict__.get('type', 'object')} has no field {name!r}")


#: An array (or list, tuple, string) with more entries than this is not kept whole: a ``Capped`` summary is
#: kept instead. Worked examples and model runs of a documented project are small; a value this large is
#: no reading matter on a page, and kept whole it would weigh on the cache and the widgets.
MAX_ENTRIES = 100_000
SHOWN_ENTRIES = 10  # the first entries a Capped keeps


@dataclass
class Capped:
    """A recorded value too large to keep (more than ``MAX_ENTRIES`` entries): what it was and a summary."""

    type: str  # numpy.ndarray, list, tuple, str, bytes
    shape: tuple
    dtype: str
    summary: dict = field(default_factory=dict)  # min, max, mean of a numeric array
    first: list = field(default_factory=list)  # its first SHOWN_ENTRIES entries (flattened)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        stats = ", ".join(f"{k} {v:.4g}" for k, v in self.summary.items())
        first = ", ".join(repr(v) for v in self.first)
        return (
            f"<{self.type} of shape {self.shape}, {self.dtype}, {self.size} entries: too large to record "
            f"(more than {MAX_ENTRIES}){'; ' + stats if stats else ''}; first entries [{first}, ...]>"
        )


def capped_summary(value: Any) -> Capped | None:
    """A summary of ``value`` when it has more than MAX_ENTRIES entries, else None."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        pass  # then no value is a NumPy array
    else:
        if isinstance(value, np.ndarray):
            if value.size <= MAX_ENTRIES:
                return None
            flat = value.reshape(-1)
            summary = {}
            if value.dtype.kind in "biuf":
                finite = flat[np.isfinite(flat)] if value.dtype.kind == "f" else flat
                if finite.size:
                    summary = {"min": float(finite.min()), "max": float(finite.max()), "mean": float(finite.mean())}
            return Capped(
                "numpy.ndarray",
                tuple(int(d) for d in value.shape),
                str(value.dtype),
                summary,
                flat[:SHOWN_ENTRIES].tolist(),
            )
    if isinstance(value, (list, tuple, str, bytes)) and len(value) > MAX_ENTRIES:
        first = list(value[:SHOWN_ENTRIES]) if isinstance(value, (list, tuple)) else [value[:SHOWN_ENTRIES]]
        return Capped(
            type(value).__name__,
            (len(value),),
            type(value).__name__,
            {},
            [v if isinstance(v, (int, float, str, bool, type(None))) else repr(v) for v in first],
        )
    return None


@dataclass
class Call:
    function: str  # dotted name: module, then qualified name
    caller: str | None  # dotted name of the calling function when it is recorded code
    caller_line: int  # line in the caller's file where the call was made
    args: dict[str, Any]  # the parameters as they were on entry
    locals: dict[str, Any]  # every local as it was on return
    result: Any


@dataclass
class Recording:
    request: str
    calls: list[Call] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # repo paths of the project's modules loaded (or run)
    result: Any = None
    reached: list[str] = field(default_factory=list)  # the functions whose code ran, as the index names them
    seen: list[list] = field(default_factory=list)  # the calls between them: [caller, callee, line, via]
    opened: list[str] = field(default_factory=list)  # repo paths of the other files it read (data)
    target: str | None = None  # the function the request called, as the index names it

    def calls_of(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.function == name]

    def first(self, name: str) -> Call:
        calls = self.calls_of(name)
        if not calls:
            recorded = sorted({c.function for c in self.calls})
            raise TraceError(
                f"{self.request} never called {name}; it called: {', '.join(recorded) or 'nothing recorded'}"
            )
        return calls[0]


# Recordings cross from the child to the build, and sit in the cache, in a form that cannot run code
# when read: a JSON tree, then the raw bytes of every array in it (plain numeric dtypes only), each
# named in the tree by its dtype, shape and place. Reading one back makes JSON values, strings,
# numbers and NumPy arrays; a class of the project becomes an ``Opaque`` (in the child: see
# record_child.project_object).
_MAGIC = b"docs_hooks-data-1\n"
_ALIGN = 16
_MAX_DEPTH = 40  # deeper than this (or a cycle) is kept as its repr
_PLAIN = (list, tuple, dict, set, frozenset, complex, bytes)


def pack(value: Any, project_object: Callable[[Any], Opaque | None] | None = None) -> bytes:
    """``value`` (recordings, calls, Made, plain data, NumPy arrays) as bytes that ``unpack`` reads back.

    ``project_object`` gives the ``Opaque`` of an object of the project's own code, or None for any other
    object (the recording child passes one; the build, which does not import the project, does not).
    """
    import numpy as np

    blobs: list[bytes] = []
    size = [0]

    def array(a: np.ndarray) -> list:
        data = a.tobytes()  # in C order, whatever the array's layout
        pad = -size[0] % _ALIGN
        if pad:
            blobs.append(b"\0" * pad)
            size[0] += pad
        place = [a.dtype.str, list(a.shape), size[0], len(data)]
        blobs.append(data)
        size[0] += len(data)
        return place

    def enc(v: Any, depth: int) -> Any:
        if v is None or isinstance(v, (bool, str)) or type(v) in (int, float):
            return v
        if depth > _MAX_DEPTH:
            return {"r": [type(v).__qualname__, _safe_repr(v)]}
        d = depth + 1
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject or v.dtype.fields is not None:
                if v.dtype.fields is not None:
                    return {"r": ["numpy.ndarray", _safe_repr(v)]}
                return {"AO": [list(v.shape), [enc(x, d) for x in v.reshape(-1).tolist()]]}
            return {"A": array(v)}
        if isinstance(v, np.generic):
            if isinstance(v, np.object_) or v.dtype.fields is not None:
                return {"r": [type(v).__qualname__, _safe_repr(v)]}
            return {"N": array(np.asarray(v))}
        if isinstance(v, (int, float)):  # subclasses (an IntEnum, say): their plain value
            return int(v) if isinstance(v, int) else float(v)
        if isinstance(v, Recording):
            return {
                "R": [
                    v.request,
                    enc(v.calls, d),
                    list(v.files),
                    enc(v.result, d),
                    list(v.reached),
                    [list(c) for c in v.seen],
                    list(v.opened),
                    v.target,
                ]
            }
        if isinstance(v, Call):
            return {"c": [v.function, v.caller, v.caller_line, enc(v.args, d), enc(v.locals, d), enc(v.result, d)]}
        if isinstance(v, Made):
            return {"M": [v.module, v.function, enc(v.args, d), enc(v.item, d)]}
        if isinstance(v, Opaque):
            return {"O": [v.type, v.text, enc(v.fields, d)]}
        if isinstance(v, Capped):
            return {"K": [v.type, list(v.shape), v.dtype, enc(v.summary, d), enc(v.first, d)]}
        capped = capped_summary(v)
        if capped is not None:
            return enc(capped, d)
        if project_object is not None and type(v) not in _PLAIN:
            made = project_object(v)  # an object of the project's own code (in the child), a NamedTuple say
            if made is not None:
                return enc(made, d)
        if isinstance(v, list):
            return {"L": [enc(x, d) for x in v]}
        if isinstance(v, tuple):
            return {"T": [enc(x, d) for x in v]}
        if isinstance(v, dict):
            return {"D": [[enc(k, d), enc(x, d)] for k, x in v.items()]}
        if isinstance(v, (set, frozenset)):
            return {"S" if isinstance(v, set) else "F": [enc(x, d) for x in v]}
        if isinstance(v, complex):
            return {"C": [v.real, v.imag]}
        if isinstance(v, bytes):
            return {"B": base64.b64encode(v).decode("ascii")}
        return {"r": [f"{type(v).__module__}.{type(v).__qualname__}", _safe_repr(v)]}

    tree = json.dumps(enc(value, 0), separators=(",", ":")).encode()
    return _MAGIC + len(tree).to_bytes(8, "little") + tree + b"".join(blobs)


def unpack(raw: bytes) -> Any:
    """What ``pack`` wrote; ValueError when ``raw`` is not that (damaged, or another format)."""
    import numpy as np

    if not raw.startswith(_MAGIC) or len(raw) < len(_MAGIC) + 8:
        raise ValueError("not recorded data")
    start = len(_MAGIC) + 8
    n = int.from_bytes(raw[len(_MAGIC) : start], "little")
    if start + n > len(raw):
        raise ValueError("recorded data cut short")
    data = bytearray(raw[start + n :])  # writable arrays, as the code that reads them may expect
    dtypes: dict[str, Any] = {}

    def array(place: list) -> Any:
        dtype, shape, offset, nbytes = place
        dt = dtypes.get(dtype)
        if dt is None:
            dt = dtypes[dtype] = np.dtype(dtype)
            if dt.hasobject:
                raise ValueError("an object array in recorded data")
        if offset < 0 or offset + nbytes > len(data):
            raise ValueError("recorded data cut short")
        count = nbytes // dt.itemsize if dt.itemsize else 0
        return np.frombuffer(data, dtype=dt, count=count, offset=offset).reshape(tuple(shape))

    def object_array(v: list) -> Any:
        out = np.empty(len(v[1]), dtype=object)
        for i, x in enumerate(v[1]):
            out[i] = x
        return out.reshape(tuple(v[0]))

    # Every JSON object in the tree is one tagged value, decoded as the parser meets it (inner ones first).
    decoders = {
        "A": array,
        "N": lambda v: array(v)[()],
        "AO": object_array,
        "L": lambda v: v,
        "T": tuple,
        "D": lambda v: {k: x for k, x in v},
        "S": set,
        "F": frozenset,
        "C": lambda v: complex(v[0], v[1]),
        "B": base64.b64decode,
        "R": lambda v: Recording(v[0], v[1], list(v[2]), v[3], list(v[4]), [list(c) for c in v[5]], list(v[6]), v[7]),
        "c": lambda v: Call(*v),
        "M": lambda v: Made(*v),
        "O": lambda v: Opaque(*v),
        "K": lambda v: Capped(v[0], tuple(v[1]), v[2], dict(v[3]), v[4]),
        "r": lambda v: Opaque(v[0], v[1], {}),
    }

    def decode(pairs: list) -> Any:
        if len(pairs) != 1 or pairs[0][0] not in decoders:
            raise ValueError("damaged recorded data")
        tag, v = pairs[0]
        return decoders[tag](v)

    try:
        return json.loads(raw[start : start + n], object_pairs_hook=decode)
    except (TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        raise ValueError(f"damaged recorded data ({exc})") from None
    except RecursionError:
        raise ValueError("damaged recorded data (nested deeper than it is ever written)") from None


def _safe_repr(v: Any) -> str:
    try:
        text = repr(v)
    except Exception:  # a broken __repr__
        return f"<{type(v).__qualname__}>"
    return text if len(text) <= 1000 else text[:1000] + "..."
