"""Boards held back for the spectators of a delayed room (server/delay.py), without sockets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from solrace.engine import Game, card_name, format_move, new_game, parse_move, spectator_view
from solrace.server.delay import MAX_WAITING, DelayedBoards, face_up

DELAY = 30_000


def board(moves: int) -> dict[str, object]:
    """A board with no card on it, told apart by its move count."""
    return {"moves": moves, "tableau": [], "foundations": []}


def test_a_board_is_shown_no_sooner_than_the_delay_after_it_was_heard() -> None:
    delayed = DelayedBoards(1, DELAY, 250)
    delayed.hear("p", board(1), 1_000)
    assert delayed.due(1_000 + DELAY - 1) == {} and delayed.as_of(1_000 + DELAY - 1) == {}
    assert delayed.next_due_ms() == 1_000 + DELAY
    assert delayed.as_of(1_000 + DELAY) == {"p": board(1)}
    assert delayed.due(1_000 + DELAY) == {"p": board(1)}
    assert delayed.due(1_000 + DELAY) == {}  # shown already: nothing new
    assert delayed.as_of(10**9) == {"p": board(1)} and delayed.next_due_ms() is None


def test_the_latest_board_due_is_shown_and_later_ones_wait() -> None:
    delayed = DelayedBoards(1, DELAY, 250)
    for t, moves in ((0, 1), (1_000, 2), (2_000, 3)):
        delayed.hear("p", board(moves), t)
    delayed.hear("q", board(9), 5_000)
    assert delayed.due(1_000 + DELAY) == {"p": board(2)}
    assert delayed.as_of(5_000 + DELAY) == {"p": board(3), "q": board(9)}
    assert delayed.due(5_000 + DELAY) == {"p": board(3), "q": board(9)}


def test_boards_heard_close_together_wait_as_one_the_latest() -> None:
    delayed = DelayedBoards(1, DELAY, 250)
    delayed.hear("p", board(1), 0)
    delayed.hear("p", board(2), 100)
    delayed.hear("p", board(3), 200)
    assert delayed.held() == 1
    # Shown a delay after the latest of them, never after the first.
    assert delayed.due(200 + DELAY - 1) == {}
    assert delayed.due(200 + DELAY) == {"p": board(3)}


def test_a_clock_that_steps_back_brings_no_board_sooner() -> None:
    delayed = DelayedBoards(1, DELAY, 250)
    delayed.hear("p", board(1), 10_000)
    delayed.hear("p", board(2), 5_000)
    assert delayed.due(5_000 + DELAY) == {}
    assert delayed.due(10_000 + DELAY) == {"p": board(2)}


@given(
    delay=st.integers(10_000, 300_000),
    step=st.integers(0, 1_000),
    gaps=st.lists(st.integers(0, 5_000), min_size=1, max_size=400),
)
def test_memory_is_bounded_and_no_board_is_shown_early(
    delay: int, step: int, gaps: list[int]
) -> None:
    delayed = DelayedBoards(1, delay, step)
    now = 0
    heard: list[int] = []  # when each board was heard, by its move count
    for moves, gap in enumerate(gaps):
        now += gap
        delayed.hear("p", board(moves), now)
        heard.append(now)
        for shown in delayed.due(now).values():
            assert heard[shown["moves"]] + delay <= now
        # The waiting runs start step_ms apart at least, within the delay and one run.
        assert delayed.held() <= delay // delayed.step_ms + 2 <= MAX_WAITING + 2
    shown = delayed.as_of(now + delay)
    assert shown == {"p": board(len(gaps) - 1)}


def played(moves: list[str], seed: int = 20240601) -> Game:
    game = new_game("canfield", seed)
    for text in moves:
        game.apply(parse_move(text))
    return game


def named(cards: list[int]) -> set[str]:
    return {card_name(c) for c in cards}


def test_a_card_shows_only_once_every_player_still_racing_has_had_it_face_up() -> None:
    deal = spectator_view(played([]))
    delayed = DelayedBoards(1, DELAY, 250, deal)
    ahead = played(["d", "d", "d"])  # three draws: cards of the stock come up
    delayed.hear("ahead", spectator_view(ahead), 0)
    behind = played([])  # heard of only through the deal
    hidden = named([*behind.reserve[:-1], *behind.stock])
    due = delayed.due(DELAY)
    assert set(due) == {"ahead"}
    shown = delayed.hidden_from(["ahead", "behind"], due)["ahead"]
    assert not face_up(shown) & hidden, "nothing still face down on the other board"
    # Not the board with those cards face down in place (where a card lies tells what it
    # is): the last board shown whole, here the deal.
    assert shown == deal
    # Once the other player has drawn the same cards too, they show.
    delayed.hear("behind", spectator_view(played(["d", "d", "d"])), 1)
    assert delayed.hidden_from(["ahead", "behind"], due)["ahead"] == spectator_view(ahead)
    # A player whose game is over keeps nothing from anyone; with no one racing on,
    # every card shows.
    assert delayed.hidden_from(["ahead"], due)["ahead"] == spectator_view(ahead)
    assert delayed.hidden_from([], due)["ahead"] == spectator_view(ahead)


def test_a_card_seen_once_counts_as_seen_when_it_is_covered_again() -> None:
    delayed = DelayedBoards(1, DELAY, 250, spectator_view(played([])))
    first = played(["d"])
    delayed.hear("p", spectator_view(first), 0)
    drawn = set(face_up(spectator_view(first))) - face_up(spectator_view(played([])))
    assert drawn
    later = played(["d", "d", "d", "d"])  # the first draw's cards are now deep in the waste
    delayed.hear("p", spectator_view(later), 10_000)
    delayed.hear("q", spectator_view(first), 0)
    shown = delayed.hidden_from(["p", "q"], {"q": spectator_view(first)})["q"]
    assert drawn <= face_up(shown)


def test_a_hidden_card_is_not_shown_where_it_lies() -> None:
    """The cheat: a racer watching their own room from a second identity read their own
    face-down reserve cards off another player's board. A reserve card the other player
    had banked showed face down, but on a foundation whose count gave its rank; one on the
    tableau lay under a named card, which gave its rank and colour; and the reserve's
    order is the same on every board."""
    seed, move = next(
        (seed, move)
        for seed in range(1, 500)
        for move in map(format_move, new_game("canfield", seed).legal_moves())
        if move.startswith("r-")
    )
    deal = spectator_view(new_game("canfield", seed))
    delayed = DelayedBoards(1, DELAY, 250, deal)
    ahead = new_game("canfield", seed)
    ahead.apply(parse_move(move))  # the reserve's second card comes up
    played = spectator_view(ahead)
    came_up = face_up(played) - face_up(deal)
    assert came_up, "a card the racer behind has face down"
    delayed.hear("ahead", played, 0)
    # The racer behind has not moved: the card is face down on their board, and the board
    # that shows it (even face down, where it lies) waits; the deal shows until then.
    shown = delayed.hidden_from(["ahead", "behind"], {"ahead": played})["ahead"]
    assert shown == deal
    # Once the racer behind has had it face up too, the board shows whole.
    delayed.hear("behind", played, 1)
    assert delayed.hidden_from(["ahead", "behind"], {"ahead": played})["ahead"] == played


def test_a_card_buried_under_a_foundation_s_top_counts_as_shown() -> None:
    """A foundation's top and count tell every card under the top: a player ahead who
    drew a card and banked it under a card of the deal shows the racer behind their own
    first stock card, though no top shows it (Rainbow Canfield, seed 64: 3D drawn, banked
    on the lead 3C's foundation of diamonds, then 4D from the tableau on it)."""
    deal = spectator_view(new_game("rainbow-canfield", 64))
    ahead = new_game("rainbow-canfield", 64)
    for move in ("d", "w-f", "t1-f"):
        ahead.apply(parse_move(move))
    board = spectator_view(ahead)
    assert {"top": "4D", "count": 2} in board["foundations"]
    assert "3D" in face_up(board) and "3D" not in face_up(deal)
    delayed = DelayedBoards(1, DELAY, 250, deal)
    delayed.hear("ahead", board, 0)
    shown = delayed.hidden_from(["ahead", "behind"], delayed.due(DELAY))["ahead"]
    assert shown == deal, "the board that tells 3D waits until the racer behind has had it"
