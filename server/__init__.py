"""The race server: rooms, races, backends and the websockets app."""

from __future__ import annotations

from .app import SolraceServer, make_backend, run
from .backends import Backend, BackendUnavailable, EmbeddedBackend
from .config import ServerConfig
from .node import Node, Session

__all__ = [
    "Backend",
    "BackendUnavailable",
    "EmbeddedBackend",
    "Node",
    "ServerConfig",
    "Session",
    "SolraceServer",
    "make_backend",
    "run",
]
