"""The daily challenge's page (/daily) in real Chromium, against a live server.

The server's clock is real time moved to a fixed day, so that a test can jump to the
next day and see the seed of the day before revealed. Screenshots (``daily*.png``) go to
``tests/artifacts/screenshots/`` like the other page tests'.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest
import test_web
from conftest import RunningServer, ServerFactory
from daily_support import AT_ONCE, PASSWORD
from test_web import DESKTOP, PHONE, SCREENSHOTS, Page, Pages, enter_name, expect, tid

from solrace.server.daily import daily_commitment, daily_nonce, daily_seed

DAY = "2026-11-30"
NEXT_DAY = "2026-12-01"
VARIANT = "canfield"
AREA = tid("player-area")

# The page tests' fixtures: one Chromium, and pages on the test's server.
browser = test_web.browser
pages = test_web.pages


class ShiftedClock:
    """Real time, moved to noon UTC of ``DAY``; ``skip`` jumps ahead."""

    def __init__(self) -> None:
        start = dt.datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp()
        self.offset = start - time.time()

    def __call__(self) -> float:
        return time.time() + self.offset

    def skip(self, seconds: float) -> None:
        self.offset += seconds


@pytest.fixture
def backend_kind() -> str:
    """The page does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
async def server(start_server: ServerFactory, clock: ShiftedClock) -> RunningServer:
    """The node the pages talk to, on the shifted clock (accounts ranked at once)."""
    return await start_server(clock=clock, **AT_ONCE)


async def fill_claim(page: Page, password: str, again: str | None = None) -> None:
    """Claim the display name with ``password`` (typed twice: ``again`` the second time)
    in the claim form, wherever the screen shows it."""
    await page.fill(tid("claim-password"), password)
    await page.fill(tid("claim-password2"), password if again is None else again)
    await page.click(tid("claim-submit"))


async def claimed(page: Page, password: str = PASSWORD) -> None:
    """Claim the display name and see the page take the account."""
    await fill_claim(page, password)
    await expect(page.locator(tid("account-badge"))).to_be_visible()
    await expect(page.locator(tid("claim-form"))).to_be_hidden()


async def signed_in(
    pages: Pages,
    name: str,
    path: str = "/",
    viewport: dict[str, int] = DESKTOP,
    *,
    touch: bool = False,
) -> Page:
    """A page of an account's: the daily deal is played by accounts. The player picks a
    name on the page and claims it there (on the home screen or the daily page)."""
    page = await pages.open(path, viewport, touch=touch)
    await enter_name(page, name)
    await claimed(page)
    return page


async def no_sideways_scroll(page: Page) -> None:
    width = await page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= await page.evaluate("window.innerWidth"), "the page scrolls sideways"


async def start_attempt(page: Page, *, attempt: int, touch: bool = False) -> None:
    """Play today's deal from the daily page: a solo race, its clock running, no undo."""
    button = page.locator(tid("daily-play"))
    await (button.tap() if touch else button.click())
    await expect(page.locator(tid("race"))).to_be_visible()
    await expect(page.locator(f"{AREA} {tid('board')}")).to_have_attribute("data-variant", VARIANT)
    label = page.locator(tid("race-daily"))
    await expect(label).to_have_attribute("data-attempt", str(attempt))
    await expect(label).to_contain_text(f"daily deal of {DAY}")
    if attempt == 1:  # whether it is ranked is the server's to say, once it is over
        await expect(label).to_contain_text("attempt 1")
        await expect(label).not_to_contain_text("ranked")
    else:
        await expect(label).to_contain_text("not ranked")
    await expect(page.locator(tid("race-room-label"))).to_be_hidden()
    await expect(page.locator(tid("undo"))).to_be_hidden()
    await expect(page.locator(tid("time-limit-label"))).to_have_text("30:00")
    assert f"/daily?variant={VARIANT}" in page.url


async def draw(page: Page, times: int, *, touch: bool = False) -> None:
    """Deal from the stock ``times`` times, each a move the server counts."""
    stock = page.locator(f'{AREA} [data-pile="s"]')
    row = page.locator(tid("progress-row"))
    first = int(await row.get_attribute("data-moves") or 0)
    for n in range(first + 1, first + times + 1):
        await (stock.tap() if touch else stock.click())
        await expect(row).to_have_attribute("data-moves", str(n))


async def resign(page: Page, *, touch: bool = False) -> None:
    button = page.locator(tid("resign"))
    for _ in range(2):
        await (button.tap() if touch else button.click())
    await expect(page.locator(tid("results"))).to_be_visible()
    await expect(page.locator(tid("result-row"))).to_have_count(1)
    await expect(page.locator(tid("seed"))).to_have_count(0)  # not before the day is over
    await expect(page.locator(tid("rematch"))).to_be_hidden()
    await expect(page.locator(tid("daily-back"))).to_be_visible()


async def back_to_board(page: Page, *, touch: bool = False) -> None:
    button = page.locator(tid("daily-back"))
    await (button.tap() if touch else button.click())
    await expect(page.locator(tid("daily"))).to_be_visible()


async def test_daily_attempts_ranks_and_a_past_day(
    pages: Pages, server: RunningServer, clock: ShiftedClock
) -> None:
    dora = await signed_in(pages, "Dora")
    await dora.click(tid("daily-link"))
    await expect(dora.locator(tid("daily"))).to_be_visible()
    await dora.select_option(tid("daily-variant"), VARIANT)
    assert dora.url.endswith(f"/daily?variant={VARIANT}")
    await expect(dora.locator(tid("daily-board-date"))).to_contain_text(f"{DAY} (today)")
    await expect(dora.locator(tid("daily-empty"))).to_have_text(
        "No one has a ranked attempt at today's deal yet: be the first."
    )
    await expect(dora.locator(tid("board-row"))).to_have_count(0)
    await expect(dora.locator(tid("daily-you"))).to_contain_text("not played")
    seed_line = dora.locator(tid("daily-seed-line"))
    await expect(seed_line).to_contain_text("revealed at 2026-12-01 00:30 UTC")
    commitment = daily_commitment(server.node.secret, DAY, VARIANT)
    await expect(dora.locator(tid("daily-commitment"))).to_have_text(commitment)
    await expect(dora.locator(tid("daily-seed"))).to_have_count(0)
    await expect(dora.locator(tid("daily-date"))).to_have_value(DAY)
    await expect(dora.locator(tid("daily-play"))).to_have_attribute("data-ranked", "true")
    await expect(dora.locator(tid("streak-played"))).to_have_text("0")

    # The first attempt: a few moves, then resign. It is ranked, first of one.
    await start_attempt(dora, attempt=1)
    await draw(dora, 3)
    await dora.screenshot(path=str(SCREENSHOTS / "daily-race.png"), full_page=True)
    await resign(dora)
    outcome = dora.locator(tid("daily-outcome"))
    await expect(outcome).to_have_attribute("data-ranked", "true")
    await expect(outcome).to_have_attribute("data-rank", "1")
    await expect(outcome.locator(tid("daily-verdict"))).to_have_text(
        f"Ranked #1 of 1 on the board of {DAY}."
    )
    await dora.screenshot(path=str(SCREENSHOTS / "daily-result.png"), full_page=True)
    await back_to_board(dora)
    mine = dora.locator(f"{tid('board-row')}.mine")
    await expect(dora.locator(tid("board-row"))).to_have_count(1)
    await expect(mine).to_have_attribute("data-rank", "1")
    await expect(mine).to_contain_text("Dora (you)")
    dora_id = await mine.get_attribute("data-player-id")
    assert dora_id
    await expect(dora.locator(tid("daily-you"))).to_have_text("Your rank: #1 of 1")
    await expect(dora.locator(tid("daily-last"))).to_have_attribute("data-ranked", "true")
    await expect(dora.locator(tid("history-row"))).to_have_count(1)
    await expect(dora.locator(tid("history-row"))).to_have_attribute("data-ranked", "true")
    await expect(dora.locator(tid("streak-played"))).to_have_text("1")
    best = dora.locator(tid("best-row"))
    await expect(best).to_have_count(1)
    await expect(best).to_have_attribute("data-player-id", dora_id)
    await expect(dora.locator(tid("daily-play"))).to_have_attribute("data-ranked", "false")
    await expect(dora.locator(tid("daily-play-note"))).to_contain_text("not ranked")
    await dora.screenshot(path=str(SCREENSHOTS / "daily.png"), full_page=True)

    # A second attempt is shown, but not ranked: the board keeps the first.
    await start_attempt(dora, attempt=2)
    await draw(dora, 1)
    await resign(dora)
    await expect(outcome).to_have_attribute("data-ranked", "false")
    await expect(outcome.locator(tid("daily-verdict"))).to_contain_text(
        "Not ranked: this was attempt 2"
    )
    await back_to_board(dora)
    await expect(dora.locator(tid("daily-last"))).to_contain_text("Not ranked")
    await expect(dora.locator(tid("board-row"))).to_have_count(1)
    await expect(mine).to_have_attribute("data-rank", "1")
    history = dora.locator(tid("history-row"))
    await expect(history).to_have_count(2)
    await expect(history.first).to_have_attribute("data-attempt", "2")
    await expect(history.first).to_have_attribute("data-ranked", "false")
    await expect(history.first).to_contain_text("not ranked")
    await expect(dora.locator(tid("best-row"))).to_have_count(1)

    # Bob comes by the link, with a board of one row. He plays longer, and banks no more
    # than the dealt card: as many cards as Dora, reached at the deal, so they share the
    # first place (when each attempt ended counts for nothing).
    entries = await server.node.backend.daily_entries(DAY, VARIANT)
    dora_time = entries[0].time_ms / 1000
    bob = await signed_in(pages, "Bob", f"/daily?variant={VARIANT}&top=1")
    await expect(bob.locator(tid("daily"))).to_be_visible()
    await expect(bob.locator(tid("daily-variant"))).to_have_value(VARIANT)
    await expect(bob.locator(tid("board-row"))).to_have_attribute("data-player-id", dora_id)
    await start_attempt(bob, attempt=1)
    await asyncio.sleep(dora_time + 1.0)
    await draw(bob, 1)
    await resign(bob)
    await expect(bob.locator(tid("daily-outcome"))).to_have_attribute("data-rank", "1")
    await back_to_board(bob)
    assert bob.url.endswith(f"/daily?variant={VARIANT}&top=1")
    await expect(bob.locator(tid("daily-count"))).to_have_text("2 ranked players")
    await expect(bob.locator(tid("board-row"))).to_have_count(1)
    await expect(bob.locator(tid("board-row"))).to_have_attribute("data-rank", "1")
    await expect(bob.locator(tid("daily-you"))).to_have_text("Your rank: #1 of 2")
    bob_id = next(
        e.player_id
        for e in await server.node.backend.daily_entries(DAY, VARIANT)
        if e.name == "Bob"
    )
    # Equal scores share a rank; the board lists them in player id order.
    if bob_id < dora_id:  # Bob's is the one row shown
        await expect(bob.locator(f"{tid('board-row')}.mine")).to_have_attribute("data-rank", "1")
        await expect(bob.locator(tid("daily-around-box"))).to_be_hidden()
    else:  # Bob finds himself among the ranks around him
        around = bob.locator(tid("around-row"))
        await expect(around).to_have_count(2)
        await expect(around.nth(0)).to_have_attribute("data-player-id", dora_id)
        await expect(bob.locator(f"{tid('around-row')}.mine")).to_have_attribute("data-rank", "1")
    await bob.screenshot(path=str(SCREENSHOTS / "daily-board.png"), full_page=True)

    # The next day: the streak still counts yesterday, and yesterday's board shows its seed.
    clock.skip(86_400)
    await dora.reload()
    await expect(dora.locator(tid("daily-board-date"))).to_contain_text(f"{NEXT_DAY} (today)")
    await expect(dora.locator(tid("board-row"))).to_have_count(0)
    await expect(dora.locator(tid("streak-played"))).to_have_text("1")
    await expect(dora.locator(tid("daily-play"))).to_have_attribute("data-ranked", "true")
    await expect(dora.locator(tid("daily-today"))).to_be_hidden()
    await dora.fill(tid("daily-date"), DAY)
    await expect(dora.locator(tid("daily-board-date"))).to_have_text(f"· {DAY}")
    seed = daily_seed(server.node.secret, DAY, VARIANT)
    await expect(dora.locator(tid("daily-seed"))).to_have_text(str(seed))
    nonce = daily_nonce(server.node.secret, DAY, VARIANT)
    await expect(dora.locator(tid("daily-nonce"))).to_have_text(nonce)
    await expect(dora.locator(tid("daily-commitment"))).to_have_text(commitment)
    await expect(dora.locator(tid("board-row"))).to_have_count(2)
    await expect(mine).to_have_attribute("data-rank", "1")
    await expect(dora.locator(tid("daily-you"))).to_have_text("Your rank: #1 of 2")
    assert dora.url.endswith(f"/daily?variant={VARIANT}&date={DAY}")
    await dora.screenshot(path=str(SCREENSHOTS / "daily-past.png"), full_page=True)
    await dora.click(tid("daily-today"))
    await expect(dora.locator(tid("daily-board-date"))).to_contain_text(f"{NEXT_DAY} (today)")
    await expect(dora.locator(tid("daily-date"))).to_have_value(NEXT_DAY)

    # The brand link goes home, and the home screen links back to the daily page.
    await dora.click(tid("home-link"))
    await expect(dora.locator(tid("home"))).to_be_visible()
    await dora.go_back()
    await expect(dora.locator(tid("daily"))).to_be_visible()


async def test_daily_at_phone_width_resumes_after_a_reload(
    pages: Pages, server: RunningServer
) -> None:
    phone = await signed_in(pages, "Pocket", "/daily", PHONE, touch=True)
    await expect(phone.locator(tid("daily"))).to_be_visible()
    await phone.select_option(tid("daily-variant"), VARIANT)
    await expect(phone.locator(tid("daily-empty"))).to_be_visible()
    await no_sideways_scroll(phone)
    await start_attempt(phone, attempt=1, touch=True)
    await draw(phone, 2, touch=True)
    await no_sideways_scroll(phone)

    # A reload in the middle of the attempt comes back to the same race.
    await phone.reload()
    await expect(phone.locator(tid("race-daily"))).to_have_attribute("data-attempt", "1")
    await expect(phone.locator(tid("progress-row"))).to_have_attribute("data-moves", "2")
    await draw(phone, 1, touch=True)
    await phone.screenshot(path=str(SCREENSHOTS / "daily-race-phone.png"), full_page=True)
    await resign(phone, touch=True)
    await expect(phone.locator(tid("daily-outcome"))).to_have_attribute("data-rank", "1")
    await back_to_board(phone, touch=True)
    await expect(phone.locator(f"{tid('board-row')}.mine")).to_have_attribute("data-rank", "1")
    await expect(phone.locator(tid("history-row"))).to_have_count(1)
    await no_sideways_scroll(phone)
    await phone.screenshot(path=str(SCREENSHOTS / "daily-phone.png"), full_page=True)


async def test_a_past_day_s_board_shows_its_seed_once_due_without_a_reload(
    pages: Pages, server: RunningServer, clock: ShiftedClock
) -> None:
    """The seed line of a day not yet revealed says when it will be, and the board asks
    again at that time by itself (the page's clock is set to the server's)."""
    page = await pages.open(f"/daily?variant={VARIANT}")
    await enter_name(page, "Rhea")
    commitment = daily_commitment(server.node.secret, DAY, VARIANT)
    await expect(page.locator(tid("daily-commitment"))).to_have_text(commitment)
    clock.skip(12 * 3600 + 10 * 60)  # 00:10 of the next day: the reveal is at 00:30
    await page.clock.install(time=dt.datetime.fromtimestamp(clock(), dt.UTC))
    await page.goto(f"{pages.base}/daily?variant={VARIANT}&date={DAY}")
    line = page.locator(tid("daily-seed-line"))
    await expect(line).to_contain_text(
        f"revealed at {NEXT_DAY} 00:30 UTC, once no attempt of the day can still be running."
    )
    await expect(line).not_to_contain_text("any moment now")
    await expect(page.locator(tid("daily-seed"))).to_have_count(0)
    clock.skip(21 * 60)
    await page.clock.fast_forward("21:00")
    seed = daily_seed(server.node.secret, DAY, VARIANT)
    await expect(page.locator(tid("daily-seed"))).to_have_text(str(seed))
    await expect(page.locator(tid("daily-board-date"))).to_have_text(f"· {DAY}")
