"""The browser page when the server goes away, in real Chromium against a live server.

The node listens on a fixed port with an embedded data directory, so that a test can stop
it and start a new node on the same directory and port, as after a restart: every room
and race comes back. The page must then:

- disable the board under a banner (a live region) while the connection is down, and
  send nothing that was clicked meanwhile;
- come back by itself, say that the server restarted (or, after a plain drop, only that
  it reconnected), and put the player back on the race screen with the board the server
  has;
- play a move that was in flight when the link dropped exactly once, or say clearly
  that it was not played;
- give up after a while, say so, and try again on request.

Screenshots (``reconnect-*.png``) go to ``tests/artifacts/screenshots/``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import test_web
from conftest import PLAIN_DEALS, TIMEOUT, RunningServer
from playwright.async_api import WebSocket, WebSocketRoute
from test_web import (
    DESKTOP,
    SCREENSHOTS,
    WAIT_MS,
    Page,
    Pages,
    card,
    create_room,
    drag,
    enter_name,
    expect,
    force_seed,
    race_deal,
    start_alone,
    tid,
)

from solrace.client import Client
from solrace.engine import card_name, new_game, player_view, replay
from solrace.server import Node, ServerConfig, SolraceServer, make_backend

# The page tests' fixtures: one Chromium, and pages on the test's server.
browser = test_web.browser
pages = test_web.pages

VARIANT = "british-canister"
AREA = tid("player-area")
BANNER = tid("conn-banner")
BANNER_TEXT = tid("conn-banner-text")
LOST = "Connection lost — reconnecting…"
RESTARTED = "The server restarted — your race goes on."
GIVE_UP_MS = 90_000  # net.js GIVE_UP_MS


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Restartable:
    """A node on a fixed port that a test stops and starts again on the same data."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.current: SolraceServer | None = None

    async def start(self) -> SolraceServer:
        server = SolraceServer(Node(make_backend(self.config), self.config), self.config)
        await server.start()
        self.current = server
        return server

    async def stop(self) -> None:
        """Close every connection with 1001 and stop the node, as on SIGTERM."""
        assert self.current is not None
        await self.current.close()
        self.current = None


@pytest.fixture
def backend_kind() -> str:
    """The page does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Restartable]:
    config = ServerConfig(
        port=free_port(),
        data_dir=tmp_path / "data",
        progress_interval_s=0.0,
        **PLAIN_DEALS,
    )
    made = Restartable(config)
    await made.start()
    yield made
    if made.current is not None:
        await made.stop()


@pytest.fixture
async def server(node: Restartable) -> RunningServer:
    """The node's first run, for the pages fixture (a restart keeps its port)."""
    assert node.current is not None
    return RunningServer(node.current, node.config)


class Frames:
    """The JSON frames a page sends and receives on the websockets it opens from now on."""

    def __init__(self, page: Page) -> None:
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        page.on("websocket", self._watch)

    def _watch(self, ws: WebSocket) -> None:
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload: str | bytes) -> None:
        self.sent.append(json.loads(payload))

    def _received(self, payload: str | bytes) -> None:
        self.received.append(json.loads(payload))

    def of_type(self, kind: str, frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [f for f in frames if f.get("type") == kind]


class Relay:
    """Stands between a page and the server and can lose the link at a chosen frame.

    ``lose`` is "move" (the page's next move never reaches the server) or "ack" (the
    server plays it but its ack never reaches the page); either way both sides of the
    link are then closed, the page's with 1012. While ``blocked``, the page's new
    connections are closed at their hello with 1013.
    """

    def __init__(self) -> None:
        self.lose: str | None = None
        self.blocked = False
        self.sent: list[dict[str, Any]] = []  # frames from the page, kept or lost
        self.received: list[dict[str, Any]] = []  # frames from the server, kept or lost

    async def handle(self, page_side: WebSocketRoute) -> None:
        if self.blocked:

            async def refuse(_message: str | bytes) -> None:
                await page_side.close(code=1013, reason="try again later")

            page_side.on_message(refuse)
            return
        server_side = page_side.connect_to_server()

        async def cut() -> None:
            await page_side.close(code=1012, reason="link lost")
            await server_side.close()

        async def from_page(message: str | bytes) -> None:
            frame = json.loads(message)
            self.sent.append(frame)
            if self.lose == "move" and frame.get("type") == "move":
                self.lose = None
                await cut()
                return
            server_side.send(message)

        async def from_server(message: str | bytes) -> None:
            frame = json.loads(message)
            self.received.append(frame)
            if self.lose == "ack" and frame.get("type") == "ack":
                self.lose = None
                await cut()
                return
            page_side.send(message)

        page_side.on_message(from_page)
        server_side.on_message(from_server)


def words(name: str) -> str:
    """A card as the page names it: "QS" -> "Queen of spades"."""
    ranks = {"A": "Ace", "J": "Jack", "Q": "Queen", "K": "King"}
    suits = {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}
    return f"{ranks.get(name[:-1], name[:-1])} of {suits[name[-1]]}"


def top_card(variant: str, seed: int, pile: str, played: list[str] | None = None) -> str:
    """The name of the top card of tableau ``pile`` ("t3") after ``played``."""
    game = replay(variant, seed, played or [])
    return card_name(game.tableau[int(pile[1:]) - 1][-1])


async def tableau_on_page(page: Page, count: int) -> list[list[str]]:
    """The cards of each tableau pile of the player's board, bottom first."""
    return [
        await page.locator(f'{AREA} [data-pile="t{i}"] [data-card]').evaluate_all(
            "nodes => nodes.map(node => node.dataset.card)"
        )
        for i in range(1, count + 1)
    ]


async def foundation_tops(page: Page) -> list[str | None]:
    tops: list[str | None] = []
    for i in range(1, 5):
        names = await page.locator(f'{AREA} [data-pile="f{i}"] [data-card]').evaluate_all(
            "nodes => nodes.map(node => node.dataset.card)"
        )
        tops.append(names[-1] if names else None)
    return tops


async def note_banner(page: Page) -> None:
    """From now on, keep every text the connection's banner shows (they come and go)."""
    await page.evaluate(
        """() => {
          const node = document.querySelector('[data-testid="conn-banner-text"]');
          window.bannerTexts = [];
          new MutationObserver(() => window.bannerTexts.push(node.textContent))
            .observe(node, { childList: true, characterData: true, subtree: true });
        }"""
    )


async def banner_texts(page: Page) -> list[str]:
    texts: list[str] = await page.evaluate("window.bannerTexts")
    return texts


async def player_id_of(page: Page) -> str:
    identity = await page.evaluate("JSON.parse(localStorage.getItem('solrace.identity'))")
    token = str(identity["token"])
    return token.split(".")[0]


async def test_the_board_waits_offline_and_the_race_comes_back_after_a_restart(
    pages: Pages, node: Restartable, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, tableau_move, to_foundation = race_deal(VARIANT)
    force_seed(monkeypatch, seed)
    src, dst = tableau_move.split("-")
    moved = top_card(VARIANT, seed, src)
    ace_pile = to_foundation.split("-")[0]
    ace = top_card(VARIANT, seed, ace_pile)

    erin = await pages.open()
    await enter_name(erin, "Erin")
    code = await create_room(erin, VARIANT, countdown=0, spectators="live")
    carol = await pages.open(f"/r/{code}?as=spectator")
    await enter_name(carol, "Carol")
    await expect(erin.locator(tid("member"))).to_have_count(2)
    await erin.click(tid("start"))
    board = erin.locator(f"{AREA} {tid('board')}")
    await expect(board).to_have_attribute("data-variant", VARIANT)
    await drag(erin, card(src, moved), f'{AREA} [data-pile="{dst}"]')
    row = erin.locator(tid("progress-row"))
    await expect(row).to_have_attribute("data-moves", "1")
    await expect(carol.locator(tid("spectator-board"))).to_have_count(1)
    me = await player_id_of(erin)

    frames = Frames(erin)
    await note_banner(carol)
    await node.stop()

    # The banner says the connection is lost, in a live region; the board takes nothing.
    banner = erin.locator(BANNER)
    await expect(banner).to_have_attribute("data-state", "reconnecting")
    await expect(erin.locator(BANNER_TEXT)).to_have_text(LOST)
    held = await erin.locator(tid("elapsed")).text_content()  # the clock holds while offline
    held_since = asyncio.get_running_loop().time()
    await expect(banner).to_have_attribute("role", "status")
    await expect(banner).to_have_attribute("aria-live", "polite")
    await expect(banner).to_be_visible()
    await expect(erin.locator(tid("connection"))).to_have_attribute("data-state", "reconnecting")
    await expect(board).to_have_attribute("aria-disabled", "true")
    await expect(erin.locator(AREA)).to_have_attribute("aria-disabled", "true")
    assert await erin.locator(AREA).evaluate("node => node.inert")
    await expect(erin.locator(tid("undo"))).to_be_disabled()
    await expect(erin.locator(tid("resign"))).to_be_disabled()
    # A double-click sending the Ace home, a click to pick a card and a click on a pile
    # it may go to, and a drag: none of them is a move.
    box = await erin.locator(card(ace_pile, ace)).bounding_box()
    assert box is not None
    ace_x, ace_y = box["x"] + box["width"] / 2, box["y"] + 10
    await erin.mouse.dblclick(ace_x, ace_y)
    await erin.mouse.click(ace_x, ace_y)
    await expect(erin.locator(f"{AREA} .selected")).to_have_count(0)
    await expect(erin.locator(f"{AREA} .target")).to_have_count(0)
    await drag(erin, card(ace_pile, ace), f'{AREA} [data-pile="f1"]')
    await expect(erin.locator(tid("drag-layer"))).to_have_count(0)
    await erin.keyboard.press("Enter")
    await expect(erin.locator(card(ace_pile, ace))).to_be_visible()
    await expect(erin.locator(tid("race"))).to_be_visible()
    await erin.screenshot(path=str(SCREENSHOTS / "reconnect-offline.png"), full_page=True)
    await asyncio.sleep(max(0.0, held_since + 2.2 - asyncio.get_running_loop().time()))
    assert await erin.locator(tid("elapsed")).text_content() == held  # not a second more

    # A new node on the same data directory and port: the page comes back by itself.
    await node.start()
    await expect(erin.locator(BANNER_TEXT)).to_have_text(RESTARTED)
    await expect(banner).to_have_attribute("data-state", "restarted")
    await expect(erin.locator(tid("connection"))).to_have_attribute("data-restarts", "1")
    await expect(erin.locator(tid("connection"))).to_have_attribute("data-state", "connected")
    await expect(erin.locator(tid("race"))).to_be_visible()
    await expect(board).to_have_attribute("aria-disabled", "false")
    assert not await erin.locator(AREA).evaluate("node => node.inert")
    await erin.screenshot(path=str(SCREENSHOTS / "reconnect-restarted.png"), full_page=True)

    # The board is the server's snapshot: the one move, every pile as the server has it.
    snapshots = [f for f in frames.of_type("room", frames.received) if "id" not in f]
    assert len(snapshots) == 1
    you = snapshots[0]["room"]["you"]
    assert you["rev"] == 1
    view = you["view"]
    assert view["tableau"] == player_view(replay(VARIANT, seed, [tableau_move]))["tableau"]
    assert await tableau_on_page(erin, len(view["tableau"])) == view["tableau"]
    assert await foundation_tops(erin) == [f["top"] for f in view["foundations"]]
    await expect(row).to_have_attribute("data-moves", str(view["moves"]))
    await expect(erin.locator(card(dst, moved))).to_be_visible()
    # Nothing clicked while the connection was down went out.
    assert frames.of_type("move", frames.sent) == []
    welcome = frames.of_type("welcome", frames.received)[0]
    assert welcome["room"] == code
    assert welcome["player_id"] == me

    # The spectator watches again, and hears that the race goes on.
    watched = carol.locator(f'{tid("spectator-board")}[data-player-id="{me}"]')
    await expect(watched.locator(f'[data-pile="{dst}"] [data-card="{moved}"]')).to_be_visible()
    await expect(carol.locator(tid("connection"))).to_have_attribute("data-restarts", "1")
    texts = await banner_texts(carol)
    assert texts[0] == LOST, texts
    assert "The server restarted — the race goes on." in texts, texts

    # And the race goes on: the Ace goes home.
    await erin.dblclick(card(ace_pile, ace))
    await expect(erin.locator(f'{AREA} [data-pile^="f"] [data-card="{ace}"]')).to_be_visible()
    await expect(row).to_have_attribute("data-moves", "2")
    await expect(row).to_have_attribute("data-banked", "1")
    moves = frames.of_type("move", frames.sent)
    assert [(m["move"], m["rev"]) for m in moves] == [(to_foundation, 1)]
    acks = frames.of_type("ack", frames.received)
    assert [(a["rev"], a["duplicate"]) for a in acks] == [(2, False)]
    await expect(watched.locator(f'[data-pile^="f"] [data-card="{ace}"]')).to_be_visible()
    await expect(erin.locator(tid("error"))).to_be_hidden()


async def test_a_plain_drop_says_reconnected_and_not_restarted(
    pages: Pages, server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, tableau_move, _ = race_deal(VARIANT)
    force_seed(monkeypatch, seed)
    page = await pages.open()
    await enter_name(page, "Finn")
    await start_alone(page, VARIANT)
    await note_banner(page)
    player = next(iter(server.node.sessions))
    await server.node.sessions[player].close(1012, "restarting")
    connection = page.locator(tid("connection"))
    await expect(connection).to_have_attribute("data-resumes", "1")
    await expect(connection).to_have_attribute("data-state", "connected")
    await expect(page.locator(BANNER_TEXT)).to_have_text("Reconnected")
    await expect(page.locator(BANNER)).to_have_attribute("data-state", "reconnected")
    assert await connection.get_attribute("data-restarts") is None
    texts = await banner_texts(page)
    assert "Reconnected" in texts
    assert not any("restarted" in text for text in texts), texts
    await expect(page.locator(tid("race"))).to_be_visible()
    # The note goes away by itself.
    await expect(page.locator(BANNER)).to_have_attribute("data-state", "idle")
    await expect(page.locator(BANNER)).to_be_hidden()

    src, dst = tableau_move.split("-")
    moved = top_card(VARIANT, seed, src)
    await drag(page, card(src, moved), f'{AREA} [data-pile="{dst}"]')
    await expect(page.locator(card(dst, moved))).to_be_visible()
    await expect(page.locator(tid("progress-row"))).to_have_attribute("data-moves", "1")


async def test_a_move_in_flight_when_the_link_drops_is_played_once(
    pages: Pages, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, tableau_move, to_foundation = race_deal(VARIANT)
    force_seed(monkeypatch, seed)
    src, dst = tableau_move.split("-")
    moved = top_card(VARIANT, seed, src)
    ace_pile = to_foundation.split("-")[0]
    ace = top_card(VARIANT, seed, ace_pile)
    page = await pages.open()
    await enter_name(page, "Gus")
    relay = Relay()
    await page.route_web_socket("**/*", relay.handle)
    await page.reload()  # the page's socket now goes through the relay
    await start_alone(page, VARIANT)
    row = page.locator(tid("progress-row"))
    connection = page.locator(tid("connection"))

    # The move never reaches the server: sent again after the drop, it is played once.
    relay.lose = "move"
    await drag(page, card(src, moved), f'{AREA} [data-pile="{dst}"]')
    await expect(connection).to_have_attribute("data-resumes", "1")
    await expect(page.locator(card(dst, moved))).to_be_visible()
    await expect(page.locator(card(src, moved))).to_have_count(0)
    await expect(row).to_have_attribute("data-moves", "1")
    sent = [m for m in relay.sent if m.get("type") == "move"]
    assert [(m["move"], m["rev"]) for m in sent] == [(tableau_move, 0)] * 2
    assert sent[0]["id"] == sent[1]["id"]
    acks = [a for a in relay.received if a.get("type") == "ack"]
    assert [(a["rev"], a["duplicate"]) for a in acks] == [(1, False)]

    # The server plays the move but its ack is lost: sent again, it is acked as a
    # duplicate, not played twice.
    relay.lose = "ack"
    await page.dblclick(card(ace_pile, ace))
    await expect(connection).to_have_attribute("data-resumes", "2")
    await expect(page.locator(f'{AREA} [data-pile^="f"] [data-card="{ace}"]')).to_be_visible()
    await expect(row).to_have_attribute("data-moves", "2")
    await expect(row).to_have_attribute("data-banked", "1")
    # The resume's snapshot may show the move before the answer to the move sent again.
    async with asyncio.timeout(TIMEOUT):
        while len(acks := [a for a in relay.received if a.get("type") == "ack"]) < 3:
            await asyncio.sleep(0.02)
    assert [(a["rev"], a["duplicate"]) for a in acks] == [(1, False), (2, False), (2, True)]
    game = replay(VARIANT, seed, [tableau_move, to_foundation])
    expected = [[card_name(c) for c in pile] for pile in game.tableau]
    assert await tableau_on_page(page, len(expected)) == expected
    await expect(page.locator(tid("error"))).to_be_hidden()
    assert await connection.get_attribute("data-restarts") is None


async def test_a_move_in_flight_that_the_server_refuses_says_so(
    pages: Pages, server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, tableau_move, to_foundation = race_deal(VARIANT)
    force_seed(monkeypatch, seed)
    src, dst = tableau_move.split("-")
    moved = top_card(VARIANT, seed, src)
    ace_pile = to_foundation.split("-")[0]
    ace = top_card(VARIANT, seed, ace_pile)
    page = await pages.open()
    await enter_name(page, "Hana")
    relay = Relay()
    await page.route_web_socket("**/*", relay.handle)
    await page.reload()
    await start_alone(page, VARIANT)

    # The move is lost with the link, and the page cannot come back at once.
    relay.lose = "move"
    relay.blocked = True
    await drag(page, card(src, moved), f'{AREA} [data-pile="{dst}"]')
    await expect(page.locator(BANNER_TEXT)).to_have_text(LOST)
    # Meanwhile the same player plays another move on that revision (from another
    # device, say).
    identity = await page.evaluate("JSON.parse(localStorage.getItem('solrace.identity'))")
    other = Client(server.url, token=identity["token"], request_timeout=TIMEOUT)
    await other.connect()
    try:
        assert other.rev == 0
        await other.move(to_foundation)
    finally:
        await other.close()
    relay.blocked = False

    # Sent again, the page's move is refused: the page says so and shows the server's game.
    error = page.locator(tid("error"))
    await expect(error).to_be_visible()
    await expect(error).to_have_attribute("data-code", "stale_revision")
    await expect(page.locator(tid("error-message"))).to_contain_text(
        f"Your move (the {words(moved)} onto pile {dst[1:]}), sent as the connection dropped,"
        " was not played"
    )
    await expect(page.locator(f'{AREA} [data-pile^="f"] [data-card="{ace}"]')).to_be_visible()
    await expect(page.locator(card(src, moved))).to_be_visible()
    await expect(page.locator(tid("drag-layer"))).to_have_count(0)
    row = page.locator(tid("progress-row"))
    await expect(row).to_have_attribute("data-moves", "1")
    game = replay(VARIANT, seed, [to_foundation])
    expected = [[card_name(c) for c in pile] for pile in game.tableau]
    assert await tableau_on_page(page, len(expected)) == expected
    await page.screenshot(path=str(SCREENSHOTS / "reconnect-refused.png"), full_page=True)

    # The player goes on from the server's game.
    await drag(page, card(src, moved), f'{AREA} [data-pile="{dst}"]')
    await expect(page.locator(card(dst, moved))).to_be_visible()
    await expect(row).to_have_attribute("data-moves", "2")


async def test_the_page_gives_up_then_tries_again_on_request(
    pages: Pages, node: Restartable
) -> None:
    context = await pages.browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    context.set_default_timeout(WAIT_MS)
    page = await context.new_page()
    page.on("pageerror", lambda error: pages.errors.append(str(error)))
    await page.clock.install()  # time runs, and the test can jump ahead
    await page.goto(pages.base + "/")
    await enter_name(page, "Ivy")
    code = await create_room(page, "canfield")

    await node.stop()
    await expect(page.locator(BANNER_TEXT)).to_have_text(LOST)
    await page.clock.fast_forward(GIVE_UP_MS + 10_000)
    banner = page.locator(BANNER)
    await expect(banner).to_have_attribute("data-state", "offline")
    await expect(page.locator(BANNER_TEXT)).to_contain_text("the server could not be reached")
    retry = page.locator(tid("conn-retry"))
    await expect(retry).to_be_visible()
    await expect(retry).to_have_text("Try again")
    await expect(page.locator(tid("connection"))).to_have_attribute("data-state", "offline")
    # Buttons that ask the server something wait for the connection.
    await expect(page.locator(tid("room"))).to_be_visible()
    await page.screenshot(path=str(SCREENSHOTS / "reconnect-gave-up.png"), full_page=True)

    await node.start()
    await retry.click()
    await expect(page.locator(BANNER_TEXT)).to_have_text(
        "The server restarted — your room is still here."
    )
    await expect(page.locator(tid("connection"))).to_have_attribute("data-state", "connected")
    await expect(page.locator(tid("room-code"))).to_have_text(code)
    await expect(retry).to_be_hidden()
    await page.click(tid("ready"))
    await expect(page.locator(tid("member"))).to_have_attribute("data-ready", "true")
    await context.close()


async def test_a_page_loaded_while_the_server_is_unreachable_waits_for_it(
    pages: Pages, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, _, _ = race_deal(VARIANT)
    force_seed(monkeypatch, seed)
    page = await pages.open()
    await enter_name(page, "Jo")
    await start_alone(page, VARIANT)
    relay = Relay()
    relay.blocked = True  # the page loads, but its websocket cannot get through
    await page.route_web_socket("**/*", relay.handle)
    await page.reload()
    await expect(page.locator(BANNER_TEXT)).to_have_text("Cannot reach the server — retrying…")
    await expect(page.locator(tid("race"))).to_be_hidden()
    relay.blocked = False
    await expect(page.locator(tid("race"))).to_be_visible()
    await expect(page.locator(f"{AREA} {tid('board')}")).to_have_attribute("aria-disabled", "false")
    await expect(page.locator(BANNER)).to_have_attribute("data-state", "idle")
    game = new_game(VARIANT, seed)
    expected = [[card_name(c) for c in pile] for pile in game.tableau]
    assert await tableau_on_page(page, len(expected)) == expected
