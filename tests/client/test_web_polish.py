"""The page (client/web/) in real Chromium, polished where outside trials found it rough:
a count's word in the singular for one ("1 day played in a row"), a replay that ends
where its race did, a delayed room's boards headed by their own counts (not the live
progress), fields whose text fits them on a phone and on a desktop, and a replay page
that does not scroll sideways on a 375-pixel phone.

The module is skipped when ``/usr/bin/chromium`` is absent (test_web.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import test_web
import test_web_daily
from conftest import ServerFactory
from playwright.async_api import Browser, Page, Route
from test_web import VARIANTS, Pages, create_room, enter_name, expect, tid
from test_web_accounts import delayed_room, draw_as
from test_web_daily import ShiftedClock, back_to_board, draw, resign, signed_in, start_attempt
from test_web_replay import open_page, play_race, record_of

sys.path.append(str(Path(__file__).resolve().parents[1] / "server"))
from e2e_support import FAST, deal_seed, winning_deal

from solrace.engine import format_move, new_game

# The page tests' fixtures: one Chromium, pages on the test's server, and the daily
# tests' node (its shifted clock, accounts ranked at once) on the embedded backend.
browser = test_web.browser
pages = test_web.pages
backend_kind = test_web_daily.backend_kind
clock = test_web_daily.clock
server = test_web_daily.server

SMALL_PHONE = {"width": 375, "height": 667}
WIDE = {"width": 1280, "height": 800}


# -- 1. a count's word ---------------------------------------------------------------------


async def test_the_words_helper_says_one_or_many(pages: Pages) -> None:
    page = await pages.open("/")
    said = await page.evaluate(
        """async () => {
          const { counted, plural } = await import("/words.js");
          return [counted(0, "day"), counted(1, "day"), counted(2, "day"),
                  counted(1, "ranked player"), plural(1, "try", "tries"), plural(3, "try", "tries")];
        }"""
    )
    assert said == ["0 days", "1 day", "2 days", "1 ranked player", "try", "tries"]


async def test_the_daily_streaks_say_day_for_one_and_days_for_more(pages: Pages) -> None:
    dora = await signed_in(pages, "Dora", "/daily")
    labels = {
        "streak-played-label": "days played in a row",
        "streak-won-label": "days won in a row",
        "streak-best-played-label": "days played in a row, at best",
        "streak-best-won-label": "days won in a row, at best",
    }
    for testid, text in labels.items():  # nothing played yet: 0 of each
        await expect(dora.locator(tid(testid))).to_have_text(text)
    await start_attempt(dora, attempt=1)
    await draw(dora, 1)
    await resign(dora)
    # One move, said as one.
    await expect(dora.locator(tid("daily-outcome"))).to_contain_text(", 1 move, ")
    await back_to_board(dora)
    await expect(dora.locator(tid("streak-played"))).to_have_text("1")
    await expect(dora.locator(tid("streak-played-label"))).to_have_text("day played in a row")
    await expect(dora.locator(tid("streak-best-played"))).to_have_text("1")
    await expect(dora.locator(tid("streak-best-played-label"))).to_have_text(
        "day played in a row, at best"
    )
    await expect(dora.locator(tid("streak-won"))).to_have_text("0")
    await expect(dora.locator(tid("streak-won-label"))).to_have_text("days won in a row")
    await expect(dora.locator(tid("streak-best-won-label"))).to_have_text(
        "days won in a row, at best"
    )
    await expect(dora.locator(tid("daily-count"))).to_have_text("1 ranked player")
    streaks = await dora.locator(tid("daily-streaks")).inner_text()
    assert "1 days" not in streaks.replace("\n", " ")


# -- 2. the replay ends where the race did ------------------------------------------------------


def race_length(record: dict[str, Any]) -> int:
    """When the race's last person was done, or its last move, as the record has it."""
    ends = [int(r["time_ms"]) for r in record["results"] if not r.get("ghost")]
    ends += [t for played in record["players"].values() for t in played["times"]]
    return max(ends, default=0)


async def test_the_replay_s_timeline_stops_at_the_race_s_end(
    browser: Browser, start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bot's race is over in a moment, while the solver's line, four moves a second,
    would run on for half a minute: the timeline is the race's, and the line is played
    out within it."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    node = await start_server(limits=FAST, deal_pool_size=1)
    race = await play_race(node, "live", seed, line, winnable=True)
    record = await record_of(node, race["code"])
    length = race_length(record)
    assert isinstance(record["par"], int) and record["par"] * 250 > length  # the case at hand
    context, page, errors = await open_page(browser, node, f"/replay/{race['code']}/1")
    root = page.locator(tid("replay"))
    await expect(root).to_be_visible()
    await expect(root).to_have_attribute("data-duration", str(length))
    await expect(page.locator(tid("replay-slider"))).to_have_attribute("max", str(length))
    await page.keyboard.press("End")
    await expect(page.locator(tid("replay-time"))).to_have_attribute("data-ms", str(length))
    await expect(root).to_have_attribute("data-at-end", "true")
    # The solver's line has played out by then; the players stand as they ended.
    par = page.locator(f'{tid("replay-player")}[data-player-id="par"]')
    await expect(par).to_have_attribute("data-status", "won")
    await expect(par).to_have_attribute("data-moves", str(record["par"]))
    ann = page.locator(f'{tid("replay-player")}[data-player-id="{race["ann"]}"]')
    await expect(ann).to_have_attribute("data-status", "won")
    # Played at x16 from the start, it stops there too.
    await page.keyboard.press("Home")
    await page.click(tid("speed-16"))
    await page.click(tid("replay-play"))
    await expect(root).to_have_attribute("data-at-end", "true")
    await expect(root).to_have_attribute("data-playing", "false")
    await expect(page.locator(tid("replay-time"))).to_have_attribute("data-ms", str(length))
    assert errors == []
    await context.close()


async def test_a_ghost_s_own_end_does_not_lengthen_the_replay(pages: Pages) -> None:
    """A ghost race's record keeps the ghost's result (its run's own end, maybe long after
    the race) but not its moves: the race is as long as its people's play."""
    page = await pages.open("/replay.html")
    got = await page.evaluate(
        """async () => {
          const { RaceReplay } = await import("/replay_engine.js");
          const record = {
            variant: "canfield", seed: "42", undo: true, par_line: null,
            players: { p1: { name: "Ann", moves: ["d", "d"], times: [400, 900] } },
            results: [
              { rank: 1, player_id: "g", name: "Bo (ghost)", status: "won", banked: 52,
                moves: 90, time_ms: 120000, ghost: true },
              { rank: 2, player_id: "p1", name: "Ann", status: "resigned", banked: 1,
                moves: 2, time_ms: 1500 },
            ],
          };
          return new RaceReplay(record).duration;
        }"""
    )
    assert got == 1500


# -- 3. a delayed room's boards and their counts -------------------------------------------------


async def test_a_delayed_room_s_boards_are_headed_by_their_own_counts(
    pages: Pages, clock: ShiftedClock
) -> None:
    hana, sam, hana_id = await delayed_room(pages)
    await hana.click(tid("start"))
    board = sam.locator(f'{tid("spectator-board")}[data-player-id="{hana_id}"]')
    stats = board.locator(tid("spectator-board-stats"))
    row = sam.locator(f'{tid("progress-row")}[data-player-id="{hana_id}"]')
    await expect(board).to_have_attribute("data-moves", "0")
    dealt = await row.get_attribute("data-banked")

    # Hana draws: the progress says so at once, and says it is live; the board, still the
    # deal, keeps the deal's counts in its head.
    await draw_as(hana, hana_id, 1)
    await expect(row).to_have_attribute("data-moves", "1")
    await expect(board).to_have_attribute("data-moves", "0")
    await expect(stats).to_have_text(
        f"{dealt}/52 banked · 0 moves · playing · as of 10 s ago or earlier"
    )
    await expect(sam.locator(tid("spectator-note"))).to_contain_text("The progress above is live")

    # The delay over, the board of her first draw comes due, and its head with it.
    clock.skip(11)
    await draw_as(hana, hana_id, 1)
    await expect(board).to_have_attribute("data-moves", "1")
    await expect(row).to_have_attribute("data-moves", "2")
    await expect(stats).to_contain_text("1 move · playing")
    assert "2 moves" not in await stats.inner_text()

    # The race over: the final board, and the final counts, not held back any more.
    await hana.click(tid("resign"))
    await hana.click(tid("resign"))
    await expect(sam.locator(tid("results"))).to_be_visible()
    await expect(board).to_have_attribute("data-moves", "2")
    await expect(stats).to_contain_text("2 moves · resigned")
    await expect(stats).not_to_contain_text("ago")


# -- 4. fields whose text fits them --------------------------------------------------------------

# Each shown text field's words (its placeholder when empty, else its value) and each
# select's chosen option, against the room the field has for them.
CUT_FIELDS = """() => {
  const canvas = document.createElement("canvas").getContext("2d");
  const cut = [];
  for (const node of document.querySelectorAll("input, select")) {
    if (!node.offsetParent || ["checkbox", "hidden", "range"].includes(node.type)) continue;
    const name = node.dataset.testid || node.name;
    if (node.tagName === "SELECT") {
      const style = getComputedStyle(node);
      canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const text = node.selectedOptions[0]?.textContent || "";
      // the arrow takes about as much as two letters on the right
      const room = node.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
      if (canvas.measureText(text).width > room) cut.push([name, text]);
      continue;
    }
    const kept = node.value;
    if (!kept && node.placeholder) node.value = node.placeholder;
    if (node.scrollWidth > node.clientWidth) cut.push([name, node.value]);
    node.value = kept;
  }
  return cut;
}"""


async def fields_cut(page: Page) -> list[list[str]]:
    cut: list[list[str]] = await page.evaluate(CUT_FIELDS)
    return cut


@pytest.mark.parametrize("viewport", [SMALL_PHONE, WIDE], ids=["375px", "1280px"])
async def test_no_field_s_text_is_cut_off(pages: Pages, viewport: dict[str, int]) -> None:
    page = await pages.open("/", viewport)
    await enter_name(page, "Pat")
    await expect(page.locator(tid("join-code"))).to_be_visible()
    for mode in ("after", "delayed", "live", "off"):  # each choice of who may watch
        await page.select_option(tid("spectators"), mode)
        assert await fields_cut(page) == [], mode
    await page.select_option(tid("spectators"), "after")
    await create_room(page, "canfield")
    await expect(page.locator(tid("spectators-mode"))).to_be_visible()
    for mode in ("after", "delayed", "live", "off"):
        await page.select_option(tid("spectators-mode"), mode)
        assert await fields_cut(page) == [], mode
    assert await page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
    daily = await pages.open("/daily", viewport)
    await enter_name(daily, "Dee")
    await expect(daily.locator(tid("daily-date"))).to_be_visible()
    assert await fields_cut(daily) == []


# -- 5. the replay page on a small phone ---------------------------------------------------------

LONG_NAME = "W" * 24  # as long as a name may be, with no space to break it at


def long_named_record(variant: str) -> dict[str, Any]:
    """A race kept for its replay, of two players with long names, one of whose moves
    cannot be replayed (its panel says so): /api/race's record, made here."""
    seed = 2**64 - 1
    first = format_move(new_game(variant, seed).legal_moves()[0])
    moves = [first, "t1-t2x13"]
    return {
        "format": "solrace-race/1",
        "room": "ABCDEFGH",
        "race": 12,
        "variant": variant,
        "seed": seed,
        "par": None,
        "par_line": None,
        "undo": True,
        "spectators": "live",
        "ended_ms": 1,
        "ghost": None,
        "players": {
            "a": {"name": "Maximilianne_Wolfeschle", "moves": moves, "times": [500, 900]},
            "b": {"name": LONG_NAME, "moves": [], "times": []},
        },
        "results": [
            {
                "rank": 1,
                "player_id": "a",
                "name": "Maximilianne_Wolfeschle",
                "status": "resigned",
                "banked": 1,
                "moves": 2,
                "time_ms": 3_600_000,
            },
            {
                "rank": 2,
                "player_id": "b",
                "name": LONG_NAME,
                "status": "out_of_time",
                "banked": 0,
                "moves": 0,
                "time_ms": 3_600_000,
            },
        ],
    }


PAST_THE_EDGE = """() => [...document.querySelectorAll("body *")]
  .filter((n) => n.offsetParent && n.getBoundingClientRect().right > innerWidth + 0.5)
  .map((n) => n.dataset.testid || n.className || n.tagName)"""


@pytest.mark.parametrize("variant", VARIANTS)
async def test_the_replay_page_does_not_scroll_sideways_at_375_pixels(
    pages: Pages, variant: str
) -> None:
    page = await pages.open("/", SMALL_PHONE)
    body = json.dumps(long_named_record(variant))

    async def serve(route: Route) -> None:
        await route.fulfill(status=200, content_type="application/json", body=body)

    await page.route("**/api/race?*", serve)
    await page.goto(f"{pages.base}/replay/ABCDEFGH/12")
    await expect(page.locator(tid("replay"))).to_be_visible()
    await expect(page.locator(tid("rp-error"))).to_have_count(1)
    await expect(page.locator(tid("rp-ghost"))).to_have_count(2)
    await expect(page.locator(tid("rp-name")).last).to_have_attribute("title", LONG_NAME)
    for key in ("Home", "ArrowRight", "End"):  # the deal, a step in, the end
        await page.keyboard.press(key)
        width = await page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= await page.evaluate("window.innerWidth"), key
        assert await page.evaluate(PAST_THE_EDGE) == [], key
