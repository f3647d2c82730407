"""British Canister: each rule BC-n of docs/rules.md, accepted and refused."""

from __future__ import annotations

import pytest
from positions import (
    BC,
    CANISTER_RUN_ONLY,
    CANISTER_STUCK,
    accepts,
    build,
    every_card,
    names,
    play,
    refuses,
    suit_run,
)

from solrace.engine import PileKind, Reason, Status, new_game, player_view, shuffled_deck


@pytest.mark.parametrize("seed", [0, 42, 2**64 - 1])
def test_bc_1_deal_is_seven_cards_on_piles_1_to_4_and_six_on_5_to_8(seed: int) -> None:
    game = new_game(BC, seed)
    assert [len(p) for p in game.tableau] == [7, 7, 7, 7, 6, 6, 6, 6]
    assert [c for pile in game.tableau for c in pile] == shuffled_deck(seed)
    assert game.foundations == [[], [], [], []]


def test_bc_2_every_card_is_dealt_face_up() -> None:
    game = new_game(BC, 7)
    view = player_view(game)
    shown = [name for pile in view["tableau"] for name in pile]
    assert sorted(shown) == sorted(names(every_card(game)).split())
    assert "reserve" not in view and "stock" not in view and "waste" not in view


def test_bc_3_no_stock_waste_or_reserve() -> None:
    game = build(BC, tableau=["9C", "10H"])
    for text in ("d", "rd", "r-t1", "w-t1", "w-f", "s-t1"):
        refuses(game, text, Reason.NO_SUCH_PILE)
    accepts(game, "t1-t2")


def test_bc_4_only_an_ace_starts_a_foundation() -> None:
    game = build(BC, tableau=["AS 2S", "5D AH"])
    refuses(game, "t1-f", Reason.FOUNDATION_NEEDS_BASE)
    refuses(game, "t1-f2", Reason.FOUNDATION_NEEDS_BASE)
    accepts(game, "t2-f3")
    assert names(game.foundations[2]) == "AH"


def test_bc_5_foundation_builds_in_the_suit_of_its_ace() -> None:
    game = build(BC, tableau=["2H", "2S"], foundations=["AS"])
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_SUIT)
    accepts(game, "t2-f1")
    assert names(game.foundations[0]) == "AS 2S"


def test_bc_6_foundation_builds_up_one_rank_at_a_time_to_the_king() -> None:
    game = build(BC, tableau=["4S", "3S"], foundations=["AS 2S"])
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_RANK)
    refuses(game, "t1-f", Reason.FOUNDATION_WRONG_RANK)
    play(game, "t2-f1", "t1-f1")
    king = build(BC, tableau=["KS"], foundations=[suit_run("S", 1, 12)])
    accepts(king, "t1-f")
    assert len(king.foundations[0]) == 13


def test_bc_7_tableau_builds_down_by_one_rank() -> None:
    game = build(BC, tableau=["9C", "JH", "10H"])
    refuses(game, "t1-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "t1-t3")
    assert names(game.tableau[2]) == "10H 9C"


def test_bc_8_tableau_builds_down_in_alternating_colour() -> None:
    game = build(BC, tableau=["9C", "10S", "10D"])
    refuses(game, "t1-t2", Reason.NOT_ALTERNATING_COLOUR)
    accepts(game, "t1-t3")


def test_bc_9_only_the_top_card_moves_never_a_sequence() -> None:
    game = build(BC, tableau=["10H 9C", "JS", "10D"])
    refuses(game, "t1-t2x2", Reason.SINGLE_CARD_ONLY)
    assert all(m.count == 1 for m in game.legal_moves(all_forms=True))
    accepts(game, "t1-t3")
    assert names(game.tableau[0]) == "10H"


def test_bc_10_a_tableau_card_goes_only_to_a_foundation_or_the_tableau() -> None:
    game = build(BC, tableau=["9C AH", "10D"])
    for text in ("t1-w", "t1-r", "t1-s"):
        refuses(game, text, Reason.NO_SUCH_PILE)
    play(game, "t1-f", "t1-t2")


def test_bc_11_only_a_king_moves_into_an_empty_pile() -> None:
    game = build(BC, tableau=["KH", "5C QS"])
    refuses(game, "t2-t3", Reason.ONLY_KING_ON_EMPTY)
    accepts(game, "t1-t3")
    assert names(game.tableau[2]) == "KH"


def test_bc_12_no_card_leaves_a_foundation() -> None:
    game = build(BC, tableau=["3H", "3S"], foundations=["AS 2S"])
    refuses(game, "f1-t1", Reason.FOUNDATION_LOCKED)
    refuses(game, "f1-f2", Reason.FOUNDATION_LOCKED)
    assert all(m.src is not PileKind.FOUNDATION for m in game.legal_moves(all_forms=True))
    accepts(game, "t2-f1")


@pytest.mark.parametrize("king", ["t1", "t2"])
def test_bc_13_any_king_may_fill_an_empty_pile(king: str) -> None:
    game = build(BC, tableau=["KH", "9C KS", "5D"])
    refuses(game, "t3-t4", Reason.ONLY_KING_ON_EMPTY)
    accepts(game, f"{king}-t4")


def test_bc_14_stuck_when_no_legal_move_exists() -> None:
    game = build(BC, **CANISTER_STUCK)
    assert sorted(every_card(game)) == list(range(52))
    assert game.legal_moves() == []
    assert game.status is Status.STUCK
    refuses(game, "t1-f", Reason.FOUNDATION_WRONG_RANK)
    refuses(game, "t6-t7", Reason.NOT_ALTERNATING_COLOUR)


def test_bc_14_a_run_that_only_american_canister_moves_leaves_british_stuck() -> None:
    game = build(BC, **CANISTER_RUN_ONLY)
    assert sorted(every_card(game)) == list(range(52))
    assert game.status is Status.STUCK
    refuses(game, "t8-t2x2", Reason.SINGLE_CARD_ONLY)


def test_bc_14_not_stuck_while_a_move_exists() -> None:
    game = build(
        BC, **dict(CANISTER_STUCK, tableau=["6S 5S", "7S", "8S", "9S", "10S", "JS", "QS", "KS"])
    )
    assert game.status is Status.PLAYING
    play(game, "t1-f", "t1-f", "t2-f")
    assert game.status is Status.PLAYING


def test_bc_15_a_king_moved_back_and_forth_is_a_loop_not_stuck() -> None:
    # CANISTER_STUCK with one pile emptied: only the King can move, to the empty pile and back.
    game = build(
        BC, **dict(CANISTER_STUCK, tableau=["5S 6S 7S", "8S", "9S", "10S", "JS", "QS", "KS"])
    )
    for _ in range(3):
        play(game, "t7-t8", "t8-t7")
        assert game.status is Status.PLAYING
    assert game.moves == 6
    refuses(game, "t6-t8", Reason.ONLY_KING_ON_EMPTY)
