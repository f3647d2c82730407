"""The browser page (client/web/) in real Chromium, driven by Playwright against a live server.

Screenshots of the lobby, a board of each of the four games (desktop and phone width),
the spectator view and the results are saved into ``tests/artifacts/screenshots/``
(gitignored) for a person to look at.

The module is skipped when ``/usr/bin/chromium`` is absent.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer

from solrace.engine import (
    IllegalMove,
    card_name,
    delta_view,
    format_move,
    new_game,
    parse_move,
    player_view,
    replay,
)
from solrace.protocol import apply_delta
from solrace.server import commands as server_commands

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium", allow_module_level=True)

from playwright.async_api import Browser, Page, async_playwright, expect  # noqa: E402

SCREENSHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1200, "height": 900}
PHONE = {"width": 390, "height": 844}
WAIT_MS = TIMEOUT * 1000
expect.set_options(timeout=WAIT_MS)
VARIANTS = ("british-canister", "american-canister", "rainbow-canfield", "canfield")
BIG = 2**63  # above 2**53: the page must show the seed's exact digits


def tid(name: str) -> str:
    """A selector for a data-testid."""
    return f'[data-testid="{name}"]'


def card(pile: str, name: str) -> str:
    """A selector for a card in a pile of the player's board."""
    return f'[data-testid="player-area"] [data-pile="{pile}"] [data-card="{name}"]'


def find_seed(variant: str, wanted: Any) -> int:
    """The first seed from 2**63 whose deal's legal moves satisfy ``wanted``."""
    for seed in range(BIG, BIG + 5000):
        moves = [format_move(m) for m in new_game(variant, seed).legal_moves()]
        if wanted(moves):
            return seed
    raise AssertionError(f"no {variant} seed found")


def race_deal(variant: str) -> tuple[int, str, str]:
    """A seed with a tableau move and a foundation move on other piles, after which play goes on."""
    for seed in range(BIG, BIG + 5000):
        game = new_game(variant, seed)
        legal = [format_move(m) for m in game.legal_moves()]
        homes = [m for m in legal if m.endswith("-f")]
        for home in homes:
            pile = home.split("-")[0]
            for move in legal:
                if move.count("t") != 2 or pile in move.split("-"):
                    continue
                after = new_game(variant, seed)
                after.apply(parse_move(move))
                after.apply(parse_move(home))
                if after.status.value == "playing":
                    return seed, move, home
    raise AssertionError(f"no {variant} seed found")


def force_seed(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Make the server deal ``seed`` for the next race."""
    monkeypatch.setattr(server_commands.secrets, "randbits", lambda _bits: seed)


@pytest.fixture
def backend_kind() -> str:
    """The page does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium for the test."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        await launched.close()


class Pages:
    """Opens pages, each in its own browser context (its own localStorage, so its own player)."""

    def __init__(self, browser: Browser, server: RunningServer) -> None:
        self.browser = browser
        self.base = f"http://127.0.0.1:{server.server.port}"
        self.errors: list[str] = []

    async def open(
        self, path: str = "/", viewport: dict[str, int] = DESKTOP, *, touch: bool = False
    ) -> Page:
        context = await self.browser.new_context(
            viewport=viewport,  # type: ignore[arg-type]
            has_touch=touch,
            is_mobile=touch,
        )
        context.set_default_timeout(WAIT_MS)
        page = await context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        await page.goto(self.base + path)
        return page


@pytest.fixture
async def pages(browser: Browser, server: RunningServer) -> AsyncIterator[Pages]:
    """Pages on the test's server; the test fails if a page raised a script error."""
    opened = Pages(browser, server)
    yield opened
    assert opened.errors == []


async def enter_name(page: Page, name: str) -> None:
    await expect(page.locator(tid("name-screen"))).to_be_visible()
    await page.fill(tid("name-input"), name)
    await page.click(tid("name-submit"))
    await expect(page.locator(tid("player-name"))).to_have_text(name)


async def create_room(page: Page, variant: str, **settings: Any) -> str:
    await expect(page.locator(tid("home"))).to_be_visible()
    await page.select_option(tid("variant"), variant)
    if "max_players" in settings:
        await page.fill(tid("max-players"), str(settings["max_players"]))
    if "countdown" in settings:
        await page.fill(tid("countdown-setting"), str(settings["countdown"]))
    if "time_limit" in settings:
        await page.select_option(tid("time-limit"), str(settings["time_limit"]))
    if "undo" in settings:
        await page.set_checked(tid("undo-setting"), settings["undo"])
    if "spectators" in settings:  # live, delayed, after or off
        await page.select_option(tid("spectators"), settings["spectators"])
    if "spectator_delay" in settings:
        await page.fill(tid("spectator-delay"), str(settings["spectator_delay"]))
    await page.click(tid("create-room"))
    await expect(page.locator(tid("room"))).to_be_visible()
    code = (await page.text_content(tid("room-code"))) or ""
    assert len(code) == 8
    return code


async def steady_box(page: Page, selector: str) -> dict[str, float]:
    """Where ``selector`` lies once it has stopped moving (a card may still be sliding)."""
    locator = page.locator(selector)
    box = await locator.bounding_box()
    for _ in range(int(WAIT_MS // 40)):
        await page.wait_for_timeout(40)
        again = await locator.bounding_box()
        if box is not None and again == box:
            return dict(box)
        box = again
    raise AssertionError(f"{selector} never stopped moving")


async def drag(page: Page, source: str, target: str, *, check: Any = None) -> None:
    """Drag the element at ``source`` onto ``target`` with the mouse, in small steps."""
    src = await steady_box(page, source)
    dst = await steady_box(page, target)
    x0, y0 = src["x"] + src["width"] / 2, src["y"] + min(5, src["height"] / 2)  # its top strip
    x1, y1 = dst["x"] + dst["width"] / 2, dst["y"] + min(20, dst["height"] / 2)
    await page.mouse.move(x0, y0)
    await page.mouse.down()
    await page.mouse.move(x0 + (x1 - x0) / 3, y0 + (y1 - y0) / 3, steps=4)
    if check is not None:
        await check()
    await page.mouse.move(x1, y1, steps=6)
    await page.mouse.up()


async def progress_of(page: Page, player_id: str) -> dict[str, str]:
    row = page.locator(f'{tid("progress-row")}[data-player-id="{player_id}"]')
    return {
        "banked": await row.get_attribute("data-banked") or "",
        "moves": await row.get_attribute("data-moves") or "",
        "status": await row.get_attribute("data-status") or "",
    }


async def player_id(page: Page) -> str:
    member = page.locator(f"{tid('member')}:has(.tag.you)")
    value = await member.get_attribute("data-player-id")
    assert value
    return value


def illegal_tableau_move(variant: str, seed: int, played: list[str]) -> tuple[str, str, str, str]:
    """A top card and a tableau pile it may not go on: (source, card, target, reason)."""
    game = replay(variant, seed, played)
    for i, pile in enumerate(game.tableau, start=1):
        for j, target in enumerate(game.tableau, start=1):
            if i == j or not pile or not target:
                continue
            try:
                replay(variant, seed, played).apply(parse_move(f"t{i}-t{j}"))
            except IllegalMove as error:
                return f"t{i}", card_name(pile[-1]), f"t{j}", error.reason.value
    raise AssertionError("every top card fits everywhere")


async def test_race_two_players_and_a_spectator(
    pages: Pages, monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = "british-canister"
    seed, tableau_move, to_foundation = race_deal(variant)
    force_seed(monkeypatch, seed)
    game = new_game(variant, seed)
    src, dst = tableau_move.split("-")
    ace_pile = to_foundation.split("-")[0]
    moved_name = card_name(game.tableau[int(src[1:]) - 1][-1])
    ace_name = card_name(game.tableau[int(ace_pile[1:]) - 1][-1])

    alice = await pages.open()
    await enter_name(alice, "Alice")
    await alice.screenshot(path=str(SCREENSHOTS / "home.png"), full_page=True)
    code = await create_room(alice, variant, countdown=1, spectators="live")
    link = await alice.input_value(tid("room-link"))
    assert link.endswith(f"/r/{code}")

    bob = await pages.open(f"/r/{code}")
    await expect(bob.locator(tid("name-room"))).to_have_text(f"Then you join room {code}.")
    await enter_name(bob, "Bob")
    await expect(bob.locator(tid("room-code"))).to_have_text(code)

    carol = await pages.open(f"/r/{code}?as=spectator")
    await expect(carol.locator(tid("name-room"))).to_have_text(f"Then you watch room {code}.")
    await enter_name(carol, "Carol")
    await expect(carol.locator(tid("room-code"))).to_have_text(code)

    members = alice.locator(tid("member"))
    await expect(members).to_have_count(3)
    alice_id = await player_id(alice)
    bob_id = await player_id(bob)
    host = alice.locator(f'{tid("member")}[data-host="true"]')
    await expect(host).to_have_attribute("data-player-id", alice_id)
    spectator = alice.locator(f'{tid("member")}[data-role="spectator"]')
    await expect(spectator).to_contain_text("Carol")
    await expect(bob.locator(tid("start"))).to_be_hidden()

    await bob.click(tid("ready"))
    await expect(alice.locator(f'{tid("member")}[data-player-id="{bob_id}"]')).to_have_attribute(
        "data-ready", "true"
    )
    await alice.screenshot(path=str(SCREENSHOTS / "lobby.png"), full_page=True)

    await alice.click(tid("start"))
    await expect(bob.locator(tid("countdown"))).to_be_visible()
    for page in (alice, bob):
        await expect(page.locator(f"{tid('player-area')} {tid('board')}")).to_be_visible()
    await expect(carol.locator(tid("spectator-board"))).to_have_count(2)
    await expect(alice.locator(f'{tid("player-area")} [data-pile^="t"]')).to_have_count(8)
    await expect(alice.locator(f'{tid("player-area")} [data-pile^="f"]')).to_have_count(4)
    await expect(alice.locator(tid("progress-row"))).to_have_count(2)

    # A legal drag: the target lights up while the card is carried, then the card lands.
    async def target_lit() -> None:
        pile = alice.locator(f'{tid("player-area")} [data-pile="{dst}"]')
        await expect(pile).to_have_class(r"pile tableau target")
        await alice.screenshot(path=str(SCREENSHOTS / "drag.png"))

    await drag(
        alice, card(src, moved_name), f'{tid("player-area")} [data-pile="{dst}"]', check=target_lit
    )
    await expect(alice.locator(card(dst, moved_name))).to_be_visible()
    await expect(alice.locator(card(src, moved_name))).to_have_count(0)
    await expect(
        bob.locator(f'{tid("progress-row")}[data-player-id="{alice_id}"]')
    ).to_have_attribute("data-moves", "1")

    # A double-click sends the Ace home.
    await alice.dblclick(card(ace_pile, ace_name))
    await expect(
        alice.locator(f'{tid("player-area")} [data-pile^="f"] [data-card="{ace_name}"]')
    ).to_be_visible()
    row = bob.locator(f'{tid("progress-row")}[data-player-id="{alice_id}"]')
    await expect(row).to_have_attribute("data-banked", "1")
    await expect(row).to_have_attribute("data-moves", "2")
    await expect(row.locator(tid("banked"))).to_have_text("1/52")

    # The spectator sees both boards, Alice's with her moves.
    alice_board = carol.locator(f'{tid("spectator-board")}[data-player-id="{alice_id}"]')
    await expect(alice_board.locator(f'[data-pile^="f"] [data-card="{ace_name}"]')).to_be_visible()
    await expect(
        alice_board.locator(f'[data-pile="{dst}"] [data-card="{moved_name}"]')
    ).to_be_visible()
    bob_board = carol.locator(f'{tid("spectator-board")}[data-player-id="{bob_id}"]')
    await expect(
        bob_board.locator(f'[data-pile="{ace_pile}"] [data-card="{ace_name}"]')
    ).to_be_visible()
    await carol.screenshot(path=str(SCREENSHOTS / "spectator.png"), full_page=True)
    await alice.screenshot(path=str(SCREENSHOTS / "race-player.png"), full_page=True)

    # An illegal drop flies back and shows the server's reason.
    played = [tableau_move, to_foundation]
    bad_src, bad_card, bad_dst, reason = illegal_tableau_move(variant, seed, played)
    await drag(alice, card(bad_src, bad_card), f'{tid("player-area")} [data-pile="{bad_dst}"]')
    error = alice.locator(tid("error"))
    await expect(error).to_be_visible()
    await expect(error).to_have_attribute("data-reason", reason)
    # In words: the cards by name and the rule, never the code or the notation.
    await expect(alice.locator(tid("error-message"))).to_contain_text("cannot go on the")
    await expect(alice.locator(tid("error-message"))).not_to_contain_text(reason)
    await expect(alice.locator(tid("drag-layer"))).to_have_count(0)
    await expect(alice.locator(card(bad_src, bad_card))).to_be_visible()
    await expect(alice.locator(f"{card(bad_src, bad_card)}.lifted")).to_have_count(0)
    assert (await progress_of(bob, alice_id))["moves"] == "2"

    # Undo takes the Ace back out of the foundation.
    await alice.click(tid("undo"))
    await expect(alice.locator(card(ace_pile, ace_name))).to_be_visible()
    await expect(row).to_have_attribute("data-banked", "0")
    game = replay(variant, seed, [*played, "u"])

    # A card that does not go home is refused on a double-click too, with the reason.
    await alice.click(tid("error"))
    await expect(alice.locator(tid("error"))).to_be_hidden()
    stuck_pile, stuck_card = next(
        (f"t{i}", card_name(p[-1]))
        for i, p in enumerate(game.tableau, start=1)
        if p and card_name(p[-1])[0] != "A"
    )
    await alice.dblclick(card(stuck_pile, stuck_card))
    await expect(alice.locator(tid("error"))).to_have_attribute(
        "data-reason", "foundation_needs_base"
    )

    # A spectator who joins by code in the middle of the race sees the boards as they are.
    dave = await pages.open()
    await enter_name(dave, "Dave")
    await dave.fill(tid("join-code"), code.lower())
    await dave.check(tid("join-spectator"))
    await dave.click(tid("join-room"))
    await expect(dave.locator(tid("spectator-board"))).to_have_count(2)
    late = dave.locator(f'{tid("spectator-board")}[data-player-id="{alice_id}"]')
    await expect(late.locator(f'[data-pile="{dst}"] [data-card="{moved_name}"]')).to_be_visible()
    await expect(late.locator(f'[data-pile="{ace_pile}"] [data-card="{ace_name}"]')).to_be_visible()
    await expect(dave.locator(tid("player-area"))).to_be_hidden()

    # Both resign; everyone sees the results with the seed revealed.
    for page in (alice, bob):
        await page.click(tid("resign"))
        await page.click(tid("resign"))
    for page in (alice, bob, carol, dave):
        await expect(page.locator(tid("results"))).to_be_visible()
        await expect(page.locator(tid("result-row"))).to_have_count(2)
        await expect(page.locator(tid("seed"))).to_have_text(str(seed))
    await alice.screenshot(path=str(SCREENSHOTS / "results.png"), full_page=True)
    await expect(carol.locator(tid("rematch"))).to_be_hidden()

    # A rematch brings the room back to its lobby, with the last results kept.
    await bob.click(tid("rematch"))
    for page in (alice, bob, carol):
        await expect(page.locator(tid("room"))).to_be_visible()
        await expect(page.locator(tid("last-results"))).to_be_visible()
    await expect(alice.locator(f'{tid("member")}[data-player-id="{bob_id}"]')).to_have_attribute(
        "data-ready", "true"
    )


def rainbow_deal() -> tuple[int, str, str]:
    """A Rainbow Canfield seed where a pile of two cards can move after one first move."""
    variant = "rainbow-canfield"
    for seed in range(BIG, BIG + 5000):
        for first in new_game(variant, seed).legal_moves():
            text = format_move(first)
            if text.count("t") != 2:
                continue
            game = new_game(variant, seed)
            game.apply(first)
            for second in game.legal_moves():
                if second.count >= 2:
                    return seed, text, format_move(second)
    raise AssertionError("no rainbow-canfield seed found")


async def start_alone(page: Page, variant: str) -> None:
    """Create a room of ``variant`` with no countdown and start its race."""
    await create_room(page, variant, countdown=0)
    await page.click(tid("start"))
    board = page.locator(f"{tid('player-area')} {tid('board')}")
    await expect(board).to_have_attribute("data-variant", variant)


async def check_layout(page: Page, variant: str, seed: int) -> None:
    """Every pile of the deal is on the page, as RULES.md lays it out."""
    game = new_game(variant, seed)
    area = tid("player-area")
    await expect(page.locator(f'{area} [data-pile^="t"]')).to_have_count(len(game.tableau))
    await expect(page.locator(f'{area} [data-pile^="f"]')).to_have_count(4)
    for i, pile in enumerate(game.tableau, start=1):
        await expect(page.locator(f'{area} [data-pile="t{i}"] [data-card]')).to_have_count(
            len(pile)
        )
        await expect(page.locator(card(f"t{i}", card_name(pile[-1])))).to_be_visible()
    for i, foundation in enumerate(game.foundations, start=1):
        if foundation:
            await expect(page.locator(card(f"f{i}", card_name(foundation[-1])))).to_be_visible()
    if game.has_stock:
        for pile_id in ("r", "s", "w"):
            await expect(page.locator(f'{area} [data-pile="{pile_id}"]')).to_be_visible()
        await expect(page.locator(card("r", card_name(game.reserve[-1])))).to_be_visible()
        await expect(page.locator(tid("count-r"))).to_have_text(str(len(game.reserve)))
        await expect(page.locator(tid("count-s"))).to_have_text(str(len(game.stock)))
    else:
        await expect(page.locator(f'{area} [data-pile="s"]')).to_have_count(0)
    width = await page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= await page.evaluate("window.innerWidth"), f"{variant} scrolls sideways"


async def finish_alone(page: Page) -> None:
    """Resign (unless the race is over already), see the results, leave the room."""
    if not await page.locator(tid("results")).is_visible():
        await page.click(tid("resign"))
        await page.click(tid("resign"))
    await expect(page.locator(tid("results"))).to_be_visible()
    await page.click(tid("leave-race"))
    await expect(page.locator(tid("home"))).to_be_visible()


async def test_boards_of_the_four_games(pages: Pages, monkeypatch: pytest.MonkeyPatch) -> None:
    page = await pages.open()
    await enter_name(page, "Solo")
    area = tid("player-area")

    # British Canister: the race deal (its moves are played in the race test).
    seed, _, _ = race_deal("british-canister")
    force_seed(monkeypatch, seed)
    await start_alone(page, "british-canister")
    await check_layout(page, "british-canister", seed)
    await page.screenshot(path=str(SCREENSHOTS / "board-british-canister.png"), full_page=True)
    await finish_alone(page)

    # American Canister: dragging a card inside a run carries the cards above it.
    seed = find_seed("american-canister", lambda moves: any("x" in m for m in moves))
    force_seed(monkeypatch, seed)
    game = new_game("american-canister", seed)
    run_move = next(format_move(m) for m in game.legal_moves() if m.count >= 2)
    move = parse_move(run_move)
    pile = game.tableau[move.src_index]
    carried = [card_name(c) for c in pile[-move.count :]]
    src, dst = f"t{move.src_index + 1}", f"t{(move.dst_index or 0) + 1}"
    await start_alone(page, "american-canister")
    # The new deal lies where it is dealt: no card flies in from the last race's board.
    sliding = "document.getAnimations().filter(a => a.effect?.target?.matches?.('.card')).length"
    assert await page.evaluate(sliding) == 0
    await check_layout(page, "american-canister", seed)
    await drag(page, card(src, carried[0]), f'{area} [data-pile="{dst}"]')
    for name in carried:
        await expect(page.locator(card(dst, name))).to_be_visible()
        await expect(page.locator(card(src, name))).to_have_count(0)
    await page.screenshot(path=str(SCREENSHOTS / "board-american-canister.png"), full_page=True)
    await finish_alone(page)

    # Rainbow Canfield: a pile moves whole, whichever of its cards is dragged; the stock
    # deals one card.
    seed, first, second = rainbow_deal()
    force_seed(monkeypatch, seed)
    game = new_game("rainbow-canfield", seed)
    await start_alone(page, "rainbow-canfield")
    await check_layout(page, "rainbow-canfield", seed)
    one = parse_move(first)
    moved = card_name(game.tableau[one.src_index][-1])
    await drag(
        page,
        card(f"t{one.src_index + 1}", moved),
        f'{area} [data-pile="t{(one.dst_index or 0) + 1}"]',
    )
    game.apply(one)
    two = parse_move(second)
    pile = [card_name(c) for c in game.tableau[two.src_index]]
    src, dst = f"t{two.src_index + 1}", f"t{(two.dst_index or 0) + 1}"
    await expect(page.locator(card(src, pile[-1]))).to_be_visible()
    await drag(page, card(src, pile[-1]), f'{area} [data-pile="{dst}"]')
    for name in pile:
        await expect(page.locator(card(dst, name))).to_be_visible()
    await expect(page.locator(f'{area} [data-pile="{src}"] [data-card]')).to_have_count(0)
    await page.click(f'{area} [data-pile="s"]')
    await expect(page.locator(tid("count-s"))).to_have_text(str(len(game.stock) - 1))
    await expect(page.locator(f'{area} [data-pile="w"] [data-card]')).to_have_count(1)
    await page.screenshot(path=str(SCREENSHOTS / "board-rainbow-canfield.png"), full_page=True)
    await finish_alone(page)

    # Canfield: the stock deals three, and a click on the empty stock redeals.
    seed = find_seed("canfield", lambda moves: "d" in moves)
    force_seed(monkeypatch, seed)
    game = new_game("canfield", seed)
    stock = len(game.stock)
    await start_alone(page, "canfield")
    await check_layout(page, "canfield", seed)
    left = stock
    while left:
        await page.click(f'{area} [data-pile="s"]')
        left -= min(3, left)
        if left:
            await expect(page.locator(tid("count-s"))).to_have_text(str(left))
        else:
            await expect(page.locator(tid("count-s"))).to_have_count(0)
    await expect(page.locator(f'{area} [data-pile="w"] [data-card]')).to_have_count(stock % 3 or 3)
    await expect(page.locator(tid("count-w"))).to_have_text(str(stock))
    await page.click(f'{area} [data-pile="s"]')  # the redeal
    await expect(page.locator(tid("count-s"))).to_have_text(str(stock))
    await expect(page.locator(f'{area} [data-pile="w"] [data-card]')).to_have_count(0)
    await page.click(f'{area} [data-pile="s"]')
    await expect(page.locator(f'{area} [data-pile="w"] [data-card]')).to_have_count(3)
    await page.screenshot(path=str(SCREENSHOTS / "board-canfield.png"), full_page=True)
    await finish_alone(page)


async def test_phone_width_with_touch(pages: Pages, monkeypatch: pytest.MonkeyPatch) -> None:
    phone = await pages.open(viewport=PHONE, touch=True)
    await enter_name(phone, "Pocket")
    await phone.screenshot(path=str(SCREENSHOTS / "home-phone.png"), full_page=True)
    area = tid("player-area")
    for variant in VARIANTS:
        if variant == "british-canister":
            seed, tableau_move, to_foundation = race_deal(variant)
        else:
            seed = BIG
        force_seed(monkeypatch, seed)
        await create_room(phone, variant, countdown=0)
        if variant == "british-canister":
            await phone.screenshot(path=str(SCREENSHOTS / "lobby-phone.png"), full_page=True)
        await phone.click(tid("start"))
        await expect(phone.locator(f"{area} {tid('board')}")).to_have_attribute(
            "data-variant", variant
        )
        await check_layout(phone, variant, seed)
        game = new_game(variant, seed)
        if variant == "british-canister":
            # Tap a card, then tap the pile it goes to.
            src, dst = tableau_move.split("-")
            moved = card_name(game.tableau[int(src[1:]) - 1][-1])
            await phone.tap(card(src, moved))
            await expect(phone.locator(f'{area} [data-pile="{dst}"]')).to_have_class(
                r"pile tableau target"
            )
            await phone.tap(f'{area} [data-pile="{dst}"]')
            await expect(phone.locator(card(dst, moved))).to_be_visible()
            # A double tap sends a card home.
            pile = to_foundation.split("-")[0]
            ace = card_name(game.tableau[int(pile[1:]) - 1][-1])
            await phone.tap(card(pile, ace))
            await phone.tap(card(pile, ace))
            await expect(
                phone.locator(f'{area} [data-pile^="f"] [data-card="{ace}"]')
            ).to_be_visible()
        if game.has_stock:
            await phone.tap(f'{area} [data-pile="s"]')
            await expect(phone.locator(tid("count-s"))).to_have_text(
                str(len(game.stock) - game.draw_count)
            )
        width = await phone.evaluate("document.scrollingElement.scrollWidth")
        assert width <= PHONE["width"], f"{variant} scrolls sideways at phone width"
        await phone.screenshot(path=str(SCREENSHOTS / f"board-{variant}-phone.png"), full_page=True)
        if variant == "british-canister":  # the results say how each game ended, on a phone too
            await phone.click(tid("resign"))
            await phone.click(tid("resign"))
            status = phone.locator(f"{tid('result-row')} td:nth-child(6)")
            await expect(status).to_have_text(["resigned"])
            await expect(status).to_be_visible()
        await finish_alone(phone)


async def test_name_and_room_survive_a_reload(pages: Pages) -> None:
    page = await pages.open()
    await enter_name(page, "Dana")
    code = await create_room(page, "canfield")
    assert page.url.endswith(f"/r/{code}")
    await page.reload()
    await expect(page.locator(tid("room-code"))).to_have_text(code)
    await expect(page.locator(tid("player-name"))).to_have_text("Dana")
    await expect(page.locator(tid("name-screen"))).to_be_hidden()
    await expect(page.locator(tid("member"))).to_have_count(1)

    # A new name is kept with the same player, still in the room (the room's member list
    # keeps the name the player joined with).
    await page.click(tid("change-name"))
    await page.fill(tid("name-input"), "Dana B")
    await page.click(tid("name-submit"))
    await expect(page.locator(tid("player-name"))).to_have_text("Dana B")
    await expect(page.locator(tid("room-code"))).to_have_text(code)

    # A wrong code is refused with the server's message; the lobby stays usable.
    await page.click(tid("leave"))
    await expect(page.locator(tid("home"))).to_be_visible()
    await page.fill(tid("join-code"), "ZZZZZZZZ")
    await page.click(tid("join-room"))
    await expect(page.locator(tid("error"))).to_have_attribute("data-code", "room_not_found")
    await expect(page.locator(tid("home"))).to_be_visible()


async def test_page_resumes_after_the_connection_drops(
    pages: Pages, server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, tableau_move, _ = race_deal("british-canister")
    force_seed(monkeypatch, seed)
    game = new_game("british-canister", seed)
    page = await pages.open()
    await enter_name(page, "Erin")
    await start_alone(page, "british-canister")
    player = next(iter(server.node.sessions))
    await server.node.sessions[player].close(1012, "restarting")
    await expect(page.locator(tid("connection"))).to_have_attribute("data-resumes", "1")
    await expect(page.locator(tid("connection"))).to_have_attribute("data-state", "connected")
    assert server.node.sessions[player].room is not None
    # The board is still there and moves go on from the same revision.
    src, dst = tableau_move.split("-")
    moved = card_name(game.tableau[int(src[1:]) - 1][-1])
    area = tid("player-area")
    await drag(page, card(src, moved), f'{area} [data-pile="{dst}"]')
    await expect(page.locator(card(dst, moved))).to_be_visible()
    await expect(page.locator(tid("progress-row"))).to_have_attribute("data-moves", "1")


def fit_cases(variant: str, seed: int, steps: int) -> list[dict[str, Any]]:
    """Positions from random play, each with the targets the engine allows per source."""
    rng = random.Random(seed)
    game = new_game(variant, BIG + seed)
    cases = []
    for _ in range(steps):
        expected: dict[str, set[str]] = {}
        for move in game.legal_moves(all_forms=True):
            text = format_move(move)
            if move.dst_index is None or "-" not in text:
                continue
            src, rest = text.split("-")
            dst, _, count = rest.partition("x")
            expected.setdefault(f"{src}x{count or 1}", set()).add(dst)
        cases.append(
            {
                "view": player_view(game),
                "expected": {k: sorted(v) for k, v in expected.items()},
            }
        )
        moves = game.legal_moves()
        if not moves:
            break
        game.apply(rng.choice(moves))
    return cases


async def test_fit_checks_match_the_engine(pages: Pages) -> None:
    """The piles the page lights up are exactly those the engine accepts."""
    page = await pages.open()
    script = """async (cases) => {
      const rules = await import("/rules.js");
      const out = [];
      for (const { view } of cases) {
        const got = {};
        const sources = view.tableau.flatMap((pile, i) =>
          pile.map((_, k) => [`t${i + 1}`, pile.length - k]));
        if (view.reserve) sources.push(["r", 1], ["w", 1]);
        view.foundations.forEach((_, i) => sources.push([`f${i + 1}`, 1]));
        for (const [src, count] of sources) {
          if (!rules.canDragFrom(view.variant, src)) continue;
          if (!rules.sourceCards(view, src).length) continue;
          const targets = rules.legalTargets(view, src, count);
          if (targets.length) got[`${src}x${count}`] = targets.sort();
        }
        out.push(got);
      }
      return out;
    }"""
    for variant in VARIANTS:
        cases = [c for seed in range(6) for c in fit_cases(variant, seed, 40)]
        got = await page.evaluate(script, cases)
        for case, targets in zip(cases, got, strict=True):
            assert targets == case["expected"], (variant, case["view"])


def delta_cases(variant: str, seed: int, steps: int) -> list[dict[str, Any]]:
    """Views before random moves (undos too), the moves' deltas and the views after them."""
    rng = random.Random(f"delta:{variant}:{seed}")
    game = new_game(variant, seed)
    cases: list[dict[str, Any]] = []
    for _ in range(steps):
        legal = game.legal_moves()
        if game.status.value != "playing" or not legal:
            break
        before = player_view(game, legal=True)
        move = parse_move("u") if game.can_undo and rng.random() < 0.15 else rng.choice(legal)
        touched = game.apply(move).touched
        with_legal = rng.random() < 0.5
        cases.append(
            {
                "before": before,
                "delta": delta_view(game, touched, legal=with_legal),
                "expected": player_view(game, legal=with_legal),
            }
        )
    return cases


async def test_the_pages_apply_delta_makes_the_engines_next_view(pages: Pages) -> None:
    """board.js's applyDelta turns the view before a move and its ack's delta into the next."""
    page = await pages.open()
    script = """async (cases) => {
      const board = await import("/board.js");
      return cases.map(({ before, delta }) => {
        const kept = JSON.stringify(before);
        const after = board.applyDelta(before, delta);
        return { after, untouched: JSON.stringify(before) === kept };
      });
    }"""
    for variant in VARIANTS:
        cases = [c for seed in range(4) for c in delta_cases(variant, seed, 60)]
        assert cases
        got = await page.evaluate(script, cases)
        for case, result in zip(cases, got, strict=True):
            assert result["untouched"], "applyDelta changed the view it was given"
            assert result["after"] == case["expected"], (variant, case["delta"])
            assert apply_delta(case["before"], case["delta"]) == case["expected"]
    assert pages.errors == []


async def test_the_lobby_fits_a_375_pixel_screen(pages: Pages) -> None:
    """The narrowest common phone: the lobby's settings (the spectators' select among
    them) stay within the screen, with nothing to scroll sideways."""
    phone = await pages.open(viewport={"width": 375, "height": 740}, touch=True)
    await enter_name(phone, "Lena")
    await create_room(phone, "canfield", countdown=0)
    await expect(phone.locator(tid("member"))).to_have_count(1)
    width = await phone.evaluate("document.scrollingElement.scrollWidth")
    await phone.screenshot(path=str(SCREENSHOTS / "lobby-375.png"), full_page=True)
    wide = await phone.evaluate(WIDER_THAN_SCREEN)
    assert width <= 375, f"the lobby scrolls sideways: {width} px ({wide})"


WIDER_THAN_SCREEN = """() => [...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > 375.5)
    .slice(0, 6)
    .map((e) => `${e.tagName.toLowerCase()}[${e.dataset.testid || e.className}]`)
    .join(", ")"""


async def test_the_name_screen_takes_the_keyboard_at_once(pages: Pages) -> None:
    """A first visit: typing goes into the name field, and Enter goes on, no click."""
    page = await pages.open()
    await expect(page.locator(tid("name-screen"))).to_be_visible()
    await expect(page.locator(tid("name-input"))).to_be_focused()
    await page.keyboard.type("Kim")
    await page.keyboard.press("Enter")
    await expect(page.locator(tid("player-name"))).to_have_text("Kim")
    # The lobby then starts at its first choice, the game: not lost on the page's body.
    await expect(page.locator(tid("variant"))).to_be_focused()
