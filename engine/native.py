"""Which modules run compiled, and never an extension older than its source.

setup.py compiles the games, their views and the solver with mypyc where it can and
records the digest of each source it compiled (``_compiled.py``, written by the build).
An editable install leaves the extensions beside the sources, where Python's import
prefers them: after a source is edited (or a checkout changes it) the old extension would
run instead of the code on disk. :func:`install` compares the digests at import and, if
any module's source has changed since its build, makes the import load every compiled
module's source (with a warning saying how to rebuild); ``SOLRACE_PURE=1`` makes it load
every source, as a build without compiled modules would. :func:`compiled` says what runs
compiled, and :func:`source` gives a module run from its source, whose objects can be
patched.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["compiled", "extension", "install", "source", "stale"]

_HERE = Path(__file__).resolve().parent
_PACKAGE = __name__.rpartition(".")[0]


def _recorded(kind: str = "SOURCES") -> dict[str, str]:
    """The build's digests by module name (empty: nothing was compiled): of the Python
    sources mypyc compiled (``SOURCES``), or of the C sources (``C_SOURCES``)."""
    try:
        record = importlib.import_module(f"{_PACKAGE}._compiled")
    except ImportError:
        return {}
    sources: dict[str, str] = getattr(record, kind, {})
    return sources


@functools.cache
def extension(name: str) -> ModuleType | None:
    """The engine's C extension ``name`` (``_rainbow``, from ``_rainbow.c``), or None where
    the build made none, its source beside it has changed since, or ``SOLRACE_PURE=1`` is
    set: the callers then run their Python code, which does the same. (An installed wheel
    has no C source beside its extension: nothing to compare.)"""
    if os.environ.get("SOLRACE_PURE") == "1":
        return None
    source = _HERE / f"{name}.c"
    recorded = _recorded("C_SOURCES").get(name)
    if source.exists() and recorded != hashlib.sha256(source.read_bytes()).hexdigest():
        return None
    try:
        return importlib.import_module(f"{_PACKAGE}.{name}")
    except ImportError:
        return None


def _path(name: str) -> Path:
    """The source of module ``name`` (dotted below the package: ``variants.canfield``)."""
    return _HERE / f"{name.replace('.', '/')}.py"


def _dotted(extension: Path) -> str:
    """The module an extension below the package is, dotted below it."""
    parts = extension.relative_to(_HERE).parts
    return ".".join((*parts[:-1], parts[-1].split(".")[0]))


def stale() -> list[str]:
    """The modules with an extension beside a source other than the one compiled (or one
    no build recorded)."""
    recorded = _recorded()
    out = []
    for name in sorted({_dotted(path) for path in _HERE.rglob("*.so")}):
        source = _path(name)
        if not source.exists():
            continue  # mypyc's shared library: no source of its own
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        if recorded.get(name) != digest:
            out.append(name)
    return out


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the listed modules as their ``.py`` sources, past any extension beside them."""

    def __init__(self, names: list[str]) -> None:
        self.names = {f"{_PACKAGE}.{name}": name for name in names}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        name = self.names.get(fullname)
        if name is None:
            return None
        return importlib.util.spec_from_file_location(fullname, _path(name))


def install() -> None:
    """Load a stale module's source instead of its extension (once per process); with
    ``SOLRACE_PURE=1`` in the environment, every module's (to compare the two)."""
    if any(isinstance(finder, _SourceFirst) for finder in sys.meta_path):
        return
    if os.environ.get("SOLRACE_PURE") == "1":
        sys.meta_path.insert(0, _SourceFirst(sorted({*_recorded(), *stale()})))
        return
    names = stale()
    if not names:
        return
    # The build compiles its modules as one group, whose library sets up a module's
    # compiled imports itself (the games' models import the cards, the solver the games):
    # one stale module makes the whole build's run from their sources.
    sys.meta_path.insert(0, _SourceFirst(sorted({*_recorded(), *names})))
    warnings.warn(
        f"solrace: {', '.join(names)} changed since they were compiled; running the engine "
        "as plain Python (slower). Rebuild with `pip install -e .`",
        RuntimeWarning,
        stacklevel=2,
    )


def compiled() -> list[str]:
    """The engine's modules that run compiled in this process (imports them)."""
    out = []
    for name in _recorded():
        module = importlib.import_module(f"{_PACKAGE}.{name}")
        if not (module.__file__ or "").endswith(".py"):
            out.append(name)
    return out


def source(name: str) -> ModuleType:
    """A fresh copy of the engine's module ``name`` run from its source, compiled or not.

    Compiled classes take no new attributes: a test that replaces a model's method to watch
    its search patches this copy's (its imports are the package's own modules).
    """
    spec = importlib.util.spec_from_file_location(f"{_PACKAGE}.{name}", _path(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The package imports this module before any other of its own (the games, their views and
# the solver are compiled too): a stale extension must not be imported even once.
install()
