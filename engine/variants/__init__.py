"""The four games, each a :class:`~solrace.engine.game.Game` subclass."""

from __future__ import annotations

from .american_canister import AmericanCanister
from .british_canister import BritishCanister
from .canfield import Canfield
from .rainbow_canfield import RainbowCanfield

__all__ = ["AmericanCanister", "BritishCanister", "Canfield", "RainbowCanfield"]
