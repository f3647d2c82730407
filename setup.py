"""The games, their views and the solver, compiled with mypyc where the build can.

pyproject.toml holds the project's metadata; this file only adds the compiled modules.
mypyc turns the typed Python of ``COMPILED`` into C extensions that run the same code
about four times as fast (docs/benchmarks.md, "Solver"); a move's check, its effect and the
view of the piles it touched take about 1.2 us compiled against 4 us as plain Python, on
every move a server takes (docs/benchmarks.md, "Server"). Where mypyc or a C compiler is
missing, or ``SOLRACE_PURE=1`` is set, the package is built without them and runs the
same modules as plain Python: a build never fails for want of them.

The build records each compiled module's source digest in ``engine/_compiled.py``, so that
an extension left behind by an earlier build of a source edited since is never used
(``solrace.engine.compiled`` runs the source instead; see its docstring).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
COMPILED = [
    "cards",
    "moves",
    "game",
    "views",
    "variants.canfield",
    "variants.rainbow_canfield",
    "variants.american_canister",
    "variants.british_canister",
    "solver_search",
    "solver_canfield",
    "solver_rainbow",
    "solver_canister",
]
"""Modules of ``engine/`` by their dotted names below it."""
RECORD = ROOT / "engine" / "_compiled.py"
C_EXTENSIONS = ["_rainbow"]
"""Extensions of ``engine/`` written in C, each from ``engine/<name>.c``: Rainbow Canfield's
search (``solver_rainbow`` runs its Python search where the build made none)."""


def source(name: str) -> Path:
    """The source of the engine's module ``name`` (dotted below ``engine/``)."""
    return ROOT / "engine" / f"{name.replace('.', '/')}.py"


def digests() -> dict[str, str]:
    """Each compiled module's source digest."""
    return {name: hashlib.sha256(source(name).read_bytes()).hexdigest() for name in COMPILED}


def c_extensions() -> list[object]:
    """The C extensions of ``C_EXTENSIONS``, each optional (a failed compile leaves the
    Python code in use)."""
    from setuptools import Extension

    return [
        Extension(
            f"solrace.engine.{name}",
            [f"solrace/engine/{name}.c"],
            optional=True,
            extra_compile_args=["-O3"],
        )
        for name in C_EXTENSIONS
    ]


def record(built_mypyc: bool) -> None:
    """Write the digests of the sources this build compiles (engine/_compiled.py)."""
    sources = digests() if built_mypyc else {}
    lines = [f'    "{name}": "{digest}",' for name, digest in sources.items()]
    c_sources = {name: (ROOT / "engine" / f"{name}.c").read_bytes() for name in C_EXTENSIONS}
    c_lines = [
        f'    "{name}": "{hashlib.sha256(text).hexdigest()}",' for name, text in c_sources.items()
    ]
    RECORD.write_text(
        '"""Written by setup.py: the digests of the sources compiled into this build."""\n\n'
        "SOURCES = {\n"
        + "".join(f"{line}\n" for line in lines)
        + "}\n\nC_SOURCES = {\n"
        + "\n".join(c_lines)
        + "\n}\n"
    )


def extensions() -> list[object]:
    """mypyc's extensions for ``COMPILED`` (none where it cannot build them), and the C
    extensions."""
    RECORD.unlink(missing_ok=True)
    if os.environ.get("SOLRACE_PURE") == "1":
        for old in (ROOT / "engine").rglob("*.so"):
            old.unlink()  # an earlier build's, in place
        return []
    try:
        from mypyc.build import mypycify

        # The paths go through the package's symlink (solrace/engine -> engine), so that
        # the modules are named solrace.engine.* as they are imported.
        built = mypycify(
            [f"solrace/engine/{name.replace('.', '/')}.py" for name in COMPILED],
            opt_level="3",
            group_name="solrace.engine._native",
        )
    except BaseException as error:  # mypyc exits on a type error: build plain Python then
        print(f"solrace: building without compiled modules ({error!r})", file=sys.stderr)
        record(built_mypyc=False)
        return c_extensions()
    for extension in built:
        extension.optional = True  # a failed compile leaves the plain module in use
    record(built_mypyc=True)
    return [*built, *c_extensions()]


os.chdir(ROOT)
setup(ext_modules=extensions())
