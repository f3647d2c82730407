"""The message catalogue: every request a client sends and every frame a server sends.

Requests are decoded into the frozen dataclasses below by :mod:`.codec`, which checks each
field's type and bounds against :data:`REQUESTS`. Server frames are built from the
dataclasses below and turned into plain data by ``to_wire()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

__all__ = [
    "PROTOCOL_VERSION",
    "REQUESTS",
    "Account",
    "Ack",
    "Boards",
    "ChangePassword",
    "Claim",
    "Countdown",
    "CreateRoom",
    "DeleteAccount",
    "Error",
    "GetLeaderboard",
    "Hello",
    "JoinRoom",
    "Leaderboard",
    "LeaveRoom",
    "Members",
    "Ok",
    "Ping",
    "PlayMove",
    "Pong",
    "Progress",
    "RaceOver",
    "RaceStarted",
    "Rematch",
    "Request",
    "Resign",
    "RevokeTokens",
    "RoomSnapshot",
    "ServerMessage",
    "SetReady",
    "SetSettings",
    "StartDaily",
    "StartRace",
    "Sync",
    "Welcome",
]

PROTOCOL_VERSION = 1
Data = dict[str, Any]

# -- requests (client to server) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    """Identify: a new player picks ``name``; a returning one sends its ``token``, or
    logs in to an account with its name (``account``) and ``password``.

    ``legal_moves`` asks for the list of legal moves in every ack's ``delta`` too (views
    in snapshots and at the start carry it always). ``bot`` says the client is a bot.
    """

    type: ClassVar[str] = "hello"
    id: int
    name: str | None = None
    token: str | None = None
    legal_moves: bool = False
    account: str | None = None
    password: str | None = None
    bot: bool = False


@dataclass(frozen=True, slots=True)
class CreateRoom:
    """Create a room and join it as its host (a player)."""

    type: ClassVar[str] = "create_room"
    id: int
    variant: str
    max_players: int = 4
    spectators: bool | str | None = None
    """Who may watch: ``live``, ``delayed``, ``after`` or ``off``. None, or the old ``true``,
    is the server's default (``after``); the old ``false`` is ``off``."""
    undo: bool = True
    time_limit: int = 900
    countdown: int = 3
    spectator_delay: int | None = None
    """Seconds a ``delayed`` room holds boards back (None: the server's default, 30)."""
    finish: str | None = None
    """How the race ends: ``everyone`` (the default: when every game is over) or ``first``
    (``finish_grace`` seconds after the first win)."""
    finish_grace: int | None = None
    """Seconds a ``first`` race goes on after its first win (None: 30)."""
    winnable: bool | None = None
    """Deal only certified-winnable deals (None: the server's default for the game: on for
    Canfield, Rainbow Canfield and American Canister; British Canister has none)."""
    ghost: str | None = None
    """Race a recorded run as a ghost: ``CODE/RACE/PLAYER`` (a kept race) or
    ``daily/DATE/VARIANT/PLAYER`` (a ranked daily run once its seed is out)."""


@dataclass(frozen=True, slots=True)
class JoinRoom:
    """Join a room by its code, as a ``player`` or a ``spectator``."""

    type: ClassVar[str] = "join_room"
    id: int
    code: str
    role: str = "player"


@dataclass(frozen=True, slots=True)
class LeaveRoom:
    """Leave the current room (a player in a running race resigns)."""

    type: ClassVar[str] = "leave_room"
    id: int


@dataclass(frozen=True, slots=True)
class SetReady:
    """Say whether this player is ready; the race starts when every player is."""

    type: ClassVar[str] = "ready"
    id: int
    ready: bool = True


@dataclass(frozen=True, slots=True)
class StartRace:
    """The host starts the countdown."""

    type: ClassVar[str] = "start"
    id: int


@dataclass(frozen=True, slots=True)
class PlayMove:
    """Play ``move`` (engine notation, ``u`` for undo) on top of revision ``rev``."""

    type: ClassVar[str] = "move"
    id: int
    move: str
    rev: int


@dataclass(frozen=True, slots=True)
class Resign:
    """Give up the current race."""

    type: ClassVar[str] = "resign"
    id: int


@dataclass(frozen=True, slots=True)
class Rematch:
    """After a race, open the room for a new race on a new deal."""

    type: ClassVar[str] = "rematch"
    id: int


@dataclass(frozen=True, slots=True)
class Sync:
    """Ask for a full snapshot of the room (after a sequence gap, say)."""

    type: ClassVar[str] = "sync"
    id: int


@dataclass(frozen=True, slots=True)
class StartDaily:
    """Start (or resume) today's attempt at the daily deal of ``variant``."""

    type: ClassVar[str] = "daily"
    id: int
    variant: str


@dataclass(frozen=True, slots=True)
class GetLeaderboard:
    """Ask for a day's leaderboard of ``variant`` (today when ``date`` is None)."""

    type: ClassVar[str] = "get_leaderboard"
    id: int
    variant: str
    date: str | None = None
    limit: int = 20
    board: str = "people"
    """``people``, or ``bots``: the board of declared bots."""


@dataclass(frozen=True, slots=True)
class Claim:
    """Make the connected guest an account under its display name, with ``password``."""

    type: ClassVar[str] = "claim"
    id: int
    password: str


@dataclass(frozen=True, slots=True)
class ChangePassword:
    """Change the account's password (its other devices are logged out)."""

    type: ClassVar[str] = "change_password"
    id: int
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class RevokeTokens:
    """Make every token of the account given so far stop working, but this connection's."""

    type: ClassVar[str] = "revoke_tokens"
    id: int


@dataclass(frozen=True, slots=True)
class DeleteAccount:
    """Delete the account: its tokens stop working, its daily entries are anonymised."""

    type: ClassVar[str] = "delete_account"
    id: int
    password: str


@dataclass(frozen=True, slots=True)
class SetSettings:
    """The host changes the room's spectator or finish setting, in the lobby or after a race."""

    type: ClassVar[str] = "set_settings"
    id: int
    spectators: str | None = None
    spectator_delay: int | None = None
    finish: str | None = None
    finish_grace: int | None = None


@dataclass(frozen=True, slots=True)
class Ping:
    """Ask for a pong."""

    type: ClassVar[str] = "ping"
    id: int


Request = (
    Hello
    | CreateRoom
    | JoinRoom
    | LeaveRoom
    | SetReady
    | StartRace
    | PlayMove
    | Resign
    | Rematch
    | Sync
    | StartDaily
    | GetLeaderboard
    | SetSettings
    | Claim
    | ChangePassword
    | RevokeTokens
    | DeleteAccount
    | Ping
)

# Field specs for validation: name -> (kind, required). Kinds: int, str, bool, alternatives
# joined by | (bool|str), and any of these followed by ? (or None): str?, int?, bool|str?.
FieldSpec = tuple[str, bool]
REQUESTS: dict[str, tuple[type[Any], dict[str, FieldSpec]]] = {}


def _spec(cls: type[Any]) -> dict[str, FieldSpec]:
    kinds = {
        "int": "int",
        "str": "str",
        "bool": "bool",
        "str | None": "str?",
        "int | None": "int?",
        "bool | str | None": "bool|str?",
        "bool | None": "bool?",
    }
    out: dict[str, FieldSpec] = {}
    for f in fields(cls):
        required = f.default is f.default_factory  # both MISSING when there is no default
        out[f.name] = (kinds[str(f.type)], required)
    return out


for _cls in (
    Hello,
    CreateRoom,
    JoinRoom,
    LeaveRoom,
    SetReady,
    StartRace,
    PlayMove,
    Resign,
    Rematch,
    Sync,
    StartDaily,
    GetLeaderboard,
    SetSettings,
    Claim,
    ChangePassword,
    RevokeTokens,
    DeleteAccount,
    Ping,
):
    REQUESTS[_cls.type] = (_cls, _spec(_cls))

# -- server frames ---------------------------------------------------------------------------


class _Wire:
    type: ClassVar[str]
    __slots__ = ()

    def to_wire(self) -> Data:
        """The frame as plain data, ``type`` first; fields that are None are left out."""
        data: Data = {"type": self.type}
        names: tuple[str, ...] = getattr(self, "__slots__", ())
        for name in names:
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


@dataclass(frozen=True, slots=True)
class Welcome(_Wire):
    """Reply to hello: who the server takes this connection for, and its token."""

    type: ClassVar[str] = "welcome"
    id: int
    player_id: str
    name: str
    token: str
    room: str | None = None
    protocol: int = PROTOCOL_VERSION
    server: dict[str, Any] | None = None
    """The node that answered: ``node`` (its lasting id: the same after a restart on the
    same data) and ``boot`` (when this run of it started, ms): a client that sees the
    same node with a new boot knows the server restarted."""
    account: dict[str, Any] | None = None
    """The identity's account, ``name`` and ``created_ms``; None (left out) for a guest."""
    bot: bool = False
    """Whether the hello said the client is a bot."""


@dataclass(frozen=True, slots=True)
class Account(_Wire):
    """Reply to claim, change_password and revoke_tokens: the account and a fresh token."""

    type: ClassVar[str] = "account"
    id: int
    name: str
    created_ms: int
    token: str


@dataclass(frozen=True, slots=True)
class Ok(_Wire):
    """A request was done."""

    type: ClassVar[str] = "ok"
    id: int


@dataclass(frozen=True, slots=True)
class Pong(_Wire):
    """Reply to ping."""

    type: ClassVar[str] = "pong"
    id: int


@dataclass(frozen=True, slots=True)
class Error(_Wire):
    """A refused request or frame: a stable ``code`` and a sentence.

    ``reason`` carries the engine's code for an illegal move, or the budget a request went
    over; ``rev`` the current revision; ``retry_after`` the seconds until a refused request
    (over a budget or a rate) would be taken.
    """

    type: ClassVar[str] = "error"
    id: int | None
    code: str
    message: str
    reason: str | None = None
    rev: int | None = None
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class Ack(_Wire):
    """A move was applied (or had been: ``duplicate``) and the player's new revision.

    A fresh move's ack carries ``delta``, the change to the player's view (``apply_delta``
    makes the new view of the old); a duplicate's carries the whole ``view``, since the
    client's own view may be older than the move.
    """

    type: ClassVar[str] = "ack"
    id: int
    rev: int
    move: str
    view: Data | None = None
    duplicate: bool = False
    delta: Data | None = None

    @staticmethod
    def fresh(request_id: int, rev: int, move: str, delta: Data) -> Data:
        """A fresh move's ack as plain data, as ``Ack(...).to_wire()`` gives it (one per move)."""
        return {
            "type": "ack",
            "id": request_id,
            "rev": rev,
            "move": move,
            "duplicate": False,
            "delta": delta,
        }

    def to_wire(self) -> Data:
        """As :meth:`_Wire.to_wire`, written out: an ack goes out for every move."""
        data: Data = {"type": "ack", "id": self.id, "rev": self.rev, "move": self.move}
        if self.view is not None:
            data["view"] = self.view
        data["duplicate"] = self.duplicate
        if self.delta is not None:
            data["delta"] = self.delta
        return data


@dataclass(frozen=True, slots=True)
class RoomSnapshot(_Wire):
    """The whole room as this connection may see it, at sequence number ``seq``."""

    type: ClassVar[str] = "room"
    id: int | None
    room: Data


@dataclass(frozen=True, slots=True)
class Members(_Wire):
    """Room event: who is in the room, the host, the settings and the room's state."""

    type: ClassVar[str] = "members"
    room: str
    seq: int
    state: str
    host: str | None
    members: list[Data]
    settings: Data
    closed: str | None = None
    """Set on the last event of a room an operator closed: why (its members are gone)."""
    removed: dict[str, str] | None = None
    """Members this event puts out of the room, by player id, each with why (a stable code:
    ``spectators_off``, the host turned spectators off); they get this event, then are out."""


@dataclass(frozen=True, slots=True)
class Countdown(_Wire):
    """Room event: the race starts in ``seconds``."""

    type: ClassVar[str] = "countdown"
    room: str
    seq: int
    seconds: int


@dataclass(frozen=True, slots=True)
class RaceStarted(_Wire):
    """Room event: the deal is out. Players get their ``view``; spectators get ``boards``."""

    type: ClassVar[str] = "race_started"
    room: str
    seq: int
    race: int
    variant: str
    time_limit: int
    players: list[Data]
    view: Data | None = None
    rev: int | None = None
    boards: dict[str, Data] | None = None


@dataclass(frozen=True, slots=True)
class Progress(_Wire):
    """Room event: the standings of the players who moved since the room's last report.

    Each entry has ``player_id``, ``banked``, ``moves``, ``status`` and ``elapsed_ms``; a
    player who has won has their final ``place`` too; spectators also get each player's
    masked ``view``.
    """

    type: ClassVar[str] = "progress"
    room: str
    seq: int
    players: list[Data]

    def to_wire(self) -> Data:
        """As :meth:`_Wire.to_wire`, written out: each room reports a few times a second."""
        return {"type": "progress", "room": self.room, "seq": self.seq, "players": self.players}


@dataclass(frozen=True, slots=True)
class RaceOver(_Wire):
    """Room event: the ranked results, with the seed now revealed."""

    type: ClassVar[str] = "race_over"
    room: str
    seq: int
    race: int
    variant: str
    seed: int | None
    """None for a daily deal: its seed is shown only once the day is over."""
    results: list[Data] = field(default_factory=list)
    daily: str | None = None
    attempt: int | None = None
    boards: dict[str, Data] | None = None
    """To spectators: every player's final board, by player id."""
    bot: bool | None = None
    """True for a daily attempt by a client that said it is a bot (the bots' board)."""
    par: int | None = None
    """The length of the solver's winning line, where the deal was certified winnable."""


@dataclass(frozen=True, slots=True)
class Boards(_Wire):
    """To the spectators of a ``delayed`` room: players' boards as they were ``delay``
    seconds before, by player id, as they come due. Not a room event: it has no ``seq``."""

    type: ClassVar[str] = "boards"
    room: str
    race: int
    delay: int
    boards: dict[str, Data]


@dataclass(frozen=True, slots=True)
class Leaderboard(_Wire):
    """Reply to leaderboard: the day's board of a variant (docs/protocol.md)."""

    type: ClassVar[str] = "leaderboard"
    id: int | None
    board: Data


ServerMessage = (
    Welcome
    | Ok
    | Pong
    | Error
    | Ack
    | RoomSnapshot
    | Members
    | Countdown
    | RaceStarted
    | Progress
    | RaceOver
    | Leaderboard
    | Account
    | Boards
)
