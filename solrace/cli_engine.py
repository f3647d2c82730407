"""The engine's commands: ``variants``, ``deal`` and ``replay``.

``deal`` and ``replay`` show every card of every pile, face-down ones included: they are
tools for the dealer and for checking a finished race, never part of one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from .engine import VARIANTS, Game, IllegalMove, Move, NotationError, new_game, parse_move
from .engine.cards import SUIT_SYMBOLS, SUITS
from .engine.rng import MASK64
from .engine.views import full_layout

__all__ = [
    "layout_json",
    "parse_seed",
    "parse_variant",
    "read_moves",
    "register",
    "render_layout",
    "use_color",
]

_SEED_RE = re.compile(r"^(?:0[xX][0-9a-fA-F]+|[0-9]+)$")
_RED = "\x1b[31m"
_RESET = "\x1b[0m"
_CARD_WIDTH = 3  # "10♥" is the widest card


# -- argument types ----------------------------------------------------------------------


def parse_seed(text: str) -> int:
    """Return the seed written as ``text`` (decimal or ``0x`` hex, 0 to 2**64 - 1)."""
    compact = text.strip()
    if not _SEED_RE.match(compact):
        raise ValueError(
            f"not a seed: {text!r}: write a whole number from 0 to {MASK64}, "
            "in decimal or as 0x hex"
        )
    seed = int(compact, 0) if compact[:2].lower() == "0x" else int(compact, 10)
    if seed > MASK64:
        raise ValueError(f"seed {text} is too large: seeds run from 0 to {MASK64} (0x{MASK64:X})")
    return seed


def parse_variant(text: str) -> str:
    """Return the variant id named by ``text`` (any case, ``_`` for ``-``)."""
    variant = text.strip().lower().replace("_", "-")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {text!r}: one of {', '.join(VARIANTS)}")
    return variant


def _seed_type(text: str) -> int:
    try:
        return parse_seed(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _variant_type(text: str) -> str:
    try:
        return parse_variant(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# -- rendering ---------------------------------------------------------------------------


def use_color(flag: bool | None, stream: TextIO) -> bool:
    """Whether to colour red suits: ``flag`` if given, else a TTY with ``NO_COLOR`` unset or empty."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR", ""):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _can_print_symbols(stream: TextIO) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        SUIT_SYMBOLS.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _Cards:
    """Turns card names (``10H``) into what a person reads (``10♥``, red where wanted)."""

    def __init__(self, *, color: bool, symbols: bool) -> None:
        self.color = color
        self.symbols = symbols

    def card(self, name: str, *, top: bool = False) -> str:
        rank, suit = name[:-1], name[-1]
        text = rank + (SUIT_SYMBOLS[SUITS.index(suit)] if self.symbols else suit)
        width = _CARD_WIDTH + 2 if top else _CARD_WIDTH
        if top:
            text = f"[{text}]"
        pad = " " * (width - len(text))
        if self.color and suit in "DH":
            text = f"{_RED}{text}{_RESET}" if not top else f"[{_RED}{text[1:-1]}{_RESET}]"
        return pad + text

    def pile(self, names: Sequence[str], *, mark_top: bool = False) -> str:
        if not names:
            return "-".rjust(_CARD_WIDTH)
        last = len(names) - 1
        return " ".join(self.card(name, top=mark_top and i == last) for i, name in enumerate(names))


def render_layout(
    game: Game, *, color: bool = False, symbols: bool = True, summary: bool = False
) -> str:
    """Every pile of ``game`` for a person, one labelled line each; ``summary`` adds status."""
    layout = full_layout(game)
    cards = _Cards(color=color, symbols=symbols)
    lines = [f"{game.title}: {game.variant}, seed {game.seed} (0x{game.seed:X})"]
    lines.append("Each pile is listed bottom first; its top card is last.")
    if game.has_stock:
        lines.append("The reserve's top card is in brackets; the reserve and stock are face down.")
    if game.wraps:
        first = layout["foundations"][0]
        lead = first[0][:-1] if first else "?"
        lines.append(f"Lead rank: {lead}")
    lines.append("")

    def row(label: str, names: Sequence[str], *, mark_top: bool = False) -> None:
        count = f"({len(names)})"
        lines.append(f"{label:<3} {count:>4} {cards.pile(names, mark_top=mark_top)}")

    for i, names in enumerate(layout["foundations"]):
        row(f"f{i + 1}", names)
    if game.has_stock:
        row("r", layout["reserve"], mark_top=True)
    for i, names in enumerate(layout["tableau"]):
        row(f"t{i + 1}", names)
    if game.has_stock:
        row("s", layout["stock"])
        row("w", layout["waste"])
    if summary:
        lines.append("")
        lines.append(
            f"status: {game.status.value}   banked: {game.banked}/52   moves: {game.moves}"
        )
    return "\n".join(lines) + "\n"


def layout_json(game: Game, *, summary: bool = False) -> dict[str, Any]:
    """``views.full_layout`` with the game's title; ``summary`` adds status, banked and moves."""
    data: dict[str, Any] = {"title": game.title, **full_layout(game)}
    if summary:
        data["status"] = game.status.value
        data["banked"] = game.banked
        data["moves"] = game.moves
    return data


def _emit(game: Game, args: argparse.Namespace, *, summary: bool) -> None:
    out = sys.stdout
    if args.json:
        json.dump(layout_json(game, summary=summary), out)
        out.write("\n")
    else:
        color = use_color(args.color, out)
        out.write(
            render_layout(game, color=color, symbols=_can_print_symbols(out), summary=summary)
        )


def _error(command: str, message: str) -> int:
    print(f"solrace {command}: error: {message}", file=sys.stderr)
    return 2


# -- commands ----------------------------------------------------------------------------


def _variants(args: argparse.Namespace) -> int:
    if args.json:
        rows = [{"id": variant, "title": cls.title} for variant, cls in VARIANTS.items()]
        json.dump(rows, sys.stdout)
        sys.stdout.write("\n")
        return 0
    width = max(len(variant) for variant in VARIANTS)
    for variant, cls in VARIANTS.items():
        print(f"{variant:<{width}}  {cls.title}")
    return 0


def _deal(args: argparse.Namespace) -> int:
    _emit(new_game(args.variant, args.seed), args, summary=False)
    return 0


def read_moves(text: str) -> list[str]:
    """Split a move list into its moves: whitespace separates them, ``#`` starts a comment."""
    return [token for line in text.splitlines() for token in line.split("#", 1)[0].split()]


def _parse_moves(texts: Iterable[str]) -> list[tuple[str, Move]]:
    parsed = []
    for number, text in enumerate(texts, start=1):
        try:
            parsed.append((text, parse_move(text)))
        except NotationError as error:
            raise NotationError(f"move {number}: {error}") from None
    return parsed


def _replay(args: argparse.Namespace) -> int:
    if args.variant.endswith(".json") or (
        os.path.isfile(args.variant) and args.variant not in VARIANTS
    ):
        return _replay_race(args)
    try:
        args.variant = _variant_type(args.variant)
    except argparse.ArgumentTypeError as error:
        return _error("replay", str(error))
    if args.seed is None:
        return _error("replay", "--seed N is needed with a VARIANT (or give a race FILE)")
    texts: list[str] = []
    if args.file is not None:
        try:
            if args.file == "-":
                content = sys.stdin.read()
            else:
                with open(args.file, encoding="utf-8") as handle:
                    content = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            return _error("replay", f"cannot read moves from {args.file}: {error}")
        texts.extend(read_moves(content))
    texts.extend(args.moves)
    try:
        moves = _parse_moves(texts)
    except NotationError as error:
        return _error("replay", str(error))
    game = new_game(args.variant, args.seed, undo_allowed=args.undo_allowed)
    for number, (text, move) in enumerate(moves, start=1):
        try:
            game.apply(move)
        except IllegalMove as refusal:
            _emit(game, args, summary=True)
            sys.stdout.flush()
            print(
                f"move {number} ({text}): {refusal.reason.value}: {refusal.message}",
                file=sys.stderr,
            )
            return 1
    _emit(game, args, summary=True)
    return 0


def _replay_race(args: argparse.Namespace) -> int:
    """``solrace replay race.json``: a race file played in the terminal."""
    from .cli_race import play_back

    try:
        with open(args.variant, encoding="utf-8") as handle:
            record = json.load(handle)
        if not isinstance(record, dict) or "players" not in record or "seed" not in record:
            raise ValueError("not a race file (solrace race export writes one)")
    except (OSError, ValueError) as error:
        return _error("replay", f"cannot read {args.variant}: {error}")
    return play_back(record, speed=args.speed)


# -- registration ------------------------------------------------------------------------


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON (docs/deals.md gives the schema) instead of text",
    )
    parser.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour red suits (default: when stdout is a terminal and NO_COLOR is unset)",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``variants``, ``deal`` and ``replay`` to the command line."""
    variants = subparsers.add_parser(
        "variants",
        help="list the games",
        description="List the games: each variant's id and name.",
    )
    variants.add_argument("--json", action="store_true", help="print JSON instead of text")
    variants.set_defaults(func=_variants)

    deal = subparsers.add_parser(
        "deal",
        help="show the layout a seed deals",
        description=(
            "Show every card of the layout that VARIANT deals from SEED, face-down cards "
            "included: a dealer's tool. Seeds are 0 to 2**64-1, in decimal or 0x hex."
        ),
    )
    deal.add_argument("variant", metavar="VARIANT", type=_variant_type, help="a variant id")
    deal.add_argument("--seed", required=True, type=_seed_type, metavar="N", help="the seed")
    _add_output_options(deal)
    deal.set_defaults(func=_deal)

    replay = subparsers.add_parser(
        "replay",
        help="apply moves to a deal and show the result",
        description=(
            "Deal VARIANT from SEED, apply the moves in the notation (t1-t3, t1-t3x2, w-f, "
            "d, rd, u; moves from --file first) and show every card of the final position "
            "with its status. A refused move stops the replay: the position before it is "
            "shown, 'move K (text): reason_code: sentence' goes to stderr and the exit "
            "code is 1. Text that is not a move gives exit code 2. With a race FILE "
            "(solrace race export) instead, every player's moves are played back in the "
            "order of their times, then the results."
        ),
    )
    replay.add_argument(
        "variant",
        metavar="VARIANT|FILE",
        help="a variant id, or a race file (solrace race export) to play back",
    )
    replay.add_argument("--seed", type=_seed_type, metavar="N", help="the seed (with a VARIANT)")
    replay.add_argument(
        "--speed",
        type=float,
        default=16.0,
        metavar="X",
        help="with a race FILE: play it X times as fast as it was played (0: at once; 16)",
    )
    replay.add_argument(
        "--no-undo",
        dest="undo_allowed",
        action="store_false",
        help="play with undo off, as in the daily challenge",
    )
    replay.add_argument(
        "--file",
        metavar="PATH",
        help="read moves from PATH ('-' for stdin): whitespace separated, '#' comments",
    )
    replay.add_argument("moves", metavar="MOVE", nargs="*", help="a move in the notation")
    _add_output_options(replay)
    replay.set_defaults(func=_replay, trailing="moves")
