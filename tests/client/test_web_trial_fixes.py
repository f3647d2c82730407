"""The page (client/web/) in real Chromium, as outside trials found it wanting: a player's
name cut short on a phone, a day not begun picked on the daily page, and what a spectator
waiting in a room is told it will see.

The module is skipped when ``/usr/bin/chromium`` is absent (test_web.py).
"""

from __future__ import annotations

import pytest
import test_web
from conftest import ClientFactory, RunningServer, ServerFactory
from test_web import Pages, create_room, enter_name, expect, tid
from test_web_daily import DAY, ShiftedClock

# The page tests' fixtures: one Chromium, and pages on the test's server.
browser = test_web.browser
pages = test_web.pages
SMALL_PHONE = {"width": 375, "height": 667}
LONG_NAME = "Maximilianne"  # twelve letters: a name many people have


@pytest.fixture
def backend_kind() -> str:
    """The page does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node on a fixed day (``DAY``, UTC)."""
    return await start_server(clock=ShiftedClock())


async def test_the_player_s_name_shows_whole_in_a_phone_s_top_bar(pages: Pages) -> None:
    page = await pages.open(viewport=SMALL_PHONE, touch=True)
    await enter_name(page, LONG_NAME)
    name = page.locator(tid("player-name"))
    await expect(name).to_be_visible()
    cut = await name.evaluate("(node) => node.scrollWidth > node.clientWidth")
    assert not cut, "the name is cut short"
    box = await name.bounding_box()
    assert box is not None and box["x"] + box["width"] <= SMALL_PHONE["width"]
    await expect(name).to_have_attribute("title", LONG_NAME)
    # The brand keeps its name for a screen reader, and the bar its one row.
    await expect(page.locator(tid("home-link"))).to_have_accessible_name(r"Solitaire Race")
    assert await page.evaluate("document.documentElement.scrollWidth") <= SMALL_PHONE["width"]
    bar = await page.locator(".topbar").bounding_box()
    assert bar is not None and bar["height"] < 60, bar


async def test_a_day_not_begun_says_its_daily_is_not_out_yet(pages: Pages) -> None:
    page = await pages.open("/daily")
    await enter_name(page, "Dee")
    await expect(page.locator(tid("daily-board-date"))).to_contain_text(f"{DAY} (today)")
    await page.fill(tid("daily-date"), "2999-01-01")
    toast = page.locator(tid("error"))
    await expect(toast).to_be_visible()
    await expect(page.locator(tid("error-message"))).to_have_text(
        "The daily for 2999-01-01 is not out yet: each day's deal comes out at midnight UTC."
    )
    # The board stays today's, and the page's address with it.
    await expect(page.locator(tid("daily-date"))).to_have_value(DAY)
    await expect(page.locator(tid("daily-board-date"))).to_contain_text(f"{DAY} (today)")
    assert "date=" not in page.url
    # The same day named in the address.
    later = await pages.open("/daily?date=2999-01-01")
    await enter_name(later, "Eve")
    await expect(later.locator(tid("error-message"))).to_contain_text(
        "The daily for 2999-01-01 is not out yet"
    )
    await expect(later.locator(tid("daily-board-date"))).to_contain_text(f"{DAY} (today)")


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("after", "its progress shows as it goes, and the boards once the race is over"),
        ("delayed", "its progress shows at once and the boards 30 s late"),
        ("live", "the boards appear when the race starts"),
    ],
)
async def test_a_waiting_spectator_is_told_what_it_will_see(
    pages: Pages, make_client: ClientFactory, mode: str, said: str
) -> None:
    """Only a live room shows the boards as the race starts: a spectator waiting in an
    ``after`` room sees the progress only until the race is over."""
    host = await make_client("Host")
    settings = {"spectator_delay": 30} if mode == "delayed" else {}
    room = await host.create_room("canfield", spectators=mode, **settings)
    page = await pages.open(f"/r/{room['code']}?as=spectator")
    await enter_name(page, "Sam")
    await expect(page.locator(tid("room-hint"))).to_contain_text(said)


async def test_a_lobby_hint_for_players_is_unchanged(pages: Pages) -> None:
    page = await pages.open()
    await enter_name(page, "Pat")
    await create_room(page, "canfield", spectators="after")
    await expect(page.locator(tid("room-hint"))).to_contain_text("The host starts the race")
