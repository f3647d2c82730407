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


async def test_a_guest_in_a_race_resumes_though_an_account_took_a_name_like_its_own(
    start_server: ServerFactory,
) -> None:
    """A rival claimed a look-alike of a racing guest's name while the guest was away
    (a capital I for an l): the guest's resume was refused ``name_taken`` until its grace
    ran out and it lost the race. It resumes, under its name in that room; out of the
    room, it picks another as any guest named so."""
    server = await start_server()
    guest = Client(server.url, name="Rivall", request_timeout=TIMEOUT, resume=False)
    await guest.connect()
    rival = Client(server.url, name="Other", request_timeout=TIMEOUT)
    await rival.connect()
    try:
        room = await guest.create_room("canfield", winnable=False, countdown=0)
        await rival.join(room["code"])
        await guest.ready()
        await rival.ready()
        await guest.next_event("race_started", timeout=TIMEOUT)
        token = guest.token
        assert token is not None
        await guest.close()  # the guest's connection drops
        squatter = await _claim(server.url, "RivaII")  # a look-alike account meanwhile
        try:
            back = await _hello(server.url, token=token)
            assert back["type"] == "welcome", back
            assert back["name"] == "Rivall" and back.get("room") == room["code"]
            # Out of the room, the name is the account's look-alike: another is asked for.
            resumed = Client(server.url, token=token, request_timeout=TIMEOUT)
            await resumed.connect()
            await resumed.resign()
            await resumed.leave()
            await resumed.close()
            refused = await _hello(server.url, token=token)
            assert refused["type"] == "error" and refused["code"] == "name_taken", refused
        finally:
            await squatter.close()
    finally:
        await rival.close()


async def test_no_guest_or_account_takes_the_name_of_deleted_accounts_entries(
    start_server: ServerFactory,
) -> None:
    server = await start_server()
    refused = await _hello(server.url, name="Deleted Player")
    assert refused["type"] == "error" and refused["code"] == "bad_name", refused
    guest = Client(server.url, name="Pat", request_timeout=TIMEOUT, resume=False)
    await guest.connect()
    token = guest.token
    await guest.close()
    renamed = await _hello(server.url, token=token or "", name="deleted player")
    assert renamed["type"] == "error" and renamed["code"] == "bad_name", renamed
