"""``solrace verify FILE``: check exported daily entries offline, once the seed is out, or
a race file (``solrace race export``: the deal, every move, the results).

For each entry of an export (``solrace leaderboard export``, CSV or JSON) it checks that
the day's commitment is the hash of the revealed seed and nonce, deals the game from the
seed, replays every move through the engine with undo off, and compares what the replay
gives with what was recorded: the status, the cards banked, the moves, the times (in
order, within the attempt, and when the final count was first reached), and the ranks
of a board against the scores the replays give. With ``--commitment`` (the hash the
server published at the start of the day, on ``/api/daily`` and the Daily page, noted
down then), each entry's commitment must also be one of those given: the export cannot
have been made for another seed after the fact.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .engine import VARIANTS, IllegalMove, NotationError, new_game, parse_move
from .server.daily import commitment, first_reached_ms, score_of
from .server.races import RACE_FORMAT, check_race

__all__ = ["Checked", "check_ranks", "check_row", "read_rows", "register"]

NOT_OVER = ("resigned", "out_of_time")
"""How a game the engine still calls playing may have ended: the player or the clock."""


def register(subparsers: Any) -> None:
    """Add the ``verify`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="check a race file or a daily export offline: the deal, every move, the results",
        description=(
            "Check a race file (solrace race export): the deal from its seed, every move "
            "replayed, and the results recorded. Or check each "
            "entry of a daily export (solrace leaderboard export, CSV or JSON) after the "
            "day's seed is revealed: the commitment, the deal from the seed, every move "
            "replayed, and the status, cards banked, moves, times and ranks recorded."
        ),
    )
    parser.add_argument(
        "file",
        metavar="FILE",
        help="the race file or the daily export (- reads standard input)",
    )
    parser.add_argument(
        "--commitment",
        action="append",
        default=[],
        metavar="HEX",
        help="a daily export's: a commitment published at the start of the day; each "
        "entry's must be one given",
    )
    parser.set_defaults(func=_main)


@dataclass
class Checked:
    """One entry's check: who, what the replay gave, and what did not match."""

    label: str
    problems: list[str] = field(default_factory=list)
    score: float | None = None
    summary: str = ""

    @property
    def ok(self) -> bool:
        """Whether everything matched."""
        return not self.problems


ENTRY_KEYS = ("date", "variant", "player_id", "attempt", "seed", "log", "times")
"""What every entry of a daily export has (``solrace leaderboard export``'s columns)."""


def read_rows(text: str) -> list[dict[str, Any]]:
    """The rows of an export: a JSON list (or one object), else CSV with a header.

    Raises ValueError for a file that is neither a race file nor a daily export: JSON
    whose entries lack the export's keys, or text whose first line is not the export's
    CSV header (any text file would otherwise read as CSV rows of nothing)."""
    stripped = text.lstrip()
    if not stripped:
        return []
    if stripped.startswith(("[", "{")):
        data = json.loads(stripped)
        rows = data if isinstance(data, list) else [data]
        if not all(isinstance(r, dict) for r in rows):
            raise ValueError("the JSON holds something other than entries")
        if len(rows) == 1 and rows[0].get("format") == RACE_FORMAT:
            return rows
        for row in rows:
            missing = [k for k in ENTRY_KEYS if k not in row]
            if missing:
                raise ValueError(
                    "not a race file nor a daily export: an entry has no " + ", ".join(missing)
                )
        return rows
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [k for k in ENTRY_KEYS if k not in header]
    if missing:
        raise ValueError(
            "not a race file nor a daily export (solrace leaderboard export, CSV or "
            "JSON): its first line is not the export's header, which names " + ", ".join(ENTRY_KEYS)
        )
    return list(reader)


def _text(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _int(row: dict[str, Any], key: str) -> int:
    text = _text(row, key)
    if not text:
        raise ValueError(f"no {key}")
    return int(text)


def check_row(row: dict[str, Any], published: Iterable[str] = ()) -> Checked:
    """Check one exported entry; see the module's docstring. ``published``: the
    commitments published that morning, if the one the entry holds must be among them."""
    label = (
        f"{_text(row, 'date')} {_text(row, 'variant')} {_text(row, 'board') or 'people'} "
        f"{_text(row, 'player_id')} attempt {_text(row, 'attempt')}"
    )
    checked = Checked(label)
    problems = checked.problems
    variant = _text(row, "variant")
    if variant not in VARIANTS:
        problems.append(f"unknown variant {variant!r}")
        return checked
    if not _text(row, "seed") or not _text(row, "nonce"):
        problems.append("the seed is not revealed in this export: export it again after the reveal")
        return checked
    try:
        seed = _int(row, "seed")
        nonce = _text(row, "nonce")
        status, banked, moves = _text(row, "status"), _int(row, "banked"), _int(row, "moves")
        time_ms = _int(row, "time_ms")
        reached = _int(row, "reached_ms")
        log = _text(row, "log").split()
        times = [int(t) for t in _text(row, "times").split()]
    except ValueError as error:
        problems.append(f"unreadable entry: {error}")
        return checked
    if commitment(seed, nonce) != _text(row, "commitment"):
        problems.append("the commitment is not SHA-256 of the seed and nonce")
    published = {c.strip().lower() for c in published}
    if published and _text(row, "commitment").lower() not in published:
        problems.append("the commitment is not the one published at the start of the day")
    if len(times) != len(log):
        problems.append(f"{len(log)} moves but {len(times)} move times")
        return checked
    game = new_game(variant, seed, undo_allowed=False)
    for index, move in enumerate(log):
        try:
            game.apply(parse_move(move))
        except (IllegalMove, NotationError) as error:
            problems.append(f"move {index + 1} ({move}) is refused: {error}")
            return checked
    got = game.status.value
    if got == "playing":
        if status not in NOT_OVER:
            problems.append(
                f"recorded {status}, but the game is not over (resigned or out of time)"
            )
    elif got != status:
        problems.append(f"recorded {status}, the replay is {got}")
    if game.banked != banked:
        problems.append(f"recorded {banked} cards banked, the replay banks {game.banked}")
    if game.moves != moves:
        problems.append(f"recorded {moves} moves, the log holds {game.moves}")
    if any(t < 0 for t in times) or any(b < a for a, b in itertools.pairwise(times)):
        problems.append("the move times are not in order")
    elif times and times[-1] > time_ms:
        problems.append(f"a move at {times[-1]} ms, after the attempt's end at {time_ms} ms")
    first = first_reached_ms(game, list(zip(log, times, strict=True)), variant, seed)
    if first != reached:
        problems.append(
            f"recorded {banked} cards first reached at {reached} ms, the log at {first}"
        )
    checked.score = score_of(got == "won", time_ms, moves, banked, reached)
    checked.summary = f"{status}, {banked}/52 banked, {moves} moves, {time_ms} ms"
    return checked


def check_ranks(rows: Iterable[tuple[dict[str, Any], Checked]]) -> list[str]:
    """Whether each board's ranks follow the replays' scores (ties share a rank)."""
    boards: dict[tuple[str, str, str], list[tuple[int, float, str]]] = {}
    for row, checked in rows:
        rank = _text(row, "rank")
        if not rank or checked.score is None or not checked.ok:
            continue  # an entry that failed its own check is reported once, above
        key = (_text(row, "date"), _text(row, "variant"), _text(row, "board") or "people")
        boards.setdefault(key, []).append((int(rank), checked.score, checked.label))
    problems = []
    for (date, variant, board), ranked in sorted(boards.items()):
        ranked.sort()
        for (rank_a, score_a, label_a), (rank_b, score_b, label_b) in itertools.pairwise(ranked):
            if (rank_a == rank_b) != (score_a == score_b) or score_a > score_b:
                problems.append(
                    f"{date} {variant} {board}: #{rank_a} ({label_a}) and #{rank_b} "
                    f"({label_b}) are not in the order their replays score"
                )
    return problems


def _main(args: argparse.Namespace) -> int:
    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        rows = read_rows(text)
    except (OSError, ValueError, csv.Error) as error:
        print(f"solrace verify: cannot read {args.file}: {error}", file=sys.stderr)
        return 2
    if not rows:
        print(f"solrace verify: {args.file} holds no entries", file=sys.stderr)
        return 2
    if len(rows) == 1 and rows[0].get("format") == RACE_FORMAT:
        return _verify_race(rows[0])
    results = [(row, check_row(row, args.commitment)) for row in rows]
    for _, checked in results:
        if checked.ok:
            print(f"ok    {checked.label}: {checked.summary}")
        else:
            print(f"FAIL  {checked.label}: {'; '.join(checked.problems)}")
    rank_problems = check_ranks(results)
    for problem in rank_problems:
        print(f"FAIL  ranks: {problem}")
    failed = sum(not c.ok for _, c in results)
    print(
        f"{len(results)} entr{'y' if len(results) == 1 else 'ies'} checked: "
        f"{len(results) - failed} ok, {failed} failed"
        + (f", {len(rank_problems)} rank problem(s)" if rank_problems else "")
    )
    return 1 if failed or rank_problems else 0


def _verify_race(record: dict[str, Any]) -> int:
    """Check a race file (``solrace race export``): 0 if it holds, else 1."""
    label = f"race {record.get('room')}/{record.get('race')}"
    problems = check_race(record)
    if problems:
        for problem in problems:
            print(f"FAIL  {label}: {problem}")
        print(f"{label}: {len(problems)} problem(s)")
        return 1
    players = len(record.get("players", {}))
    print(f"ok    {label}: the deal, every move of {players} player(s) and the results hold")
    return 0
