"""Certified-winnable deals, kept warm per game so that a "winnable deals only" race starts
at once.

The solver (:mod:`solrace.engine.solver`) decides, with every card known, whether a deal
can be won; a deal it certifies comes with a winning line that the engine has replayed to
a win, whose length is the race's *par*. Solving takes from milliseconds to seconds, so a
node keeps a pool of certified seeds per game in its store (shared by every node on
Redis) and tops it up in the background, in worker processes, never on the event loop.
A game's pool is first filled when a room of that game asks for winnable deals; a race
that finds its pool empty waits for one deal to be certified.

Work ahead of need (topping up a pool, choosing the days' deals) runs only on CPU time
nothing else wants; work that someone waits for (a race's deal from an empty pool, the
day's deal not chosen yet) runs in a worker of its own at a low but fair priority, so
that it ends on a busy node too, within :data:`WAIT_S`.

Seeds in the pool are secret like any race's: they leave the server only in the results
of the race that dealt them.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import secrets
import threading
import time
from collections.abc import Callable
from multiprocessing.pool import Pool
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from ..engine import Status, format_move, new_game
from ..engine.solver import Outcome, Verdict, solve_deal
from ..protocol import ErrorCode, ProtocolError
from .aio import KeyedLock, cancel_until_done
from .daily import DayDeal, daily_seed, day_deal, utc_date

if TYPE_CHECKING:
    from .node import Node

__all__ = ["CERTIFIABLE", "DealPending", "DealPool", "certify", "playable_seed"]

log = structlog.get_logger("solrace.server")

T = TypeVar("T")

CERTIFIABLE = frozenset({"canfield", "rainbow-canfield", "american-canister"})
"""The games whose deals the solver decides within a couple of seconds; British Canister's
are almost never winnable (about 1.3 deals in a million), so its races are about cards
banked."""

SEED_BITS = 53  # as a race's: every JSON reader keeps it exact
BATCH = 8
"""Deals a worker tries in one go, keeping the first it certifies (about 7 in 10 Canfield
deals are winnable; few American Canister deals are, but most are decided at once)."""
WAIT_S = 60.0
"""The longest a race waits for a certified deal when its game's pool is empty."""
NOW_NICE = 5
"""The nice level of the worker for work someone waits for: below the node's, so that
running races come first, but with a share of a busy core (about a quarter against one
process at nice 0), where ``SCHED_IDLE`` gets none."""


Certified = tuple[int, int, str]
"""A certified deal: its seed, its par, and the winning line (moves in the notation,
separated by spaces), which the engine replayed to a win."""


ANSWER_WAIT_S = 5.0
"""The longest an HTTP request waits for the day's deal to be chosen (a fresh node's first
of the day, on a busy machine, can take longer): its answer must come well within the
handshake's timeout (websockets' ``open_timeout``, 10 s), past which the request would be
dropped without a word. It is answered 503 instead, and the choice goes on."""


class DealPending(Exception):
    """The day's deal is still being chosen: ask again in a moment."""


PLAYABLE_TRIES = 32
"""Fresh seeds drawn for a race dealt at random before one with a move at its start is
given up on (about 1 deal in 30 of the Canisters has none, 1 in 200 of Canfield, so a
fair draw never comes near it)."""


def playable(variant: str, seed: int) -> bool:
    """Whether the deal has a move at its start: a deal with none ends as it starts."""
    return new_game(variant, seed).status is Status.PLAYING


def playable_seed(variant: str) -> int:
    """A fresh secret seed whose deal has a move at its start.

    A race ending as it starts is no race: a few deals of each game have no move at all
    (no card a full turn of the stock brings up fits anywhere), and a race dealt at random
    skips them, as a certified deal skips every deal with no win.
    """
    for _ in range(PLAYABLE_TRIES):
        seed = secrets.randbits(SEED_BITS)
        if playable(variant, seed):
            break
    return seed


def playable_daily(secret: bytes, date: str, variant: str) -> int:
    """The first of the day's candidate seeds (:func:`daily_seed`) whose deal has a move
    at its start: the day's deal where it is not certified."""
    for candidate in range(PLAYABLE_TRIES):
        if playable(variant, daily_seed(secret, date, variant, candidate)):
            return candidate
    return 0


def certify(variant: str, seed: int, budget_s: float) -> Certified | None:
    """``(seed, par, line)`` if the solver certifies the deal winnable within ``budget_s``
    CPU seconds (par: the winning line's length), else None. Runs in a worker process."""
    outcome: Outcome = solve_deal(variant, seed, budget_s=budget_s)
    if outcome.verdict is Verdict.WINNABLE and outcome.moves is not None:
        return seed, len(outcome.moves), " ".join(format_move(m) for m in outcome.moves)
    return None


DAILY_CANDIDATES = 1024
"""Seeds tried in turn for a day's deal before it is dealt uncertified (no par): about 1
American Canister deal in 60 is winnable, most decided at once."""


def certify_daily(
    secret: bytes, date: str, variant: str, budget_s: float
) -> tuple[int, int | None]:
    """The first candidate seed of the day (:func:`daily_seed`) that the solver certifies,
    and its par; if none of :data:`DAILY_CANDIDATES` is, the first with a move at its
    start (:func:`playable_daily`), without par. Runs in a worker."""
    for candidate in range(DAILY_CANDIDATES):
        found = certify(variant, daily_seed(secret, date, variant, candidate), budget_s)
        if found is not None:
            return candidate, found[1]
    return playable_daily(secret, date, variant), None


def yield_cpu() -> None:
    """Run this process only on CPU time that nothing else wants (Linux's ``SCHED_IDLE``;
    elsewhere the lowest nice level).

    A certifying worker shares the node's cores: niced to 10, it still took about a tenth
    of a busy core from the event loop (the scheduler's weights give nice 10 that share),
    which every player's moves paid for in latency. Certifying is work ahead of need (a
    warm pool, tomorrow's daily), so it waits for idle CPU; a race that finds its pool
    empty on a saturated node waits longer for its deal, and the moves of the races
    running come first.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux: the lowest priority there is
        with contextlib.suppress(OSError):
            os.nice(19)


def _worker_start() -> None:
    """A certifying worker yields the CPU to the node (:func:`yield_cpu`), and goes when
    the node does, however the node ended (a kill -9 leaves it no word)."""
    yield_cpu()
    _go_with_parent()


def _now_worker_start() -> None:
    """The worker for work someone waits for: niced (:data:`NOW_NICE`), not idle-only; it
    goes with the node too."""
    with contextlib.suppress(OSError):
        os.nice(NOW_NICE)
    _go_with_parent()


def _go_with_parent() -> None:
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="solrace-node-watch", daemon=True).start()


def certify_first(variant: str, seeds: list[int], budget_s: float) -> Certified | None:
    """The first of ``seeds`` that :func:`certify` certifies, or None."""
    for seed in seeds:
        found = certify(variant, seed, budget_s)
        if found is not None:
            return found
    return None


class _Workers:
    """Worker processes, started on first use."""

    def __init__(self, count: int, start: Callable[[], None]) -> None:
        self.count = count
        self.start = start
        self.pool: Pool | None = None
        self.processes: list[multiprocessing.process.BaseProcess] = []  # the pool's own

    def get(self) -> Pool:
        if self.pool is None:
            # Spawned, not forked: a fork of a process with an event loop, sockets and
            # threads running would copy them all.
            context = multiprocessing.get_context("spawn")
            before = set(multiprocessing.active_children())
            self.pool = context.Pool(self.count, initializer=self.start)
            # Its workers start with it: the ones to kill if it will not end (another
            # node's pool in the same process is not this one's to kill).
            self.processes = [p for p in multiprocessing.active_children() if p not in before]
        return self.pool

    async def close(self) -> None:
        pool, self.pool = self.pool, None
        processes, self.processes = self.processes, []
        if pool is not None:
            await _terminate(pool, processes)


class _Waiter:
    """A race waiting for a deal certified now: its address, since when, and the deal."""

    __slots__ = ("asker", "deal", "since")

    def __init__(self, asker: str | None, since: float, deal: asyncio.Future[Certified]) -> None:
        self.asker = asker
        self.since = since
        self.deal = deal


class DealPool:
    """A node's share of the certified deals: taken for races, topped up in workers."""

    def __init__(self, node: Node) -> None:
        self.node = node
        config = node.config
        self.size = config.deal_pool_size
        self.budget_s = config.solver_budget_s
        self._ahead = _Workers(config.solver_workers, _worker_start)  # on idle CPU only
        self._now = _Workers(1, _now_worker_start)  # someone waits for it
        self._filling: dict[str, asyncio.Task[None]] = {}
        self._daily_locks = KeyedLock()  # by (date, game, ahead)
        self._asking: set[str | None] = set()  # addresses waiting for a deal certified now
        self._waiting: dict[str, list[_Waiter]] = {}  # by game: races waiting for a deal
        self._certifying: dict[str, asyncio.Task[None]] = {}  # by game: the loop serving them
        self._served: dict[str | None, list[float]] = {}  # by address: deals handed out now
        self._days: asyncio.Task[None] | None = None
        self._choosing: dict[tuple[str, str], asyncio.Task[DayDeal]] = {}
        self.answer_wait_s = ANSWER_WAIT_S

    async def _run(self, func: Callable[..., T], *args: Any, now: bool = False) -> T:
        """``func(*args)`` in a worker process, awaited without blocking the loop: in the
        worker for work someone waits for if ``now``, else in one on idle CPU."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()

        def settle(result: T) -> None:
            if not done.done():
                done.set_result(result)

        def fail(error: BaseException) -> None:
            if not done.done():
                done.set_exception(error)

        (self._now if now else self._ahead).get().apply_async(
            func,
            args,
            callback=lambda result: loop.call_soon_threadsafe(settle, result),
            error_callback=lambda error: loop.call_soon_threadsafe(fail, error),
        )
        return await done

    async def _certify(self, variant: str, *, now: bool = False) -> Certified | None:
        """A few fresh deals tried in a worker: the first certified."""
        seeds = [secrets.randbits(SEED_BITS) for _ in range(BATCH)]
        return await self._run(certify_first, variant, seeds, self.budget_s, now=now)

    async def daily(self, date: str, variant: str, *, ahead: bool = False) -> DayDeal:
        """The day's deal of ``variant``: the first of its candidate seeds the solver
        certifies winnable (its par revealed with its seed), chosen once for every node and
        kept; where the game has no certified deals (or the node deals the daily as it
        comes, ``daily_winnable`` off), the first candidate with a move at its start,
        without par. Chosen on idle CPU if ``ahead`` (no one waits for it yet), else in the
        worker for work someone waits for: one who asks while the choice ahead is still
        being made does not wait for it, but has the same choice made beside it (it is the
        same; the first kept stands)."""
        backend = self.node.backend
        secret = self.node.secret
        kept = await backend.daily_deal(date, variant)
        if kept is None:
            async with self._daily_locks.hold((date, variant, ahead)):
                kept = await backend.daily_deal(date, variant)
                if kept is None:
                    chosen: tuple[int, int | None]
                    if variant in CERTIFIABLE and self.node.config.daily_winnable:
                        chosen = await self._run(
                            certify_daily, secret, date, variant, self.budget_s, now=not ahead
                        )
                    else:
                        chosen = (playable_daily(secret, date, variant), None)
                    kept = await backend.keep_daily_deal(date, variant, *chosen)
        return day_deal(secret, date, variant, *kept)

    async def daily_soon(self, date: str, variant: str) -> DayDeal:
        """:meth:`daily`, waited for at most :attr:`answer_wait_s`; raise
        :class:`DealPending` past it.
        The choice goes on without the asker (the next one joins it), so that an answer
        with a time limit never throws away solver work."""
        key = (date, variant)
        task = self._choosing.get(key)
        if task is None:
            task = self._choosing[key] = asyncio.ensure_future(self.daily(date, variant))

            def done(task: asyncio.Task[DayDeal]) -> None:
                if self._choosing.get(key) is task:
                    del self._choosing[key]
                if not task.cancelled() and task.exception() is not None:
                    # Retrieved here, as no asker may be waiting any more: logged once.
                    log.warning("daily_deal_choice_failed", error=repr(task.exception()))

            task.add_done_callback(done)
        try:
            async with asyncio.timeout(self.answer_wait_s):
                return await asyncio.shield(task)
        except TimeoutError:
            raise DealPending from None

    def start(self) -> None:
        """Top up every certifiable game's pool now, if rooms deal winnable deals by
        default, and choose today's and tomorrow's daily deals ahead: the first race of
        each, and the day's first attempt, then start at once too."""
        if self.node.config.winnable_default:
            for variant in sorted(CERTIFIABLE):
                self.warm(variant)
        if self.node.config.daily_winnable and self._days is None:
            self._days = asyncio.ensure_future(self._choose_days())

    async def _choose_days(self) -> None:
        """Choose the daily deals of today and tomorrow, and again each hour."""
        node = self.node
        while not node.stopped:
            today = utc_date(node.now_ms())
            tomorrow = utc_date(node.now_ms() + 86_400_000)
            try:
                for day in (today, tomorrow):
                    for variant in sorted(CERTIFIABLE):
                        if node.stopped:
                            return
                        await self.daily(day, variant, ahead=True)
            except asyncio.CancelledError:
                raise
            except Exception:  # the store is away: an attempt chooses it, or the next hour
                log.warning("daily_deal_choice_failed", exc_info=True)
            await asyncio.sleep(3600)

    def warm(self, variant: str) -> None:
        """Start topping up ``variant``'s pool, unless it is being topped up already."""
        if variant not in CERTIFIABLE or self.size <= 0 or self.node.stopped:
            return
        task = self._filling.get(variant)
        if task is None or task.done():
            task = self._filling[variant] = asyncio.ensure_future(self._fill(variant))

    async def _fill(self, variant: str) -> None:
        backend = self.node.backend
        try:
            while not self.node.stopped and await backend.certified_count(variant) < self.size:
                found = await self._certify(variant)
                if found is not None:
                    await backend.put_certified(variant, *found)
        except asyncio.CancelledError:
            raise
        except Exception:  # a store or worker failure: the next race that asks tries again
            log.warning("deal_pool_fill_failed", variant=variant, exc_info=True)

    async def take(self, variant: str, asker: str | None = None) -> tuple[int, int]:
        """A certified deal of ``variant`` for a race, ``(seed, par)``: from the pool, else
        certified now (the race waits); raise ProtocolError(UNAVAILABLE) if none is found.
        Its winning line is kept with the races (``race_retention_days``), for the
        race's replay once it is over.

        The worker for deals someone waits for serves them first come, first served: a
        client ``asker`` (an address) that waits for one already is refused another until
        it is served, so that one address's rooms, each asking at once while the pool is
        empty, cannot queue a minute of solver work ahead of everyone else's race."""
        backend = self.node.backend
        found = await backend.take_certified(variant)
        self.warm(variant)
        if found is None:
            if asker is not None and asker in self._asking:
                raise ProtocolError(
                    ErrorCode.UNAVAILABLE,
                    "a winnable deal is being found for another race from your network: "
                    "try again in a moment",
                    retry_after=5.0,
                )
            if asker is not None:
                self._asking.add(asker)
            try:
                found = await self._wait_for_deal(variant, asker)
            finally:
                self._asking.discard(asker)
        if found is None:
            raise ProtocolError(
                ErrorCode.UNAVAILABLE, "no winnable deal could be certified now; try again"
            )
        seed, par, line = found
        keep_ms = int(self.node.config.race_retention_days * 86_400_000)
        if keep_ms > 0:
            await backend.keep_line(variant, seed, line, self.node.now_ms(), keep_ms)
        return seed, par

    async def _wait_for_deal(self, variant: str, asker: str | None) -> Certified | None:
        """A deal certified now for a race whose game's pool is empty, or None after
        :data:`WAIT_S`.

        The races waiting share one loop of batches in the worker for work someone waits
        for, and each deal it certifies goes to the waiting race whose address was handed
        the fewest such deals in the last hour (the one waiting longest among those): the
        rooms of a few addresses looping races once queued a batch each ahead of every
        other race, whose start then waited up to a minute."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(asker, loop.time(), loop.create_future())
        self._waiting.setdefault(variant, []).append(waiter)
        task = self._certifying.get(variant)
        if task is None or task.done():
            self._certifying[variant] = asyncio.ensure_future(self._serve_waiting(variant))
        try:
            async with asyncio.timeout(WAIT_S):
                return await asyncio.shield(waiter.deal)
        except TimeoutError:
            if waiter.deal.done():  # handed to it as it gave up: the pool keeps it
                await self.node.backend.put_certified(variant, *waiter.deal.result())
            return None
        finally:
            waiting = self._waiting.get(variant, [])
            if waiter in waiting:
                waiting.remove(waiter)

    async def _serve_waiting(self, variant: str) -> None:
        """Certify deals of ``variant`` now while races wait for one, each to the race
        :meth:`_wait_for_deal` says."""
        waiting = self._waiting.setdefault(variant, [])
        while waiting and not self.node.stopped:
            try:
                found = await self._certify(variant, now=True)
            except asyncio.CancelledError:
                raise
            except Exception:  # a worker failure: the races wait on, up to their end
                log.warning("deal_certify_failed", variant=variant, exc_info=True)
                await asyncio.sleep(1.0)
                continue
            if found is None:
                continue
            if not waiting:  # every race gave up meanwhile: the pool keeps it
                await self.node.backend.put_certified(variant, *found)
                break
            now = asyncio.get_running_loop().time()
            picked = min(waiting, key=lambda w: (self._served_lately(w.asker, now), w.since))
            waiting.remove(picked)
            self._served.setdefault(picked.asker, []).append(now)
            picked.deal.set_result(found)

    def _served_lately(self, asker: str | None, now: float) -> int:
        """Deals certified now handed to ``asker``'s races in the last hour."""
        times = self._served.get(asker)
        if not times:
            return 0
        times[:] = [t for t in times if now - t < 3600.0]
        if not times:
            del self._served[asker]
        return len(times)

    async def close(self) -> None:
        """Stop topping up and let the workers go."""
        await cancel_until_done(
            [
                *self._filling.values(),
                *self._choosing.values(),
                *self._certifying.values(),
                *([self._days] if self._days else []),
            ]
        )
        self._filling = {}
        self._choosing = {}
        self._certifying = {}
        self._days = None
        await self._ahead.close()
        await self._now.close()


TERMINATE_WAIT_S = 10.0
"""The longest a node's stop waits for its solver pool to end before killing its workers."""


async def _terminate(workers: Pool, processes: list[multiprocessing.process.BaseProcess]) -> None:
    """End the solver pool: a deal half solved is not worth waiting for.

    ``terminate()`` joins the workers and the pool's threads, which blocks: it runs in a
    thread of its own (a daemon, which an exiting process does not wait for), and a pool
    that has not ended after :data:`TERMINATE_WAIT_S` has its worker ``processes`` killed.
    """
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not ended.done():
            ended.set_result(None)

    def run() -> None:
        try:
            workers.terminate()
        finally:
            with contextlib.suppress(RuntimeError):  # the loop closed after giving up on it
                loop.call_soon_threadsafe(settle)

    threading.Thread(target=run, name="solrace-solver-stop", daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(ended), TERMINATE_WAIT_S)
    except TimeoutError:
        log.warning("solver_pool_stop_slow", waited_s=TERMINATE_WAIT_S)
        for process in processes:
            if process.is_alive():
                process.kill()
