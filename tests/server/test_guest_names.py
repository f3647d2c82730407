"""A guest never goes by an account's name: a hello, or a rename, under an account's name
(or one that looks like it, as account names are compared) is refused with
``name_taken``, on both backends."""

from __future__ import annotations

import pytest
from conftest import TIMEOUT, ServerFactory
from e2e_support import RawClient

from solrace.client import Client, ServerError

PASSWORD = "a guest's pass phrase"


async def _claim(url: str, name: str) -> Client:
    client = Client(url, name=name, request_timeout=TIMEOUT)
    await client.connect()
    await client.claim(PASSWORD)
    return client


async def _hello(url: str, **fields: str) -> dict[str, object]:
    raw = await RawClient.open(url, name=None)
    try:
        return await raw.request({"type": "hello", **fields})
    finally:
        await raw.close()


@pytest.mark.parametrize(
    "name",
    [
        "Victim",
        "victim",
        "VICTIM",
        "  Victim ",
        "Vіctim",  # a Cyrillic і
        "Ｖｉｃｔｉｍ",  # fullwidth, NFKC makes it Victim
    ],
)
async def test_a_new_guest_may_not_take_an_accounts_name(
    start_server: ServerFactory, name: str
) -> None:
    server = await start_server()
    victim = await _claim(server.url, "Victim")
    try:
        refused = await _hello(server.url, name=name)
        assert refused["type"] == "error" and refused["code"] == "name_taken", refused
        # Nothing was made: another name is welcome, and the account logs in as before.
        assert (await _hello(server.url, name="Victor"))["type"] == "welcome"
        login = await _hello(server.url, account="victim", password=PASSWORD)
        assert login["type"] == "welcome" and login["name"] == "Victim"
    finally:
        await victim.close()


async def test_a_guest_may_not_rename_to_an_accounts_name(start_server: ServerFactory) -> None:
    server = await start_server()
    victim = await _claim(server.url, "Victim")
    guest = Client(server.url, name="Mallory", request_timeout=TIMEOUT, resume=False)
    await guest.connect()
    token = guest.token
    await guest.close()
    try:
        assert token is not None
        refused = await _hello(server.url, token=token, name="victim")
        assert refused["type"] == "error" and refused["code"] == "name_taken", refused
        back = await _hello(server.url, token=token)
        assert back["type"] == "welcome" and back["name"] == "Mallory"
        renamed = await _hello(server.url, token=token, name="Vic")
        assert renamed["type"] == "welcome" and renamed["name"] == "Vic"
        # The account itself, back with its token, keeps its name as before.
        own = await _hello(server.url, token=victim.token or "", name="Victim")
        assert own["type"] == "welcome" and own["name"] == "Victim"
    finally:
        await victim.close()


async def test_a_guest_whose_name_became_an_accounts_picks_another(
    start_server: ServerFactory,
) -> None:
    # A guest named Sam since before anyone claimed "Sam" is not shown as the account:
    # back with its token, it is asked for another name.
    server = await start_server()
    early = Client(server.url, name="Sam", request_timeout=TIMEOUT, resume=False)
    await early.connect()
    token = early.token
    await early.close()
    claimer = await _claim(server.url, "sam")
    try:
        assert token is not None
        refused = await _hello(server.url, token=token)
        assert refused["type"] == "error" and refused["code"] == "name_taken", refused
        again = await _hello(server.url, token=token, name="Sam W")
        assert again["type"] == "welcome" and again["name"] == "Sam W"
        with pytest.raises(ServerError) as taken:
            await Client(server.url, name="SAM", request_timeout=TIMEOUT).connect()
        assert taken.value.code == "name_taken"
    finally:
        await claimer.close()
