"""Display names: what a name may hold, how long it is, and unique names in a room."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from conftest import ClientFactory

from solrace.client import ServerError
from solrace.protocol import ErrorCode, ProtocolError
from solrace.server import names
from solrace.server import room as rooms
from solrace.server.identity import check_name
from solrace.server.room import Role, Room, Settings

MAX = 24
CYRILLIC_A = "\u0410"  # А, CYRILLIC CAPITAL LETTER A


def refusal(name: str, max_len: int = MAX) -> str:
    """The sentence ``check_name`` refuses ``name`` with (it must refuse it)."""
    with pytest.raises(ProtocolError) as caught:
        check_name(name, max_len)
    assert caught.value.code is ErrorCode.BAD_NAME
    assert caught.value.message
    return caught.value.message


# -- what a name may hold -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "\u2800",  # BRAILLE PATTERN BLANK
        "\u3164",  # HANGUL FILLER
        "\u115f",  # HANGUL CHOSEONG FILLER
        "\u1160",  # HANGUL JUNGSEONG FILLER
        "\uffa0",  # HALFWIDTH HANGUL FILLER
        "\u200b",  # ZERO WIDTH SPACE
        "\u200b\u200b \u200b",
        "\u2060",  # WORD JOINER
        "\u2063",  # INVISIBLE SEPARATOR
        "\ufeff",  # ZERO WIDTH NO-BREAK SPACE
        "\u00ad",  # SOFT HYPHEN
        "\u034f",  # COMBINING GRAPHEME JOINER
        "\ufe0f",  # VARIATION SELECTOR-16, alone
        "\ufe0f\ufe0e",
        "\U000e0100",  # VARIATION SELECTOR-17, alone
        "\U000e0041\U000e0042\U000e007f",  # tag characters
        "\u0301",  # a lone combining mark
        "\u0301\u0302\u0303",
        "\u20e3",  # COMBINING ENCLOSING KEYCAP, alone
        "\u200d",  # ZERO WIDTH JOINER, alone
        "\u200c",
        "\u2800\u3164\u200b\u0301",
    ],
)
def test_names_of_nothing_visible_are_refused(name: str) -> None:
    refusal(name)


@pytest.mark.parametrize(
    "name",
    [
        "al\u200bice",
        "alice\u2060",
        "\ufeffalice",
        "ali\u00adce",
        "alice\u2800",
        "ali\u3164ce",
        "bob\U000e0041",
        "a\u200d",  # a joiner with nothing after it
        "\u200da",  # nor before it
        "a\u200d b",
        "a\u200d\u0301",
        "bob \u0301",  # a mark on a space
        "bob \ufe0f",  # a selector on a space
        "a\ufe0f\ufe0f",  # two selectors on one character
    ],
)
def test_invisible_characters_inside_a_name_are_refused(name: str) -> None:
    refusal(name)


@pytest.mark.parametrize(
    "name",
    [
        "h\u0335\u0321\u0322\u0327\u0328e",
        "Z" + "\u0300\u0301\u0302\u0303\u0304\u0305" * 4 + "algo",
        "x\u0301\u0302\u0303\u0304",  # four marks: one too many
    ],
)
def test_stacks_of_combining_marks_are_refused(name: str) -> None:
    assert str(names.MAX_MARKS) in refusal(name)


def test_three_combining_marks_on_one_character_are_taken() -> None:
    # NFKC composes what it can: ज़ stays as ज + nukta (a composition exclusion).
    assert check_name("ज़िंदगी", MAX) == "ज़िंदगी"
    assert check_name("a\u0308\u0302\u0303", MAX) == "ä\u0302\u0303"
    assert check_name("x\u0323\u0302\u0303", MAX) == "x\u0323\u0302\u0303"


@pytest.mark.parametrize(
    "name",
    [
        "\u202aalice",  # LEFT-TO-RIGHT EMBEDDING
        "ali\u202bce",
        "ali\u202cce",
        "ali\u202dce",
        "ali\u202ece",  # RIGHT-TO-LEFT OVERRIDE
        "\u2066alice\u2069",  # isolates
        "\u2067ecila\u2069",
        "\u2068alice\u2069",
        "alice\u200f",  # RIGHT-TO-LEFT MARK
        "alice\u200e",
        "alice\u061c",  # ARABIC LETTER MARK
    ],
)
def test_bidi_controls_are_refused(name: str) -> None:
    assert "reorder" in refusal(name)


@pytest.mark.parametrize("name", ["bad\x07name", "a\x00b", "\x1bX", "a\x7fb", "a\x85b\x9f"])
def test_control_characters_are_refused(name: str) -> None:
    refusal(name)


@pytest.mark.parametrize("name", ["\ue000", "a\U000f0000", "a\U0010fffd", "a\ufdd0", "b\U000e0fff"])
def test_private_use_and_unassigned_characters_are_refused(name: str) -> None:
    refusal(name)


@pytest.mark.parametrize("name", ["!!!", "...", "- _ -", "()"])
def test_a_name_needs_a_letter_digit_symbol_or_emoji(name: str) -> None:
    assert "visible" in refusal(name)


@pytest.mark.parametrize(
    "name",
    [
        "👩\u200d💻",  # woman technologist: a ZWJ sequence
        "👨\u200d👩\u200d👧",  # family
        "👨\u200d👩\u200d👧\u200d👦",
        "🧑🏽\u200d🤝\u200d🧑🏻",  # people holding hands, two skin tones
        "👍🏽",  # a skin tone
        "👋🏿 hi",
        "🇫🇷",  # a flag: two regional indicators
        "🇯🇵 🇧🇷",
        "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland
        "❤️",  # VARIATION SELECTOR-16 after an emoji
        "❤\ufe0f\u200d🔥",
        "🏳️\u200d🌈",
        "1️⃣ bob",  # a keycap: digit, VS16, enclosing mark
        "🫨",  # an emoji newer than the standard library's Unicode tables
        "王小明",  # CJK
        "田中 さくら",
        "김민준",
        "José",
        "Zoë",
        "Łukasz Żółć",
        "Nguyễn Thị Ánh",
        "محمد",  # Arabic
        "مُحَمَّد",  # with its vowel marks
        "نیم\u200cفاصله",  # Persian, with a zero-width non-joiner
        "שָׁלוֹם",  # Hebrew, pointed
        "สมชาย",  # Thai
        "देवनागरी",
        "Ἀθηνᾶ",
        "葛\U000e0100",  # an ideographic variation sequence
        "R2-D2",
        "♠ ace ♥",
    ],
)
def test_ordinary_names_of_every_script_and_emoji_are_taken(name: str) -> None:
    expected = unicodedata.normalize("NFKC", name)
    assert check_name(name, MAX) == expected


def test_names_are_normalised_trimmed_and_collapsed() -> None:
    assert check_name("  ann   lee ", MAX) == "ann lee"
    assert check_name("ann\t\u3000lee\u00a0", MAX) == "ann lee"
    assert check_name("Jose\u0301", MAX) == "José"  # decomposed input, composed
    assert check_name("ｆｕｌｌ ｗｉｄｔｈ", MAX) == "full width"
    assert check_name("Ⅻ ﬁsh", MAX) == "XII fish"
    for empty in ("", "   ", "\t\n", "\u3000"):
        assert "empty" in refusal(empty)


def test_the_length_counts_user_perceived_characters() -> None:
    assert check_name("x" * MAX, MAX) == "x" * MAX
    assert "24" in refusal("x" * (MAX + 1))
    coder = "👩\u200d💻"  # three code points, one character
    assert check_name(coder * MAX, MAX) == coder * MAX
    refusal(coder * (MAX + 1))
    flag = "🇫🇷"
    assert check_name(flag * MAX, MAX) == flag * MAX
    assert check_name("e\u0301" * MAX, MAX) == "é" * MAX
    family = "👨\u200d👩\u200d👧\u200d👦"
    assert names.grapheme_count(family * 3 + "ab") == 5
    refusal("x" * 4 * MAX + " y")  # far too long: refused before it is normalised
    refusal("\ufdfa" * 200)  # NFKC makes 18 characters of each


def test_the_limit_is_the_callers() -> None:
    assert check_name("abcd", 4) == "abcd"
    refusal("abcde", 4)
    assert check_name("👍🏽👍🏽👍🏽👍🏽", 4) == "👍🏽👍🏽👍🏽👍🏽"


# -- when two names look the same ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "alice",
        "Alice",
        "ALICE",
        CYRILLIC_A + "lice",
        "\u0430lice",  # а, CYRILLIC SMALL LETTER A
        "a1ice",  # the digit one looks like an l (TR39)
        "aIice",  # and so does a capital I
        "ａｌｉｃｅ",
        "𝐚𝐥𝐢𝐜𝐞",
        "al\u200dice",
    ],
)
def test_look_alikes_of_alice_are_found(name: str) -> None:
    assert names.look_alike(name, "alice")
    assert names.look_alike("alice", name)


@pytest.mark.parametrize("name", ["alicia", "alíce", "a1ic", "bob", "al ice", "аliсе x"])
def test_other_names_are_not(name: str) -> None:
    assert not names.look_alike(name, "alice")


@pytest.mark.parametrize("mark", ["\u0307", "\u0332", "\u0335", "\u0489", "\u20dd"])
def test_a_mark_no_letter_takes_does_not_make_a_name_of_its_own(mark: str) -> None:
    """A dot above a digit, an underline, a stroke, an enclosing circle: the name looks
    like the one without them. A letter with its accent is a letter of its own."""
    assert names.look_alike("Quinn72" + mark, "Quinn72")
    assert names.look_alike("Quinn72", "Quinn7" + mark + "2")
    assert not names.look_alike("José", "Jose")
    assert not names.look_alike("Jose\u0301", "Jose")  # NFKC makes it é


def test_look_alikes_follow_tr39_skeletons() -> None:
    cyrillic_paypal = "\u0440\u0430\u0443\u0440\u0430l"  # р а у р а l
    assert names.look_alike(cyrillic_paypal, "paypal")
    assert names.look_alike("rn", "m")  # TR39 maps m to r n
    assert names.look_alike("b0b", "BOB")  # 0 → O, then case folded
    assert names.look_alike("ΑΒΓ", "ABΓ")  # Greek capitals alpha and beta
    assert names.look_alike("㈰", "(日)")  # a compatibility ligature, by NFKC
    assert not names.look_alike("Γ", "r")
    assert not names.look_alike("AL1CE", "alice")  # 1 is an l, and l is no i


def test_the_confusables_table_is_a_tr39_mapping() -> None:
    """Every source maps to a prototype that maps nowhere: a skeleton is stable."""
    table = names._PROTOTYPE
    assert len(table) > 6000
    assert table["\u0430"] == "a" and table["1"] == "l" and table["0"] == "O"
    for source, prototype in table.items():
        assert len(source) == 1 and prototype and source != prototype
        assert not any(char in table for char in prototype), (source, prototype)
        assert "\u200e" not in prototype


def test_a_unique_name_is_shown_as_it_is() -> None:
    assert names.shown_name("alice", []) == "alice"
    assert names.shown_name("alice", ["bob", "carol"]) == "alice"


def test_a_look_alike_is_numbered() -> None:
    assert names.shown_name("alice", ["Alice"]) == "alice (2)"
    assert names.shown_name(CYRILLIC_A + "lice", ["alice"]) == CYRILLIC_A + "lice (2)"
    assert names.shown_name("a1ice", ["alice", "ALICE (2)"]) == "a1ice (3)"
    assert names.shown_name("alice (2)", ["alice", "alice (2)"]) == "alice (2) (2)"


def test_a_number_keeps_the_name_within_the_limit() -> None:
    long = "abcdefghijklmnopqrstuvwx"  # 24
    shown = names.shown_name(long, [long])
    assert shown == "abcdefghijklmnopqrst (2)"
    assert names.grapheme_count(shown) == MAX
    check_name(shown, MAX)
    coder = "👩\u200d💻"
    shown = names.shown_name(coder * MAX, [coder * MAX])
    assert shown == coder * 20 + " (2)"  # cut between whole characters
    ten = names.shown_name(long, [long, *(f"{long[:20]} ({n})" for n in range(2, 10))])
    assert ten == "abcdefghijklmnopqrs (10)" and names.grapheme_count(ten) == MAX
    # The cut never leaves a space (or a joiner) before the number.
    spaced = "abcdefghijklmnopqrs tuvw"
    assert names.shown_name(spaced, [spaced]) == "abcdefghijklmnopqrs (2)"
    assert names.shown_name("abcdef", ["abcdef"], max_len=6) == "ab (2)"


def test_a_shown_name_is_kept_while_it_is_still_right() -> None:
    assert names.shown_name("alice", ["alice"], keep="alice (2)") == "alice (2)"
    assert names.shown_name("alice", [], keep="alice (2)") == "alice (2)"
    assert names.shown_name("alice", ["alice (2)"], keep="alice (2)") == "alice"
    assert names.shown_name("bob", ["alice"], keep="alice (2)") == "bob"
    assert names.shown_name("alice", ["alice"], keep="alice") == "alice (2)"


# -- the room shows every member under a name of its own ----------------------------------


def lobby(*members: tuple[str, str]) -> Room:
    """A room in the lobby that ``members`` (player id, name) joined in turn."""
    (host, host_name), *rest = members
    room = rooms.create("ROOMCODE", Settings("canfield", max_players=8), host, host_name).room
    for player_id, name in rest:
        assert room is not None
        room = rooms.join(room, player_id, name, Role.PLAYER, max_spectators=4).room
    assert room is not None
    return room


def shown(room: Room) -> list[str]:
    """The members' names, in joining order."""
    return [m.name for m in room.members.values()]


def test_members_who_look_alike_are_numbered_as_they_join() -> None:
    room = lobby(("p1", "alice"), ("p2", CYRILLIC_A + "lice"), ("p3", "ALICE"), ("p4", "bob"))
    assert shown(room) == ["alice", CYRILLIC_A + "lice (2)", "ALICE (3)", "bob"]
    assert not any(names.look_alike(a, b) for a, b in itertools.combinations(shown(room), 2))
    event = room.members_event(room.seq)
    assert [m["name"] for m in event.members] == shown(room)
    assert Room.from_dict(room.to_dict()) == room  # the shown name is the record's name


def test_a_spectator_is_numbered_too() -> None:
    room = lobby(("p1", "alice"))
    room = rooms.join(room, "s1", "a1ice", Role.SPECTATOR, max_spectators=4).room
    assert room is not None
    assert shown(room) == ["alice", "a1ice (2)"]


def test_a_number_frees_up_when_its_holder_leaves() -> None:
    room = lobby(("p1", "alice"), ("p2", "alice"))
    left = rooms.leave(room, "p1", 0).room
    assert left is not None and shown(left) == ["alice (2)"]
    again = rooms.join(left, "p3", "alice", Role.PLAYER, max_spectators=4).room
    assert again is not None and shown(again) == ["alice (2)", "alice"]


def test_joining_again_keeps_the_shown_name() -> None:
    room = lobby(("p1", "alice"), ("p2", "alice"))
    again = rooms.join(room, "p2", "alice", Role.PLAYER, max_spectators=4)
    assert again.room is not None and shown(again.room) == ["alice", "alice (2)"]


def test_a_member_back_under_a_look_alike_name_is_numbered() -> None:
    room = lobby(("p1", "alice"), ("p2", "bob"))
    dropped = rooms.set_connected(room, "p2", False, 1_000).room
    assert dropped is not None
    back = rooms.set_connected(dropped, "p2", True, 2_000, CYRILLIC_A + "LICE").room
    assert back is not None
    assert shown(back) == ["alice", CYRILLIC_A + "LICE (2)"]
    assert back.members["p2"].connected


def test_a_member_back_under_the_same_name_keeps_its_number() -> None:
    room = lobby(("p1", "alice"), ("p2", "alice"))
    dropped = rooms.set_connected(room, "p2", False, 1_000).room
    assert dropped is not None
    back = rooms.set_connected(dropped, "p2", True, 2_000, "alice")
    assert back.room is not None and shown(back.room) == ["alice", "alice (2)"]
    # Nothing changed but the connection: one members event.
    assert len(back.events) == 1
    same = rooms.set_connected(back.room, "p2", True, 3_000, "alice")
    assert same.events == () and same.room is not None  # nothing others see changed
    assert shown(same.room) == ["alice", "alice (2)"]


def test_a_racing_member_renamed_is_shown_renamed_in_the_standings() -> None:
    room = lobby(("p1", "alice"), ("p2", "bob"))
    racing = rooms.start(room, "p1", 0, seed=7).room
    assert racing is not None
    racing = rooms.tick(racing, racing.starts_ms or 0).room
    assert racing is not None and "p2" in racing.players
    back = rooms.set_connected(racing, "p2", True, 5_000, "Alice").room
    assert back is not None
    assert back.members["p2"].name == "Alice (2)"
    assert back.players["p2"].name == "Alice (2)"


# -- end to end ---------------------------------------------------------------------------


async def test_two_look_alike_players_are_shown_apart(make_client: ClientFactory) -> None:
    latin = await make_client("alice")
    cyrillic = await make_client(CYRILLIC_A + "lice")
    room = await latin.create_room("canfield")
    snapshot = await cyrillic.join(room["code"])
    members = {m["player_id"]: m["name"] for m in snapshot["members"]}
    assert members == {
        latin.player_id: "alice",
        cyrillic.player_id: CYRILLIC_A + "lice (2)",
    }
    assert not names.look_alike(*members.values())


@pytest.mark.parametrize(
    "name", ["\u2800", "\u3164", "\u0301", "ali\u202ece", "h\u0335\u0321\u0322\u0327e"]
)
async def test_a_bad_name_is_refused_over_the_wire(make_client: ClientFactory, name: str) -> None:
    with pytest.raises(ServerError) as caught:
        await make_client(name)
    assert caught.value.code == ErrorCode.BAD_NAME.value


async def test_an_emoji_name_is_taken_over_the_wire(make_client: ClientFactory) -> None:
    client = await make_client("👩\u200d💻 🇫🇷")
    room = await client.create_room("canfield")
    assert [m["name"] for m in room["members"]] == ["👩\u200d💻 🇫🇷"]


FAMILY = "\U0001f469\U0001f3fd\u200d\U0001f469\U0001f3fd\u200d\U0001f467\U0001f3fd\u200d\U0001f466\U0001f3fd"
ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"


@pytest.mark.parametrize(
    "name",
    [
        "\u200d".join(["\U0001f44d"] * 80),  # one grapheme, shown as 80 thumbs
        "\U0001f3f4" + "\U000e0061" * 120 + "\U000e007f",  # a flag of 120 tags
        "\u0915" + "\u094d\u0915" * 40,  # 40 consonants joined by viramas
        "Ann " + "\u1100" * 60 + "\u1161" * 60 + "\u11a8" * 59,  # a 179-jamo syllable
    ],
    ids=["zwj-chain", "tag-flag", "virama-chain", "jamo-cluster"],
)
def test_one_character_that_shows_as_a_long_line_is_refused(name: str) -> None:
    problem = names.name_problem(name, names.MAX_NAME_LEN)
    assert problem is not None and "code points" in problem, (len(name), problem)


def test_the_longest_emoji_sequences_are_one_character_each() -> None:
    assert len(FAMILY) == 11 and len(ENGLAND) == 7
    assert names.name_problem(f"{FAMILY} {ENGLAND} Ann", names.MAX_NAME_LEN) is None


@pytest.mark.parametrize(
    "name", ["deleted player", "Deleted Player", "DELETED PLAYER", "deIeted pIayer"]
)
def test_no_player_goes_by_the_name_of_deleted_accounts_entries(name: str) -> None:
    problem = names.name_problem(name, names.MAX_NAME_LEN)
    assert problem is not None and "deleted account" in problem
    assert names.name_problem("deleted player 2", names.MAX_NAME_LEN) is None
