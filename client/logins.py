"""Logins the command line keeps: one token per server URL, in a file only its user reads.

The file is ``$XDG_CONFIG_HOME/solrace/logins.json`` (``~/.config/solrace/logins.json``
without the variable), mode 0600 in a folder of mode 0700, written whole and renamed into
place. It maps each server URL to ``{"token": ..., "account": ...}``. A token stands for
the account until its password changes or its tokens are revoked; no password is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

__all__ = [
    "MAX_GUESTS",
    "GuestHold",
    "forget_guest",
    "forget_login",
    "guests_path",
    "logins_path",
    "normal_url",
    "store_guest",
    "store_login",
    "stored_guest",
    "stored_guests",
    "stored_login",
]


def logins_path() -> Path:
    """The file of kept logins."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "solrace" / "logins.json"


def guests_path() -> Path:
    """The file of guest tokens kept by ``solrace play`` and ``daily``: beside the logins,
    mapping each server URL to ``{name: {"token": ..., "used": ...}}`` (``used``: when a
    run last kept it, in seconds since the epoch), so that a guest whose client died comes
    back as the same player (into the race it was in) by running the same command again.
    A guest's token stands for nothing more than that guest. (``watch`` keeps none: a
    spectator has nothing to come back to.) A file of an older client, ``{name: token}``,
    is read too, its guests as used longest ago."""
    return logins_path().with_name("guests.json")


def normal_url(url: str) -> str:
    """A server URL as logins are kept under: scheme and host in lower case, a path of
    at least ``/`` (``ws://HOST:8765`` and ``ws://host:8765/`` are one server)."""
    parts = urllib.parse.urlsplit(url.strip())
    return urllib.parse.urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, "")
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, logins: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".logins.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(logins, f, indent=2, sort_keys=True)
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def stored_login(url: str) -> dict[str, str] | None:
    """The login kept for a server (``token`` and ``account``), or None."""
    login = _load(logins_path()).get(normal_url(url))
    if not isinstance(login, dict) or not isinstance(login.get("token"), str):
        return None
    return {"token": login["token"], "account": str(login.get("account", ""))}


def store_login(url: str, token: str, account: str) -> Path:
    """Keep a server's login (replacing one kept before); the file it is in."""
    path = logins_path()
    logins = _load(path)
    logins[normal_url(url)] = {"token": token, "account": account}
    _save(path, logins)
    return path


def forget_login(url: str) -> bool:
    """Forget a server's login; False if none was kept."""
    path = logins_path()
    logins = _load(path)
    if logins.pop(normal_url(url), None) is None:
        return False
    _save(path, logins)
    return True


MAX_GUESTS = 32
"""Guest names kept a server; beyond them, the one used longest ago goes first."""


def _guest(entry: Any) -> tuple[str, float] | None:
    """A kept guest's token and when it was last used, from its entry in the file (a bare
    token, as older clients kept it, counts as used longest ago); None for anything else."""
    if isinstance(entry, str):
        return entry, 0.0
    if isinstance(entry, dict) and isinstance(entry.get("token"), str):
        used = entry.get("used")
        return entry["token"], float(used) if isinstance(used, (int, float)) else 0.0
    return None


def _kept_guests(everyone: dict[str, Any], url: str) -> dict[str, tuple[str, float]]:
    """A server's kept guests, ``{name: (token, used)}``."""
    guests = everyone.get(normal_url(url))
    if not isinstance(guests, dict):
        return {}
    kept = {name: _guest(entry) for name, entry in guests.items() if isinstance(name, str)}
    return {name: guest for name, guest in kept.items() if guest is not None}


def stored_guest(url: str, name: str) -> str | None:
    """The token kept for the guest ``name`` on a server, or None."""
    guest = _kept_guests(_load(guests_path()), url).get(name)
    return None if guest is None else guest[0]


def stored_guests(url: str) -> dict[str, str]:
    """Every guest kept for a server, ``{name: token}``."""
    return {name: token for name, (token, _) in _kept_guests(_load(guests_path()), url).items()}


def store_guest(url: str, name: str, token: str, *, now: float | None = None) -> None:
    """Keep a guest's token for a server (the guest's name as the server gave it), used
    ``now`` (the time); beyond :data:`MAX_GUESTS`, the guests used longest ago are
    dropped."""
    path = guests_path()
    everyone = _load(path)
    guests = _kept_guests(everyone, url)
    guests[name] = (token, time.time() if now is None else now)
    # Used longest ago first (a stable sort: at the same time, in the file's order).
    by_use = sorted(guests.items(), key=lambda item: item[1][1])
    everyone[normal_url(url)] = {
        kept: {"token": kept_token, "used": used}
        for kept, (kept_token, used) in by_use[-MAX_GUESTS:]
    }
    _save(path, everyone)


def forget_guest(url: str, name: str) -> None:
    """Forget a guest's token (the server no longer knows it)."""
    path = guests_path()
    everyone = _load(path)
    guests = everyone.get(normal_url(url))
    if isinstance(guests, dict) and guests.pop(name, None) is not None:
        _save(path, everyone)


class GuestHold:
    """A run's claim on the guest kept for a server and name: a lock file (under
    ``guests.locks/`` beside the guests file) locked for as long as the run holds it.

    The server takes one connection per player: a second run going as the same guest
    would take the first's connection over (close code 4001). So a kept token is only
    sent by a run that holds it, and only a run that holds it keeps its token. The lock
    (``flock``; a byte lock on Windows) goes with the process: a run that dies, even
    killed, lets go of it, and the next run of the same command holds it and comes back
    as the same guest.
    """

    def __init__(self, url: str, name: str) -> None:
        key = hashlib.sha256(f"{normal_url(url)}\n{name}".encode()).hexdigest()[:32]
        self.path = guests_path().with_name("guests.locks") / f"{key}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this run holds the guest."""
        return self._fd is not None

    def take(self) -> bool:
        """Hold the guest unless another live run does (or the lock cannot be made, in a
        home that cannot be written); whether this run holds it now."""
        if self._fd is not None:
            return True
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return False
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        """Let go of the guest (the run is over)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the file unlocks it


def _lock(fd: int) -> None:
    """Lock an open file for this process, or raise OSError if another holds it."""
    if sys.platform == "win32":
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
