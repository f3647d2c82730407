"""The daily challenge: its seeds, commitments, scores, ranks and streaks. Pure: no I/O,
no clock.

Every UTC day has one deal per variant, the same for everyone. Its seed comes from the
server secret, the date and the variant, so nobody can compute it ahead; it is shown
only once no attempt of the day can still be running (the day's end plus the attempt
time limit, at the earliest). From the start of the day a commitment to it is public:
SHA-256 over the seed and a nonce that also comes from the secret, so that anyone can
check after the reveal that the deal was fixed in advance.

An account's first attempt of a day and variant is ranked, once the account is old
enough, and while its client address has not started too many ranked attempts at the
deal; a declared bot's goes on the bots' board; a person's whose pace no person keeps,
or that starts after another account's attempt at the deal from the same address, is
flagged for an operator's review.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import itertools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..engine import VARIANTS, Game, new_game, parse_move, replay
from ..protocol import ErrorCode, ProtocolError

__all__ = [
    "ADDRESS_KEEP_DAYS",
    "BOARDS",
    "DayDeal",
    "Entry",
    "Streaks",
    "address_counted",
    "address_tag",
    "address_verdict",
    "commitment",
    "daily_commitment",
    "daily_nonce",
    "daily_seed",
    "day_deal",
    "entry_from_log",
    "first_ranked_date",
    "first_reached_ms",
    "judged",
    "pace_flag",
    "parse_board",
    "parse_date",
    "rank_entries",
    "reveal_ms",
    "score_of",
    "seed_is_due",
    "streaks",
    "unranked_reason",
    "utc_date",
]

SEED_BITS = 53
WIN_BASE = 0.0
LOSS_BASE = 1e13
DAY_MS = 86_400_000
BOARDS = ("people", "bots")
"""The daily boards: people's, and declared bots' (never ranked with people)."""
ADDRESS_KEEP_DAYS = 2
"""Days (UTC dates) the store keeps which accounts started a day's attempts from which
address: the address rules need a day's starts only while the day lasts."""


def utc_date(now_ms: int) -> str:
    """The UTC date (YYYY-MM-DD) of a time in milliseconds since the epoch."""
    return dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC).date().isoformat()


def parse_date(text: str) -> str:
    """A date given as YYYY-MM-DD, checked; raise ProtocolError(BAD_FIELD) otherwise."""
    # fromisoformat alone also reads "20261205" and "2026-W49-6" as dates.
    try:
        day = dt.date.fromisoformat(text)
        if day.isoformat() != text:
            raise ValueError(text)
    except (TypeError, ValueError):
        raise ProtocolError(ErrorCode.BAD_FIELD, f"not a date (YYYY-MM-DD): {text!r}") from None
    return text


def parse_board(text: str) -> str:
    """A board's name (``people`` or ``bots``), checked; raise ProtocolError(BAD_FIELD)."""
    if text not in BOARDS:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"board: one of {', '.join(BOARDS)}")
    return text


def daily_seed(secret: bytes, date: str, variant: str, candidate: int = 0) -> int:
    """A seed for the day's deal of a variant: an HMAC of the date and variant under the
    server secret. ``candidate`` numbers the seeds tried in turn when the day's deal must
    be certified winnable (the first the solver certifies is the day's; 0 is the first)."""
    message = f"solrace-daily:{date}:{variant}" + (f":{candidate}" if candidate else "")
    digest = hmac.new(secret, message.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


_LOGS = frozenset({"log", "times"})
"""The fields of an :class:`Entry` that hold its move log, which boards never show."""


@dataclass(frozen=True, slots=True)
class DayDeal:
    """The deal of a day and variant: its seed, the nonce of its commitment, and the par
    of its certified winning line (None where the deal is not certified)."""

    seed: int
    nonce: str
    par: int | None = None

    @property
    def commitment(self) -> str:
        """The commitment published from the start of the day: SHA-256 of the seed and nonce."""
        return commitment(self.seed, self.nonce)


def day_deal(
    secret: bytes, date: str, variant: str, candidate: int = 0, par: int | None = None
) -> DayDeal:
    """The day's deal when its ``candidate``-th seed was chosen (with ``par``)."""
    return DayDeal(
        daily_seed(secret, date, variant, candidate), daily_nonce(secret, date, variant), par
    )


def daily_nonce(secret: bytes, date: str, variant: str) -> str:
    """The day's nonce for a variant (64 hex digits): an HMAC under the server secret, so
    that nobody can guess it, and the commitment cannot be tried against every seed."""
    message = f"solrace-daily-nonce:{date}:{variant}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def commitment(seed: int, nonce: str) -> str:
    """SHA-256 (hex) of the seed in decimal, a colon and the nonce: ``sha256("SEED:NONCE")``."""
    return hashlib.sha256(f"{seed}:{nonce}".encode("ascii")).hexdigest()


def daily_commitment(secret: bytes, date: str, variant: str) -> str:
    """The commitment published at the start of the day to its seed."""
    return commitment(daily_seed(secret, date, variant), daily_nonce(secret, date, variant))


def reveal_ms(date: str, time_limit_s: int) -> int:
    """The earliest time (ms) a day's seed is shown: the day's end (UTC) plus the attempt
    time limit, when no attempt of the day that started before midnight can still run."""
    start = dt.datetime.fromisoformat(date).replace(tzinfo=dt.UTC)
    return int(start.timestamp() * 1000) + DAY_MS + time_limit_s * 1000


def seed_is_due(date: str, now_ms: int, time_limit_s: int) -> bool:
    """Whether a day's seed may be shown by the clock (:func:`reveal_ms` has passed). The
    server also waits for every attempt of the day still running (after a restart)."""
    return now_ms >= reveal_ms(date, time_limit_s)


def first_ranked_date(created_ms: int, age_days: int) -> str:
    """The first day on which an account made at ``created_ms`` is ranked."""
    created = dt.date.fromisoformat(utc_date(created_ms))
    return (created + dt.timedelta(days=age_days)).isoformat()


def unranked_reason(
    *, attempt: int, date: str, account_created_ms: int | None, account_age_days: int
) -> str | None:
    """Why an attempt is not ranked (``later_attempt``, ``guest``, ``new_account``), or None.

    Only an account's first attempt of a day and variant is ranked, and only from the
    account's day ``account_age_days`` on (1: its second day). The address rules may
    still leave it unranked (:func:`address_verdict`).
    """
    if attempt != 1:
        return "later_attempt"
    if account_created_ms is None:
        return "guest"
    if date < first_ranked_date(account_created_ms, account_age_days):
        return "new_account"
    return None


def pace_flag(
    times: Sequence[int],
    *,
    min_moves: int,
    median_ms: int,
    moves: Sequence[str] | None = None,
) -> str | None:
    """Why a person's pace is no person's, or None: over ``min_moves`` moves or more, nine
    gaps between moves in ten (the median, and more) under ``median_ms``, or the average
    gap, from the first move to the last, under it. ``median_ms`` 0 flags none.

    The two tests are for what the reference clients let a person do. The browser page
    can send safe cards home by itself, and at the end every card left (auto-move and
    auto-finish): each 140 ms after the last move's ack, or as the ack comes back with
    reduced motion, so a few milliseconds apart on a near server. Those are foundation
    moves, up to 52 of a game: in American Canister, played near its shortest line (about
    a hundred moves), more than half the gaps, which brings the median under any floor.
    Holding the page's D key draws as fast as the keyboard repeats (30 to 40 ms), and a
    Canfield game is nearly half draws. So up to four gaps in five may be a person's
    page's or keyboard's, and a person's own moves (a drag, a click, several keys, and
    the thought before them) are the slower fifth: only a pace quick in nine gaps in ten
    is flagged. The terminal clients take a typed move a line, which is slower still.

    A program that hides its speed in a slow median, quick gaps among gaps just over the
    floor (35, 155, 155 ms), gives itself away in the average, which is what its time on
    the board is made of. A person's stays far above: with every foundation move sent by
    the page at once, a person would need to play each of the other moves in under about
    280 ms, the thinking included, to come under 150 ms. The average starts at the first
    move, so that a program waiting before it plays gains nothing. A program that plays
    just over the floor all along (160 ms a move) gives itself away in how even its gaps
    are (:data:`EVEN_SPREAD`). And with ``moves`` (the notation, one a time), a program
    whose gaps are random and quick (0 to 330 ms, each) gives itself away in the moves no
    client makes for a person: a card put on the tableau takes a drag, a click or several
    keys, and the look before them (:data:`DELIBERATE_MS`).
    """
    if median_ms <= 0 or len(times) < max(3, min_moves):
        return None
    gaps = [b - a for a, b in itertools.pairwise(times)]
    median = statistics.median(gaps)
    ninth = statistics.quantiles(gaps, n=10, method="inclusive")[-1]
    average = (times[-1] - times[0]) / len(gaps)
    if ninth < median_ms or average < median_ms:
        return (
            f"pace: a median of {median:g} ms between moves, nine in ten within {ninth:.0f} "
            f"ms, an average of {average:.0f} ms, over {len(times)} moves"
        )
    # A person's gaps are anything but even: thought, then quick runs (draws, cards sent
    # home by the page), so they spread about as widely as they are long. A program's
    # just over the floor, one every 160 ms, went through.
    spread = statistics.pstdev(gaps)
    if average < EVEN_AVERAGE_MS and spread < EVEN_SPREAD * average:
        return (
            f"pace: gaps as even as a program's, an average of {average:.0f} ms give or "
            f"take {spread:.0f}, over {len(times)} moves"
        )
    if moves is not None and len(moves) == len(times):
        deliberate = [gap for gap, move in zip(gaps, moves[1:], strict=True) if _by_hand(move)]
        if len(deliberate) >= DELIBERATE_MIN_MOVES:
            by_hand = statistics.median(deliberate)
            if by_hand < DELIBERATE_MS:
                return (
                    f"pace: a median of {by_hand:g} ms before each of {len(deliberate)} cards "
                    "put on the tableau"
                )
    return None


def _by_hand(move: str) -> bool:
    """Whether ``move`` puts a card on the tableau: no client makes one for a person (draws,
    redeals, undos and moves home may be a held key or the page's own)."""
    return move not in ("d", "rd", "u") and "-t" in move


DELIBERATE_MS = 400
DELIBERATE_MIN_MOVES = 15
"""Where at least this many moves put a card on the tableau, the median gap before them
must be :data:`DELIBERATE_MS` or more: a person picks the card and its place (a drag, a
click, arrows and Enter) after a look at the board, in half a second or more (a quick
player's, modelled in the tests, 350 ms to 1.2 s, median about 775 ms). 250 let through
a program that waited 310 ms before each such move and 10 ms before the others (an
average of 166 ms a move, first on the board)."""


EVEN_AVERAGE_MS = 1_000
EVEN_SPREAD = 0.25
"""A person's pace is flagged as a program's too where the gaps between moves average
under :data:`EVEN_AVERAGE_MS` and spread (their standard deviation) under this share of
their average: no person keeps a second's pace that evenly over a game."""


def address_counted(address: str) -> bool:
    """Whether the address rules count a client address key (see
    :func:`.budgets.client_key`): any address but the node's own machine's (loopback),
    which is local play or a proxy not listed in ``trusted_proxies``, whose clients would
    all look like one household; and not a key that names no address."""
    try:
        network = ipaddress.ip_network(address, strict=False)
    except ValueError:
        return False
    loopback = ipaddress.IPv6Address(1)  # ::1, whose /64 is ::/64
    return not (network.is_loopback or loopback in network)


def address_tag(secret: bytes, address: str) -> str:
    """What the store keeps of a client address key for the address rules: an HMAC
    under the server secret, so that the store holds no address."""
    message = f"solrace-daily-address:{address}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:32]


def address_verdict(*, ranked: int, others: int, cap: int) -> tuple[str | None, str | None]:
    """What the address rules say of an attempt that may be ranked: why it is not
    (``address_limit``) and why it waits for review (another account's attempt at the deal
    started before it from the same address), each None if nothing.

    ``ranked`` counts the attempts from the address that may be ranked, this one
    included; ``others``, the other accounts that started an attempt at the deal from the
    address before. ``cap`` 0 turns the rules off.
    """
    if cap <= 0:
        return None, None
    if ranked > cap:
        return "address_limit", None
    if others:
        accounts = "another account" if others == 1 else f"{others} other accounts"
        return None, f"address: {accounts} started this deal from the same address first"
    return None, None


def judged(entry: Entry, unranked: str | None, flag: str | None) -> Entry:
    """The entry with what the address rules said of it when it started: unranked (and
    then flagged for nothing), or flagged besides its pace. An entry not ranked anyway is
    left as it is, and a declared bot's is never flagged."""
    if not entry.ranked:
        return entry
    if unranked is not None:
        return replace(entry, unranked=unranked, flag=None)
    if flag is not None and entry.board == "people":
        return replace(entry, flag=flag if entry.flag is None else f"{entry.flag}; {flag}")
    return entry


def score_of(
    won: bool, time_ms: int, moves: int, banked: int, reached_ms: int | None = None
) -> float:
    """One number that orders attempts, lower first: wins by time then moves; the rest by
    cards banked (more first), then by when that count was first reached (``reached_ms``,
    ``time_ms`` if not given): when the attempt ended does not count. Exact in a double,
    so Redis sorted sets keep it."""
    if won:
        return WIN_BASE + min(time_ms, 99_999_999) * 10_000 + min(moves, 9_999)
    reached = time_ms if reached_ms is None else reached_ms
    return LOSS_BASE + (52 - banked) * 1e9 + min(max(0, reached), 999_999_999)


def first_reached_ms(game: Game, timed: Sequence[tuple[str, int]], variant: str, seed: int) -> int:
    """When the attempt first had as many cards banked as it ended with (ms in the race):
    its log replayed move by move. 0 if the deal itself had them."""
    target = game.banked
    replayed = new_game(variant, seed, undo_allowed=False)
    if replayed.banked >= target:
        return 0
    for move, at in timed:
        replayed.apply(parse_move(move))
        if replayed.banked >= target:
            return at
    return timed[-1][1] if timed else 0


@dataclass(frozen=True, slots=True)
class Entry:
    """One attempt at a daily deal, scored by the server from its move log."""

    date: str
    variant: str
    player_id: str
    name: str
    attempt: int
    status: str
    banked: int
    moves: int
    time_ms: int
    log: list[str] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    """Each move's time in the attempt (ms since it started), as logged."""
    reached_ms: int | None = None
    """When the attempt first had its final count of cards banked (None: ``time_ms``)."""
    board: str = "people"
    """``people``, or ``bots`` for a client that said it is a bot."""
    unranked: str | None = None
    """Why the attempt is not ranked (``later_attempt``, ``guest``, ``new_account``,
    ``address_limit``)."""
    flag: str | None = None
    """Why a person's ranked attempt waits for an operator's review (its pace, ``pace:``;
    another account's attempt from its address before it, ``address:``)."""
    kept: str | None = None
    """Why an operator put a flagged attempt on the board."""

    @property
    def ranked(self) -> bool:
        """An account's first attempt of the day and variant, from its second day, is ranked."""
        return self.attempt == 1 and self.unranked is None

    @property
    def held(self) -> bool:
        """Whether the attempt is flagged and not yet reviewed (kept off its board)."""
        return self.flag is not None and self.kept is None

    @property
    def reached(self) -> int:
        """When the final count of cards banked was first reached (ms in the attempt)."""
        return self.time_ms if self.reached_ms is None else self.reached_ms

    @property
    def won(self) -> bool:
        """Whether the attempt won."""
        return self.status == "won"

    @property
    def score(self) -> float:
        """The attempt's ordering number (see :func:`score_of`)."""
        return score_of(self.won, self.time_ms, self.moves, self.banked, self.reached)

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data (with its log and the moves' times).

        The log and the times are the entry's own lists, not copies: an attempt may hold
        tens of thousands of moves, and ``dataclasses.asdict`` copying them item by item
        cost a tenth of a second an entry (the data is written out at once, never changed).
        """
        return self._data(frozenset())

    def _data(self, left_out: frozenset[str]) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in left_out}
        data["reached_ms"] = self.reached
        data["ranked"] = self.ranked
        return data

    def public(self, rank: int | None = None) -> dict[str, Any]:
        """The entry as a leaderboard shows it (no move log): its cost does not grow with
        the log, which a board of a hundred entries would otherwise pay for each."""
        data = self._data(_LOGS)
        if rank is not None:
            data["rank"] = rank
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """The entry from :meth:`to_dict`'s data."""
        return cls(
            date=data["date"],
            variant=data["variant"],
            player_id=data["player_id"],
            name=data["name"],
            attempt=int(data["attempt"]),
            status=data["status"],
            banked=int(data["banked"]),
            moves=int(data["moves"]),
            time_ms=int(data["time_ms"]),
            log=list(data.get("log", [])),
            times=[int(t) for t in data.get("times", [])],
            reached_ms=None if data.get("reached_ms") is None else int(data["reached_ms"]),
            board=data.get("board", "people"),
            unranked=data.get("unranked"),
            flag=data.get("flag"),
            kept=data.get("kept"),
        )


def entry_from_log(
    *,
    date: str,
    variant: str,
    seed: int,
    player_id: str,
    name: str,
    attempt: int,
    log: Sequence[str] | Sequence[tuple[str, int]],
    race_status: str,
    time_ms: int,
    board: str = "people",
    unranked: str | None = None,
) -> Entry:
    """Score an attempt by replaying its move log: the client's word counts for nothing.

    ``log`` holds the moves, or the moves with their times in the attempt (ms), from which
    comes when the final count of cards banked was first reached. ``race_status`` is how
    the race ended for the player (``resigned``, ``out_of_time``…); a replay that wins or
    sticks overrides it. ``unranked`` says why the attempt is not ranked, if it is not
    (a later attempt is never ranked).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    timed = [m if isinstance(m, tuple) else (m, 0) for m in log]
    moves = [m for m, _ in timed]
    game = replay(variant, seed, moves, undo_allowed=False)
    status = game.status.value
    if status == "playing":
        status = race_status if race_status != "playing" else "out_of_time"
    if attempt != 1:
        unranked = "later_attempt"
    return Entry(
        date,
        variant,
        player_id,
        name,
        attempt,
        status,
        game.banked,
        game.moves,
        time_ms,
        moves,
        [t for _, t in timed],
        first_reached_ms(game, timed, variant, seed),
        parse_board(board),
        unranked,
    )


def rank_entries(
    entries: Iterable[Entry], first_rank: int = 1, below: int = 0
) -> list[dict[str, Any]]:
    """Entries in score order with competition ranks (equal scores share a rank).

    ``below`` is how many entries score strictly better than the first one given.
    """
    ranked: list[dict[str, Any]] = []
    previous: float | None = None
    rank = first_rank
    for index, entry in enumerate(entries):
        score = entry.score
        if previous is None:
            rank = below + 1
        elif score != previous:
            rank = first_rank + index
        ranked.append(entry.public(rank))
        previous = score
    return ranked


@dataclass(frozen=True, slots=True)
class Streaks:
    """Days in a row a player played and won (current and best)."""

    played: int
    won: int
    best_played: int
    best_won: int


def _runs(days: set[dt.date], today: dt.date) -> tuple[int, int]:
    """The current run (ending today or yesterday) and the longest run of consecutive days."""
    best = 0
    for day in days:
        if day - dt.timedelta(days=1) not in days:
            length = 1
            while day + dt.timedelta(days=length) in days:
                length += 1
            best = max(best, length)
    current = 0
    day = today if today in days else today - dt.timedelta(days=1)
    while day in days:
        current += 1
        day -= dt.timedelta(days=1)
    return current, best


def streaks(history: Iterable[Entry], today: str) -> Streaks:
    """Streaks over a player's history (any variant): a day counts as played with any
    attempt, and as won with a won attempt."""
    played: set[dt.date] = set()
    won: set[dt.date] = set()
    for entry in history:
        day = dt.date.fromisoformat(entry.date)
        played.add(day)
        if entry.won:
            won.add(day)
    end = dt.date.fromisoformat(today)
    current_played, best_played = _runs(played, end)
    current_won, best_won = _runs(won, end)
    return Streaks(current_played, current_won, best_played, best_won)
