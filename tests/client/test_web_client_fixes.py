"""The page (client/web/) in real Chromium: a spectator's board with cards withheld, the
lobby's hint for one player, and a new account's daily attempt, which is not ranked.

The module is skipped when ``/usr/bin/chromium`` is absent (test_web.py).
"""

from __future__ import annotations

import pytest
import test_web
from conftest import RunningServer, ServerFactory
from test_web import Pages, create_room, enter_name, expect, tid
from test_web_daily import AREA, DAY, VARIANT, ShiftedClock, back_to_board, draw, resign, signed_in
from withheld_support import withheld_board

# The page tests' fixtures: one Chromium, and pages on the test's server.
browser = test_web.browser
pages = test_web.pages


@pytest.fixture
def backend_kind() -> str:
    """The page does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node on a fixed day (its deal has a draw to make) whose accounts are ranked from
    their second day, as by default: an account made today is not ranked."""
    return await start_server(clock=ShiftedClock())


async def test_a_spectator_board_shows_withheld_cards_face_down(pages: Pages) -> None:
    page = await pages.open()
    script = """async (view) => {
      const { drawBoard } = await import("/board.js");
      const host = document.createElement("div");
      host.className = "board-host small";
      host.dataset.testid = "withheld";
      host.append(drawBoard(view));
      document.body.append(host);
    }"""
    await page.evaluate(script, withheld_board())
    board = page.locator(tid("withheld"))
    backs = board.locator(".card.back.face-down")
    await expect(backs).to_have_count(5)  # two in the tableau, f2's top, the reserve's, one waste
    for pile, count in (("t1", 1), ("t2", 1), ("f2", 1), ("r", 1), ("w", 1), ("t3", 0)):
        await expect(board.locator(f'[data-pile="{pile}"] .face-down')).to_have_count(count)
    for n in range(5):
        box = await backs.nth(n).bounding_box()
        assert box is not None and box["width"] > 10 and box["height"] > 10, box
    # The faces around them are drawn as ever, and an empty foundation stays empty.
    for pile, card in (("t1", "9C"), ("t3", "2D"), ("f1", "AC"), ("w", "5H"), ("w", "6D")):
        await expect(board.locator(f'[data-pile="{pile}"] [data-card="{card}"]')).to_have_count(1)
    await expect(board.locator('[data-pile="f3"] .slot')).to_have_count(1)
    await expect(board.locator('[data-pile="f3"] .card')).to_have_count(0)
    await expect(board.locator('[data-pile="t2"]')).to_have_attribute(
        "aria-label", "Pile 2 of the tableau: 1 card, a card face down on top"
    )
    await expect(board.locator('[data-pile="f2"]')).to_have_attribute(
        "aria-label", "Foundation 2: a card face down on top, 2 cards"
    )
    assert pages.errors == []


async def test_the_lobby_does_not_promise_a_start_by_ready_to_one_player(pages: Pages) -> None:
    alice = await pages.open()
    await enter_name(alice, "Alice")
    code = await create_room(alice, "canfield")
    hint = alice.locator(tid("room-hint"))
    await expect(hint).to_have_text(
        "The host starts the race. With two players or more, it also starts when every "
        "player is ready."
    )
    bob = await pages.open(f"/r/{code}")
    await enter_name(bob, "Bob")
    await expect(hint).to_have_text(
        "The host starts the race, or it starts when every player is ready (2 players here)."
    )


async def test_a_new_account_s_daily_attempt_is_not_shown_as_ranked(pages: Pages) -> None:
    nell = await signed_in(pages, "Nell", f"/daily?variant={VARIANT}")
    await expect(nell.locator(tid("daily"))).to_be_visible()
    # Told before she plays: not after.
    await expect(nell.locator(tid("daily-play-note"))).to_contain_text(
        "Your account is new: its attempts are ranked from "
    )
    await expect(nell.locator(tid("daily-play"))).to_have_attribute("data-ranked", "false")
    await nell.click(tid("daily-play"))
    await expect(nell.locator(f"{AREA} {tid('board')}")).to_have_attribute("data-variant", VARIANT)
    label = nell.locator(tid("race-daily"))
    await expect(label).to_have_text(f"daily deal of {DAY} · attempt 1")
    await expect(label).to_have_attribute("data-ranked", "")
    await draw(nell, 1)
    await expect(label).to_have_text(f"daily deal of {DAY} · attempt 1")
    await resign(nell)
    # Once over, the board says it is not ranked, and why.
    await expect(label).to_have_text(f"daily deal of {DAY} · attempt 1, not ranked (new account)")
    await expect(label).to_have_attribute("data-ranked", "false")
    outcome = nell.locator(tid("daily-outcome"))
    await expect(outcome).to_have_attribute("data-ranked", "false")
    await expect(outcome.locator(tid("daily-verdict"))).to_contain_text(
        "a new account's attempts are ranked from its second day"
    )
    await back_to_board(nell)
    you = nell.locator(tid("daily-you"))
    await expect(you).to_contain_text("Your attempt today is not ranked: a new account's")
    await expect(you).not_to_contain_text("still being recorded")
    # The empty board does not say that no one played, beside her own attempt.
    await expect(nell.locator(tid("daily-empty"))).to_have_text(
        "No ranked attempt at today's deal yet."
    )
