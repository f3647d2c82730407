"""Find winnable deals with the solver and write them as test fixtures.

For each variant, tries seeds 0, 1, 2, ... until it has found the wanted number of deals
that the solver wins within its node budget (with a solution no longer than a limit), and
writes ``tests/fixtures/winning_deals.json``: a list of ``{"variant", "seed", "moves"}``
with the moves in the notation. One progress line per seed goes to stderr.

    python bench/find_winning_deals.py
    python bench/find_winning_deals.py --variant rainbow-canfield --count 2 --max-nodes 100000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from solrace.engine import Status, format_move, new_game, replay
from solrace.engine.solver import search

DEFAULT_VARIANTS = ("canfield", "rainbow-canfield", "american-canister")
DEFAULT_OUTPUT = (
    Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "winning_deals.json"
)


def find(
    variant: str, *, count: int, max_seeds: int, max_nodes: int, max_length: int
) -> list[dict[str, object]]:
    """Return up to ``count`` winning deals of ``variant`` among seeds below ``max_seeds``."""
    found: list[dict[str, object]] = []
    started = time.perf_counter()
    for seed in range(max_seeds):
        if len(found) >= count:
            break
        began = time.perf_counter()
        result = search(new_game(variant, seed), max_nodes=max_nodes)
        elapsed = time.perf_counter() - began
        if result.moves is None:
            outcome = "no win exists" if result.exhausted else "budget spent"
        else:
            moves = [format_move(move) for move in result.moves]
            game = replay(variant, seed, moves)
            if game.status is not Status.WON or game.banked != 52:
                raise SystemExit(f"{variant} seed {seed}: the solution does not replay to a win")
            if len(moves) <= max_length:
                found.append({"variant": variant, "seed": seed, "moves": moves})
                outcome = f"won in {len(moves)} moves"
            else:
                outcome = f"won in {len(moves)} moves (longer than {max_length}, skipped)"
        print(
            f"{variant} seed {seed}: {outcome} ({result.nodes} positions, {elapsed:.1f}s; "
            f"{len(found)}/{count} found, {time.perf_counter() - started:.0f}s in all)",
            file=sys.stderr,
            flush=True,
        )
    return found


def main(argv: list[str] | None = None) -> int:
    """Search each variant's seeds and write the fixture file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant",
        action="append",
        help="a variant id (repeatable); default: " + ", ".join(DEFAULT_VARIANTS),
    )
    parser.add_argument("--count", type=int, default=2, help="deals to find per variant")
    parser.add_argument("--max-seeds", type=int, default=500, help="seeds to try per variant")
    parser.add_argument("--max-nodes", type=int, default=100_000, help="positions per seed")
    parser.add_argument("--max-length", type=int, default=200, help="longest solution kept")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    variants = args.variant or list(DEFAULT_VARIANTS)
    deals: list[dict[str, object]] = []
    if args.output.exists():  # keep the deals of variants not searched this time
        kept = json.loads(args.output.read_text(encoding="utf-8"))
        deals += [deal for deal in kept if deal["variant"] not in variants]
    for variant in variants:
        deals += find(
            variant,
            count=args.count,
            max_seeds=args.max_seeds,
            max_nodes=args.max_nodes,
            max_length=args.max_length,
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    # One deal per line: readable diffs without a line per move.
    lines = ",\n".join(" " + json.dumps(deal) for deal in deals)
    args.output.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    print(f"wrote {len(deals)} deals to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
