"""Accounts and spectator settings on the browser page, in real Chromium against a live server.

A guest claims its name on the page, logs in from another browser, plays the daily deal
as the account, changes its password, logs out everywhere, and deletes the account. A
room's host picks and changes who may watch; spectators of an ``after`` room see no
board until the results, and those of a ``delayed`` room see each board late.

The server runs on the daily page tests' clock (real time moved to a fixed day, and moved
on by hand to bring a delayed room's boards due), with accounts ranked from their first
day. Screenshots (``account*.png``, ``spectators*.png``) go to
``tests/artifacts/screenshots/``.
"""

from __future__ import annotations

import json
from typing import Any

import test_web
import test_web_daily
from conftest import RunningServer
from daily_support import PASSWORD
from test_web import SCREENSHOTS, Page, Pages, create_room, enter_name, expect, tid
from test_web_daily import (
    AREA,
    DAY,
    VARIANT,
    ShiftedClock,
    back_to_board,
    claimed,
    draw,
    fill_claim,
    resign,
    start_attempt,
)

from solrace.server.names import name_keys

# The page tests' fixtures: one Chromium, pages on the test's server, and the daily
# tests' node (its shifted clock, accounts ranked at once) on the embedded backend.
browser = test_web.browser
pages = test_web.pages
backend_kind = test_web_daily.backend_kind
clock = test_web_daily.clock
server = test_web_daily.server

NEW_PASSWORD = "a second pass phrase"
RULES = "A password has 8 to 128 characters (at most 256 bytes of UTF-8)."
WRONG_LOGIN = "Wrong account name or password."


async def stored(page: Page) -> dict[str, Any]:
    """What the page keeps in this browser: the name, the token, the account's name."""
    text = await page.evaluate("localStorage.getItem('solrace.identity')")
    data: dict[str, Any] = json.loads(text or "{}")
    return data


async def player_of(page: Page) -> str:
    """The player id of the page's identity (the first part of its token)."""
    token = (await stored(page)).get("token")
    assert token
    return str(token).split(".")[0]


async def log_in(page: Page, name: str, password: str) -> None:
    """Fill the login form, wherever the screen shows it, and send it."""
    await page.fill(tid("login-name"), name)
    await page.fill(tid("login-password"), password)
    await page.click(tid("login-submit"))


async def logged_in(page: Page, name: str, password: str) -> None:
    await log_in(page, name, password)
    await expect(page.locator(tid("player-name"))).to_have_text(name)
    await expect(page.locator(tid("account-badge"))).to_be_visible()
    await expect(page.locator(tid("name-screen"))).to_be_hidden()


async def draw_as(page: Page, player: str, times: int) -> None:
    """Deal from the stock ``times`` times, in a room of several players."""
    stock = page.locator(f'{AREA} [data-pile="s"]')
    row = page.locator(f'{tid("progress-row")}[data-player-id="{player}"]')
    first = int(await row.get_attribute("data-moves") or 0)
    for n in range(first + 1, first + times + 1):
        await stock.click()
        await expect(row).to_have_attribute("data-moves", str(n))


async def delayed_room(pages: Pages) -> tuple[Page, Page, str]:
    """Hana hosts a room whose spectators see each board 10 s late, and Sam comes to watch
    it: Hana's page, Sam's, and Hana's player id, the race not started yet."""
    hana = await pages.open()
    await enter_name(hana, "Hana")
    code = await create_room(
        hana, "canfield", countdown=0, spectators="delayed", spectator_delay=10
    )
    sam = await pages.open(f"/r/{code}?as=spectator")
    await enter_name(sam, "Sam")
    await expect(hana.locator(tid("member"))).to_have_count(2)
    return hana, sam, await test_web.player_id(hana)


async def test_claim_a_name_log_in_elsewhere_and_play_the_daily_as_the_account(
    pages: Pages, server: RunningServer
) -> None:
    alma = await pages.open(f"/daily?variant={VARIANT}")
    await enter_name(alma, "Alma")
    await expect(alma.locator(tid("daily"))).to_be_visible()
    await expect(alma.locator(tid("account-badge"))).to_be_hidden()
    box = alma.locator(tid("daily-account"))
    await expect(box).to_be_visible()

    # A guest is refused the daily deal, and told how to become an account, right there.
    await alma.click(tid("daily-play"))
    await expect(box).to_have_attribute("data-refused", "true")
    await expect(alma.locator(tid("daily-account-why"))).to_contain_text(
        "Only accounts play the daily deal"
    )
    await expect(box.locator(tid("claim-form"))).to_be_visible()
    await expect(box.locator(tid("login-form"))).to_be_visible()
    await expect(alma.locator(tid("race"))).to_be_hidden()
    assert await server.node.backend.daily_entries(DAY, VARIANT) == []

    # Refusals in plain words: two different passwords, then one the server's rules refuse.
    await fill_claim(alma, PASSWORD, PASSWORD + "!")
    error = alma.locator(tid("claim-error"))
    await expect(error).to_have_text("The two passwords differ: type the same password twice.")
    await fill_claim(alma, "short")
    await expect(error).to_have_text(RULES)
    await expect(alma.locator(tid("account-badge"))).to_be_hidden()
    await alma.screenshot(path=str(SCREENSHOTS / "account-daily-guest.png"), full_page=True)
    await claimed(alma)
    await expect(box).to_be_hidden()
    await expect(alma.locator(tid("change-name"))).to_be_hidden()
    alma_id = await player_of(alma)
    assert await server.node.backend.account_named(name_keys("Alma")) == alma_id
    assert (await stored(alma))["account"] == "Alma"

    # A look-alike of the name is an account's already: no guest plays under it.
    imposter = await pages.open()
    await expect(imposter.locator(tid("name-screen"))).to_be_visible()
    await imposter.fill(tid("name-input"), "ALMA")
    await imposter.click(tid("name-submit"))
    await expect(imposter.locator(tid("error"))).to_have_attribute("data-code", "name_taken")
    await expect(imposter.locator(tid("error-message"))).to_contain_text(
        "An account already has that name, or one that looks like it: pick another"
    )
    await expect(imposter.locator(tid("name-screen"))).to_be_visible()
    await expect(imposter.locator(tid("account-badge"))).to_be_hidden()

    # Another browser logs in from the name screen: a wrong password first.
    other = await pages.open(f"/daily?variant={VARIANT}")
    name_screen = other.locator(tid("name-screen"))
    await expect(name_screen.locator(tid("login-form"))).to_be_visible()
    await log_in(other, "alma", "not the pass phrase")
    await expect(other.locator(tid("login-error"))).to_have_text(WRONG_LOGIN)
    await expect(name_screen).to_be_visible()
    await other.screenshot(path=str(SCREENSHOTS / "account-login.png"), full_page=True)
    await logged_in(other, "Alma", PASSWORD)
    assert await player_of(other) == alma_id
    # The first browser's connection was taken over by the login.
    await expect(alma.locator(tid("conn-banner"))).to_have_attribute("data-state", "closed")
    await expect(alma.locator(tid("conn-banner-text"))).to_contain_text("another tab or device")

    # The account plays today's deal from the second browser: its ranked first attempt.
    await expect(other.locator(tid("daily"))).to_be_visible()
    await expect(other.locator(tid("daily-account"))).to_be_hidden()
    await start_attempt(other, attempt=1)
    await draw(other, 2)
    await resign(other)
    await expect(other.locator(tid("daily-outcome"))).to_have_attribute("data-rank", "1")
    await back_to_board(other)
    mine = other.locator(f"{tid('board-row')}.mine")
    await expect(mine).to_contain_text("Alma (you)")
    await expect(mine).to_have_attribute("data-player-id", alma_id)
    [entry] = await server.node.backend.daily_entries(DAY, VARIANT)
    assert (entry.player_id, entry.name, entry.attempt) == (alma_id, "Alma", 1)

    # The page keeps the session: a reload is still the account.
    await other.reload()
    await expect(other.locator(tid("player-name"))).to_have_text("Alma")
    await expect(other.locator(tid("account-badge"))).to_be_visible()
    await expect(other.locator(tid("history-row"))).to_have_count(1)


async def test_change_password_log_out_everywhere_and_log_out(pages: Pages) -> None:
    cleo = await pages.open()
    await enter_name(cleo, "Cleo")
    panel = cleo.locator(tid("account-panel"))
    await expect(panel.locator(tid("claim-form"))).to_be_visible()
    await claimed(cleo)
    await expect(cleo.locator(tid("account-status"))).to_contain_text(
        "Logged in to the account Cleo"
    )
    first_token = (await stored(cleo))["token"]

    # Changing the password: each refusal in plain words, then the change.
    await cleo.click(tid("change-password"))
    await expect(cleo.locator(tid("change-password"))).to_have_attribute("aria-expanded", "true")
    error = cleo.locator(tid("password-error"))

    async def change(old: str, new: str, again: str) -> None:
        await cleo.fill(tid("password-old"), old)
        await cleo.fill(tid("password-new"), new)
        await cleo.fill(tid("password-new2"), again)
        await cleo.click(tid("password-submit"))

    await change(PASSWORD, NEW_PASSWORD, NEW_PASSWORD + "?")
    await expect(error).to_have_text("The two new passwords differ: type the same password twice.")
    await change("not the pass phrase", NEW_PASSWORD, NEW_PASSWORD)
    await expect(error).to_have_text("That is not the account's current password.")
    await change(PASSWORD, "tiny", "tiny")
    await expect(error).to_have_text(RULES)
    await cleo.screenshot(path=str(SCREENSHOTS / "account-password.png"), full_page=True)
    await change(PASSWORD, NEW_PASSWORD, NEW_PASSWORD)
    await expect(cleo.locator(tid("account-message"))).to_contain_text("Password changed.")
    await expect(cleo.locator(tid("password-form"))).to_be_hidden()
    assert (await stored(cleo))["token"] != first_token
    await cleo.reload()  # the fresh token is the one kept
    await expect(cleo.locator(tid("account-badge"))).to_be_visible()
    await expect(cleo.locator(tid("connection"))).to_have_attribute("data-state", "connected")

    # The old password no longer logs in; the new one does.
    other = await pages.open()
    await log_in(other, "Cleo", PASSWORD)
    await expect(other.locator(tid("login-error"))).to_have_text(WRONG_LOGIN)
    await logged_in(other, "Cleo", NEW_PASSWORD)
    await expect(cleo.locator(tid("conn-banner"))).to_have_attribute("data-state", "closed")

    # Log out everywhere: the other browser's token stops working; this one goes on.
    await other.click(tid("revoke-tokens"))
    await expect(other.locator(tid("account-message"))).to_contain_text(
        "Every other browser and device is logged out"
    )
    await cleo.click(tid("conn-retry"))  # "Play here", with the token revoked meanwhile
    await expect(cleo.locator(tid("name-screen"))).to_be_visible()
    await expect(cleo.locator(tid("name-note"))).to_contain_text(
        "This browser was logged out of the account Cleo"
    )
    await expect(cleo.locator(tid("login-name"))).to_have_value("Cleo")
    assert (await stored(cleo))["token"] is None
    await other.reload()
    await expect(other.locator(tid("account-badge"))).to_be_visible()
    await expect(other.locator(tid("player-name"))).to_have_text("Cleo")

    # Logging out forgets the account in this browser.
    await other.click(tid("logout"))
    await expect(other.locator(tid("name-screen"))).to_be_visible()
    await expect(other.locator(tid("name-note"))).to_contain_text("Logged out of Cleo")
    assert (await stored(other))["token"] is None
    await other.reload()
    await expect(other.locator(tid("name-screen"))).to_be_visible()
    await expect(other.locator(tid("me"))).to_be_hidden()


async def test_delete_the_account_anonymises_its_board_entries(
    pages: Pages, server: RunningServer
) -> None:
    dana = await pages.open(f"/daily?variant={VARIANT}")
    await enter_name(dana, "Dana")
    await claimed(dana)
    dana_id = await player_of(dana)
    await start_attempt(dana, attempt=1)
    await draw(dana, 1)
    await resign(dana)
    await back_to_board(dana)
    await expect(dana.locator(f"{tid('board-row')}.mine")).to_contain_text("Dana (you)")

    await dana.click(tid("home-link"))
    await expect(dana.locator(tid("account-owner"))).to_be_visible()
    await dana.click(tid("delete-account"))
    form = dana.locator(tid("delete-form"))
    await expect(form).to_be_visible()
    await expect(dana.locator(tid("delete-warning"))).to_contain_text("cannot be undone")
    await expect(dana.locator(tid("delete-warning"))).to_contain_text("“deleted player”")
    await dana.click(tid("delete-cancel"))
    await expect(form).to_be_hidden()
    await dana.click(tid("delete-account"))
    await dana.fill(tid("delete-password"), "not the pass phrase")
    await dana.click(tid("delete-confirm"))
    await expect(dana.locator(tid("delete-error"))).to_have_text(
        "That is not the account's current password."
    )
    await dana.screenshot(path=str(SCREENSHOTS / "account-delete.png"), full_page=True)
    assert await server.node.backend.account_named(name_keys("Dana")) == dana_id

    await dana.fill(tid("delete-password"), PASSWORD)
    await dana.click(tid("delete-confirm"))
    await expect(dana.locator(tid("name-screen"))).to_be_visible()
    await expect(dana.locator(tid("name-note"))).to_contain_text("The account Dana is deleted")
    assert (await stored(dana))["token"] is None
    assert await server.node.backend.account_named(name_keys("Dana")) is None
    [entry] = await server.node.backend.daily_entries(DAY, VARIANT)
    assert entry.name == "deleted player" and entry.player_id != dana_id

    # The board shows the entry anonymised; the account logs in no more; the name is free.
    other = await pages.open(f"/daily?variant={VARIANT}")
    await log_in(other, "Dana", PASSWORD)
    await expect(other.locator(tid("login-error"))).to_have_text(WRONG_LOGIN)
    await enter_name(other, "Dana")
    await expect(other.locator(tid("board-row"))).to_have_count(1)
    await expect(other.locator(tid("board-row"))).to_contain_text("deleted player")
    await claimed(other)
    assert await player_of(other) != dana_id


async def test_everyone_in_the_room_sees_the_spectator_setting_the_host_changes(
    pages: Pages,
) -> None:
    hugo = await pages.open()
    await enter_name(hugo, "Hugo")
    await expect(hugo.locator(tid("spectators"))).to_have_value("after")  # the server's default
    await expect(hugo.locator(tid("spectator-delay"))).to_be_hidden()
    code = await create_room(
        hugo, "canfield", countdown=0, spectators="delayed", spectator_delay=45
    )
    pia = await pages.open(f"/r/{code}")
    await enter_name(pia, "Pia")
    sid = await pages.open(f"/r/{code}?as=spectator")
    await enter_name(sid, "Sid")
    await expect(hugo.locator(tid("member"))).to_have_count(3)

    async def everyone_sees(text: str, mode: str, *watching: Page) -> None:
        for page in (hugo, pia, *watching):
            line = page.locator(tid("room-spectators"))
            await expect(line).to_have_text(text)
            await expect(line).to_have_attribute("data-mode", mode)

    await everyone_sees("Spectators: boards 45 s late", "delayed", sid)
    await expect(hugo.locator(tid("spectators-form"))).to_be_visible()
    await expect(hugo.locator(tid("spectators-mode"))).to_have_value("delayed")
    await expect(hugo.locator(tid("spectators-delay"))).to_have_value("45")
    for page in (pia, sid):  # only the host changes it
        await expect(page.locator(tid("spectators-form"))).to_be_hidden()
    await hugo.screenshot(path=str(SCREENSHOTS / "spectators-lobby.png"), full_page=True)

    await hugo.select_option(tid("spectators-mode"), "live")
    await everyone_sees("Spectators: every board live, as it is played", "live", sid)
    await hugo.select_option(tid("spectators-mode"), "delayed")
    await hugo.fill(tid("spectators-delay"), "20")
    await hugo.press(tid("spectators-delay"), "Enter")
    await everyone_sees("Spectators: boards 20 s late", "delayed", sid)

    # No spectators: the one watching is put out of the room, and told why.
    await hugo.select_option(tid("spectators-mode"), "off")
    await expect(sid.locator(tid("home"))).to_be_visible()
    await expect(sid.locator(tid("error-message"))).to_contain_text("turned spectators off")
    await everyone_sees("No spectators", "off")
    await expect(hugo.locator(tid("member"))).to_have_count(2)
    late = await pages.open(f"/r/{code}?as=spectator")
    await enter_name(late, "Lee")
    await expect(late.locator(tid("error"))).to_have_attribute(
        "data-code", "spectators_not_allowed"
    )

    # During the race the setting shows on the race screen; after it the host changes it.
    await hugo.select_option(tid("spectators-mode"), "after")
    await everyone_sees("Spectators: progress only, the boards once the race is over", "after")
    await hugo.click(tid("start"))
    for page in (hugo, pia):
        await expect(page.locator(tid("race-spectators"))).to_have_attribute("data-mode", "after")
        await expect(page.locator(tid("spectators-form"))).to_be_hidden()
    for page in (hugo, pia):
        await page.click(tid("resign"))
        await page.click(tid("resign"))
    for page in (hugo, pia):
        await expect(page.locator(tid("results"))).to_be_visible()
    results_form = hugo.locator(f"{tid('results')} {tid('spectators-form')}")
    await expect(results_form).to_be_visible()
    await expect(pia.locator(tid("spectators-form"))).to_be_hidden()
    await hugo.select_option(tid("spectators-mode"), "live")
    await expect(pia.locator(tid("race-spectators"))).to_have_text(
        "Spectators: every board live, as it is played"
    )
    await hugo.screenshot(path=str(SCREENSHOTS / "spectators-results.png"), full_page=True)


async def test_an_after_rooms_spectator_sees_the_boards_only_with_the_results(
    pages: Pages,
) -> None:
    hana = await pages.open()
    await enter_name(hana, "Hana")
    code = await create_room(hana, "canfield", countdown=0)  # the default: after
    await expect(hana.locator(tid("room-spectators"))).to_have_attribute("data-mode", "after")
    pete = await pages.open(f"/r/{code}")
    await enter_name(pete, "Pete")
    sam = await pages.open(f"/r/{code}?as=spectator")
    await enter_name(sam, "Sam")
    await expect(sam.locator(tid("room-spectators"))).to_have_attribute("data-mode", "after")
    await expect(hana.locator(tid("member"))).to_have_count(3)
    hana_id = await test_web.player_id(hana)

    await hana.click(tid("start"))
    await expect(sam.locator(tid("progress-row"))).to_have_count(2)
    await expect(sam.locator(tid("spectator-note"))).to_contain_text(
        "the boards once the race is over"
    )
    await draw_as(hana, hana_id, 2)
    row = sam.locator(f'{tid("progress-row")}[data-player-id="{hana_id}"]')
    await expect(row).to_have_attribute("data-moves", "2")  # the progress, at once
    await expect(sam.locator(tid("spectator-board"))).to_have_count(0)
    await expect(sam.locator("[data-card]")).to_have_count(0)  # no card of the deal at all
    await sam.screenshot(path=str(SCREENSHOTS / "spectators-after-race.png"), full_page=True)

    for page in (hana, pete):
        await page.click(tid("resign"))
        await page.click(tid("resign"))
    await expect(sam.locator(tid("results"))).to_be_visible()
    await expect(sam.locator(tid("spectator-board"))).to_have_count(2)
    final = sam.locator(f'{tid("spectator-board")}[data-player-id="{hana_id}"]')
    await expect(final).to_have_attribute("data-moves", "2")
    await expect(final.locator('[data-pile="w"] [data-card]')).not_to_have_count(0)
    await expect(sam.locator(tid("spectator-note"))).to_be_hidden()
    await sam.screenshot(path=str(SCREENSHOTS / "spectators-after-results.png"), full_page=True)


async def test_a_delayed_rooms_spectator_sees_each_board_late(
    pages: Pages, clock: ShiftedClock
) -> None:
    hana, sam, hana_id = await delayed_room(pages)
    await expect(sam.locator(tid("room-spectators"))).to_have_text("Spectators: boards 10 s late")

    await hana.click(tid("start"))
    board = sam.locator(f'{tid("spectator-board")}[data-player-id="{hana_id}"]')
    await expect(board).to_have_attribute("data-moves", "0")  # the deal
    await expect(board.locator('[data-pile="w"] [data-card]')).to_have_count(0)
    await expect(sam.locator(tid("spectator-note"))).to_contain_text("10 s after it was played")
    await draw_as(hana, hana_id, 1)
    row = sam.locator(f'{tid("progress-row")}[data-player-id="{hana_id}"]')
    await expect(row).to_have_attribute("data-moves", "1")  # the progress, at once
    await expect(board).to_have_attribute("data-moves", "0")  # the board, not yet

    # The server's clock moves past the delay: the next board Hana makes brings the one of
    # her first draw due, in a `boards` frame.
    clock.skip(11)
    await draw_as(hana, hana_id, 1)
    await expect(board).to_have_attribute("data-moves", "1")
    await expect(board.locator('[data-pile="w"] [data-card]')).not_to_have_count(0)
    await expect(row).to_have_attribute("data-moves", "2")
    await sam.screenshot(path=str(SCREENSHOTS / "spectators-delayed.png"), full_page=True)

    # The race over, the final board at once.
    await hana.click(tid("resign"))
    await hana.click(tid("resign"))
    await expect(sam.locator(tid("results"))).to_be_visible()
    await expect(board).to_have_attribute("data-moves", "2")
