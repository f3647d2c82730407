"""The room and race state machine. This module owns it; it does no I/O and reads no clock.

A :class:`Room` is a plain record (it is what a backend stores). Every function here takes
a room, a command and the time in milliseconds, and returns an :class:`Outcome`: the new
record (or ``None`` once the room is empty) and the events to publish, already numbered
with the room's sequence. The server's adapters persist the record atomically, publish the
events, and arm timers at :func:`next_deadline`.

States and transitions:

============  ==========================================  ============
from          on                                          to
============  ==========================================  ============
lobby         host starts, or every player ready (2+)     countdown
countdown     the countdown ends (:func:`tick`)           racing
countdown     the last player leaves                      lobby
racing        every player done, or the time limit        finished
finished      a player asks for a rematch                 lobby
any           the last member leaves                      (deleted)
============  ==========================================  ============
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ..engine import VARIANTS, new_game
from ..protocol import (
    Countdown,
    ErrorCode,
    Members,
    Progress,
    ProtocolError,
    RaceOver,
    RaceStarted,
)
from .names import MAX_NAME_LEN, shown_name

__all__ = [
    "DEFAULT_FINISH_GRACE",
    "DEFAULT_SPECTATOR_DELAY",
    "DONE",
    "MIN_SPECTATOR_DELAY",
    "TRANSITIONS",
    "Event",
    "Finish",
    "Ghost",
    "Member",
    "Outcome",
    "PlayerRace",
    "Role",
    "Room",
    "RoomState",
    "Settings",
    "SpectatorMode",
    "Standing",
    "check_variant",
    "close",
    "create",
    "finish_mode",
    "join",
    "leave",
    "next_deadline",
    "places",
    "progress",
    "race_length_ms",
    "race_over",
    "ranked_results",
    "rematch",
    "restarted",
    "set_connected",
    "set_ready",
    "set_settings",
    "spectator_mode",
    "standings",
    "start",
    "tick",
    "will_start",
]

Event = Members | Countdown | RaceStarted | Progress | RaceOver


class RoomState(StrEnum):
    """Where a room stands."""

    LOBBY = "lobby"
    COUNTDOWN = "countdown"
    RACING = "racing"
    FINISHED = "finished"


TRANSITIONS: dict[tuple[RoomState, str], RoomState] = {
    (RoomState.LOBBY, "start"): RoomState.COUNTDOWN,
    (RoomState.COUNTDOWN, "countdown_over"): RoomState.RACING,
    (RoomState.COUNTDOWN, "no_players"): RoomState.LOBBY,
    (RoomState.RACING, "all_done"): RoomState.FINISHED,
    (RoomState.RACING, "time_up"): RoomState.FINISHED,
    (RoomState.FINISHED, "rematch"): RoomState.LOBBY,
}


class Role(StrEnum):
    """A member's role in a room."""

    PLAYER = "player"
    SPECTATOR = "spectator"


DONE = frozenset({"won", "stuck", "resigned", "out_of_time"})


class SpectatorMode(StrEnum):
    """Who may watch a room, and which boards they see while a race runs.

    Everyone in a race plays the same deal, so any board of it shows cards still face down
    on the others': a racer watching their own room from a second connection would learn
    them. Only ``after`` shows nothing of the kind while a race runs.
    """

    LIVE = "live"
    """Every board as it is played: for friends who trust each other."""
    DELAYED = "delayed"
    """Every board as it was ``spectator_delay`` seconds before."""
    AFTER = "after"
    """Progress only (banked, moves, status); the boards once the race is over."""
    OFF = "off"
    """No spectators."""


_MODES = {mode.value: mode for mode in SpectatorMode}


class Finish(StrEnum):
    """How a race ends (besides its time limit)."""

    EVERYONE = "everyone"
    """When every player's game is over."""
    FIRST = "first"
    """``finish_grace`` seconds after the first win (or when every game is over sooner)."""


DEFAULT_FINISH_GRACE = 30
"""Seconds a ``first`` room's race goes on after its first win unless the host says otherwise."""

DEFAULT_SPECTATOR_DELAY = 30
"""Seconds a ``delayed`` room holds boards back unless its host says otherwise."""
MIN_SPECTATOR_DELAY = 10
"""The shortest delay a room may ask for (the longest is ``max_spectator_delay_s``)."""


def spectator_mode(value: object, default: SpectatorMode = SpectatorMode.AFTER) -> SpectatorMode:
    """The mode ``value`` names, or the old boolean's: true is ``default``, false ``off``;
    raise ProtocolError(BAD_SETTINGS) for anything else."""
    if value is True or value is None:
        return default
    if value is False:
        return SpectatorMode.OFF
    mode = _MODES.get(value) if isinstance(value, str) else None
    if mode is not None:
        return mode
    modes = ", ".join(_MODES)
    raise ProtocolError(ErrorCode.BAD_SETTINGS, f"spectators: one of {modes}")


def finish_mode(value: object) -> Finish:
    """The finish ``value`` names (None: ``everyone``); raise ProtocolError(BAD_SETTINGS)."""
    if value is None:
        return Finish.EVERYONE
    for mode in Finish:
        if value == mode.value:
            return mode
    raise ProtocolError(ErrorCode.BAD_SETTINGS, "finish: everyone or first")


@dataclass(frozen=True, slots=True)
class Settings:
    """A room's settings, chosen by its creator; the host may change the spectators' in
    the lobby (:func:`set_settings`)."""

    variant: str
    max_players: int = 4
    spectators: SpectatorMode = SpectatorMode.AFTER
    """Who may watch, and what they see (a record stored before modes says true or false)."""
    undo: bool = True
    time_limit: int = 900
    countdown: int = 3
    daily: str | None = None
    """The date of the daily deal this room plays (its seed stays hidden until the day ends)."""
    attempt: int = 0
    """Which attempt at the daily deal this is (1 is the ranked one)."""
    bot: bool = False
    """A daily attempt by a client that said it is a bot (ranked on the bots' board)."""
    spectator_delay: int = DEFAULT_SPECTATOR_DELAY
    """Seconds the boards are held back from spectators when ``spectators`` is ``delayed``."""
    finish: Finish = Finish.EVERYONE
    """How the race ends: when everyone is done, or ``finish_grace`` s after the first win."""
    finish_grace: int = DEFAULT_FINISH_GRACE
    winnable: bool = False
    """Deal only deals the solver certified winnable (with every card known)."""
    ghost: str | None = None
    """The recorded run this room races as a ghost (``CODE/RACE/PLAYER`` or
    ``daily/DATE/VARIANT/PLAYER``): every race deals its deal."""

    def __post_init__(self) -> None:
        if not isinstance(self.spectators, SpectatorMode):  # a mode's name, or a boolean
            object.__setattr__(self, "spectators", spectator_mode(self.spectators))
        if not isinstance(self.finish, Finish):
            object.__setattr__(self, "finish", finish_mode(self.finish))

    def to_wire(self) -> dict[str, Any]:
        """The settings as plain data."""
        data: dict[str, Any] = {
            "variant": self.variant,
            "max_players": self.max_players,
            "spectators": self.spectators.value,
            "spectator_delay": self.spectator_delay,
            "undo": self.undo,
            "time_limit": self.time_limit,
            "countdown": self.countdown,
            "finish": self.finish.value,
            "finish_grace": self.finish_grace,
            "winnable": self.winnable,
        }
        if self.ghost is not None:
            data["ghost"] = self.ghost
        if self.daily is not None:
            data["daily"] = self.daily
            data["attempt"] = self.attempt
            if self.bot:
                data["bot"] = True
        return data


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a room."""

    player_id: str
    name: str
    role: Role
    ready: bool = False
    connected: bool = True
    left_ms: int | None = None
    link: int = 0
    """How many times the member has come back (resumed) into the room: a node lets go of
    a member's connection only if no newer one has come since (on another node, say,
    while this one drains)."""

    def to_wire(self) -> dict[str, Any]:
        """The member as others see it."""
        return {
            "player_id": self.player_id,
            "name": self.name,
            "role": self.role.value,
            "ready": self.ready,
            "connected": self.connected,
        }


@dataclass(frozen=True, slots=True)
class PlayerRace:
    """One player's standing in the current race."""

    name: str
    banked: int = 0
    moves: int = 0
    status: str = "playing"
    elapsed_ms: int = 0
    banked_at_ms: int = 0
    finished_ms: int | None = None
    ghost: list[Any] | None = None
    """A ghost's recorded end, ``[status, banked, moves, time_ms, banked_at_ms]``: a ghost
    is a recorded run whose progress moves on its own recorded times (None for people)."""

    def over(self, undo: bool) -> bool:
        """Whether this player's game has ended in a room whose undo setting is ``undo``:
        won, resigned or out of time, or stuck where undo is off (where undo is allowed, a
        stuck player may still undo out of it, or resign). A ghost's stuck is its end."""
        if self.ghost is not None:
            return self.status in DONE
        return self.status in DONE and not (undo and self.status == "stuck")

    def at_end(self) -> PlayerRace:
        """A ghost as its recorded run ended (a person as they are)."""
        if self.ghost is None:
            return self
        status, banked, moves, time_ms, banked_at = self.ghost
        return replace(
            self,
            status=status,
            banked=banked,
            moves=moves,
            elapsed_ms=time_ms,
            banked_at_ms=banked_at,
            finished_ms=time_ms,
        )


@dataclass(frozen=True, slots=True)
class Ghost:
    """A recorded run raced as a ghost: its id in the race, name, and recorded end."""

    player_id: str
    name: str
    end: list[Any]
    """``[status, banked, moves, time_ms, banked_at_ms]``."""


@dataclass(frozen=True, slots=True)
class Room:
    """A room's record: what a backend stores and what every node agrees on."""

    code: str
    settings: Settings
    state: RoomState = RoomState.LOBBY
    host: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    seq: int = 0
    race: int = 0
    seed: int | None = None
    starts_ms: int | None = None
    deadline_ms: int | None = None
    players: dict[str, PlayerRace] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    par: int | None = None
    """The length of the solver's winning line of the race's deal, when it certified one."""

    def progressed(self, players: dict[str, PlayerRace], seq: int, deadline_ms: int | None) -> Room:
        """This record with new standings, as ``replace`` would make it.

        A room's standings change several times a second while it races, and
        ``dataclasses.replace`` costs about twice this direct copy, field by field.
        """
        return Room(
            self.code,
            self.settings,
            self.state,
            self.host,
            self.members,
            seq,
            self.race,
            self.seed,
            self.starts_ms,
            deadline_ms,
            players,
            self.results,
            self.par,
        )

    def role_of(self, player_id: str) -> Role | None:
        """The member's role, or None if not a member."""
        member = self.members.get(player_id)
        return member.role if member else None

    def player_ids(self) -> list[str]:
        """The members who are players, in joining order."""
        return [p for p, m in self.members.items() if m.role is Role.PLAYER]

    def to_dict(self) -> dict[str, Any]:
        """The record as plain data, for a backend."""
        return {
            "code": self.code,
            "settings": self.settings.to_wire(),
            "state": self.state.value,
            "host": self.host,
            "members": [
                [m.player_id, m.name, m.role.value, m.ready, m.connected, m.left_ms, m.link]
                for m in self.members.values()
            ],
            "seq": self.seq,
            "race": self.race,
            "seed": self.seed,
            "starts_ms": self.starts_ms,
            "deadline_ms": self.deadline_ms,
            "players": [
                [
                    p,
                    r.name,
                    r.banked,
                    r.moves,
                    r.status,
                    r.elapsed_ms,
                    r.banked_at_ms,
                    r.finished_ms,
                    r.ghost,
                ]
                for p, r in self.players.items()
            ],
            "results": self.results,
            "par": self.par,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Room:
        """The record from :meth:`to_dict`'s plain data."""
        members = {
            m[0]: Member(m[0], m[1], Role(m[2]), m[3], m[4], m[5], m[6] if len(m) > 6 else 0)
            for m in data["members"]
        }
        players = {p[0]: PlayerRace(*p[1:]) for p in data["players"]}
        return cls(
            code=data["code"],
            settings=Settings(**data["settings"]),
            state=RoomState(data["state"]),
            host=data["host"],
            members=members,
            seq=data["seq"],
            race=data["race"],
            seed=data["seed"],
            starts_ms=data["starts_ms"],
            deadline_ms=data["deadline_ms"],
            players=players,
            results=data["results"],
            par=data.get("par"),
        )

    def members_event(self, seq: int) -> Members:
        """The members event at ``seq``."""
        return Members(
            room=self.code,
            seq=seq,
            state=self.state.value,
            host=self.host,
            members=[m.to_wire() for m in self.members.values()],
            settings=self.settings.to_wire(),
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """A command's result: the new record (None once deleted) and the numbered events."""

    room: Room | None
    events: tuple[Event, ...] = ()


def check_variant(variant: str) -> str:
    """The variant id, if the engine knows it; raise ProtocolError(UNKNOWN_VARIANT) if not."""
    if variant not in VARIANTS:
        raise ProtocolError(
            ErrorCode.UNKNOWN_VARIANT, f"unknown variant; one of {', '.join(VARIANTS)}"
        )
    return variant


def _fail(code: ErrorCode, message: str) -> ProtocolError:
    return ProtocolError(code, message)


def _emit(room: Room, *makers: Any) -> Outcome:
    """Number events made by ``makers(room, seq)`` from the room's next sequence number."""
    events = []
    seq = room.seq
    for make in makers:
        seq += 1
        events.append(make(room, seq))
    return Outcome(replace(room, seq=seq), tuple(events))


def _members(room: Room, seq: int) -> Members:
    return room.members_event(seq)


def create(code: str, settings: Settings, host_id: str, host_name: str) -> Outcome:
    """A new room with its creator as host and first player."""
    room = Room(
        code=code,
        settings=settings,
        host=host_id,
        members={host_id: Member(host_id, host_name, Role.PLAYER)},
    )
    return _emit(room, _members)


def join(
    room: Room,
    player_id: str,
    name: str,
    role: Role,
    *,
    max_spectators: int,
    max_name_len: int = MAX_NAME_LEN,
) -> Outcome:
    """Add a member; a player only before a race (in the lobby or after one). A name that
    looks like another member's is shown with a number: ``alice (2)``."""
    if player_id in room.members:
        member = room.members[player_id]
        if member.role is role:
            return set_connected(room, player_id, True, 0)
        raise _fail(ErrorCode.ALREADY_IN_ROOM, "you are already in this room in another role")
    if role is Role.PLAYER:
        if room.state not in (RoomState.LOBBY, RoomState.FINISHED):
            # The reason says whether watching meanwhile is open to the newcomer.
            if room.settings.daily is not None or room.settings.spectators is SpectatorMode.OFF:
                raise ProtocolError(
                    ErrorCode.WRONG_STATE,
                    "a race is on and this room takes no spectators: join between races",
                    reason="racing_no_spectators",
                )
            raise ProtocolError(
                ErrorCode.WRONG_STATE,
                "a race is on: join as a spectator, or wait for the rematch",
                reason="racing",
            )
        if len(room.player_ids()) >= room.settings.max_players:
            most = room.settings.max_players
            raise _fail(
                ErrorCode.ROOM_FULL,
                f"the room has {most} player{'' if most == 1 else 's'}: it is full",
            )
    else:
        if room.settings.daily is not None:
            raise _fail(
                ErrorCode.SPECTATORS_NOT_ALLOWED, "no one watches a daily attempt while it runs"
            )
        if room.settings.spectators is SpectatorMode.OFF:
            raise _fail(ErrorCode.SPECTATORS_NOT_ALLOWED, "this room takes no spectators")
        spectators = sum(1 for m in room.members.values() if m.role is Role.SPECTATOR)
        if spectators >= max_spectators:
            raise _fail(ErrorCode.ROOM_FULL, f"the room has {max_spectators} spectators")
    members = dict(room.members)
    name = shown_name(name, [m.name for m in room.members.values()], max_name_len)
    members[player_id] = Member(player_id, name, role)
    host = room.host if room.host is not None or role is Role.SPECTATOR else player_id
    return _emit(replace(room, members=members, host=host), _members)


def _next_host(members: dict[str, Member], old: str | None) -> str | None:
    if old in members and members[old].role is Role.PLAYER:
        return old
    for player_id, member in members.items():
        if member.role is Role.PLAYER and member.connected:
            return player_id
    for player_id, member in members.items():
        if member.role is Role.PLAYER:
            return player_id
    return None


def leave(room: Room, player_id: str, now_ms: int, link: int | None = None) -> Outcome:
    """Remove a member; a player in a running race resigns; the host role passes on.

    With ``link``, only if the member has not come back since that connection
    (:attr:`Member.link`): else nothing changes."""
    if player_id not in room.members:
        raise _fail(ErrorCode.NOT_IN_ROOM, "you are not in this room")
    if link is not None and room.members[player_id].link != link:
        return Outcome(room)
    racing = room.state is RoomState.RACING and player_id in room.players
    if racing and not room.players[player_id].over(room.settings.undo):
        resigned = progress(room, player_id, status="resigned", now_ms=now_ms)
        assert resigned.room is not None
        head = resigned.events
        room = resigned.room
    else:
        head = ()
    members = dict(room.members)
    del members[player_id]
    if not members:
        return Outcome(None, head)
    room = replace(room, members=members, host=_next_host(members, room.host))
    if room.state is RoomState.COUNTDOWN:
        # Out of the race before it begins: a standing left behind would never be done.
        players = {p: r for p, r in room.players.items() if p != player_id}
        room = replace(room, players=players)
        if not room.player_ids():
            room = replace(
                room,
                state=TRANSITIONS[(room.state, "no_players")],
                players={},
                seed=None,
                par=None,
                starts_ms=None,
                deadline_ms=None,
            )
    out = _emit(room, _members)
    return Outcome(out.room, head + out.events)


def set_connected(
    room: Room,
    player_id: str,
    connected: bool,
    now_ms: int,
    name: str | None = None,
    *,
    max_name_len: int = MAX_NAME_LEN,
    link: int | None = None,
) -> Outcome:
    """Mark a member connected or dropped (a dropped player may resume within the grace);
    a member who comes back under a new ``name`` is shown under it (numbered, as by
    :func:`join`, if another member's looks the same).

    Coming back counts in :attr:`Member.link`. A drop with ``link`` is that connection's:
    if the member has come back since, nothing changes."""
    member = room.members.get(player_id)
    if member is None:
        raise _fail(ErrorCode.NOT_IN_ROOM, "you are not in this room")
    if not connected and link is not None and member.link != link:
        return Outcome(room)
    if name:
        others = [m.name for p, m in room.members.items() if p != player_id]
        name = shown_name(name, others, max_name_len, keep=member.name)
    else:
        name = member.name
    members = dict(room.members)
    if connected:
        # A newer connection, even while the record still has the member connected (the
        # node of the last one has not let go of it yet): that node's drop changes nothing.
        member = members[player_id] = replace(member, link=member.link + 1)
    if member.connected == connected and member.name == name:
        return Outcome(replace(room, members=members))
    members[player_id] = replace(
        member, connected=connected, left_ms=None if connected else now_ms, name=name
    )
    players = room.players
    if player_id in players and players[player_id].name != name:
        players = {**players, player_id: replace(players[player_id], name=name)}
    return _emit(replace(room, members=members, players=players), _members)


def close(room: Room, reason: str) -> Outcome:
    """An operator closes the room: every member is out, a race ends unrecorded, and the
    last event (members, none left) says why; the record is deleted."""
    gone = replace(room, members={}, host=None)
    out = _emit(gone, lambda r, seq: replace(r.members_event(seq), closed=reason))
    return Outcome(None, out.events)


def restarted(room: Room, now_ms: int, downtime_ms: int) -> Outcome:
    """The server was down for ``downtime_ms`` and is back at ``now_ms``.

    The race clock stops while the server is down: a countdown's and a race's start and
    deadline move later by the downtime, so that nobody loses playing time to it. Every
    player counts as dropped from now (each has the whole resume grace to come back);
    spectators leave, as they do when their connection drops.
    """
    members = {
        p: replace(m, connected=False, left_ms=now_ms)
        for p, m in room.members.items()
        if m.role is Role.PLAYER
    }
    if room.state in (RoomState.COUNTDOWN, RoomState.RACING) and downtime_ms > 0:
        room = replace(
            room,
            starts_ms=None if room.starts_ms is None else room.starts_ms + downtime_ms,
            deadline_ms=None if room.deadline_ms is None else room.deadline_ms + downtime_ms,
        )
    if not members:
        return Outcome(None)
    room = replace(room, members=members, host=_next_host(members, room.host))
    return _emit(room, _members)


def set_settings(
    room: Room,
    player_id: str,
    spectators: SpectatorMode | None = None,
    spectator_delay: int | None = None,
    finish: Finish | None = None,
    finish_grace: int | None = None,
) -> Outcome:
    """The host changes the spectator or finish setting (None keeps a value), in the lobby
    or after a race. Turning spectators off puts the room's spectators out: the members
    event names them in ``removed``, with why."""
    if player_id not in room.members:
        raise _fail(ErrorCode.NOT_IN_ROOM, "you are not in this room")
    if room.settings.daily is not None:
        raise _fail(ErrorCode.WRONG_STATE, "a daily attempt's settings never change")
    if room.host != player_id:
        raise _fail(ErrorCode.NOT_HOST, "only the host changes the settings")
    if room.state not in (RoomState.LOBBY, RoomState.FINISHED):
        raise _fail(
            ErrorCode.WRONG_STATE, "the settings change in the lobby or after a race, not now"
        )
    if room.settings.ghost is not None and finish is Finish.FIRST:
        raise _fail(
            ErrorCode.BAD_SETTINGS,
            "finish: a ghost race runs to the end of your game ('everyone'); the run's own "
            "finish does not end it",
        )
    settings = replace(
        room.settings,
        spectators=room.settings.spectators if spectators is None else spectators,
        spectator_delay=(
            room.settings.spectator_delay if spectator_delay is None else spectator_delay
        ),
        finish=room.settings.finish if finish is None else finish,
        finish_grace=room.settings.finish_grace if finish_grace is None else finish_grace,
    )
    if settings == room.settings:
        return Outcome(room)
    removed: dict[str, str] = {}
    if settings.spectators is SpectatorMode.OFF:
        removed = {p: "spectators_off" for p, m in room.members.items() if m.role is Role.SPECTATOR}
    members = {p: m for p, m in room.members.items() if p not in removed}
    room = replace(room, settings=settings, members=members)
    return _emit(room, lambda r, seq: replace(r.members_event(seq), removed=removed or None))


def set_ready(
    room: Room,
    player_id: str,
    ready: bool,
    now_ms: int,
    seed: int,
    par: int | None = None,
    ghost: Ghost | None = None,
) -> Outcome:
    """Set a player's ready flag; when every player (two or more) is ready, the race starts."""
    member = room.members.get(player_id)
    if member is None:
        raise _fail(ErrorCode.NOT_IN_ROOM, "you are not in this room")
    if member.role is not Role.PLAYER:
        raise _fail(ErrorCode.NOT_A_PLAYER, "spectators do not get ready")
    if room.state is not RoomState.LOBBY:
        raise _fail(ErrorCode.WRONG_STATE, f"the room is in state {room.state.value}")
    members = dict(room.members)
    members[player_id] = replace(member, ready=ready)
    room = replace(room, members=members)
    players = room.player_ids()
    if len(players) >= 2 and all(members[p].ready for p in players):
        out = _emit(room, _members)
        assert out.room is not None
        begun = _begin(out.room, now_ms, seed, par, ghost)
        return Outcome(begun.room, out.events + begun.events)
    return _emit(room, _members)


def will_start(room: Room, player_id: str, ready: bool | None = None) -> bool:
    """Whether :func:`start` (``ready`` None) or :func:`set_ready` by ``player_id`` would
    start the race now: so that a certified deal is taken only for a race it starts."""
    if room.state is not RoomState.LOBBY or player_id not in room.members:
        return False
    if ready is None:
        return room.host == player_id
    players = room.player_ids()
    return (
        ready
        and player_id in players
        and len(players) >= 2
        and all(room.members[p].ready for p in players if p != player_id)
    )


def start(
    room: Room,
    player_id: str,
    now_ms: int,
    seed: int,
    par: int | None = None,
    ghost: Ghost | None = None,
) -> Outcome:
    """The host starts the countdown (or the race at once with a zero countdown)."""
    if player_id not in room.members:
        raise _fail(ErrorCode.NOT_IN_ROOM, "you are not in this room")
    if room.host != player_id:
        raise _fail(ErrorCode.NOT_HOST, "only the host starts the race")
    if room.state is not RoomState.LOBBY:
        raise _fail(ErrorCode.WRONG_STATE, f"the room is in state {room.state.value}")
    return _begin(room, now_ms, seed, par, ghost)


def _begin(
    room: Room, now_ms: int, seed: int, par: int | None = None, ghost: Ghost | None = None
) -> Outcome:
    countdown = room.settings.countdown
    deal = new_game(room.settings.variant, seed)
    # Canfield games deal one card home; a few deals are stuck before the first move
    # (nothing a full turn of the stock brings up can be played), and end at the start.
    status = deal.status.value
    players = {
        p: PlayerRace(
            room.members[p].name,
            banked=deal.banked,
            status=status,
            finished_ms=0 if status in DONE else None,
        )
        for p in room.player_ids()
    }
    if ghost is not None:
        players[ghost.player_id] = PlayerRace(
            ghost.name, banked=deal.banked, status="playing", ghost=list(ghost.end)
        )
    room = replace(
        room,
        state=TRANSITIONS[(room.state, "start")],
        race=room.race + 1,
        seed=seed,
        par=par,
        starts_ms=now_ms + countdown * 1000,
        deadline_ms=now_ms + (countdown + room.settings.time_limit) * 1000,
        players=players,
        results=[],
    )
    out = _emit(room, lambda r, s: Countdown(r.code, s, countdown))
    assert out.room is not None
    if countdown == 0:
        started = tick(out.room, now_ms)
        return Outcome(started.room, out.events + started.events)
    return out


def _race_started(room: Room, seq: int) -> RaceStarted:
    return RaceStarted(
        room=room.code,
        seq=seq,
        race=room.race,
        variant=room.settings.variant,
        time_limit=room.settings.time_limit,
        players=[{"player_id": p, "name": r.name} for p, r in room.players.items()],
    )


def tick(room: Room, now_ms: int, grace_ms: int | None = None) -> Outcome:
    """Let time pass: end the countdown, end the race at its time limit, drop the lapsed.

    With ``grace_ms``, a member dropped for that long leaves (a racing player resigns).
    A race past its time limit ends first, so that a late tick puts no one past it.
    """
    if (
        room.state is RoomState.RACING
        and room.deadline_ms is not None
        and now_ms >= room.deadline_ms
    ):
        elapsed = room.deadline_ms - (room.starts_ms or 0)
        undo = room.settings.undo
        players = {  # a player still stuck (undo allowed) counts as stuck; a ghost ends
            p: r
            if r.over(undo) or r.ghost is not None
            else replace(
                r, status=r.status if r.status == "stuck" else "out_of_time", elapsed_ms=elapsed
            )
            for p, r in room.players.items()
        }
        over = _finish(replace(room, players=players), "time_up")
        assert over.room is not None
        rest = tick(over.room, now_ms, grace_ms)
        return Outcome(rest.room, over.events + rest.events)
    if grace_ms is not None:
        for player_id, member in room.members.items():
            if not member.connected and (member.left_ms or 0) + grace_ms <= now_ms:
                gone = leave(room, player_id, now_ms)
                if gone.room is None:
                    return gone
                rest = tick(gone.room, now_ms, grace_ms)
                return Outcome(rest.room, gone.events + rest.events)
    if (
        room.state is RoomState.COUNTDOWN
        and room.starts_ms is not None
        and now_ms >= room.starts_ms
    ):
        room = replace(room, state=TRANSITIONS[(room.state, "countdown_over")])
        started = _emit(room, _race_started)
        assert started.room is not None
        # A deal stuck before its first move has nothing to undo: it ends at the start.
        people = [r for r in started.room.players.values() if r.ghost is None]
        if people and all(r.status in DONE for r in people):
            finished = _finish(started.room, "all_done")
            return Outcome(finished.room, started.events + finished.events)
        return started
    return Outcome(room)


def next_deadline(room: Room, grace_ms: int | None = None) -> int | None:
    """When :func:`tick` next has something to do, in milliseconds."""
    times = []
    if room.state is RoomState.COUNTDOWN and room.starts_ms is not None:
        times.append(room.starts_ms)
    if room.state is RoomState.RACING and room.deadline_ms is not None:
        times.append(room.deadline_ms)
    if grace_ms is not None:
        times.extend((m.left_ms or 0) + grace_ms for m in room.members.values() if not m.connected)
    return min(times) if times else None


@dataclass(slots=True)  # not frozen: one is made per move, and frozen ones cost more
class Standing:
    """A player's standing to record: reached at ``at_ms``, its banked count at ``banked_at_ms``.

    ``banked_at_ms`` is when the count of cards banked was reached (``at_ms`` if None), so
    that a standing reported late ranks as early; ``view`` goes to spectators only.
    """

    player_id: str
    at_ms: int
    status: str | None = None
    banked: int | None = None
    moves: int | None = None
    view: dict[str, Any] | None = None
    banked_at_ms: int | None = None


def _standing(room: Room, s: Standing) -> PlayerRace:
    current = room.players[s.player_id]
    starts = room.starts_ms or s.at_ms
    elapsed = max(0, s.at_ms - starts)
    banked = current.banked if s.banked is None else s.banked
    status = s.status or current.status
    banked_at = current.banked_at_ms
    undo = room.settings.undo
    if banked != current.banked:
        banked_at = max(0, (s.at_ms if s.banked_at_ms is None else s.banked_at_ms) - starts)
    return PlayerRace(
        name=current.name,
        banked=banked,
        moves=current.moves if s.moves is None else s.moves,
        status=status,
        elapsed_ms=elapsed,
        banked_at_ms=banked_at,
        finished_ms=elapsed if status in DONE and not (undo and status == "stuck") else None,
        ghost=current.ghost,
    )


def standings(room: Room, updates: list[Standing]) -> Outcome:
    """Record several players' new standings as one ``progress`` event.

    A standing of a player whose game is over already, or who is not in the race, is
    left out (it may have waited while the game ended), and so is one of fewer moves than
    the standing kept; the race ends when every player is done. Nothing at all is recorded
    outside a running race.
    """
    if room.state is not RoomState.RACING:
        raise _fail(ErrorCode.RACE_NOT_STARTED, "no race is running in this room")
    players = dict(room.players)
    entries: list[dict[str, Any]] = []
    finished = False
    undo = room.settings.undo
    for update in updates:
        current = players.get(update.player_id)
        if current is None or current.over(undo):
            continue
        if update.moves is not None and update.moves < current.moves:
            # Older than the one kept (a game's log only grows): a node's report that
            # was on its way while the standing was caught up with the log elsewhere.
            continue
        new = players[update.player_id] = _standing(room, update)
        finished = finished or new.over(undo)
        entry: dict[str, Any] = {
            "player_id": update.player_id,
            "banked": new.banked,
            "moves": new.moves,
            "status": new.status,
            "elapsed_ms": new.elapsed_ms,
        }
        if update.view is not None:
            entry["view"] = update.view
        if new.ghost is not None:
            entry["ghost"] = True
        entries.append(entry)
    if not entries:
        return Outcome(room)
    seq = room.seq + 1  # as _emit would number it, in one copy of the record, not two
    room = room.progressed(players, seq, _deadline(room, players))
    if any(e["status"] == "won" for e in entries):
        placed = places(room)
        for entry in entries:
            if entry["status"] == "won":
                entry["place"] = placed[entry["player_id"]]
    out = Outcome(room, (Progress(room.code, seq, entries),))
    if finished and all(r.over(undo) for r in players.values() if r.ghost is None):
        over = _finish(room, "all_done")
        return Outcome(over.room, out.events + over.events)
    return out


def _deadline(room: Room, players: dict[str, PlayerRace]) -> int | None:
    """The race's deadline: in a ``first`` room, no later than ``finish_grace`` seconds
    after its first win."""
    deadline = room.deadline_ms
    if room.settings.finish is not Finish.FIRST or room.starts_ms is None:
        return deadline
    wins = [
        r.finished_ms
        for r in players.values()
        if r.status == "won" and r.finished_ms is not None and r.ghost is None
    ]
    if not wins:
        return deadline
    ends = room.starts_ms + min(wins) + room.settings.finish_grace * 1000
    return ends if deadline is None else min(deadline, ends)


def race_length_ms(room: Room, now_ms: int) -> int:
    """How long the race has run: until now, or until its end once it is over (the last
    person's game's end: a ghost's recorded run may be longer than the race it joined),
    never past its deadline."""
    if room.starts_ms is None:
        return 0
    end = min(now_ms, room.deadline_ms or now_ms)
    if room.state is RoomState.FINISHED:
        people = [r.elapsed_ms for r in room.players.values() if r.ghost is None]
        if people:
            end = min(end, room.starts_ms + max(people))
    return max(0, end - room.starts_ms)


def places(room: Room) -> dict[str, int]:
    """The place of each player who has won so far (final: a later win is slower); wins
    equal in time and moves are level."""
    wins = sorted(
        (r.finished_ms or 0, r.moves, index, p)
        for index, (p, r) in enumerate(room.players.items())
        if r.status == "won"
    )
    ranks = _level_ranks([(finished, moves) for finished, moves, *_ in wins])
    return {p: rank for rank, (*_, p) in zip(ranks, wins, strict=True)}


def _level_ranks(keys: list[Any]) -> list[int]:
    """The ranks of sorted ``keys``, equal keys level: (a, b, b, c) rank (1, 2, 2, 4)."""
    ranks: list[int] = []
    for place, key in enumerate(keys, start=1):
        ranks.append(ranks[-1] if place > 1 and keys[place - 2] == key else place)
    return ranks


def progress(
    room: Room,
    player_id: str,
    *,
    now_ms: int,
    status: str | None = None,
    banked: int | None = None,
    moves: int | None = None,
    view: dict[str, Any] | None = None,
    banked_at: int | None = None,
) -> Outcome:
    """Record one player's new standing (see :func:`standings`); refused if it is over.

    ``now_ms`` is when the standing was reached, and ``banked_at`` when its count of cards
    banked was (``now_ms`` if not given).
    """
    if room.state is not RoomState.RACING or player_id not in room.players:
        raise _fail(ErrorCode.RACE_NOT_STARTED, "no race of yours is running in this room")
    current = room.players[player_id]
    if current.over(room.settings.undo):
        raise _fail(ErrorCode.GAME_OVER, f"your game is over ({current.status})")
    return standings(room, [Standing(player_id, now_ms, status, banked, moves, view, banked_at)])


def ranked_results(players: dict[str, PlayerRace]) -> list[dict[str, Any]]:
    """Winners by time, then by moves (fewer first); the rest by cards banked (more first),
    then by when that count was first reached. Players equal on all of these are level:
    they share a rank (1, 1, 3), whoever joined first."""

    def key(item: tuple[str, PlayerRace]) -> tuple[int, int, int]:
        _, r = item
        if r.status == "won":
            return (0, r.finished_ms or 0, r.moves)
        return (1, -r.banked, r.banked_at_ms)

    ordered = sorted(players.items(), key=key)
    results = []
    ranks = _level_ranks([key(item) for item in ordered])
    for rank, (player_id, r) in zip(ranks, ordered, strict=True):
        results.append(
            {
                "rank": rank,
                "player_id": player_id,
                "name": r.name,
                "status": r.status,
                "banked": r.banked,
                "moves": r.moves,
                "time_ms": r.finished_ms if r.finished_ms is not None else r.elapsed_ms,
            }
        )
        if r.ghost is not None:
            results[-1]["ghost"] = True
    return results


def _finish(room: Room, why: str) -> Outcome:
    # A ghost ends as its recorded run did, whenever the people are done.
    room = replace(room, players={p: r.at_end() for p, r in room.players.items()})
    results = ranked_results(room.players)
    room = replace(room, state=TRANSITIONS[(room.state, why)], results=results)
    return _emit(room, race_over)


def race_over(room: Room, seq: int) -> RaceOver:
    """The event of a finished room's race: its results, the seed revealed (a daily's
    is not, nor its par: they come out together once the day is over)."""
    assert room.seed is not None
    daily = room.settings.daily
    return RaceOver(
        room.code,
        seq,
        room.race,
        room.settings.variant,
        None if daily else room.seed,
        room.results,
        daily,
        room.settings.attempt or None,
        bot=True if daily and room.settings.bot else None,
        par=None if daily else room.par,
    )


def rematch(room: Room, player_id: str) -> Outcome:
    """After a race, go back to the lobby for a new deal; the asker is ready."""
    member = room.members.get(player_id)
    if member is None:
        raise _fail(ErrorCode.NOT_IN_ROOM, "you are not in this room")
    if member.role is not Role.PLAYER:
        raise _fail(ErrorCode.NOT_A_PLAYER, "only players ask for a rematch")
    if room.state is not RoomState.FINISHED:
        raise _fail(ErrorCode.WRONG_STATE, "a rematch follows a finished race")
    members = {
        p: replace(m, ready=(p == player_id) if m.role is Role.PLAYER else False)
        for p, m in room.members.items()
    }
    room = replace(
        room,
        state=TRANSITIONS[(room.state, "rematch")],
        members=members,
        seed=None,
        par=None,
        starts_ms=None,
        deadline_ms=None,
        players={},
        results=[],
    )
    return _emit(room, _members)
