"""Accounts on both backends: claim, log in from anywhere, change the password, revoke,
delete (its daily entries anonymised), never expire, and logins held to their budgets.

Every client is a real websocket on loopback; a second "device" is a second connection.
To play clients at other addresses, the node trusts 127.0.0.1 as a proxy and each raw
client sends the ``X-Real-IP`` a proxy would (as tests/server/test_budgets.py does).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import replace
from typing import Any

import pytest
from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory
from e2e_support import RawClient

from solrace.client import Client, ServerError
from solrace.server import names
from solrace.server.accounts import DELETED_NAME
from solrace.server.backends.base import LOGIN_ADDRESSES

PASSWORD = "correct horse battery"
DAY_ONE = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC).timestamp()


class Clock:
    """The node's clock, moved on by the test."""

    def __init__(self, now: float = DAY_ONE) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def at(address: str) -> dict[str, str]:
    """The header a trusted proxy adds for a client at ``address``."""
    return {"X-Real-IP": address}


def refused(reply: dict[str, Any], code: str) -> bool:
    return reply["type"] == "error" and reply["code"] == code


def over(reply: dict[str, Any], reason: str) -> bool:
    return refused(reply, "over_budget") and reply["reason"] == reason and reply["retry_after"] > 0


async def client(server: RunningServer, **kwargs: Any) -> Client:
    made = Client(server.url, request_timeout=TIMEOUT, **kwargs)
    await made.connect()
    return made


async def claimed(server: RunningServer, name: str, password: str = PASSWORD) -> RawClient:
    """A raw connection of a guest that has just claimed ``name``."""
    raw = await RawClient.open(server.url, name=name)
    reply = await raw.request({"type": "claim", "password": password})
    assert reply["type"] == "account", reply
    raw.token = reply["token"]
    return raw


async def login(server: RunningServer, account: str, password: str, **hello: Any) -> dict[str, Any]:
    """The reply to a hello that logs in, on a fresh connection."""
    raw = await RawClient.open(server.url, name=None, headers=hello.pop("headers", None))
    return await raw.request({"type": "hello", "account": account, "password": password, **hello})


async def hello_with(server: RunningServer, token: str) -> dict[str, Any]:
    raw = await RawClient.open(server.url, name=None)
    return await raw.request({"type": "hello", "token": token})


# -- claim and log in ----------------------------------------------------------------------


async def test_a_guest_claims_its_name_and_logs_in_from_another_device(
    start_server: ServerFactory,
) -> None:
    clock = Clock()
    server = await start_server(clock=clock)
    phone = await client(server, name="Alice")
    assert phone.account is None
    await phone.create_room("canfield")  # a guest with a history
    await phone.leave()
    reply = await phone.claim(PASSWORD)
    assert reply["type"] == "account" and reply["name"] == "Alice"
    assert reply["created_ms"] == int(clock.now * 1000)
    assert phone.account == {"name": "Alice", "created_ms": reply["created_ms"]}
    backend = server.node.backend
    assert phone.player_id is not None
    assert await backend.account_created_ms(phone.player_id) == reply["created_ms"]

    # Another device logs in by the name, written in any case.
    laptop = await client(server, account="ALICE", password=PASSWORD)
    assert laptop.player_id == phone.player_id, "the same identity, with its history"
    assert laptop.name == "Alice" and laptop.account == phone.account
    # One connection per player: the phone's is taken over (4001), its token still good.
    assert (await phone.next_event("closed", timeout=TIMEOUT))["code"] == 4001
    again = await hello_with(server, reply["token"])
    assert again["type"] == "welcome" and again["account"]["name"] == "Alice"
    await asyncio.gather(phone.close(), laptop.close())


async def test_a_wrong_password_and_an_unknown_name_are_refused_alike(
    start_server: ServerFactory,
) -> None:
    server = await start_server()
    await claimed(server, "Bruno")
    wrong = await login(server, "bruno", "not the password")
    nobody = await login(server, "nobody here", PASSWORD)
    too_short = await login(server, "bruno", "short")
    for reply in (wrong, nobody, too_short):
        assert refused(reply, "wrong_password"), reply
    assert wrong["message"] == nobody["message"] == too_short["message"]
    assert (await login(server, "Bruno", PASSWORD))["type"] == "welcome"
    # A login sends a name and a password, and never a token as well.
    raw = await claimed(server, "Berta")
    both = await login(server, "Berta", PASSWORD, token=raw.token)
    assert refused(both, "bad_field"), both
    half = await RawClient.open(server.url, name=None)
    assert refused(await half.request({"type": "hello", "password": PASSWORD}), "bad_field")


async def test_taken_and_look_alike_names_are_refused(start_server: ServerFactory) -> None:
    server = await start_server()
    look_alikes = ("Alice", "ALICE", "a1ice", "aIice", "\u0410lice")  # А: Cyrillic
    # Guests who said hello under these names before anyone claimed "alice".
    guests = [await RawClient.open(server.url, name=name) for name in look_alikes]
    await claimed(server, "alice")
    for look_alike, guest in zip(look_alikes, guests, strict=True):
        reply = await guest.request({"type": "claim", "password": PASSWORD})
        assert refused(reply, "name_taken"), (look_alike, reply)
    other = await claimed(server, "alicia")  # another name is free
    again = await other.request({"type": "claim", "password": PASSWORD})
    assert refused(again, "already_an_account"), again
    # From now on no guest says hello under the account's name (test_guest_names.py).
    late = await RawClient.open(server.url, name=None)
    reply = await late.request({"type": "hello", "name": "ALICE"})
    assert refused(reply, "name_taken"), reply
    marked = await RawClient.open(server.url, name=None)  # underlined: no letter of its own
    reply = await marked.request({"type": "hello", "name": "al\u0332ice"})
    assert refused(reply, "name_taken"), reply


async def test_a_password_has_8_to_128_characters(start_server: ServerFactory) -> None:
    server = await start_server()
    guest = await RawClient.open(server.url, name="Cleo", subprotocol="solrace.v1.json")
    for password in ("seven77", "x" * 129, "é" * 129):
        reply = await guest.request({"type": "claim", "password": password})
        assert refused(reply, "bad_password"), (password, reply)
    # NFKC first: a password of 8 full-width letters is one of 8 letters.
    reply = await guest.request({"type": "claim", "password": "ｐａｓｓｗｏｒｄ"})
    assert reply["type"] == "account", reply
    assert (await login(server, "Cleo", "password"))["type"] == "welcome"
    long_one = await RawClient.open(server.url, name="Cyd", subprotocol="solrace.v1.json")
    reply = await long_one.request({"type": "claim", "password": "y" * 128})
    assert reply["type"] == "account", reply


async def test_an_account_keeps_its_name_and_a_bot_says_so(start_server: ServerFactory) -> None:
    server = await start_server()
    raw = await claimed(server, "Dana")
    renamed = await RawClient.open(server.url, name=None)
    reply = await renamed.request({"type": "hello", "token": raw.token, "name": "Not Dana"})
    assert reply["name"] == "Dana", "an account's name is its own"
    assert reply["bot"] is False
    bot = await RawClient.open(server.url, name=None)
    welcome = await bot.request({"type": "hello", "name": "beep", "bot": True})
    assert welcome["bot"] is True and "account" not in welcome
    assert server.node.sessions[welcome["player_id"]].bot is True
    assert server.node.sessions[reply["player_id"]].bot is False


# -- tokens --------------------------------------------------------------------------------


async def test_changing_the_password_logs_out_the_other_devices(
    start_server: ServerFactory,
) -> None:
    server = await start_server()
    phone = await claimed(server, "Edna")
    old_token = phone.token
    laptop = await client(server, account="edna", password=PASSWORD)
    assert await phone.closed() == 4001  # taken over by the laptop's login
    with pytest.raises(ServerError) as wrong:
        await laptop.change_password("not it at all", "a new password")
    assert wrong.value.code == "wrong_password"
    with pytest.raises(ServerError) as short:
        await laptop.change_password(PASSWORD, "short")
    assert short.value.code == "bad_password"
    reply = await laptop.change_password(PASSWORD, "a new password")
    assert reply["token"] != old_token and laptop.token == reply["token"]
    await laptop.ping()  # this device goes on
    assert refused(await hello_with(server, old_token), "bad_token")
    assert refused(await login(server, "Edna", PASSWORD), "wrong_password")
    assert (await login(server, "Edna", "a new password"))["token"] == reply["token"]
    await laptop.close()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_new_password_closes_the_accounts_connections_on_other_nodes(
    start_server: ServerFactory,
) -> None:
    first = await start_server()
    second = await start_server()
    await claimed(first, "Fern")
    phone = await RawClient.open(first.url, name=None)
    await phone.request({"type": "hello", "account": "Fern", "password": PASSWORD})
    laptop = await client(second, account="Fern", password=PASSWORD)
    await laptop.change_password(PASSWORD, "another password")
    assert await phone.closed() == 4003
    await laptop.ping()  # the node of the device that changed it keeps it
    await laptop.close()


async def test_revoking_the_tokens_keeps_this_connection(start_server: ServerFactory) -> None:
    server = await start_server()
    raw = await claimed(server, "Gina")
    old_token = raw.token
    reply = await raw.request({"type": "revoke_tokens"})
    assert reply["type"] == "account" and reply["token"] != old_token, reply
    assert (await raw.request({"type": "create_room", "variant": "canfield"}))["type"] == "room"
    assert refused(await hello_with(server, old_token), "bad_token")
    assert (await hello_with(server, reply["token"]))["type"] == "welcome"
    guest = await RawClient.open(server.url, name="Guest")
    for request in (
        {"type": "revoke_tokens"},
        {"type": "change_password", "old": PASSWORD, "new": "whatever you say"},
        {"type": "delete_account", "password": PASSWORD},
    ):
        assert refused(await guest.request(request), "not_an_account"), request


async def test_revoking_the_tokens_counts_as_a_heavy_request(start_server: ServerFactory) -> None:
    server = await start_server()
    raw = await claimed(server, "Hana")
    limits, budgets = server.config.limits, server.config.budgets
    # What the burst leaves after claiming, spent ten messages at a time: each revoke
    # writes the store and tells every connection of the account.
    kinds = [(await raw.request({"type": "revoke_tokens"}))["type"] for _ in range(8)]
    taken = kinds.count("account")
    assert taken <= limits.burst // budgets.heavy_request_cost, kinds
    assert "error" in kinds, kinds


# -- deleting ------------------------------------------------------------------------------


async def play_daily(player: Client) -> dict[str, Any]:
    """Start today's daily attempt, resign it, leave its room; the race's results."""
    await player.daily("rainbow-canfield")
    await player.move("d")
    await player.resign()
    over = await player.next_event("race_over", timeout=TIMEOUT)
    await player.leave()
    return over


async def test_deleting_an_account_anonymises_its_daily_entries(
    start_server: ServerFactory,
) -> None:
    clock = Clock()
    server = await start_server(clock=clock)
    backend = server.node.backend
    hana = await client(server, name="Hana")
    await hana.claim(PASSWORD)
    token, player_id = hana.token, hana.player_id
    assert token is not None and player_id is not None
    clock.now += 86_400  # the account's second day: its attempt ranks
    await play_daily(hana)
    date = dt.datetime.fromtimestamp(clock.now, dt.UTC).date().isoformat()
    board = await hana.leaderboard("rainbow-canfield")
    assert [e["name"] for e in board["top"]] == ["Hana"], board
    assert [e["player_id"] for e in board["history"]] == [player_id]

    await hana.daily("canfield")  # in a room: leave it first
    with pytest.raises(ServerError) as busy:
        await hana.delete_account(PASSWORD)
    assert busy.value.code == "already_in_room"
    await hana.leave()
    with pytest.raises(ServerError) as wrong:
        await hana.delete_account("not the password")
    assert wrong.value.code == "wrong_password"
    await hana.delete_account(PASSWORD)
    assert (await hana.next_event("closed", timeout=TIMEOUT))["code"] == 1000
    await hana.close()

    assert await backend.player(player_id) is None
    assert await backend.account(player_id) is None
    assert await backend.player_history(player_id) == []
    assert refused(await hello_with(server, token), "bad_token")
    assert refused(await login(server, "Hana", PASSWORD), "wrong_password")
    entries = await backend.daily_entries(date, "rainbow-canfield")
    assert len(entries) == 1
    (gone,) = entries
    assert gone.name == DELETED_NAME and gone.player_id != player_id
    assert await backend.player(gone.player_id) is None, "an id that names no one"
    # The boards show it so; the name is free for someone else.
    async with Client(server.url, name="Ivo", request_timeout=TIMEOUT) as ivo:
        board = await ivo.leaderboard("rainbow-canfield")
        assert [(e["name"], e["player_id"]) for e in board["top"]] == [
            (DELETED_NAME, gone.player_id)
        ]
        assert "Hana" not in str(board)
    async with Client(server.url, name="hana", request_timeout=TIMEOUT) as newcomer:
        assert (await newcomer.claim("a password of hers"))["name"] == "hana"


# -- expiry --------------------------------------------------------------------------------


async def test_an_account_survives_the_guest_sweep(
    start_server: ServerFactory, backend_kind: str
) -> None:
    clock = Clock()
    server = await start_server(clock=clock, guest_ttl_s=2.0 if backend_kind == "redis" else 3600)
    backend = server.node.backend
    account = await claimed(server, "Jules")
    guest = await RawClient.open(server.url, name="Kai")
    await asyncio.gather(account.close(), guest.close())
    clock.now += 7200
    if backend_kind == "embedded":
        assert await server.node.expire_guests() == 1
    else:
        # Redis forgets a guest's key by its time to live; an account's has none.
        assert await backend._redis.pttl(backend._player_key(account.player_id)) == -1
        async with asyncio.timeout(TIMEOUT):
            while await backend.player(guest.player_id) is not None:
                await asyncio.sleep(0.05)
    assert await backend.player(guest.player_id) is None
    assert refused(await hello_with(server, guest.token), "bad_token")
    assert (await hello_with(server, account.token))["account"]["name"] == "Jules"
    assert (await login(server, "Jules", PASSWORD))["player_id"] == account.player_id


# -- budgets -------------------------------------------------------------------------------


async def test_a_flood_of_logins_from_one_address_is_held_to_its_budget(
    start_server: ServerFactory,
) -> None:
    server = await start_server(
        budgets=replace(LOOSE_BUDGETS, logins_per_minute=3, accounts_per_day=2),
        trusted_proxies=("127.0.0.1",),
    )
    await claimed(server, "Lena")
    flood = at("203.0.113.7")
    for _ in range(3):
        assert refused(await login(server, "Lena", "guess guess", headers=flood), "wrong_password")
    # Over the budget even the right password is not checked.
    assert over(await login(server, "Lena", PASSWORD, headers=flood), "logins_per_minute")
    assert over(await login(server, "someone", PASSWORD, headers=flood), "logins_per_minute")
    # Another address logs in.
    assert (await login(server, "Lena", PASSWORD, headers=at("198.51.100.9")))["type"] == "welcome"
    # Accounts made per address: two a day from 203.0.113.7 (Lena's came from 127.0.0.1).
    for name in ("Mo", "Nia"):
        guest = await RawClient.open(server.url, name=name, headers=flood)
        assert (await guest.request({"type": "claim", "password": PASSWORD}))["type"] == "account"
    third = await RawClient.open(server.url, name="Oz", headers=flood)
    assert over(await third.request({"type": "claim", "password": PASSWORD}), "accounts_per_day")


async def test_an_account_is_held_to_its_budget_from_every_address(
    start_server: ServerFactory,
) -> None:
    server = await start_server(
        budgets=replace(LOOSE_BUDGETS, account_logins_per_hour=2),
        trusted_proxies=("127.0.0.1",),
    )
    await claimed(server, "Pia")
    await claimed(server, "Quinn")
    for n in range(2):
        reply = await login(server, "pia", "guess guess", headers=at(f"192.0.2.{n}"))
        assert refused(reply, "wrong_password"), reply
    # Any form of the name is the same account.
    assert over(
        await login(server, "PIA", PASSWORD, headers=at("192.0.2.9")), "account_logins_per_hour"
    )
    assert (await login(server, "Quinn", PASSWORD, headers=at("192.0.2.9")))["type"] == "welcome"


async def test_guesses_from_elsewhere_do_not_lock_the_owner_out_at_home(
    start_server: ServerFactory,
) -> None:
    server = await start_server(
        budgets=replace(LOOSE_BUDGETS, account_logins_per_hour=2),
        trusted_proxies=("127.0.0.1",),
    )
    home, cafe = at("198.51.100.20"), at("198.51.100.30")
    guest = await RawClient.open(server.url, name="Rhea", headers=home)
    assert (await guest.request({"type": "claim", "password": PASSWORD}))["type"] == "account"
    assert (await login(server, "Rhea", PASSWORD, headers=cafe))["type"] == "welcome"
    for n in range(4):  # the account's budget, spent from elsewhere and past it
        await login(server, "Rhea", "guess guess", headers=at(f"192.0.2.{n}"))
    assert over(
        await login(server, "Rhea", PASSWORD, headers=at("192.0.2.9")), "account_logins_per_hour"
    )
    # Where the password was given right before (the claim, a login), it still works.
    for place in (home, cafe):
        assert (await login(server, "Rhea", PASSWORD, headers=place))["type"] == "welcome"
    # A wrong one from there is still refused, and spends that address's own budget.
    assert refused(await login(server, "Rhea", "guess guess", headers=home), "wrong_password")
    backend = server.node.backend
    account = await backend.account_named(names.name_keys("Rhea"))
    assert account is not None
    for n in range(LOGIN_ADDRESSES + 2):  # the store keeps the newest few alone
        await backend.note_login_address(account, f"tag{n}", 1_000 + n)
    assert await backend.known_login_address(account, f"tag{LOGIN_ADDRESSES + 1}")
    assert not await backend.known_login_address(account, "tag0")


async def test_deleting_anonymises_entries_on_the_bots_board_and_in_review(
    start_server: ServerFactory,
) -> None:
    clock = Clock()
    server = await start_server(clock=clock, daily_account_age_days=0)
    backend = server.node.backend
    date = dt.datetime.fromtimestamp(clock.now, dt.UTC).date().isoformat()
    gone: dict[str, str] = {}
    for name, bot, gap_s in (("robo", True, 2.0), ("swift", False, 0.05)):
        player = await client(server, name=name, bot=bot)
        await player.claim(PASSWORD)
        await player.daily("rainbow-canfield")
        for _ in range(25):  # a person's pace for a bot, a bot's for the person
            clock.now += gap_s
            await player.move("d")
        await player.resign()
        await player.next_event("race_over", timeout=TIMEOUT)
        await player.leave()
        assert player.player_id is not None
        gone[name] = player.player_id
        await player.delete_account(PASSWORD)
        await player.close()
    entries = await backend.daily_entries(date, "rainbow-canfield")
    assert len(entries) == 2
    assert {e.name for e in entries} == {DELETED_NAME}
    assert not {e.player_id for e in entries} & set(gone.values())
    # Each keeps its moves, for the day's export and replays (boards and histories hold
    # copies without them: the anonymised entries are made from the whole ones).
    assert [len(e.log) for e in entries] == [25, 25] and all(len(e.times) == 25 for e in entries)
    (bot_entry,) = await backend.daily_top(date, "rainbow-canfield", 0, 10, "bots")
    assert bot_entry.name == DELETED_NAME and bot_entry.player_id not in gone.values()
    (held,) = await backend.daily_flagged()
    assert held.name == DELETED_NAME and held.player_id not in gone.values()
    # An operator reviews it as any other: it goes on the people's board, anonymous.
    assert await backend.keep_daily_entry(date, "rainbow-canfield", held.player_id, "fine")
    (kept,) = await backend.daily_top(date, "rainbow-canfield", 0, 10)
    assert (kept.name, kept.player_id) == (DELETED_NAME, held.player_id)
