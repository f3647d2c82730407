"""The page lives under the node's Content-Security-Policy: real Chromium, a whole race.

Every page of the test listens for ``securitypolicyviolation`` from before its first
script runs, and every console error and script error is kept: across a race (lobby,
countdown, moves by click and by drag, a spectator, results, a rematch) and the Daily
page (which fetches the API), there must be none. A last check makes sure the listener
does hear a violation when there is one.

The module is skipped when ``/usr/bin/chromium`` is absent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium", allow_module_level=True)

from playwright.async_api import Browser, Page, async_playwright, expect  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = TIMEOUT * 1000
expect.set_options(timeout=WAIT_MS)

LISTEN = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(
    `${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${event.sourceFile}:${event.lineNumber}`
  );
});
"""


@pytest.fixture
def backend_kind() -> str:
    """The page does not depend on the backend: the embedded one serves it."""
    return "embedded"


def tid(name: str) -> str:
    """A selector for a data-testid."""
    return f'[data-testid="{name}"]'


class Watched:
    """Pages, each in a context of its own, whose every CSP violation and error is kept."""

    def __init__(self, browser: Browser, server: RunningServer) -> None:
        self.browser = browser
        self.base = f"http://127.0.0.1:{server.server.port}"
        self.pages: list[Page] = []
        self.problems: list[str] = []
        self.policies: list[str] = []

    async def open(self, path: str = "/") -> Page:
        context = await self.browser.new_context(viewport={"width": 1200, "height": 900})
        context.set_default_timeout(WAIT_MS)
        await context.add_init_script(LISTEN)
        page = await context.new_page()
        page.on("pageerror", lambda error: self.problems.append(f"script error: {error}"))
        page.on(
            "console",
            lambda message: (
                self.problems.append(f"console {message.type}: {message.text}")
                if message.type in ("error", "warning")
                else None
            ),
        )
        response = await page.goto(self.base + path)
        assert response is not None and response.ok
        self.policies.append(await response.header_value("content-security-policy") or "")
        self.pages.append(page)
        return page

    async def violations(self) -> list[str]:
        """Every violation any page heard."""
        found: list[str] = []
        for page in self.pages:
            found += await page.evaluate("window.__violations")
        return found


@pytest.fixture
async def watched(server: RunningServer) -> AsyncIterator[Watched]:
    """Pages on the test's server, in one headless Chromium."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield Watched(browser, server)
        await browser.close()


async def enter_name(page: Page, name: str) -> None:
    await expect(page.locator(tid("name-screen"))).to_be_visible()
    await page.fill(tid("name-input"), name)
    await page.click(tid("name-submit"))
    await expect(page.locator(tid("player-name"))).to_have_text(name)


async def drag(page: Page, source: Any, target: Any) -> None:
    """Drag ``source`` onto ``target`` with the mouse, in small steps."""
    src = await source.bounding_box()
    dst = await target.bounding_box()
    assert src is not None and dst is not None
    x0, y0 = src["x"] + src["width"] / 2, src["y"] + min(12, src["height"] / 2)
    x1, y1 = dst["x"] + dst["width"] / 2, dst["y"] + min(20, dst["height"] / 2)
    await page.mouse.move(x0, y0)
    await page.mouse.down()
    await page.mouse.move(x0 + (x1 - x0) / 2, y0 + (y1 - y0) / 2, steps=4)
    await page.mouse.move(x1, y1, steps=4)
    await page.mouse.up()


async def test_a_race_and_the_daily_page_raise_no_csp_violation(watched: Watched) -> None:
    alice = await watched.open()
    await enter_name(alice, "Alice")
    await page_has_home(alice)
    await alice.select_option(tid("variant"), "canfield")
    await alice.fill(tid("countdown-setting"), "1")
    await alice.select_option(tid("spectators"), "live")  # every board shown, as played
    await alice.click(tid("create-room"))
    await expect(alice.locator(tid("room"))).to_be_visible()
    code = (await alice.text_content(tid("room-code"))) or ""

    bob = await watched.open(f"/r/{code}")
    await enter_name(bob, "Bob")
    carol = await watched.open(f"/r/{code}?as=spectator")
    await enter_name(carol, "Carol")
    await expect(alice.locator(tid("member"))).to_have_count(3)

    await alice.click(tid("start"))
    await expect(bob.locator(tid("countdown"))).to_be_visible()
    area = alice.locator(f"{tid('player-area')} {tid('board')}")
    await expect(area).to_be_visible()
    await expect(carol.locator(tid("spectator-board"))).to_have_count(2)

    # A draw by click (the node deals Canfield races with a draw to make), then a drag of
    # the waste's card: the dragged layer and its flight back are styled from script.
    await alice.click(f'{tid("player-area")} [data-pile="s"]')
    row = bob.locator(f'{tid("progress-row")}:has-text("Alice")')
    await expect(row).to_have_attribute("data-moves", "1")
    waste = alice.locator(f'{tid("player-area")} [data-pile="w"] [data-card]').last
    await drag(alice, waste, alice.locator(f'{tid("player-area")} [data-pile="t1"]'))
    await expect(alice.locator(tid("drag-layer"))).to_have_count(0)

    for page in (alice, bob):
        await page.click(tid("resign"))
        await page.click(tid("resign"))
    for page in (alice, bob, carol):
        await expect(page.locator(tid("results"))).to_be_visible()
    await bob.click(tid("rematch"))
    await expect(alice.locator(tid("room"))).to_be_visible()

    # The Daily page reads the boards over HTTP (connect-src) and the websocket.
    daily = await watched.open("/daily")
    await enter_name(daily, "Dora")
    await expect(daily.locator(tid("daily"))).to_be_visible()
    await expect(daily.locator(tid("daily-best-empty"))).to_be_visible()

    assert all("frame-ancestors 'none'" in policy for policy in watched.policies)
    assert await watched.violations() == []
    assert watched.problems == []

    # The listener does hear a violation: an image from elsewhere is blocked.
    await daily.evaluate(
        "document.body.insertAdjacentHTML('beforeend', '<img src=\"https://evil.example/x.png\">')"
    )
    await daily.wait_for_function("window.__violations.length > 0")
    (violation,) = await daily.evaluate("window.__violations")
    assert violation.startswith("img-src blocked https://evil.example/x.png"), violation


async def page_has_home(page: Page) -> None:
    await expect(page.locator(tid("home"))).to_be_visible()


async def test_the_page_cannot_be_framed(watched: Watched) -> None:
    context = await watched.browser.new_context()
    page = await context.new_page()
    refusals: list[str] = []
    page.on("console", lambda message: refusals.append(message.text))
    async with page.expect_console_message(lambda m: "frame-ancestors" in m.text):
        await page.set_content(f'<iframe src="{watched.base}/"></iframe>')
    assert any("The request has been blocked" in text for text in refusals), refusals
    (frame,) = [f for f in page.frames if f is not page.main_frame]
    assert await frame.query_selector(tid("home")) is None
    await context.close()
