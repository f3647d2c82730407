"""Races kept for their replays: the record a finished race leaves, who may read it, and
the offline check of one (``solrace verify race.json``). Pure: no I/O, no clock.

A race record (``format`` :data:`RACE_FORMAT`) holds the room and race numbers, the game,
the seed and the par (where the deal was certified), the room's undo and spectator
settings, when it ended, each player's moves with their times (ms since the race
started), and the ranked results. It is kept for ``race_retention_days``.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..engine import VARIANTS, IllegalMove, NotationError, new_game, parse_move
from .room import PlayerRace, ranked_results

__all__ = ["PUBLIC_MODES", "RACE_FORMAT", "check_race", "readable_by"]

RACE_FORMAT = "solrace-race/1"
PUBLIC_MODES = frozenset({"live", "delayed"})
"""The spectator settings whose rooms showed the boards as the race ran: their replays
are public; the others' are their players' alone."""

OVER = frozenset({"resigned", "out_of_time", "stuck"})
"""How a game the replay leaves unfinished may have ended (a stuck one where undo was
allowed stays stuck to the end)."""


def readable_by(record: dict[str, Any], player_id: str | None) -> bool:
    """Whether ``player_id`` (None: anyone) may read the race's replay."""
    if record.get("spectators") in PUBLIC_MODES:
        return True
    return player_id is not None and player_id in record.get("players", {})


def check_race(record: dict[str, Any]) -> list[str]:
    """What does not hold in a race record: the deal from the seed, every player's moves
    replayed in order (the first wrong one named), their times, and the results' statuses,
    counts and ranks. Empty when everything holds."""
    problems: list[str] = []
    if record.get("format") != RACE_FORMAT:
        return [f"not a race record ({RACE_FORMAT!r} expected)"]
    variant = record.get("variant")
    seed = record.get("seed")
    if variant not in VARIANTS or not isinstance(seed, int):
        return ["the record names no known game and seed"]
    undo = bool(record.get("undo", True))
    # A ghost's run is checked where it came from (``ghost`` names it): not here.
    results = {r.get("player_id"): r for r in record.get("results", []) if not r.get("ghost")}
    players = record.get("players", {})
    if set(results) != set(players):
        problems.append("the results and the players' moves name different players")
    standings: dict[str, PlayerRace] = {}
    for player_id, played in players.items():
        name = played.get("name", player_id)
        moves, times = played.get("moves", []), played.get("times", [])
        if len(moves) != len(times):
            problems.append(f"{name}: {len(moves)} moves but {len(times)} move times")
            continue
        if any(b < a for a, b in itertools.pairwise(times)) or any(t < 0 for t in times):
            problems.append(f"{name}: the move times are not in order")
        game = new_game(variant, seed, undo_allowed=undo)
        wrong = False
        for index, move in enumerate(moves, start=1):
            try:
                game.apply(parse_move(move))
            except (IllegalMove, NotationError) as error:
                problems.append(f"{name}: move {index} ({move}) is refused: {error}")
                wrong = True
                break
        result = results.get(player_id)
        if wrong or result is None:
            continue
        status = game.status.value
        said = result.get("status")
        if status == "won" and said != "won":
            problems.append(f"{name}: recorded {said}, the replay is won")
        elif status != "won" and (said == "won" or said not in OVER | {status}):
            problems.append(f"{name}: recorded {said}, the replay is {status}")
        if result.get("banked") != game.banked:
            problems.append(
                f"{name}: recorded {result.get('banked')} banked, the replay {game.banked}"
            )
        if result.get("moves") != game.moves:
            problems.append(f"{name}: recorded {result.get('moves')} moves, the log {game.moves}")
        time_ms = int(result.get("time_ms") or 0)
        if times and times[-1] > time_ms:
            problems.append(f"{name}: a move at {times[-1]} ms, after its end at {time_ms} ms")
        standings[player_id] = PlayerRace(
            name,
            banked=game.banked,
            moves=game.moves,
            status=str(said),
            elapsed_ms=time_ms,
            banked_at_ms=_first_reached(variant, seed, undo, moves, times, game.banked),
            finished_ms=time_ms if said in ("won", "resigned") or said == "stuck" else None,
        )
    line = record.get("par_line")
    if line is not None:
        solved = new_game(variant, seed)
        try:
            for move in line:
                solved.apply(parse_move(move))
        except (IllegalMove, NotationError) as error:
            problems.append(f"the certified line is refused: {error}")
        else:
            if solved.status.value != "won" or len(line) != record.get("par"):
                problems.append("the certified line does not win in par moves")
    if not problems:
        order = [r["player_id"] for r in ranked_results(_in_order(standings, results))]
        recorded = [p for p, _ in sorted(results.items(), key=lambda item: item[1]["rank"])]
        if order != recorded:
            problems.append("the ranks are not in the order the replays give")
    return problems


def _in_order(
    standings: dict[str, PlayerRace], results: dict[Any, dict[str, Any]]
) -> dict[str, PlayerRace]:
    """The standings in the results' order (exact ties keep it, as the server's did)."""
    return {p: standings[p] for p in sorted(results, key=lambda p: results[p]["rank"])}


def _first_reached(
    variant: str, seed: int, undo: bool, moves: list[str], times: list[int], banked: int
) -> int:
    """When the replay first had ``banked`` cards banked (ms in the race)."""
    game = new_game(variant, seed, undo_allowed=undo)
    if game.banked >= banked:
        return 0
    for move, at in zip(moves, times, strict=True):
        game.apply(parse_move(move))
        if game.banked >= banked:
            return at
    return times[-1] if times else 0
