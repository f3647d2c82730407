"""The replay page (client/web/replay.html) in real Chromium against a live server.

Its engine (client/web/replay_engine.js) deals from the seed and plays the recorded
moves itself: random games of the four, undos included, are played in Python and in the
page side by side, and every card of every pile, the waste's fan, the view, the status
and the legal moves must agree after every move. The page of a finished race then steps
to the end move by move and shows the engine's final boards; played at x16 it reaches the
end; a room that showed no boards keeps its replay from a stranger's page and shows it to
a player's (the lobby's token in localStorage).

Screenshots go to ``tests/artifacts/screenshots/`` (gitignored).
"""

from __future__ import annotations

import json
import random
import sys
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import test_web
from conftest import TIMEOUT, RunningServer, ServerFactory
from playwright.async_api import Browser, BrowserContext, Page, expect
from test_web import BIG, CHROMIUM, SCREENSHOTS, VARIANTS, WAIT_MS, Pages, enter_name, tid

from solrace.client import Client
from solrace.engine import (
    Game,
    board_view,
    format_move,
    full_layout,
    new_game,
    parse_move,
    replay,
)

sys.path.append(str(Path(__file__).resolve().parents[1] / "server"))
from e2e_support import FAST, deal_seed, winning_deal

# The page tests' fixtures: one Chromium, and pages on the test's server.
browser = test_web.browser
pages = test_web.pages
backend_kind = test_web.backend_kind

assert CHROMIUM.exists()  # test_web skips the module otherwise
STORE_KEY = "solrace.identity"  # where the lobby keeps the player's token
CSP_WATCH = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a bot play a whole winning line at once."""
    return await start_server(limits=FAST)


# -- the engine, Python and JavaScript side by side ------------------------------------------


def snapshot(game: Game) -> dict[str, Any]:
    """Everything the JavaScript engine must agree on after a move."""
    layout = full_layout(game)
    layout["seed"] = str(layout["seed"])
    layout["fan"] = game.fan
    return {
        "layout": layout,
        "view": board_view(game),
        "legal": [format_move(m) for m in game.legal_moves()],
        "can_undo": game.can_undo,
    }


def playout(variant: str, seed: int, steps: int, rng: random.Random) -> dict[str, Any]:
    """A random game: legal moves (now and then naming a foundation) and undos."""
    game = new_game(variant, seed)
    moves: list[str] = []
    expected = [snapshot(game)]
    for _ in range(steps):
        legal = game.legal_moves(all_forms=rng.random() < 0.3)
        if game.can_undo and (not legal or rng.random() < 0.12):
            move = parse_move("u")
        elif legal:
            move = rng.choice(legal)
        else:
            break
        game.apply(move)
        moves.append(format_move(move))
        expected.append(snapshot(game))
    return {"variant": variant, "seed": str(seed), "moves": moves, "expected": expected}


def line_case(variant: str, seed: int, line: Iterable[str]) -> dict[str, Any]:
    """A known line played out, to its end."""
    game = new_game(variant, seed)
    moves = list(line)
    expected = [snapshot(game)]
    for move in moves:
        game.apply(parse_move(move))
        expected.append(snapshot(game))
    return {"variant": variant, "seed": str(seed), "moves": moves, "expected": expected}


# Cases go in and positions come back as JSON text: Playwright's own serialisation of
# thousands of nested objects would take seconds.
ENGINE_SCRIPT = """async (text) => {
  const engine = await import("/replay_engine.js");
  const snap = (game) => ({
    layout: game.layout(),
    view: game.boardView(),
    legal: game.legalMoves(),
    can_undo: game.canUndo,
  });
  return JSON.stringify(JSON.parse(text).map(({ variant, seed, moves }) => {
    const game = engine.newGame(variant, seed);
    const got = [snap(game)];
    for (const move of moves) {
      game.apply(move);
      got.push(snap(game));
    }
    return got;
  }));
}"""


async def test_the_js_engine_matches_the_python_engine(pages: Pages) -> None:
    """After every move of random games of the four (and of winning lines), the page's
    engine holds the very cards of the Python engine, pile by pile, with the same view,
    status and legal moves."""
    page = await pages.open("/replay.html")
    seeds = [0, 7, 42, 2**64 - 1, BIG + 3, 2**53 + 1]
    for variant in VARIANTS:
        rng = random.Random(f"replay:{variant}")
        cases = [playout(variant, seed, 160, rng) for seed in seeds]
        if variant != "british-canister":  # the other three have known winning lines
            seed, line = winning_deal(variant)
            cases.append(line_case(variant, seed, line))
        statuses = {s["view"]["status"] for case in cases for s in case["expected"]}
        assert "playing" in statuses and len(statuses) >= 2, (variant, statuses)
        sent = json.dumps([{k: case[k] for k in ("variant", "seed", "moves")} for case in cases])
        got = json.loads(await page.evaluate(ENGINE_SCRIPT, sent))
        for case, positions in zip(cases, got, strict=True):
            assert len(positions) == len(case["expected"])
            for index, (mine, theirs) in enumerate(zip(positions, case["expected"], strict=True)):
                where = (variant, case["seed"], index, case["moves"][:index][-3:])
                assert mine == theirs, where

    # The deal of docs/deals.md's vectors, 64-bit seeds included, and the notation.
    deals = await page.evaluate(
        """async (seeds) => {
          const engine = await import("/replay_engine.js");
          return seeds.map((seed) => engine.shuffledDeck(seed).map(engine.cardName).join(" "));
        }""",
        ["0", "18446744073709551615", "0x2A"],
    )
    assert deals[0].startswith("8S JH 9C 2S 2D QD 6S 10C 3D AC")
    assert deals[1].startswith("JC KS 7S 4C AD JH 5D 2H AH 7D")
    assert deals[2].startswith("7C 3H KC AS 2S AC AH KD 10D 5C")
    texts = [
        " T1-T3X2 ",
        "w-f",
        "r-f3",
        "f2-t4",
        "draw",
        "REDEAL",
        "u",
        "t1-f",
        "t0-t1",
        "t1",
        "s1-t1",
    ]
    parsed = await page.evaluate(
        """async (texts) => {
          const engine = await import("/replay_engine.js");
          return texts.map((text) => {
            try { return engine.formatMove(engine.parseMove(text)); } catch { return null; }
          });
        }""",
        texts,
    )
    expected: list[str | None] = []
    for text in texts:
        try:
            expected.append(format_move(parse_move(text)))
        except ValueError:
            expected.append(None)
    assert parsed == expected


# -- a race to replay ------------------------------------------------------------------------


async def play_race(
    server: RunningServer, spectators: str, seed: int, line: list[str], *, winnable: bool = False
) -> dict[str, Any]:
    """Ann wins with ``line``; Bob draws, makes a move, takes it back, draws and resigns."""
    ann = Client(server.url, name="Ann", request_timeout=4 * TIMEOUT)  # start may certify
    bob = Client(server.url, name="Bob", request_timeout=TIMEOUT)
    await ann.connect()
    await bob.connect()
    room = await ann.create_room("canfield", countdown=0, spectators=spectators, winnable=winnable)
    code = room["code"]
    await bob.join(code)
    await ann.start()
    await ann.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    await bob.move("d")
    for move in line:
        await ann.move(move)
    game = replay("canfield", seed, ["d"])
    other = next(format_move(m) for m in game.legal_moves() if m.src is not None)
    for move in (other, "u", "d"):
        await bob.move(move)
    await bob.resign()
    await ann.next_event("race_over", timeout=TIMEOUT)
    tokens = {ann.player_id: ann.token, bob.player_id: bob.token}
    await ann.close()
    await bob.close()
    return {"code": code, "tokens": tokens, "ann": ann.player_id, "bob": bob.player_id}


async def record_of(server: RunningServer, code: str) -> dict[str, Any]:
    """The race's record as the node keeps it (what /api/race serves)."""
    record = await server.node.backend.load_race(code, 1, server.node.now_ms())
    assert record is not None
    return dict(record)


def final_games(record: dict[str, Any]) -> dict[str, Game]:
    return {
        pid: replay(record["variant"], record["seed"], played["moves"])
        for pid, played in record["players"].items()
    }


SHOWN_SCRIPT = """(id) => {
  const root = document.querySelector(`[data-testid="replay-player"][data-player-id="${id}"]`);
  const pile = (p) => root.querySelector(`[data-pile="${p}"]`);
  const cards = (p) => [...pile(p).querySelectorAll("[data-card]")].map((n) => n.dataset.card);
  const badge = (p) => {
    const b = pile(p).querySelector(".badge");
    return b ? Number(b.textContent) : 0;
  };
  const top = (p) => { const c = cards(p); return c.length ? c[c.length - 1] : null; };
  const shown = { tableau: [], foundations: [] };
  for (let i = 1; pile(`t${i}`); i += 1) shown.tableau.push(cards(`t${i}`));
  for (let i = 1; i <= 4; i += 1) {
    shown.foundations.push({ top: top(`f${i}`), count: top(`f${i}`) ? badge(`f${i}`) : 0 });
  }
  if (pile("s")) {
    shown.reserve = { count: badge("r"), top: top("r") };
    shown.stock = { count: badge("s") };
    shown.waste = { count: badge("w"), visible: cards("w") };
  }
  return {
    shown,
    banked: Number(root.dataset.banked),
    moves: Number(root.dataset.moves),
    status: root.dataset.status,
    name: root.querySelector('[data-testid="rp-name"]').textContent,
  };
}"""

STEPS_SCRIPT = """() => [...document.querySelectorAll('[data-testid="replay-player"]')].map(
  (n) => [n.dataset.playerId, Number(n.dataset.step), Number(n.dataset.banked)])"""


def cards_of(view: dict[str, Any]) -> dict[str, Any]:
    """The part of a board view that the page draws as cards and counts."""
    keys = ("tableau", "foundations", "reserve", "stock", "waste")
    return {key: view[key] for key in keys if key in view}


async def check_final_boards(page: Page, record: dict[str, Any], statuses: dict[str, str]) -> None:
    games = final_games(record)
    for pid, game in games.items():
        got = await page.evaluate(SHOWN_SCRIPT, pid)
        view = board_view(game)
        assert got["shown"] == cards_of(view), pid
        assert (got["banked"], got["moves"]) == (game.banked, game.moves)
        assert got["status"] == statuses[pid]
        assert got["name"] == record["players"][pid]["name"]


async def open_page(
    browser: Browser, server: RunningServer, path: str, **options: Any
) -> tuple[BrowserContext, Page, list[str]]:
    """A page in a context of its own (``options``: color_scheme, reduced_motion, viewport)."""
    options.setdefault("viewport", test_web.DESKTOP)
    context = await browser.new_context(**options)
    context.set_default_timeout(WAIT_MS)
    await context.add_init_script(CSP_WATCH)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(f"http://127.0.0.1:{server.server.port}{path}")
    return context, page, errors


async def no_csp_violations(page: Page) -> None:
    assert await page.evaluate("window.__cspViolations") == []


@pytest.fixture
async def won_line(monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[str]]:
    """A Canfield seed the node deals, and a line that wins it."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    return seed, line


# -- the page ----------------------------------------------------------------------------------


async def test_a_finished_race_steps_to_the_end_and_shows_the_final_boards(
    browser: Browser, server: RunningServer, won_line: tuple[int, list[str]]
) -> None:
    race = await play_race(server, "live", *won_line)
    record = await record_of(server, race["code"])
    ann, bob = race["ann"], race["bob"]
    context, page, errors = await open_page(browser, server, f"/replay/{race['code']}/1")
    root = page.locator(tid("replay"))
    await expect(root).to_be_visible()
    await expect(page.locator(tid("replay-player"))).to_have_count(2)
    await expect(page.locator(tid("replay-variant"))).to_have_text("Canfield (Solo Cards)")
    await expect(page.locator(tid("replay-seed"))).to_have_text(str(record["seed"]))
    await expect(page.locator(tid("replay-result-row"))).to_have_count(2)
    await expect(page.locator(tid("replay-result-row")).first).to_have_attribute(
        "data-player-id", ann
    )

    # At the start both boards are the deal (with any move made in the race's first
    # millisecond: the board at a time shows the moves made by then, 0 included).
    times = {pid: played["times"] for pid, played in record["players"].items()}
    starts: dict[str, dict[str, Any]] = {}
    for pid in (ann, bob):
        at_once = record["players"][pid]["moves"][: sum(1 for t in times[pid] if t <= 0)]
        starts[pid] = cards_of(board_view(replay("canfield", record["seed"], at_once)))
        got = await page.evaluate(SHOWN_SCRIPT, pid)
        assert got["shown"] == starts[pid] and got["status"] == "playing"

    # Step move by move (the key, then the button) to the end: at every step each board
    # shows as many of its player's moves as were made by the time shown.
    banked_after = {
        pid: [
            replay("canfield", record["seed"], played["moves"][:k]).banked
            for k in range(len(played["moves"]) + 1)
        ]
        for pid, played in record["players"].items()
    }
    steps = 0
    while await root.get_attribute("data-at-end") != "true":
        before = int(await page.locator(tid("replay-time")).get_attribute("data-ms") or 0)
        if steps % 2:
            await page.click(tid("replay-next"))
        else:
            await page.keyboard.press("ArrowRight")
        await expect(page.locator(tid("replay-time"))).not_to_have_attribute("data-ms", str(before))
        now = int(await page.locator(tid("replay-time")).get_attribute("data-ms") or 0)
        assert now > before
        for pid, step, banked in await page.evaluate(STEPS_SCRIPT):
            assert step == sum(1 for t in times[pid] if t <= now), (pid, now)
            assert banked == banked_after[pid][step]
        steps += 1
        assert steps <= sum(len(t) for t in times.values()) + 1
    distinct = {t for ts in times.values() for t in ts}
    assert len(distinct) <= steps <= len(distinct) + 1
    duration = int(await root.get_attribute("data-duration") or 0)
    await expect(page.locator(tid("replay-time"))).to_have_attribute("data-ms", str(duration))
    await check_final_boards(page, record, {ann: "won", bob: "resigned"})
    await expect(page.locator(tid("replay-next"))).to_be_disabled()
    await expect(page.locator(tid("replay-par"))).to_be_hidden()  # not a winnable room
    await page.screenshot(path=str(SCREENSHOTS / "replay.png"), full_page=True)

    # A step back leaves the end; Home goes back to the deal.
    await page.keyboard.press("ArrowLeft")
    await expect(root).to_have_attribute("data-at-end", "false")
    await page.keyboard.press("Home")
    await expect(page.locator(tid("replay-time"))).to_have_attribute("data-ms", "0")
    got = await page.evaluate(SHOWN_SCRIPT, ann)
    assert got["shown"] == starts[ann]

    # Space plays and pauses, even with a speed button focused (which it does not press).
    await page.focus(tid("speed-4"))
    await page.keyboard.press(" ")
    await expect(root).to_have_attribute("data-playing", "true")
    await expect(page.locator(tid("speed-4"))).to_have_attribute("aria-pressed", "false")
    await page.keyboard.press("Home")  # a seek pauses
    await expect(root).to_have_attribute("data-playing", "false")
    assert errors == []
    await no_csp_violations(page)
    await context.close()


async def test_played_at_x16_the_replay_reaches_the_end(
    browser: Browser, start_server: ServerFactory, won_line: tuple[int, list[str]]
) -> None:
    # A winnable room (its deal certified by the node's solver): its results give par.
    server = await start_server(limits=FAST, deal_pool_size=1)
    race = await play_race(server, "delayed", *won_line, winnable=True)
    record = await record_of(server, race["code"])
    assert isinstance(record["par"], int)
    context, page, errors = await open_page(
        browser, server, f"/replay/{race['code']}/1", color_scheme="dark", reduced_motion="reduce"
    )
    root = page.locator(tid("replay"))
    await expect(root).to_be_visible()
    await page.click(tid("speed-16"))
    await expect(page.locator(tid("speed-16"))).to_have_attribute("aria-pressed", "true")
    await expect(page.locator(tid("speed-1"))).to_have_attribute("aria-pressed", "false")
    await expect(root).to_have_attribute("data-speed", "16")
    await page.click(tid("replay-play"))
    await expect(root).to_have_attribute("data-at-end", "true")
    await expect(root).to_have_attribute("data-playing", "false")
    await expect(page.locator(tid("replay-play"))).to_have_text("Play")
    duration = await root.get_attribute("data-duration")
    await expect(page.locator(tid("replay-time"))).to_have_attribute("data-ms", str(duration))
    await check_final_boards(page, record, {race["ann"]: "won", race["bob"]: "resigned"})
    # The certified winning line is watched beside the players, to the last card home.
    solved = await page.evaluate(SHOWN_SCRIPT, "par")
    assert solved["name"] == f"Par: the solver's line ({record['par']} moves)"
    assert (solved["banked"], solved["moves"], solved["status"]) == (52, record["par"], "won")
    assert len(record["par_line"]) == record["par"]
    par = page.locator(tid("replay-par"))
    await expect(par).to_have_attribute("data-par", str(record["par"]))
    await expect(par).to_have_text(
        f"Par: {record['par']} moves, the solver's winning line of this deal."
    )

    # Dark scheme: the results panel is dark; less motion: the progress bars do not glide.
    background = await page.locator(tid("replay-results")).evaluate(
        "(n) => getComputedStyle(n).backgroundColor"
    )
    assert background == "rgb(28, 33, 40)", background
    transition = await page.locator(".replay-player .fill").first.evaluate(
        "(n) => getComputedStyle(n).transitionDuration"
    )
    assert transition == "0s"
    await page.screenshot(path=str(SCREENSHOTS / "replay-dark.png"), full_page=True)
    assert errors == []
    await no_csp_violations(page)
    await context.close()

    # A phone: the boards stack, nothing scrolls sideways.
    context, page, errors = await open_page(
        browser, server, f"/replay/{race['code']}/1", viewport=test_web.PHONE
    )
    await expect(page.locator(tid("replay"))).to_be_visible()
    await page.keyboard.press("End")
    await check_final_boards(page, record, {race["ann"]: "won", race["bob"]: "resigned"})
    width = await page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= test_web.PHONE["width"]
    await page.screenshot(path=str(SCREENSHOTS / "replay-phone.png"), full_page=True)
    assert errors == []
    await context.close()


async def test_a_room_that_showed_no_boards_keeps_its_replay_from_strangers(
    browser: Browser, pages: Pages, server: RunningServer, won_line: tuple[int, list[str]]
) -> None:
    race = await play_race(server, "after", *won_line)
    path = f"/replay/{race['code']}/1"

    # A stranger's page: a name (and so a token of its own) from the lobby, then the link.
    stranger = await pages.open("/")
    await enter_name(stranger, "Stranger")
    assert await stranger.evaluate(f"JSON.parse(localStorage.getItem('{STORE_KEY}')).token")
    await stranger.goto(pages.base + path)
    problem = stranger.locator(tid("replay-error"))
    await expect(problem).to_be_visible()
    await expect(problem).to_have_attribute("data-code", "forbidden")
    await expect(problem).to_contain_text("players' alone")
    await expect(problem).to_contain_text("log in as one of them")
    await expect(stranger.locator(tid("replay"))).to_be_hidden()
    await expect(stranger.locator(tid("replay-player"))).to_have_count(0)
    await stranger.screenshot(path=str(SCREENSHOTS / "replay-forbidden.png"), full_page=True)

    # A page with no token at all is refused too.
    context, anyone, errors = await open_page(browser, server, path)
    await expect(anyone.locator(tid("replay-error"))).to_have_attribute("data-code", "forbidden")

    # Bob's page, with the token the lobby keeps for him: the race is there.
    token = race["tokens"][race["bob"]]
    await anyone.evaluate(
        "([key, token]) => localStorage.setItem(key, JSON.stringify({name: 'Bob', token}))",
        [STORE_KEY, token],
    )
    await anyone.reload()
    await expect(anyone.locator(tid("replay"))).to_be_visible()
    await expect(anyone.locator(tid("replay-error"))).to_be_hidden()
    await expect(anyone.locator(tid("replay-player"))).to_have_count(2)
    await anyone.keyboard.press("End")
    record = await record_of(server, race["code"])
    await check_final_boards(anyone, record, {race["ann"]: "won", race["bob"]: "resigned"})
    # The page only read the token: the lobby's identity is as it was.
    kept = await anyone.evaluate(f"JSON.parse(localStorage.getItem('{STORE_KEY}'))")
    assert kept == {"name": "Bob", "token": token}

    # A race that is not kept, and a link that names no race.
    await anyone.goto(pages.base + f"/replay/{race['code']}/2")
    await expect(anyone.locator(tid("replay-error"))).to_have_attribute("data-code", "not_found")
    await expect(anyone.locator(tid("replay-error"))).to_contain_text("not kept")
    await anyone.goto(pages.base + "/replay/NOPE")
    await expect(anyone.locator(tid("replay-error"))).to_have_attribute("data-code", "bad_link")
    assert errors == []
    await no_csp_violations(anyone)
    await context.close()


async def test_a_ranked_daily_attempt_has_a_replay_page_once_its_seed_is_out(
    browser: Browser, start_server: ServerFactory
) -> None:
    from daily_support import DAY, played_day

    server, clock, variant, _, player = await played_day(start_server, "hal")
    path = f"/replay/daily/{DAY}/{variant}/{player}"
    context, page, errors = await open_page(browser, server, path)
    await expect(page.locator(tid("replay-error-title"))).to_have_text("Not yet")
    clock.now += 86_400  # the day is over and its seed out
    await page.reload()
    await expect(page.locator(tid("replay-error"))).to_be_hidden()
    await page.keyboard.press("End")
    await expect(page.get_by_text("resigned").first).to_be_visible()
    # The run may be raced as a ghost from here: the link names it as create_room takes it.
    link = page.locator(tid("rp-ghost"))
    await expect(link).to_have_count(1)
    ref = f"daily/{DAY}/{variant}/{player}"
    assert await link.get_attribute("href") == f"/?ghost={urllib.parse.quote(ref, safe='')}"
    assert errors == []
    await context.close()


async def test_a_run_is_raced_as_a_ghost_from_its_replay_page(
    browser: Browser, server: RunningServer, won_line: tuple[int, list[str]]
) -> None:
    race = await play_race(server, "live", *won_line)
    context, page, errors = await open_page(browser, server, f"/replay/{race['code']}/1")
    ann = page.locator(f'[data-testid="replay-player"][data-player-id="{race["ann"]}"]')
    await ann.locator(tid("rp-ghost")).click()
    await enter_name(page, "Cat")
    notice = page.locator(tid("ghost-notice"))
    await expect(notice).to_be_visible()
    await expect(page.locator(tid("ghost-text"))).to_contain_text(f"of room {race['code']}")
    await page.fill(tid("countdown-setting"), "0")
    await page.click(tid("create-room"))
    await expect(page.locator(tid("room"))).to_be_visible()
    # The lobby says whose deal it is, and offers no race ending to set.
    await expect(page.locator(tid("room-winnable"))).to_contain_text("The ghost's own deal")
    await expect(page.locator(tid("finish-form"))).to_be_hidden()
    await page.click(tid("start"))
    progress = page.locator(tid("progress"))
    await expect(progress).to_contain_text("Ann (ghost)")
    # The ghost plays on by itself: its moves come in as Ann made them, to her win.
    ghost = progress.locator("li", has_text="Ann (ghost)")
    await expect(ghost).to_contain_text("52/52", timeout=4 * WAIT_MS)
    await expect(ghost).to_contain_text("won")
    assert errors == []
    await context.close()


async def test_a_player_in_a_room_is_offered_no_ghost_race(
    browser: Browser, server: RunningServer, won_line: tuple[int, list[str]]
) -> None:
    """A ghost race starts from no room (the server keeps a player in the room it is in):
    while this browser's player is in one, the replay page says so instead of linking to
    a race that could not start, and offers the race again once the player has left."""
    race = await play_race(server, "live", *won_line)
    context, lobby, errors = await open_page(browser, server, "/")
    await enter_name(lobby, "Cat")
    await test_web.create_room(lobby, "canfield", countdown=0)
    code = (await lobby.text_content(tid("room-code"))) or ""
    page = await context.new_page()  # the same browser: the lobby's storage
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(f"http://127.0.0.1:{server.server.port}/replay/{race['code']}/1")
    ann = page.locator(f'[data-testid="replay-player"][data-player-id="{race["ann"]}"]')
    await expect(ann.locator(tid("rp-ghost-busy"))).to_have_text(
        f"You are in room {code}: leave it to race this run as a ghost."
    )
    await expect(ann.locator(tid("rp-ghost"))).to_be_hidden()
    href = await ann.locator(tid("rp-ghost")).get_attribute("href")
    assert href is not None

    # The ghost's link followed all the same (an older page): the room says why.
    await lobby.goto(f"http://127.0.0.1:{server.server.port}{href}")
    await expect(lobby.locator(tid("room"))).to_be_visible()
    await expect(lobby.locator(tid("notice"))).to_have_text(
        f"You are still in room {code}: leave it to race the ghost."
    )
    # Out of the room, the ghost race waits on the home screen, and the replay links it.
    await lobby.click(tid("leave"))
    await expect(lobby.locator(tid("home"))).to_be_visible()
    await expect(lobby.locator(tid("ghost-notice"))).to_be_visible()
    await expect(ann.locator(tid("rp-ghost"))).to_be_visible()
    await expect(ann.locator(tid("rp-ghost-busy"))).to_be_hidden()

    # A mark left by a page closed in a room goes stale once the room has let the player go.
    await lobby.close()
    stale = "JSON.stringify({code: 'ABCD2345', at: Date.now() - 5 * 60 * 1000})"
    await page.evaluate(f"localStorage.setItem('solrace.room', {stale})")
    await page.reload()
    await expect(ann.locator(tid("rp-ghost"))).to_be_visible()
    assert errors == []
    await context.close()
