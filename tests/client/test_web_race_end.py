"""How a race ends, on the page in real Chromium against a live server: a winner reads
their place, the standings come by place, a stuck player may undo or resign where undo is
allowed, a first-to-finish race ends on its own, a winnable room's results give par, the
lobby offers Canfield first and remembers the game chosen, and the host sets how the race
ends.

Moves are played the way a person plays them: a click on a card, then on the pile it
goes to; a double-click sends a card home; a click on the stock draws.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest
import test_web
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from playwright.async_api import Browser, Page, expect
from test_web import SCREENSHOTS, WAIT_MS, Pages, card, create_room, enter_name, player_id, tid

from solrace.engine import Game, card_name, format_move, new_game, parse_move, replay
from solrace.engine.solver import Verdict, solve_deal

# The end-to-end helpers of the server tests: forced deals and known lines.
sys.path.append(str(Path(__file__).resolve().parents[1] / "server"))
from e2e_support import FAST, deal_seed, winning_deal
from test_e2e_race import _line_to_stuck

AREA = tid("player-area")
STUCK_UNDO = "No move left — undo a move or resign."
OVER = "your game is over"

# The page tests' fixtures: one Chromium, and pages on the test's server.
browser = test_web.browser
pages = test_web.pages
backend_kind = test_web.backend_kind


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a reference client play a whole game at full speed."""
    return await start_server(limits=FAST)


# -- playing on the page -------------------------------------------------------------------


async def click_card(page: Page, pile: str, name: str, *, double: bool = False) -> None:
    """Click (or double-click) a card near its top edge, the part a fanned pile shows."""
    target = page.locator(card(pile, name))
    if double:
        await target.dblclick(position={"x": 10, "y": 8})
    else:
        await target.click(position={"x": 10, "y": 8})


async def play(page: Page, game: Game, text: str) -> None:
    """Play ``text`` on the page as a person would, then on the local ``game``; wait until
    the room's progress shows the move."""
    before = game.moves
    if text in ("d", "rd"):
        await page.click(f'{AREA} [data-pile="s"]')
    elif text == "u":
        await page.click(tid("undo"))
    else:
        src, rest = text.split("-")
        dst, _, many = rest.partition("x")
        count = int(many or 1)
        index = int(src[1:]) - 1 if src[1:] else 0
        pile = {
            "t": lambda: game.tableau[index],
            "w": lambda: game.waste,
            "r": lambda: game.reserve,
            "f": lambda: game.foundations[index],
        }[src[0]]()
        name = card_name(pile[-count])
        if dst == "f":
            # A loaded machine may take a double click for two clicks (pick up, put down):
            # then nothing is sent and the card is still there, so it is double-clicked
            # again (a move sent twice at one revision is played once).
            row = page.locator(f"{tid('progress-row')}.mine")
            for attempt in range(3):
                await click_card(page, src, name, double=True)
                try:
                    await expect(row).to_have_attribute(
                        "data-moves", str(before + 1), timeout=3_000
                    )
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
        else:
            await click_card(page, src, name)
            await page.click(f'{AREA} [data-pile="{dst}"]')
    game.apply(parse_move(text))
    assert game.moves == before + 1
    mine = page.locator(f"{tid('progress-row')}.mine")
    await expect(mine).to_have_attribute("data-moves", str(game.moves))


async def play_line(page: Page, game: Game, line: list[str]) -> None:
    for text in line:
        await play(page, game, text)


async def order_of(page: Page, testid: str) -> list[str]:
    """The player ids of the rows ``testid`` in the order the page shows them."""
    rows = page.locator(tid(testid))
    return [await row.get_attribute("data-player-id") or "" for row in await rows.all()]


async def record_texts(page: Page, testid: str) -> None:
    """Keep every text the element ``testid`` shows while visible, from now on (read back
    with :func:`recorded`): what the page said, whether or not a poll saw it."""
    await page.evaluate(
        """(testid) => {
          const node = document.querySelector(`[data-testid="${testid}"]`);
          const seen = (window.__seen = window.__seen || {});
          const list = (seen[testid] = seen[testid] || []);
          const note = () => {
            if (!node.closest("[hidden]") && node.textContent) list.push(node.textContent);
          };
          new MutationObserver(note).observe(document.body, {
            subtree: true, childList: true, characterData: true, attributes: true,
          });
          note();
        }""",
        testid,
    )


async def recorded(page: Page, testid: str) -> list[str]:
    texts: list[str] = await page.evaluate(
        "(testid) => (window.__seen && window.__seen[testid]) || []", testid
    )
    return texts


async def set_finish(page: Page, finish: str, grace: int | None = None) -> None:
    """Choose how the race ends in the create form."""
    await page.select_option(tid("finish-setting"), finish)
    if grace is not None:
        await page.fill(tid("finish-grace"), str(grace))


# -- tests ---------------------------------------------------------------------------------


async def test_two_winners_read_their_places_and_a_winnable_room_gives_par(
    browser: Browser, start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)  # the pool certifies this deal, the one the race deals
    server = await start_server(limits=FAST, winnable_default=True, deal_pool_size=1)
    opened = Pages(browser, server)
    alice = await opened.open()
    await enter_name(alice, "Alice")
    await expect(alice.locator(tid("winnable-setting"))).to_be_checked()
    code = await create_room(alice, "canfield", countdown=0)
    winnable = alice.locator(tid("room-winnable"))
    await expect(winnable).to_have_attribute("data-winnable", "true")
    await expect(winnable).to_contain_text("Winnable deals only")
    bob = await opened.open(f"/r/{code}")
    await enter_name(bob, "Bob")
    await expect(bob.locator(tid("room-winnable"))).to_have_attribute("data-winnable", "true")
    await expect(bob.locator(tid("room-finish"))).to_have_attribute("data-finish", "everyone")
    await expect(alice.locator(tid("member"))).to_have_count(2)
    alice_id, bob_id = await player_id(alice), await player_id(bob)
    await alice.click(tid("start"))
    for page in (alice, bob):  # the deal may still be certified as the race starts
        board = page.locator(f"{AREA} {tid('board')}")
        await expect(board).to_have_attribute("data-variant", "canfield", timeout=4 * WAIT_MS)

    # Both play the known line up to its last move, side by side; Alice wins first.
    games = {"alice": new_game("canfield", seed), "bob": new_game("canfield", seed)}
    await asyncio.gather(
        play_line(alice, games["alice"], line[:-1]), play_line(bob, games["bob"], line[:-1])
    )
    await play(alice, games["alice"], line[-1])
    status = alice.locator(tid("game-status-text"))
    await expect(status).to_have_text("You finished 1st of 2: all 52 cards are home!")
    await expect(alice.locator(tid("game-status"))).to_have_attribute("aria-live", "polite")
    # Her game is over: no Resign nor Undo, a way out, and the others' progress live.
    await expect(alice.locator(tid("resign"))).to_be_hidden()
    await expect(alice.locator(tid("undo"))).to_be_hidden()
    await expect(alice.locator(tid("leave-game"))).to_be_visible()
    await expect(alice.locator(tid("game-status-next"))).to_contain_text("follow them")
    bob_row = bob.locator(f'{tid("progress-row")}[data-player-id="{alice_id}"]')
    await expect(bob_row).to_have_attribute("data-place", "1")
    await expect(bob_row.locator(tid("status"))).to_have_text("won · 1st")
    assert await order_of(bob, "progress-row") == [alice_id, bob_id]
    await alice.screenshot(path=str(SCREENSHOTS / "race-won-first.png"), full_page=True)

    await record_texts(bob, "game-status-text")
    await play(bob, games["bob"], line[-1])
    second = bob.locator(tid("game-status-text"))
    await expect(second).to_have_text("You finished 2nd of 2: all 52 cards are home!")
    for page in (alice, bob):
        await expect(page.locator(tid("results"))).to_be_visible()
        await expect(page.locator(tid("result-row"))).to_have_count(2)
        assert await order_of(page, "result-row") == [alice_id, bob_id]
        assert await order_of(page, "progress-row") == [alice_id, bob_id]
    rows = alice.locator(tid("result-row"))
    await expect(rows.nth(0)).to_have_attribute("data-rank", "1")
    await expect(rows.nth(1)).to_have_attribute("data-rank", "2")
    # The second finisher never read "You won".
    said = await recorded(bob, "game-status-text")
    assert said and not any("You won" in text for text in said), said

    # Par: the length of the solver's line for this deal, certified before it was dealt.
    outcome = solve_deal("canfield", seed, budget_s=5.0)
    assert outcome.verdict is Verdict.WINNABLE and outcome.moves is not None
    par = len(outcome.moves)
    for page in (alice, bob):
        await expect(page.locator(tid("par"))).to_have_text(
            f"Par: {par} moves — the solver's winning line"
        )
    await expect(alice.locator(tid("seed"))).to_have_text(str(seed))
    await bob.screenshot(path=str(SCREENSHOTS / "results-par.png"), full_page=True)
    assert opened.errors == []


async def test_stuck_where_undo_is_allowed_offers_undo_and_resign(
    pages: Pages, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = "british-canister"
    seed, line = _line_to_stuck(variant)
    deal_seed(monkeypatch, seed)
    alice = await pages.open()
    await enter_name(alice, "Alice")
    code = await create_room(alice, variant, countdown=0)
    bob = await make_client("Bob")
    await bob.join(code)
    await expect(alice.locator(tid("member"))).to_have_count(2)
    bob_id = bob.player_id
    await alice.click(tid("start"))
    await expect(alice.locator(f"{AREA} {tid('board')}")).to_have_attribute("data-variant", variant)
    await record_texts(alice, "game-status-text")

    game = new_game(variant, seed)
    await play_line(alice, game, line)
    assert game.status.value == "stuck"
    status = alice.locator(tid("game-status-text"))
    await expect(status).to_have_text(STUCK_UNDO)
    await expect(alice.locator(tid("game-status"))).to_have_attribute("data-over", "false")
    mine = alice.locator(f"{tid('progress-row')}.mine")
    await expect(mine).to_have_attribute("data-status", "stuck")
    # Undo and Resign stay, and work: the game is not over.
    await expect(alice.locator(tid("undo"))).to_be_enabled()
    await expect(alice.locator(tid("resign"))).to_be_visible()
    await expect(alice.locator(tid("resign"))).to_be_enabled()
    await expect(alice.locator(tid("leave-game"))).to_be_hidden()
    await alice.screenshot(path=str(SCREENSHOTS / "race-stuck-undo.png"), full_page=True)

    last = parse_move(line[-1])
    moved = card_name(replay(variant, seed, line[:-1]).tableau[last.src_index][-1])
    await play(alice, game, "u")
    await expect(alice.locator(card(f"t{last.src_index + 1}", moved))).to_be_visible()
    await expect(mine).to_have_attribute("data-status", "playing")
    await expect(status).to_have_text("")
    # And it plays on: another move (the same one if it is the only one) is taken.
    legal = [format_move(m) for m in game.legal_moves()]
    other = next((m for m in legal if m != line[-1]), line[-1])
    await play(alice, game, other)

    # Resigning ends her game: Resign goes (the race goes on for Bob), and she may leave.
    for _ in range(2):
        await alice.click(tid("resign"))
    await expect(status).to_have_text("You resigned.")
    await expect(alice.locator(tid("resign"))).to_be_hidden()
    await expect(alice.locator(tid("undo"))).to_be_hidden()
    # Bob has banked nothing and Alice reached her count first (or banked more).
    await expect(alice.locator(tid("game-status-next"))).to_contain_text(
        "Your standing so far: 1st of 2."
    )
    leave = alice.locator(tid("leave-game"))
    await expect(leave).to_be_visible()
    await expect(leave).to_have_text("Leave room")
    await bob.move(line[0])  # she follows the others' progress live
    bob_row = alice.locator(f'{tid("progress-row")}[data-player-id="{bob_id}"]')
    await expect(bob_row).to_have_attribute("data-moves", "1")
    assert not any(OVER in text for text in await recorded(alice, "game-status-text"))
    assert STUCK_UNDO in await recorded(alice, "game-status-text")
    await leave.click()
    await expect(alice.locator(tid("home"))).to_be_visible()
    await bob.resign()
    over = await bob.next_event("race_over", timeout=TIMEOUT)
    statuses = {r["name"]: r["status"] for r in over["results"]}
    assert statuses == {"Alice": "resigned", "Bob": "resigned"}


async def test_stuck_without_undo_ends_the_game_at_once(
    pages: Pages, monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = "british-canister"
    seed, line = _line_to_stuck(variant)
    deal_seed(monkeypatch, seed)
    page = await pages.open()
    await enter_name(page, "Una")
    await create_room(page, variant, countdown=0, undo=False)
    await page.click(tid("start"))
    await expect(page.locator(f"{AREA} {tid('board')}")).to_have_attribute("data-variant", variant)
    await expect(page.locator(tid("undo"))).to_be_hidden()
    await record_texts(page, "game-status-text")
    await play_line(page, new_game(variant, seed), line)
    await expect(page.locator(tid("game-status-text"))).to_have_text(
        "No legal move is left: your game is over."
    )
    await expect(page.locator(tid("results"))).to_be_visible()
    await expect(page.locator(tid("result-row"))).to_contain_text("stuck")
    await expect(page.locator(tid("resign"))).to_be_hidden()
    assert STUCK_UNDO not in await recorded(page, "game-status-text")
    await expect(page.locator(tid("par"))).to_have_count(0)  # not a winnable room


async def test_a_first_to_finish_race_ends_on_its_own(
    pages: Pages, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    slow = await pages.open()
    await enter_name(slow, "Slow")
    await set_finish(slow, "first", 2)
    code = await create_room(slow, "canfield", countdown=0)
    finish = slow.locator(tid("room-finish"))
    await expect(finish).to_have_attribute("data-finish", "first")
    await expect(finish).to_have_attribute("data-grace", "2")
    await expect(finish).to_contain_text("2 s after the first to finish")
    quick = await make_client("Quick")
    await quick.join(code)
    await expect(slow.locator(tid("member"))).to_have_count(2)
    slow_id = await player_id(slow)
    await slow.click(tid("start"))
    await expect(slow.locator(f"{AREA} {tid('board')}")).to_be_visible()
    await expect(slow.locator(tid("race-finish"))).to_contain_text("2 s after the first to finish")
    await quick.next_event("race_started", timeout=TIMEOUT)
    await record_texts(slow, "finish-left")
    await record_texts(slow, "finish-left-note")
    for move in line:
        await quick.move(move)

    # The race ends by itself, finish_grace seconds after the win: Slow did not finish
    # (not "out of time": the time limit is far).
    await expect(slow.locator(tid("results"))).to_be_visible()
    await expect(slow.locator(tid("game-status-text"))).to_have_text(
        "Not finished: the first to finish won, and the race is over."
    )
    await expect(slow.locator(tid("game-status-next"))).to_have_text("You placed 2nd of 2.")
    assert await order_of(slow, "result-row") == [quick.player_id, slow_id]
    statuses = slow.locator(f"{tid('result-row')} td:nth-child(6)")
    await expect(statuses).to_have_text(["won", "not finished"])
    # Meanwhile the page counted the race's last seconds down.
    left = await recorded(slow, "finish-left")
    assert left and all("the race ends in" in text for text in left)
    assert all(text.startswith("Quick finished:") for text in left), left  # names who
    assert any(re.search(r"0:0[12]$", text) for text in left), left
    notes = await recorded(slow, "finish-left-note")
    assert any(
        re.fullmatch(r"Quick finished: the race ends in (2 seconds|1 second)\.", n) for n in notes
    ), notes
    await expect(slow.locator(tid("finish-left"))).to_be_hidden()

    # After the race the host gives the next one a minute after the first win.
    await expect(slow.locator(tid("finish-form"))).to_be_visible()
    await slow.fill(tid("finish-mode-grace"), "60")
    await slow.press(tid("finish-mode-grace"), "Enter")
    await slow.click(tid("rematch"))
    await expect(slow.locator(tid("room-finish"))).to_have_attribute("data-grace", "60")
    await quick.ready()
    await quick.next_event("race_started", timeout=TIMEOUT)
    await expect(slow.locator(f"{AREA} {tid('board')}")).to_be_visible()
    for move in line:
        await quick.move(move)
    await expect(slow.locator(tid("finish-left"))).to_be_visible()
    # A page that comes back during the grace reads the time left from the snapshot.
    await slow.reload()
    ending = slow.locator(tid("finish-left"))
    await expect(ending).to_be_visible()
    # (not the 15 minutes of the time limit)
    left_ms = int(await ending.get_attribute("data-left-ms") or 0)
    assert 0 < left_ms <= 60_000
    await expect(slow.locator(tid("finish-left-time"))).to_have_text(re.compile(r"^(0:\d\d|1:00)$"))
    for _ in range(2):
        await slow.click(tid("resign"))
    await expect(slow.locator(tid("results"))).to_be_visible()
    assert await order_of(slow, "result-row") == [quick.player_id, slow_id]


async def test_the_lobby_offers_canfield_first_and_remembers_the_game(pages: Pages) -> None:
    page = await pages.open()
    await enter_name(page, "Gil")
    variant = page.locator(tid("variant"))
    await expect(variant).to_have_value("canfield")
    about = page.locator(tid("variant-description"))
    await expect(about).to_contain_text("three cards at a time")
    await expect(variant).to_have_attribute("aria-describedby", "variant-description")
    await expect(page.get_by_label("Winnable deals only")).to_be_checked()
    await expect(page.locator(tid("finish-setting"))).to_have_value("everyone")
    await expect(page.locator(tid("finish-setting"))).to_have_accessible_name(
        re.compile(r"^How the race ends")
    )
    await page.screenshot(path=str(SCREENSHOTS / "home-default-game.png"), full_page=True)

    # The help panel: the game's rules in plain words; Escape closes it.
    how = page.locator(tid("how-to-play"))
    await how.click()
    panel = page.locator(tid("rules-panel"))
    await expect(panel).to_be_visible()
    await expect(page.get_by_role("dialog")).to_have_accessible_name(
        "How to play Canfield (Solo Cards)"
    )
    await expect(panel).to_contain_text("An emptied tableau pile is filled at once")
    await expect(panel).to_contain_text("undo a move or resign")
    await page.screenshot(path=str(SCREENSHOTS / "rules-canfield.png"))
    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()
    await expect(how).to_be_focused()

    await variant.select_option("british-canister")
    await expect(about).to_contain_text("almost never winnable")
    await expect(about).to_contain_text("races are about cards banked")
    await expect(page.locator(tid("winnable-label"))).to_be_hidden()
    await how.click()
    await expect(panel).to_contain_text("An empty pile takes only a King.")
    await page.click(tid("rules-close"))
    await expect(panel).to_be_hidden()

    await page.reload()
    await expect(page.locator(tid("home"))).to_be_visible()
    await expect(variant).to_have_value("british-canister")
    await expect(about).to_contain_text("almost never winnable")
    await page.click(tid("create-room"))
    await expect(page.locator(tid("room-variant"))).to_have_text("British Canister")
    await expect(page.locator(tid("room-winnable"))).to_contain_text("almost never winnable")
    await page.click(tid("leave"))
    await variant.select_option("rainbow-canfield")
    await page.reload()
    await expect(page.locator(tid("home"))).to_be_visible()
    await expect(variant).to_have_value("rainbow-canfield")
    await expect(page.locator(tid("winnable-label"))).to_be_visible()

    # A browser that never chose plays Canfield.
    other = await pages.open()
    await enter_name(other, "Hal")
    await expect(other.locator(tid("variant"))).to_have_value("canfield")


async def test_the_host_changes_how_the_race_ends_and_everyone_sees_it(
    browser: Browser, start_server: ServerFactory
) -> None:
    # The server deals winnable deals by default: the unchecked box asks for any deal.
    server = await start_server(winnable_default=True, deal_pool_size=0)
    opened = Pages(browser, server)
    host = await opened.open()
    await enter_name(host, "Host")
    await host.set_checked(tid("winnable-setting"), False)
    await set_finish(host, "first", 45)
    await expect(host.locator(tid("finish-grace"))).to_have_value("45")
    await expect(host.locator(tid("finish-grace"))).to_have_accessible_name(
        "Seconds after the first win"
    )
    code = await create_room(host, "canfield")
    guest = await opened.open(f"/r/{code}")
    await enter_name(guest, "Guest")
    for page in (host, guest):
        await expect(page.locator(tid("room-winnable"))).to_have_attribute("data-winnable", "false")
        finish = page.locator(tid("room-finish"))
        await expect(finish).to_have_attribute("data-finish", "first")
        await expect(finish).to_have_text(
            "The race ends 45 s after the first to finish (or once everyone is done)"
        )
    # Only the host has the form to change it.
    await expect(guest.locator(tid("finish-form"))).to_be_hidden()
    assert await guest.locator(f"{tid('room')} {tid('finish-form')}").count() == 0
    await expect(host.locator(f"{tid('room')} {tid('finish-form')}")).to_be_visible()

    await host.select_option(tid("finish-mode"), "everyone")
    for page in (host, guest):
        await expect(page.locator(tid("room-finish"))).to_have_attribute("data-finish", "everyone")
        await expect(page.locator(tid("room-finish"))).to_have_text(
            "The race ends when everyone has finished (or at the time limit)"
        )
    await host.select_option(tid("finish-mode"), "first")
    await host.fill(tid("finish-mode-grace"), "10")
    await host.press(tid("finish-mode-grace"), "Enter")
    finish = guest.locator(tid("room-finish"))
    await expect(finish).to_have_attribute("data-finish", "first")
    await expect(finish).to_have_attribute("data-grace", "10")
    # The form takes no grace longer than the race.
    await host.fill(tid("finish-mode-grace"), "5000")
    await host.click(tid("finish-save"))
    assert not await host.locator(tid("finish-mode-grace")).evaluate(
        "(node) => node.validity.valid"
    )
    await expect(finish).to_have_attribute("data-grace", "10")
    await guest.screenshot(path=str(SCREENSHOTS / "lobby-finish.png"), full_page=True)
    assert opened.errors == []


async def test_players_level_on_cards_stand_in_the_same_order_after_a_reload(
    pages: Pages, server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Players level on cards banked stand by who reached the count first, as the results
    rank them. A page loaded during the race knew only each player's last move's time:
    Alice, there first but drawing since, stood behind Bob after a reload."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    counts = [replay("canfield", seed, line[:k]).banked for k in range(len(line) + 1)]
    reach = next(k for k in range(1, len(counts)) if counts[k] > max(counts[0], counts[k - 1]))
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0, winnable=False)
    await bob.join(room["code"])
    carol = await pages.open(f"/r/{room['code']}")
    await enter_name(carol, "Carol")
    await expect(carol.locator(tid("member"))).to_have_count(3)
    await alice.start()
    for client in (alice, bob):
        await client.next_event("race_started", timeout=TIMEOUT)
    for text in line[:reach]:
        await alice.move(text)
    await asyncio.sleep(0.3)
    for text in line[:reach]:
        await bob.move(text)
    await asyncio.sleep(0.3)
    await alice.move("d")  # a draw and its undo: Alice's last move is now the latest
    await alice.move("u")
    rows = tid("progress-row")
    alice_row = carol.locator(f'{rows}[data-player-id="{alice.player_id}"]')
    bob_row = carol.locator(f'{rows}[data-player-id="{bob.player_id}"]')
    await expect(alice_row).to_have_attribute("data-moves", str(reach + 2))
    await expect(bob_row).to_have_attribute("data-moves", str(reach))
    carol_id = await player_id(carol)
    assert await order_of(carol, "progress-row") == [alice.player_id, bob.player_id, carol_id]

    await carol.reload()
    await expect(alice_row).to_have_attribute("data-moves", str(reach + 2))
    assert await order_of(carol, "progress-row") == [alice.player_id, bob.player_id, carol_id]
