"""The deal's random number generator: SplitMix64, with unbiased bounded draws.

Written so that any language with 64-bit unsigned arithmetic reproduces it exactly;
``docs/deals.md`` gives the same algorithm in prose with test vectors.
"""

from __future__ import annotations

__all__ = ["MASK64", "SplitMix64", "shuffled_deck"]

MASK64 = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 (Steele, Lea and Flood, 2014) over a 64-bit state."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        if not 0 <= seed <= MASK64:
            raise ValueError("seed must be an unsigned 64-bit integer")
        self.state = seed

    def next_u64(self) -> int:
        """Return the next 64-bit output."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Return a uniform integer in ``[0, n)``, rejecting outputs that would bias it."""
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n


def shuffled_deck(seed: int) -> list[int]:
    """Return the 52 cards in dealing order for ``seed`` (Fisher–Yates from the top down)."""
    deck = list(range(52))
    rng = SplitMix64(seed)
    for i in range(51, 0, -1):
        j = rng.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck
