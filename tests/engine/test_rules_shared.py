"""The rules shared by the four games: each rule ALL-n of docs/rules.md."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from positions import (
    AC,
    ALL_VARIANTS,
    BC,
    CANFIELD_STUCK,
    CF,
    RAINBOW_STUCK,
    RC,
    accepts,
    build,
    every_card,
    face_down,
    face_up,
    names,
    play,
    refuses,
    shown_cards,
    suit_run,
)

from solrace.engine import (
    DRAW,
    UNDO,
    IllegalMove,
    Move,
    MoveKind,
    PileKind,
    Reason,
    ReplayError,
    SplitMix64,
    Status,
    format_move,
    new_game,
    parse_move,
    player_view,
    replay,
    shuffled_deck,
    spectator_view,
)

ENGINE = Path(__file__).resolve().parents[2] / "engine"
SEEDS = [0, 1, 42, 0xDEADBEEFCAFEF00D, 2**64 - 1]
STOCK_VARIANTS = (RC, CF)

# Positions here pass base_rank=1, the other games' own, so that Rainbow Canfield starts
# its foundations with Aces like the other three.

# All 52 cards: 51 on the foundations, KS alone on t1.
WON_IN_ONE = {
    "tableau": ["KS"],
    "foundations": [suit_run("C"), suit_run("D"), suit_run("H"), suit_run("S", 1, 12)],
    "base_rank": 1,
}


# -- deck and deal ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_all_1_every_deal_holds_each_of_the_52_cards_once(variant: str, seed: int) -> None:
    assert sorted(every_card(new_game(variant, seed))) == list(range(52))


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_2_a_deal_is_a_pure_function_of_variant_and_seed(variant: str) -> None:
    for seed in SEEDS:
        assert new_game(variant, seed).position() == new_game(variant, seed).position()
    assert len({new_game(variant, seed).position() for seed in SEEDS}) == len(SEEDS)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_3_a_seed_is_an_unsigned_64_bit_integer(variant: str) -> None:
    for seed in (0, 2**64 - 1):
        new_game(variant, seed)
    for seed in (-1, 2**64):
        with pytest.raises(ValueError):
            new_game(variant, seed)


def test_all_4_the_shuffle_is_splitmix64_fisher_yates_not_random() -> None:
    assert SplitMix64(0).next_u64() == 0xE220A8397B1DCDAF
    for seed in SEEDS:
        rng, deck = SplitMix64(seed), list(range(52))
        for i in range(51, 0, -1):
            j = rng.below(i + 1)
            deck[i], deck[j] = deck[j], deck[i]
        assert shuffled_deck(seed) == deck
    random.seed(1)
    before = random.random()
    random.seed(1)
    new_game(CF, 5)
    assert random.random() == before
    for path in ENGINE.rglob("*.py"):
        text = path.read_text()
        assert "import random" not in text and "from random" not in text, path


# -- foundations -----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_5_the_card_that_starts_a_foundation_fixes_its_suit(variant: str) -> None:
    game = build(variant, tableau=["9S AH", "9D 2S", "9C 2H"], base_rank=1)
    accepts(game, "t1-f3")
    refuses(game, "t2-f3", Reason.FOUNDATION_WRONG_SUIT)
    accepts(game, "t3-f3")
    assert names(game.foundations[2]) == "AH 2H"


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_6_an_unnamed_foundation_is_the_first_that_takes_the_card(variant: str) -> None:
    game = build(variant, tableau=["9S AD", "9D 2C", "9C 3D"], foundations=["AC"], base_rank=1)
    refuses(game, "t3-f", Reason.FOUNDATION_NEEDS_BASE)
    change = accepts(game, "t1-f")
    assert change.move == Move.transfer(PileKind.TABLEAU, 0, PileKind.FOUNDATION, 1)
    assert names(game.foundations[1]) == "AD"
    accepts(game, "t2-f")
    assert names(game.foundations[0]) == "AC 2C"
    refuses(game, "t3-f", Reason.FOUNDATION_WRONG_RANK)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_7_a_named_foundation_takes_the_card_or_the_move_is_refused(variant: str) -> None:
    game = build(variant, tableau=["9S AD", "9D 2C"], foundations=["AC"], base_rank=1)
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_SUIT)
    refuses(game, "t2-f2", Reason.FOUNDATION_NEEDS_BASE)
    refuses(game, "t2-f5", Reason.NO_SUCH_PILE)
    accepts(game, "t1-f4")
    assert names(game.foundations[3]) == "AD"


def test_all_8_only_a_foundations_top_card_is_reachable() -> None:
    game = build(CF, tableau=["4S", "9D"], foundations=["AH 2H 3H"])
    assert player_view(game)["foundations"][0] == {"top": "3H", "count": 3}
    refuses(game, "f1-t1x2", Reason.SINGLE_CARD_ONLY)
    accepts(game, "f1-t1")
    for variant in (BC, AC, RC):
        locked = build(variant, tableau=["4S"], foundations=["AH 2H 3H"], base_rank=1)
        refuses(locked, "f1-t1", Reason.FOUNDATION_LOCKED)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_9_a_move_to_a_foundation_carries_one_card(variant: str) -> None:
    game = build(variant, tableau=["2H AS"], base_rank=1)
    refuses(game, "t1-fx2", Reason.SINGLE_CARD_ONLY)
    refuses(game, "t1-f2x2", Reason.SINGLE_CARD_ONLY)
    accepts(game, "t1-f")


# -- piles -----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_10_a_move_names_piles_the_game_has(variant: str) -> None:
    game = build(variant, tableau=["9C", "10H"], base_rank=1)
    past = len(game.tableau) + 1
    for text in (f"t{past}-t1", f"t1-t{past}", "t1-t99", "f5-t1", "t1-f5"):
        refuses(game, text, Reason.NO_SUCH_PILE)
    for move in (
        Move.transfer(PileKind.TABLEAU, -1, PileKind.FOUNDATION, None),
        Move.transfer(PileKind.TABLEAU, 0, PileKind.TABLEAU, -1),
        Move.transfer(PileKind.TABLEAU, 0, PileKind.FOUNDATION, -1),
    ):
        with pytest.raises(IllegalMove) as caught:
            game.apply(move)
        assert caught.value.reason is Reason.NO_SUCH_PILE
    accepts(game, "t1-t2")


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_11_a_move_from_an_empty_pile_is_refused(variant: str) -> None:
    game = build(variant, tableau=["", "9C", "10H"], base_rank=1)
    refuses(game, "t1-t2", Reason.EMPTY_PILE)
    refuses(game, "f2-t2", Reason.EMPTY_PILE)
    if variant in STOCK_VARIANTS:
        refuses(game, "r-t2", Reason.EMPTY_PILE)
        refuses(game, "w-f", Reason.EMPTY_PILE)
    accepts(game, "t2-t3")


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_12_a_move_of_more_cards_than_the_pile_holds_or_none_is_refused(
    variant: str,
) -> None:
    game = build(variant, tableau=["10H 9C", "JS", "10D"], base_rank=1)
    refuses(game, "t1-t2x3", Reason.NOT_ENOUGH_CARDS)
    with pytest.raises(IllegalMove) as caught:
        game.apply(Move.transfer(PileKind.TABLEAU, 0, PileKind.TABLEAU, 1, 0))
    assert caught.value.reason is Reason.NOT_ENOUGH_CARDS
    assert names(game.tableau[0]) == "10H 9C"
    accepts(game, "t1-t3" if variant == BC else "t1-t2x2")


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_13_a_tableau_pile_cannot_move_onto_itself(variant: str) -> None:
    game = build(variant, tableau=["9C", "10H"], base_rank=1)
    refuses(game, "t1-t1", Reason.SAME_PILE)
    accepts(game, "t1-t2")


@pytest.mark.parametrize("variant", STOCK_VARIANTS)
def test_all_14_cards_go_only_on_the_tableau_and_the_foundations(variant: str) -> None:
    game = build(variant, tableau=["9C AH", "10H"], waste="2H", base_rank=1)
    for text in ("t1-w", "t1-r", "t1-s", "w-r", "w-s", "w-w"):
        refuses(game, text, Reason.NOT_A_TARGET)
    play(game, "t1-f", "w-f", "t1-t2")


@pytest.mark.parametrize("variant", STOCK_VARIANTS)
def test_all_15_cards_leave_the_stock_only_by_a_draw(variant: str) -> None:
    game = build(variant, tableau=["9C", "10H"], stock="2H 8D", base_rank=1)
    for text in ("s-t1", "s-f", "s-w", "s-t1x2"):
        refuses(game, text, Reason.NOT_A_SOURCE)
    accepts(game, "d")
    assert "8D" in names(game.waste)


@pytest.mark.parametrize("variant", STOCK_VARIANTS)
def test_all_16_the_reserve_and_the_waste_give_one_card_at_a_time(variant: str) -> None:
    game = build(variant, tableau=["9C", "9S"], reserve="7S 8H", waste="7C 8D", base_rank=1)
    refuses(game, "r-t1x2", Reason.SINGLE_CARD_ONLY)
    refuses(game, "w-t2x2", Reason.SINGLE_CARD_ONLY)
    play(game, "r-t1", "w-t2")
    assert names(game.reserve) == "7S" and names(game.waste) == "7C"


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_17_a_refused_move_changes_nothing(variant: str) -> None:
    game = new_game(variant, 42)
    accepts(game, format_move(game.legal_moves()[0]))
    before = (game.position(), game.moves, list(game.log), game.status)
    for text in ("t1-t1", "t1-t2x52", "f1-f2", "t9-t1", "rd", "w-t1x2"):
        with pytest.raises(IllegalMove):
            game.apply(parse_move(text))
        assert (game.position(), game.moves, list(game.log), game.status) == before


# -- the end of a game -----------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_18_won_when_all_52_cards_are_on_the_foundations(variant: str) -> None:
    game = build(variant, **WON_IN_ONE)
    assert game.status is Status.PLAYING
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_SUIT)
    assert game.status is Status.PLAYING
    accepts(game, "t1-f")
    assert game.banked == 52
    assert game.status is Status.WON
    assert player_view(game)["status"] == "won"


def test_all_19_stuck_is_reported_by_status_after_every_move() -> None:
    # One card left in the stock, and it plays nowhere.
    game = build(RC, **dict(RAINBOW_STUCK, stock="6C"))
    assert game.status is Status.PLAYING
    accepts(game, "d")
    assert game.status is Status.STUCK
    assert player_view(game)["status"] == "stuck"
    refuses(game, "w-t1", Reason.NOT_ONE_RANK_LOWER)


def test_all_20_apply_still_takes_moves_and_undo_in_a_stuck_game() -> None:
    game = build(RC, **dict(RAINBOW_STUCK, stock="6C"))
    accepts(game, "d")
    assert game.status is Status.STUCK
    accepts(game, "u")
    assert game.status is Status.PLAYING
    canfield = build(CF, **CANFIELD_STUCK)
    assert canfield.status is Status.STUCK
    accepts(canfield, "d")
    assert canfield.status is Status.STUCK
    refuses(canfield, "rd", Reason.STOCK_NOT_EMPTY)


def test_all_21_without_undo_the_view_of_a_stuck_game_offers_no_undo_and_no_moves() -> None:
    game = build(CF, **CANFIELD_STUCK, undo_allowed=False)
    assert game.status is Status.STUCK
    view = player_view(game, legal=True)
    assert view["legal"] == [] and view["can_undo"] is False
    accepts(game, "d")
    assert player_view(game, legal=True)["can_undo"] is False


def test_all_21_with_undo_a_stuck_game_may_still_undo_and_lists_its_moves() -> None:
    game = build(CF, **CANFIELD_STUCK)
    assert game.status is Status.STUCK
    view = player_view(game, legal=True)
    assert view["can_undo"] is False  # nothing to undo yet
    assert view["legal"] == [format_move(m) for m in game.legal_moves()]
    accepts(game, "d")
    assert game.status is Status.STUCK and game.can_undo
    assert player_view(game, legal=True)["can_undo"] is True
    playing = new_game(CF, 42)
    accepts(playing, format_move(playing.legal_moves()[0]))
    view = player_view(playing, legal=True)
    assert view["legal"] and view["can_undo"] is True


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_22_a_player_may_resign_unless_already_won_or_resigned(variant: str) -> None:
    game = new_game(variant, 42)
    game.resign()
    assert game.status is Status.RESIGNED
    game.resign()
    assert game.status is Status.RESIGNED
    won = build(variant, **WON_IN_ONE)
    accepts(won, "t1-f")
    won.resign()
    assert won.status is Status.WON


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_23_a_won_or_resigned_game_refuses_every_move(variant: str) -> None:
    won = build(variant, **WON_IN_ONE)
    accepts(won, "t1-f")
    for text in ("u", "f4-t1", "d", "t1-t2"):
        refuses(won, text, Reason.GAME_OVER)
    assert won.legal_moves() == []
    resigned = new_game(variant, 42)
    legal = resigned.legal_moves()[0]
    resigned.resign()
    refuses(resigned, format_move(legal), Reason.GAME_OVER)
    refuses(resigned, "u", Reason.GAME_OVER)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_24_a_game_neither_won_stuck_nor_resigned_is_playing(variant: str) -> None:
    game = build(variant, tableau=["9C", "10H"], base_rank=1)
    assert game.status is Status.PLAYING
    assert player_view(game)["status"] == "playing"
    accepts(game, "t1-t2")


# -- undo, the move count and replay ---------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_25_undo_is_a_setting_of_each_game(variant: str) -> None:
    off = new_game(variant, 42, undo_allowed=False)
    accepts(off, format_move(off.legal_moves()[0]))
    assert not off.can_undo and player_view(off)["can_undo"] is False
    refuses(off, "u", Reason.UNDO_NOT_ALLOWED)
    on = new_game(variant, 42)
    accepts(on, format_move(on.legal_moves()[0]))
    assert on.can_undo
    accepts(on, "u")


def test_all_26_undo_restores_the_position_including_reserve_fills_and_the_waste() -> None:
    game = build(
        CF, tableau=["2H", "8S", "8D", "QC"], foundations=["AH"], reserve="5C 7D", stock="7H 4C 3C"
    )
    start = game.position()
    play(game, "t1-f", "d")
    after_fill = (game.position(), player_view(game)["waste"])
    play(game, "u")
    assert game.position() != start
    play(game, "u")
    assert game.position() == start
    assert names(game.reserve) == "5C 7D"
    refuses(game, "u", Reason.NOTHING_TO_UNDO)
    play(game, "t1-f", "d", "w-t2")
    assert player_view(game)["waste"]["visible"] == ["3C", "4C"]
    play(game, "u")
    assert (game.position(), player_view(game)["waste"]) == after_fill


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_27_an_undo_with_nothing_to_revert_is_refused(variant: str) -> None:
    game = new_game(variant, 42)
    refuses(game, "u", Reason.NOTHING_TO_UNDO)
    play(game, format_move(game.legal_moves()[0]), "u")
    refuses(game, "u", Reason.NOTHING_TO_UNDO)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_28_every_accepted_move_counts_an_undo_included(variant: str) -> None:
    game = new_game(variant, 42)
    assert game.moves == 0
    play(game, format_move(game.legal_moves()[0]))
    assert game.moves == 1
    play(game, "u")
    assert game.moves == 2 and game.position() == new_game(variant, 42).position()
    refuses(game, "u", Reason.NOTHING_TO_UNDO)
    assert game.moves == 2
    assert player_view(game)["moves"] == 2


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_29_replaying_the_log_rebuilds_the_game(variant: str) -> None:
    rng = random.Random(variant)
    game = new_game(variant, 0xDEADBEEFCAFEF00D)
    for _ in range(60):
        legal = game.legal_moves(all_forms=True)
        if game.can_undo and (not legal or rng.random() < 0.15):
            game.apply(UNDO)
        elif legal:
            game.apply(rng.choice(legal))
    assert any(m.kind is MoveKind.UNDO for m in game.log)
    again = replay(variant, game.seed, game.log)
    assert (again.position(), again.moves, again.status) == (
        game.position(),
        game.moves,
        game.status,
    )
    assert replay(variant, game.seed, [format_move(m) for m in game.log]).position() == (
        game.position()
    )
    with pytest.raises(ReplayError) as caught:
        replay(variant, game.seed, ["u"])
    assert caught.value.index == 0 and caught.value.error.reason is Reason.NOTHING_TO_UNDO


# -- what a player and a spectator see -------------------------------------------------------


def test_all_30_a_players_view_shows_every_face_up_card() -> None:
    game = build(
        CF,
        tableau=["KS QH", "9D"],
        foundations=["AH 2H"],
        reserve="5C 7D",
        stock="3C 4C",
        waste="8C 9C 10C",
    )
    view = player_view(game)
    assert view["tableau"] == [["KS", "QH"], ["9D"], [], []]
    assert view["foundations"][0] == {"top": "2H", "count": 2}
    assert view["reserve"] == {"count": 2, "top": "7D"}
    assert view["stock"] == {"count": 2}
    assert view["waste"] == {"count": 3, "visible": ["8C", "9C", "10C"]}
    assert set(shown_cards(view)) == face_up(game)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_all_31_no_view_shows_a_face_down_card(variant: str, seed: int) -> None:
    game = new_game(variant, seed)
    for _ in range(3):
        for view in (player_view(game, legal=True), spectator_view(game)):
            assert not set(shown_cards(view)) & face_down(game)
            assert set(shown_cards(view)) == face_up(game)
        if variant in STOCK_VARIANTS:
            game.apply(DRAW)
    if variant in STOCK_VARIANTS:
        assert face_down(game)


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_32_a_spectator_sees_the_players_board_with_the_same_masking(variant: str) -> None:
    game = new_game(variant, 42)
    play(game, format_move(game.legal_moves()[0]))
    view = player_view(game, legal=True)
    for key in ("can_undo", "legal"):
        view.pop(key)
    assert spectator_view(game) == view


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_all_33_no_view_carries_the_seed(variant: str) -> None:
    seed = 0xDEADBEEFCAFEF00D
    game = new_game(variant, seed)
    for view in (player_view(game, legal=True), spectator_view(game)):
        text = repr(view).lower()
        assert str(seed) not in text and f"{seed:x}" not in text and "seed" not in text


def test_all_34_a_players_view_says_if_undo_works_and_lists_legal_moves() -> None:
    game = build(BC, tableau=["9S AD", "8H AH", "10D", "9C"])
    view = player_view(game, legal=True)
    assert view["can_undo"] is False
    assert view["legal"] == ["t1-f", "t2-f", "t4-t3"]
    assert "legal" not in player_view(game)
    play(game, "t1-f")
    assert player_view(game)["can_undo"] is True
