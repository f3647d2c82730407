"""The async client library (and, beside it, the command-line client and the web page)."""

from __future__ import annotations

from .connection import Client, ClientClosed, ServerError

__all__ = ["Client", "ClientClosed", "ServerError"]
