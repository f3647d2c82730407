"""Deals: the generator, the shuffle and each game's deal order against docs/deals.md.

The golden layouts are read from docs/deals.md itself, so the page and the code cannot
drift apart; seed 42 of each game is also written out here, so that a page edited to match
a changed engine still fails a test.
"""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from solrace.engine import DRAW, VARIANTS, SplitMix64, full_layout, new_game, shuffled_deck
from solrace.engine.cards import RANK, card_name
from solrace.engine.rng import MASK64

DOC = Path(__file__).resolve().parents[2] / "docs" / "deals.md"
SEEDS_REQUIRED = (0, 42, MASK64)


def _cards(text: str) -> list[str]:
    """Card names written with spaces between them, as docs/deals.md writes a pile."""
    return text.split()


# -- the published SplitMix64 values, written out ------------------------------------------


def test_splitmix64_seed_0_first_output_is_the_published_value() -> None:
    assert SplitMix64(0).next_u64() == 0xE220A8397B1DCDAF


def test_splitmix64_seed_0_first_five_outputs() -> None:
    rng = SplitMix64(0)
    assert [rng.next_u64() for _ in range(5)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
        0xF88BB8A8724C81EC,
        0x1B39896A51A8749B,
    ]


def test_splitmix64_seed_1234567_matches_the_rosetta_code_values() -> None:
    rng = SplitMix64(1234567)
    assert [rng.next_u64() for _ in range(5)] == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]


def test_splitmix64_wraps_at_64_bits() -> None:
    rng = SplitMix64(MASK64)
    outputs = [rng.next_u64() for _ in range(3)]
    assert all(0 <= x <= MASK64 for x in outputs)
    assert rng.state == (MASK64 + 3 * 0x9E3779B97F4A7C15) & MASK64


@pytest.mark.parametrize("seed", [-1, MASK64 + 1])
def test_splitmix64_refuses_a_seed_outside_64_bits(seed: int) -> None:
    with pytest.raises(ValueError):
        SplitMix64(seed)


# -- the bounded draw and the shuffle, as docs/deals.md describes them -------------------


class _Scripted(SplitMix64):
    """A generator whose outputs are given, to show which ones ``below`` rejects."""

    def __init__(self, outputs: list[int]) -> None:
        super().__init__(0)
        self.outputs = list(outputs)

    def next_u64(self) -> int:
        return self.outputs.pop(0)


def test_below_rejects_outputs_from_the_incomplete_top_block() -> None:
    # 2**64 mod 3 == 1, so the limit is 2**64 - 1 and only MASK64 itself is rejected.
    rng = _Scripted([MASK64, MASK64 - 1, 5])
    assert rng.below(3) == (MASK64 - 1) % 3
    assert rng.outputs == [5]


def test_below_accepts_every_output_when_n_divides_2_to_the_64() -> None:
    rng = _Scripted([MASK64, 5])
    assert rng.below(4) == MASK64 % 4
    assert rng.outputs == [5]


@pytest.mark.parametrize("n", [1, 2, 7, 52])
def test_below_stays_in_range(n: int) -> None:
    rng = SplitMix64(99)
    assert all(0 <= rng.below(n) < n for _ in range(500))


@pytest.mark.parametrize("seed", [0, 1, 7, 42, 1234567, MASK64])
def test_shuffle_is_fisher_yates_from_51_down_to_1(seed: int) -> None:
    rng = SplitMix64(seed)
    deck = list(range(52))
    for i in range(51, 0, -1):
        j = rng.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    assert shuffled_deck(seed) == deck


def test_card_index_is_suit_times_13_plus_rank_minus_1() -> None:
    names = [card_name(c) for c in range(52)]
    assert names[:13] == _cards("AC 2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC")
    assert [names[0], names[13], names[26], names[39], names[51]] == ["AC", "AD", "AH", "AS", "KS"]


# -- each game's deal order, as docs/deals.md's tables give it ----------------------------

MANY_SEEDS = [*range(60), MASK64, MASK64 - 1, 0x9E3779B97F4A7C15]


def _names(cards: list[int]) -> list[str]:
    return [card_name(c) for c in cards]


@pytest.mark.parametrize("variant", ["british-canister", "american-canister"])
@pytest.mark.parametrize("seed", MANY_SEEDS)
def test_canister_deal_order(variant: str, seed: int) -> None:
    deck = _names(shuffled_deck(seed))
    layout = full_layout(new_game(variant, seed))
    bounds = [0, 7, 14, 21, 28, 34, 40, 46, 52]
    assert layout["tableau"] == [deck[a:b] for a, b in pairwise(bounds)]
    assert layout["foundations"] == [[], [], [], []]
    assert "reserve" not in layout and "stock" not in layout and "waste" not in layout


@pytest.mark.parametrize("seed", MANY_SEEDS)
def test_rainbow_canfield_deal_order(seed: int) -> None:
    deck = _names(shuffled_deck(seed))
    game = new_game("rainbow-canfield", seed)
    layout = full_layout(game)
    assert layout["reserve"] == deck[0:13]
    assert layout["foundations"] == [[deck[13]], [], [], []]
    assert game.base_rank == RANK[shuffled_deck(seed)[13]]
    assert layout["tableau"] == [[deck[14]], [deck[15]], [deck[16]], [deck[17]]]
    assert layout["stock"] == deck[18:52]
    assert layout["waste"] == []


@pytest.mark.parametrize("seed", MANY_SEEDS)
def test_canfield_deal_order(seed: int) -> None:
    deck = shuffled_deck(seed)
    a = min(i for i, card in enumerate(deck) if RANK[card] == 1)
    rest = _names(deck[:a] + deck[a + 1 :])
    layout = full_layout(new_game("canfield", seed))
    assert layout["foundations"] == [[card_name(deck[a])], [], [], []]
    assert layout["reserve"] == rest[0:13]
    assert layout["tableau"] == [[rest[13]], [rest[14]], [rest[15]], [rest[16]]]
    assert layout["stock"] == rest[17:51]
    assert layout["waste"] == []


def test_rainbow_canfield_draws_the_last_dealt_card_first() -> None:
    game = new_game("rainbow-canfield", 42)
    deck = _names(shuffled_deck(42))
    game.apply(DRAW)
    assert full_layout(game)["waste"] == [deck[51]]
    game.apply(DRAW)
    assert full_layout(game)["waste"] == [deck[51], deck[50]]


def test_canfield_draws_three_from_the_top_of_the_stock() -> None:
    game = new_game("canfield", 0)
    stock = full_layout(game)["stock"]
    game.apply(DRAW)
    assert full_layout(game)["waste"] == [stock[-1], stock[-2], stock[-3]]


# -- the test vectors in docs/deals.md ----------------------------------------------------

_VECTOR_RE = re.compile(r"^(splitmix64|deck) seed=(\d+): (.+)$")
_LAYOUT_RE = re.compile(r"^([a-z]+(?:-[a-z]+)*) seed=(\d+)$")
_PILE_RE = re.compile(r"^([a-z])(\d*): (.+)$")


def _doc_lines() -> list[str]:
    return DOC.read_text(encoding="utf-8").splitlines()


def _doc_vectors(kind: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for line in _doc_lines():
        match = _VECTOR_RE.match(line)
        if match and match[1] == kind:
            found[int(match[2])] = match[3].split()
    return found


def _doc_layouts() -> list[tuple[str, int, dict[str, Any]]]:
    """Every golden layout on the page, as (variant, seed, layout in full_layout's shape)."""
    layouts: list[tuple[str, int, dict[str, Any]]] = []
    lines = _doc_lines()
    i = 0
    while i < len(lines):
        match = _LAYOUT_RE.match(lines[i])
        i += 1
        if match is None:
            continue
        variant, seed = match[1], int(match[2])
        piles: dict[str, list[list[str]]] = {}
        while i < len(lines) and (pile := _PILE_RE.match(lines[i])):
            cards = [] if pile[3].strip() == "-" else pile[3].split()
            label = pile[1]
            number = int(pile[2]) if pile[2] else 1
            listed = piles.setdefault(label, [])
            assert number == len(listed) + 1, f"{variant} seed={seed}: {lines[i]!r} out of order"
            listed.append(cards)
            i += 1
        layout: dict[str, Any] = {
            "variant": variant,
            "seed": seed,
            "tableau": piles.pop("t", []),
            "foundations": piles.pop("f", []),
        }
        for label, key in (("r", "reserve"), ("s", "stock"), ("w", "waste")):
            if label in piles:
                (layout[key],) = piles.pop(label)
        assert not piles, f"{variant} seed={seed}: unknown piles {sorted(piles)}"
        layouts.append((variant, seed, layout))
    return layouts


def _as_doc_block(variant: str, seed: int) -> str:
    """The golden layout as the page writes it (shown when a test fails)."""
    layout = full_layout(new_game(variant, seed))
    lines = [f"{variant} seed={seed}"]
    lines += [f"f{i + 1}: {' '.join(p) or '-'}" for i, p in enumerate(layout["foundations"])]
    if "reserve" in layout:
        lines.append(f"r: {' '.join(layout['reserve']) or '-'}")
    lines += [f"t{i + 1}: {' '.join(p) or '-'}" for i, p in enumerate(layout["tableau"])]
    if "stock" in layout:
        lines.append(f"s: {' '.join(layout['stock']) or '-'}")
        lines.append(f"w: {' '.join(layout['waste']) or '-'}")
    return "\n".join(lines)


def test_doc_splitmix64_vectors() -> None:
    vectors = _doc_vectors("splitmix64")
    assert set(vectors) == {0, 1234567}
    for seed, outputs in vectors.items():
        rng = SplitMix64(seed)
        assert [int(x, 16) for x in outputs] == [rng.next_u64() for _ in range(5)]


def test_doc_shuffled_decks() -> None:
    decks = _doc_vectors("deck")
    assert set(SEEDS_REQUIRED) <= set(decks)
    for seed, names in decks.items():
        assert names == _names(shuffled_deck(seed)), f"deck seed={seed}"


def test_doc_has_golden_layouts_for_every_variant() -> None:
    seeds: dict[str, set[int]] = {}
    for variant, seed, _ in _doc_layouts():
        seeds.setdefault(variant, set()).add(seed)
    assert set(seeds) == set(VARIANTS)
    for variant, found in seeds.items():
        assert set(SEEDS_REQUIRED) <= found, variant


@pytest.mark.parametrize(
    ("variant", "seed", "layout"),
    [pytest.param(*entry, id=f"{entry[0]}-{entry[1]}") for entry in _doc_layouts()],
)
def test_doc_golden_layout(variant: str, seed: int, layout: dict[str, Any]) -> None:
    actual = full_layout(new_game(variant, seed))
    assert actual == layout, "docs/deals.md should read:\n" + _as_doc_block(variant, seed)


# -- seed 42 of each game, written out ----------------------------------------------------

_CANISTER_42 = [
    "7C 3H KC AS 2S AC AH",
    "KD 10D 5C 8S JH 2H 4S",
    "6H 5D 2D 5S 6D AD 7D",
    "2C 8H 8C 4D 7H KS 10S",
    "4H 3D 10H JS 4C 6S",
    "7S 3S 8D QD 9S KH",
    "5H 6C QS 9D JD QC",
    "3C 9H QH 9C JC 10C",
]
_STOCK_42 = (
    "6D AD 7D 2C 8H 8C 4D 7H KS 10S 4H 3D 10H JS 4C 6S 7S "
    "3S 8D QD 9S KH 5H 6C QS 9D JD QC 3C 9H QH 9C JC 10C"
)
GOLDEN_42: dict[str, dict[str, Any]] = {
    "british-canister": {
        "tableau": [_cards(pile) for pile in _CANISTER_42],
        "foundations": [[], [], [], []],
    },
    "american-canister": {
        "tableau": [_cards(pile) for pile in _CANISTER_42],
        "foundations": [[], [], [], []],
    },
    "rainbow-canfield": {
        "tableau": [["6H"], ["5D"], ["2D"], ["5S"]],
        "foundations": [["4S"], [], [], []],
        "reserve": _cards("7C 3H KC AS 2S AC AH KD 10D 5C 8S JH 2H"),
        "stock": _cards(_STOCK_42),
        "waste": [],
    },
    "canfield": {
        "tableau": [["6H"], ["5D"], ["2D"], ["5S"]],
        "foundations": [["AS"], [], [], []],
        "reserve": _cards("7C 3H KC 2S AC AH KD 10D 5C 8S JH 2H 4S"),
        "stock": _cards(_STOCK_42),
        "waste": [],
    },
}


@pytest.mark.parametrize("variant", sorted(GOLDEN_42))
def test_golden_layout_seed_42(variant: str) -> None:
    expected = {"variant": variant, "seed": 42, **GOLDEN_42[variant]}
    assert full_layout(new_game(variant, 42)) == expected


@pytest.mark.parametrize("variant", sorted(GOLDEN_42))
def test_doc_agrees_with_the_written_out_seed_42(variant: str) -> None:
    (layout,) = [lay for v, s, lay in _doc_layouts() if v == variant and s == 42]
    assert layout == {"variant": variant, "seed": 42, **GOLDEN_42[variant]}
