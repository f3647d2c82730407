"""The ``solrace`` command line: one parser, with subcommands contributed by modules.

Each module named in :data:`COMMAND_MODULES` exposes ``register(subparsers)``, which adds
its subcommands and sets ``func`` on each: a callable that takes the parsed arguments and
returns the exit code. Adding a command means adding a module to the list.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Protocol, cast

from . import __version__

__all__ = ["COMMAND_MODULES", "Handler", "build_parser", "main"]

#: Modules that contribute subcommands, in the order their commands are listed in help.
COMMAND_MODULES: list[str] = [
    "solrace.cli_engine",
    "solrace.server.cli",
    "solrace.client.cli",
    "solrace.cli_account",
    "solrace.cli_leaderboard",
    "solrace.cli_verify",
    "solrace.cli_race",
    "solrace.cli_admin",
    "solrace.cli_loadtest",
]

Handler = Callable[[argparse.Namespace], int]


class _Registers(Protocol):
    def __call__(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        """Add the module's subcommands to ``subparsers``."""


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every registered module's subcommands."""
    parser = argparse.ArgumentParser(
        prog="solrace",
        description="Race friends on the same solitaire deal.",
    )
    parser.add_argument("--version", action="version", version=f"solrace {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        register = cast(_Registers, module.register)
        register(subparsers)
    return parser


def _take_trailing(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]
) -> None:
    """Append words argparse left over to the command's list positional, if it has one.

    argparse fills a ``nargs="*"`` positional only from the words before the first option,
    so ``replay canfield --seed 7 d w-f`` would leave ``d w-f`` over. A command whose
    parser sets the default ``trailing`` to the name of such a positional takes them.
    """
    dest = getattr(args, "trailing", None)
    if dest is None or any(word.startswith("-") for word in extras):
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    getattr(args, dest).extend(extras)


def _intermixed(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]
) -> argparse.Namespace | None:
    """The command's arguments parsed again with its options anywhere among its
    positionals (``daily rainbow-canfield --plain URL``), or None if that does not take
    them all either.

    argparse fills positionals from the words before an option, so a positional after one
    is left over; ``parse_known_intermixed_args`` reads the options first, then the
    positionals.
    """
    words = list(argv)
    command = args.command
    if command not in words:
        return None
    sub = _subparser(parser, command)
    if sub is None:
        return None
    try:
        again, extras = sub.parse_known_intermixed_args(words[words.index(command) + 1 :])
    except TypeError:  # a command with subcommands of its own: not intermixed
        return None
    if extras:
        return None
    return argparse.Namespace(**{**vars(args), **vars(again)})


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(command)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    A command's options may come anywhere among its words, between its positionals too.
    """
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extras = parser.parse_known_args(words)
        if extras and getattr(args, "trailing", None) is None:
            again = _intermixed(parser, args, words)
            if again is not None:
                args, extras = again, []
        if extras:
            _take_trailing(parser, args, extras)
    except SystemExit as exit_:
        # argparse exits on --help, --version (0) and on usage errors (2, message on stderr).
        code = exit_.code
        return code if isinstance(code, int) else 2
    func = cast(Handler, args.func)
    try:
        return func(args)
    except BrokenPipeError:
        # The reader went away (``solrace deal ... | head``): point stdout at the null
        # device so that the interpreter's final flush does not fail a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
