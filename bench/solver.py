"""How many deals the solver decides, and how fast, on seeded samples of each game.

For each game it solves ``--deals`` deals whose seeds come from SplitMix64 seeded with
``--sample-seed`` (the same sample every run), each in a worker process with its own
budget of CPU seconds (``--budget``, or ``--budget-<game>``; by default 1 s for Canfield
and the two Canisters and 10 s for Rainbow Canfield). Every winning line is replayed
through the engine (``solrace.engine.replay``, undo off) in this process and must end
``won``; the bench stops with an error otherwise.

    python3 bench/solver.py                       # 200 deals of each game, 2 workers
    python3 bench/solver.py --game canfield --deals 50

A table goes to stdout (deals, winnable, not winnable, unknown, decided share, median
and 90th percentile CPU seconds per deal, median positions); its last line holds the
figures as ``key=value`` pairs: ``decided_<game>`` (a share from 0 to 1), ``median_s_<game>``,
``winnable_<game>``, ``not_winnable_<game>``, ``unknown_<game>`` and ``budget_s_<game>``, with
the game's id written with underscores, then ``baseline_per_s``: a fixed pure-Python
workload (SplitMix64 outputs per CPU second) timed in this process before each game, as
in ``bench/engine.py``, to tell a slow machine from a slow solver, and ``compiled``: the
solver's modules that ran compiled (setup.py; ``none`` where the build made none or
``SOLRACE_PURE=1`` is set, which runs the plain Python modules to compare), and
``rainbow_search``: ``C`` where Rainbow Canfield's search ran in C (``engine/_rainbow.c``),
else ``Python``. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from solrace.engine import Status, native, replay
from solrace.engine.rng import SplitMix64
from solrace.engine.solver import Outcome, Verdict, solve_deals

GAMES = ("canfield", "american-canister", "rainbow-canfield", "british-canister")
DEFAULT_BUDGET = {"rainbow-canfield": 10.0}


def sample(sample_seed: int, game: str, count: int) -> list[int]:
    """The seeds of ``count`` deals of ``game``, fixed by ``sample_seed``."""
    rng = SplitMix64((sample_seed * 1_000_003 + GAMES.index(game)) & ((1 << 64) - 1))
    return [rng.next_u64() for _ in range(count)]


def check(outcome: Outcome) -> None:
    """Replay a winning line through the engine; exit if it does not win."""
    if outcome.verdict is not Verdict.WINNABLE:
        return
    assert outcome.moves is not None
    game = replay(outcome.variant, outcome.seed, outcome.moves, undo_allowed=False)
    if game.status is not Status.WON:
        raise SystemExit(f"{outcome.variant} {outcome.seed}: the certificate does not win")


def baseline(seconds: float = 0.5) -> float:
    """SplitMix64 outputs per CPU second, timed for about ``seconds``."""
    rng = SplitMix64(0)
    step = rng.next_u64
    calls = 0
    began = time.process_time()
    while (spent := time.process_time() - began) < seconds:
        for _ in range(1000):
            step()
        calls += 1000
    return calls / spent


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", action="append", choices=GAMES, help="repeatable; default all")
    parser.add_argument("--deals", type=int, default=200, help="deals per game")
    parser.add_argument("--sample-seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=None, help="CPU seconds per deal")
    for game in GAMES:
        parser.add_argument(f"--budget-{game}", type=float, default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    games = args.game or list(GAMES)
    rows = []
    pairs: list[str] = []
    rates: list[float] = []
    for game in games:
        rates.append(baseline())
        budget = getattr(args, f"budget_{game.replace('-', '_')}")
        if budget is None:
            budget = args.budget if args.budget is not None else DEFAULT_BUDGET.get(game, 1.0)
        seeds = sample(args.sample_seed, game, args.deals)
        began = time.perf_counter()
        outcomes: list[Outcome] = []
        for outcome in solve_deals(game, seeds, budget_s=budget, workers=args.workers):
            check(outcome)
            outcomes.append(outcome)
            print(
                f"{game} {len(outcomes)}/{len(seeds)} seed {outcome.seed}: "
                f"{outcome.verdict.value} ({outcome.nodes} positions, {outcome.seconds:.3f}s)",
                file=sys.stderr,
                flush=True,
            )
        wall = time.perf_counter() - began
        counts = {v: sum(o.verdict is v for o in outcomes) for v in Verdict}
        decided = (counts[Verdict.WINNABLE] + counts[Verdict.NOT_WINNABLE]) / len(outcomes)
        seconds = [o.seconds for o in outcomes]
        median = statistics.median(seconds)
        rows.append(
            (
                game,
                len(outcomes),
                counts[Verdict.WINNABLE],
                counts[Verdict.NOT_WINNABLE],
                counts[Verdict.UNKNOWN],
                decided,
                median,
                percentile(seconds, 0.9),
                int(statistics.median(o.nodes for o in outcomes)),
                budget,
                wall,
            )
        )
        name = game.replace("-", "_")
        pairs += [
            f"decided_{name}={decided:.4f}",
            f"median_s_{name}={median:.4f}",
            f"winnable_{name}={counts[Verdict.WINNABLE]}",
            f"not_winnable_{name}={counts[Verdict.NOT_WINNABLE]}",
            f"unknown_{name}={counts[Verdict.UNKNOWN]}",
            f"budget_s_{name}={budget:g}",
        ]
    print(
        "| game | deals | winnable | not winnable | unknown | decided | median s | p90 s "
        "| median positions | budget s | wall s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for game, n, won, lost, unknown, decided, median, p90, nodes, budget, wall in rows:
        print(
            f"| {game} | {n} | {won} | {lost} | {unknown} | {decided:.1%} | {median:.3f} "
            f"| {p90:.3f} | {nodes} | {budget:g} | {wall:.0f} |"
        )
    pairs.append(f"baseline_per_s={statistics.median(rates):.0f}")
    pairs.append(f"compiled={','.join(native.compiled()) or 'none'}")
    pairs.append(f"rainbow_search={'C' if native.extension('_rainbow') else 'Python'}")
    print(" ".join(pairs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
