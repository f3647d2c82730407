"""The compiled engine: the build's extensions run, and never one older than its source."""

from __future__ import annotations

import copy
import importlib
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solrace.engine import Move, native, new_game, parse_move
from solrace.engine.solver import Verdict, solve_deal, solve_deals

ENGINE = Path(native.__file__).resolve().parent


def recorded() -> dict[str, str]:
    try:
        return dict(importlib.import_module("solrace.engine._compiled").SOURCES)
    except ImportError:
        return {}


def test_the_modules_the_build_compiled_run_compiled() -> None:
    """Where the build compiled the solver (setup.py), those extensions are what runs: a
    source edited since would show here as a module run from its source (rebuild). CI
    installs a C compiler (.ci/run), so there every module must have been compiled."""
    if os.environ.get("SOLRACE_PURE") == "1":
        assert native.compiled() == []
        return
    assert native.stale() == []
    built = [name for name in recorded() if list(ENGINE.glob(f"{name.replace('.', '/')}.*.so"))]
    assert sorted(native.compiled()) == sorted(built)
    if os.environ.get("CI") == "true":
        assert built and sorted(built) == sorted(recorded()), "the solver was not compiled"


def test_a_source_copy_of_a_model_solves_like_the_package() -> None:
    module = native.source("solver_canister")
    assert module.__file__ is not None and module.__file__.endswith(".py")
    assert module.CanisterModel is not None
    assert solve_deal("american-canister", 5, budget_s=None, max_nodes=5_000).verdict in (
        Verdict.WINNABLE,
        Verdict.NOT_WINNABLE,
    )


def where_it_loads(root: Path, name: str, *options: str) -> tuple[str, str]:
    """(the file ``solrace.engine.<name>`` loads from, the warnings) in a fresh process."""
    code = (
        "import warnings; warnings.simplefilter('always');"
        f"import solrace.engine.{name} as m; print(m.__file__)"
    )
    env = {k: v for k, v in os.environ.items() if k != "SOLRACE_PURE"}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run(
        [sys.executable, *options, "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip(), done.stderr


@pytest.mark.skipif(
    not recorded(), reason="this build compiled nothing (no compiler, or SOLRACE_PURE=1)"
)
def test_an_extension_older_than_its_source_is_never_used(tmp_path: Path) -> None:
    """A copy of the package with the extensions built for its sources: they load; once a
    source changes, that module loads from the source, with a warning saying so, and so
    does every other module of the build (one group: they import each other compiled)."""
    # A module of the package's own folder, and one below it (a variant) where compiled.
    names = [next(iter(recorded())), *[n for n in recorded() if "." in n][:1]]
    for name in names:
        root = tmp_path / name
        package = root / "solrace"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        shutil.copytree(ENGINE, package / "engine", ignore=shutil.ignore_patterns("__pycache__"))
        other = next(n for n in recorded() if n != name)

        for module in (name, other):
            loaded, warned = where_it_loads(root, module)
            assert loaded.endswith(".so"), loaded
            assert "changed since" not in warned

        source = package / "engine" / f"{name.replace('.', '/')}.py"
        source.write_text(source.read_text() + "\n# edited\n")
        loaded, warned = where_it_loads(root, name)
        assert loaded == str(source), loaded
        assert f"{name} changed since they were compiled" in warned
        loaded, _ = where_it_loads(root, other)
        assert loaded == str(package / "engine" / f"{other.replace('.', '/')}.py"), loaded


def test_the_engine_s_objects_cross_processes_compiled_or_not() -> None:
    """A compiled class has no default way to be pickled or copied: a move, a change, a
    game (its position, history and log) each come back equal, and a solver's winning
    line comes back from a worker process as moves."""
    game = new_game("canfield", 3)
    change = None
    for text in ("d", "d", "u", "d"):
        change = game.apply(parse_move(text))
    assert change is not None
    move = parse_move("t1-f")
    assert pickle.loads(pickle.dumps(move)) == move
    back = pickle.loads(pickle.dumps(change))
    assert (back.move, back.touched) == (change.move, change.touched)
    for copied in (pickle.loads(pickle.dumps(game)), copy.deepcopy(game)):
        assert type(copied) is type(game)
        assert (copied.position(), copied.moves, copied.log) == (game.position(), 4, game.log)
        assert copied.can_undo and copied.status is game.status
        copied.apply(parse_move("u"))  # its own history: the original's stays
        assert game.moves == 4 and copied.moves == 5
    (outcome,) = solve_deals("canfield", [0], budget_s=None, max_nodes=3_000, workers=1)
    assert outcome.verdict is Verdict.WINNABLE and outcome.moves
    assert all(isinstance(m, Move) for m in outcome.moves)


def recorded_c() -> dict[str, str]:
    try:
        return dict(getattr(importlib.import_module("solrace.engine._compiled"), "C_SOURCES", {}))
    except ImportError:
        return {}


def test_the_c_search_is_used_where_built_and_never_older_than_its_source(tmp_path: Path) -> None:
    """Rainbow Canfield's search in C (engine/_rainbow.c) runs where the build made it (CI
    installs a C compiler: there it must have); a copy of the package whose C source has
    changed since its build runs the Python search instead, as SOLRACE_PURE=1 does."""
    made = native.extension("_rainbow")
    if os.environ.get("SOLRACE_PURE") == "1":
        assert made is None
        return
    if os.environ.get("CI") == "true":
        assert made is not None and "_rainbow" in recorded_c(), "the C search was not built"
    if made is None:
        pytest.skip("this build made no C search (no compiler)")
    root = tmp_path / "copy"
    package = root / "solrace"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copytree(ENGINE, package / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    code = "from solrace.engine import native; print(native.extension('_rainbow') is not None)"

    def in_copy(*unset: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("SOLRACE_PURE", *unset)}
        env["PYTHONPATH"] = str(root)
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert in_copy() == "True"
    source = package / "engine" / "_rainbow.c"
    source.write_text(source.read_text() + "\n/* edited */\n")
    assert in_copy() == "False"
