"""Backends: where nodes keep what they share."""

from __future__ import annotations

from .base import (
    AccountRecord,
    Backend,
    BackendUnavailable,
    EventHandler,
    ResyncHandler,
    RoomUpdate,
)
from .embedded import EmbeddedBackend

__all__ = [
    "AccountRecord",
    "Backend",
    "BackendUnavailable",
    "EmbeddedBackend",
    "EventHandler",
    "ResyncHandler",
    "RoomUpdate",
]
