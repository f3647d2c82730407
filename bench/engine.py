"""Engine throughput per game: ``apply`` calls, legal-move generations and deals per second.

For each game, random playouts are played first: from seeded deals, each move is drawn
uniformly from ``legal_moves()`` until none is left or the playout reaches ``--max-moves``
(British Canister and Canfield can go on for ever). Those calls to ``legal_moves()`` are
timed one by one. The recorded move sequences are then replayed on fresh games, timing
only the loop of ``apply`` calls (dealing the fresh game is timed apart), until the time
budget is spent. Deals and move choices come from SplitMix64, so ``--seed`` fixes the
sequence of playouts; how many of them fit in the budget depends on the machine.

Times are CPU time of this process (see ``_clock``), so that other work on a shared
machine counts less; a pure-Python baseline (SplitMix64 outputs per second) is measured
beside each game, and the figures are also given as multiples of it. The last line of
output holds the headline figures as ``key=value`` pairs.

    python3 bench/engine.py [--seconds 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from solrace.engine import VARIANTS, Move, SplitMix64, new_game  # noqa: E402

# Timings are of this process's CPU time, not the wall clock: the machines these run on
# are shared, and time spent waiting for a core is not the engine's. The budget is wall
# time. Reading the CPU clock takes about a microsecond, which is taken off each interval.
_clock = time.process_time
_wall = time.perf_counter


def _clock_cost() -> float:
    """The median time between two readings of the CPU clock."""
    clock = _clock
    readings = [clock() for _ in range(2001)]
    gaps = sorted(b - a for a, b in pairwise(readings))
    return gaps[len(gaps) // 2]


_COST = _clock_cost()

# Share of each game's budget spent playing (and timing legal_moves), and spent on the
# baseline; the rest replays.
PLAY_SHARE = 0.4
BASELINE_SHARE = 0.05


@dataclass
class Result:
    """What one game's run measured."""

    variant: str
    playouts: int = 0
    played_moves: int = 0
    legal_calls: int = 0
    legal_seconds: float = 0.0
    apply_calls: int = 0
    apply_seconds: float = 0.0
    apply_wall_seconds: float = 0.0
    deals: int = 0
    deal_seconds: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def apply_per_s(self) -> float:
        return self.apply_calls / self.apply_seconds if self.apply_seconds else 0.0

    @property
    def apply_wall_per_s(self) -> float:
        return self.apply_calls / self.apply_wall_seconds if self.apply_wall_seconds else 0.0

    @property
    def legal_per_s(self) -> float:
        return self.legal_calls / self.legal_seconds if self.legal_seconds else 0.0

    @property
    def deal_per_s(self) -> float:
        return self.deals / self.deal_seconds if self.deal_seconds else 0.0


Playout = tuple[int, list[Move], object]


def play(variant: str, seed: int, seconds: float, max_moves: int, result: Result) -> list[Playout]:
    """Play random playouts for ``seconds``; time each ``legal_moves`` call."""
    clock = _clock
    seeds = SplitMix64(seed)
    playouts: list[Playout] = []
    deadline = _wall() + seconds
    while not playouts or _wall() < deadline:
        deal_seed = seeds.next_u64()
        chooser = SplitMix64(seeds.next_u64())
        game = new_game(variant, deal_seed)
        moves: list[Move] = []
        while len(moves) < max_moves:
            start = clock()
            legal = game.legal_moves()
            result.legal_seconds += clock() - start - _COST
            result.legal_calls += 1
            if not legal:
                break
            move = legal[chooser.below(len(legal))]
            game.apply(move)
            moves.append(move)
        status = game.status.value
        result.outcomes[status] = result.outcomes.get(status, 0) + 1
        result.playouts += 1
        result.played_moves += len(moves)
        playouts.append((deal_seed, moves, game.position()))
    return playouts


def replay(variant: str, playouts: list[Playout], seconds: float, result: Result) -> None:
    """Replay the recorded playouts on fresh games for ``seconds``; time the ``apply`` loop."""
    clock = _clock
    deadline = _wall() + seconds
    first_pass = True
    while True:
        for deal_seed, moves, final in playouts:
            start = clock()
            game = new_game(variant, deal_seed)
            result.deal_seconds += clock() - start - _COST
            result.deals += 1
            apply = game.apply
            start = clock()
            wall = _wall()
            for move in moves:
                apply(move)
            result.apply_wall_seconds += _wall() - wall
            result.apply_seconds += clock() - start - _COST
            result.apply_calls += len(moves)
            if first_pass and game.position() != final:
                raise AssertionError(f"{variant}: replaying seed {deal_seed} gave another position")
            if not first_pass and _wall() >= deadline:
                return
        first_pass = False
        if _wall() >= deadline:
            return


@dataclass
class Baseline:
    """A fixed pure-Python workload timed in the same run: SplitMix64 outputs per second.

    The machines these run on are shared and noisy; a figure divided by the baseline
    measured beside it moves less from run to run than the figure alone.
    """

    calls: int = 0
    seconds: float = 0.0

    @property
    def per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def measure(self, seconds: float) -> None:
        """Time ``next_u64`` calls in blocks of 1,000 for about ``seconds``."""
        clock = _clock
        rng = SplitMix64(0)
        step = rng.next_u64
        deadline = _wall() + seconds
        while True:
            start = clock()
            for _ in range(1000):
                step()
            self.seconds += clock() - start - _COST
            self.calls += 1000
            if _wall() >= deadline:
                return


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; the last line holds the headline figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget per game")
    parser.add_argument("--seed", type=int, default=1, help="seed of the playouts")
    parser.add_argument(
        "--max-moves", type=int, default=300, help="longest playout, in moves (default 300)"
    )
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.max_moves < 1 or not 0 <= args.seed < 2**64:
        parser.error("--seconds and --max-moves must be positive, --seed 0 to 2**64-1")

    results: list[Result] = []
    baseline = Baseline()
    for variant in VARIANTS:
        result = Result(variant)
        budget = args.seconds
        baseline.measure(budget * BASELINE_SHARE / 2)
        playouts = play(variant, args.seed, budget * PLAY_SHARE, args.max_moves, result)
        replay(variant, playouts, budget * (1 - PLAY_SHARE - BASELINE_SHARE), result)
        baseline.measure(budget * BASELINE_SHARE / 2)
        results.append(result)
        print(
            f"{variant}: {result.playouts} playouts, {result.apply_calls:,} applies "
            f"in {result.apply_seconds:.2f} s, {result.legal_calls:,} legal-move "
            f"generations in {result.legal_seconds:.2f} s",
            file=sys.stderr,
            flush=True,
        )

    print(
        f"Engine throughput: Python {platform.python_version()}, seed {args.seed}, "
        f"{args.seconds:g} s per game, playouts of at most {args.max_moves} moves"
    )
    print(
        f"Baseline, measured beside each game: {_rate(baseline.per_s)} SplitMix64 outputs/s "
        "(x baseline: the figure divided by it)"
    )
    print()
    base = baseline.per_s
    header = (
        "game",
        "playouts",
        "moves/playout",
        "apply/s",
        "x baseline",
        "apply/s (wall)",
        "legal/s",
        "x baseline",
        "deal/s",
        "endings",
    )
    rows = [
        (
            r.variant,
            str(r.playouts),
            f"{r.played_moves / r.playouts:.0f}",
            _rate(r.apply_per_s),
            f"{r.apply_per_s / base:.3f}",
            _rate(r.apply_wall_per_s),
            _rate(r.legal_per_s),
            f"{r.legal_per_s / base:.3f}",
            _rate(r.deal_per_s),
            " ".join(f"{k} {v}" for k, v in sorted(r.outcomes.items())),
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        cells = [
            cell.ljust(width) if i in (0, len(row) - 1) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
    print()

    figures = {"apply_per_s_min": min(r.apply_per_s for r in results)}
    figures.update({f"apply_per_s_{r.variant.replace('-', '_')}": r.apply_per_s for r in results})
    figures["legal_per_s_min"] = min(r.legal_per_s for r in results)
    figures.update({f"legal_per_s_{r.variant.replace('-', '_')}": r.legal_per_s for r in results})
    figures["deal_per_s_min"] = min(r.deal_per_s for r in results)
    figures["apply_wall_per_s_min"] = min(r.apply_wall_per_s for r in results)
    figures["baseline_per_s"] = base
    line = " ".join(f"{key}={value:.0f}" for key, value in figures.items())
    ratios = {
        "apply_x_baseline_min": figures["apply_per_s_min"] / base,
        "legal_x_baseline_min": figures["legal_per_s_min"] / base,
    }
    print(line, " ".join(f"{key}={value:.4f}" for key, value in ratios.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
