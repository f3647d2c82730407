"""Display names: which are allowed, how long one is, and when two of them look the same.

Pure: no I/O after import. The confusables data (Unicode Technical Standard #39, as the
``confusable-homoglyphs`` package ships it) is read once, when this module is imported.
Character classes come from ``regex``, whose Unicode tables are newer than the standard
library's, so that recent emoji are not taken for unassigned code points.
"""

from __future__ import annotations

import functools
import itertools
import unicodedata
from collections.abc import Iterable

import regex
from confusable_homoglyphs.confusables import confusables_data

from ..protocol import Limits

__all__ = [
    "DELETED_NAME",
    "MAX_MARKS",
    "MAX_NAME_LEN",
    "grapheme_count",
    "longer_than",
    "look_alike",
    "name_keys",
    "name_problem",
    "shown_name",
]

MAX_NAME_LEN = Limits().max_name_len
MAX_MARKS = 3
"""Combining marks on one character: a Hindi ज़िं carries three, a "Zalgo" stack dozens."""
MAX_CHARACTER_CODE_POINTS = 12
"""Code points one character (grapheme cluster) of a display name may hold: the longest
emoji sequences hold 11 (a family of four with skin tones), a subdivision flag 7, and
letters with their marks far fewer. One character may otherwise chain scores of emoji
by joiners, or of consonants by viramas, and show as a long line under the name limit."""

_GRAPHEMES = regex.compile(r"\X")
_CONTROL = regex.compile(r"\p{Cc}")
_REORDERING = regex.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNASSIGNED = regex.compile(r"[\p{Cn}\p{Co}\p{Cs}]")
_VISIBLE = regex.compile(r"[\p{L}\p{N}\p{S}]")
_MARK = regex.compile(r"\p{M}")
_INVISIBLE = regex.compile(r"[\p{Cf}\p{Default_Ignorable_Code_Point}\u2800]")
"""Format characters, default-ignorable ones (U+200B, U+2060, U+FEFF, the Hangul fillers
U+115F, U+1160, U+3164, U+FFA0...) and U+2800 BRAILLE PATTERN BLANK."""
_VARIATION = regex.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180d\u180f]")
_JOINERS = frozenset("\u200c\u200d")  # ZWNJ and ZWJ: Persian and Indic words, emoji sequences
_TAG_SEQUENCE = regex.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")
"""A subdivision flag: a black flag, tag characters and a cancel tag (🏴 England...)."""
_SPECIAL = regex.compile("[ \U0001f3f4\u2800\\p{M}\\p{Cf}\\p{Default_Ignorable_Code_Point}]")
"""What :func:`_sequence_problem` looks at; any other character is a plain base."""
_SUFFIX = regex.compile(r" \(([1-9][0-9]{0,3})\)\Z")
_IGNORED_IN_KEY = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_DIACRITIC = regex.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\\p{Me}]"
)
"""The marks of the generic combining blocks (any script's accents, dots, strokes,
underlines) and the enclosing marks: where NFKC leaves one apart, on a letter or digit
that has no form with it, ``Quinn72`` with a dot above its 2 looks like ``Quinn72``. The
marks of a script's own block (Devanagari's vowel signs, say) are kept."""

_INVISIBLE_TEXT = "a display name cannot hold invisible characters (zero-width spaces, fillers)"


def _prototypes() -> dict[str, str]:
    """Each TR39 confusable character's prototype, from the package's two-way table.

    The table lists, for a prototype, every character confusable with it, and for each
    such character, its prototype alone. A prototype is then the key of a longer list, or
    a sequence (TR39 maps single characters only). In a pair of single characters that
    name each other either would serve, since keys are only compared: the one NFKC keeps
    is taken (NFKC comes first). Prototypes are then mapped through the table themselves,
    so that a key is stable.
    """
    links: dict[str, set[str]] = {}
    for key, entries in confusables_data.items():
        # The package wraps right-to-left characters in U+200E marks for display.
        links.setdefault(key.replace("\u200e", ""), set()).update(
            entry["c"].replace("\u200e", "") for entry in entries
        )
    mapping: dict[str, str] = {}
    for char, others in links.items():
        if len(char) != 1 or len(others) != 1:
            continue  # a prototype of several characters, or a sequence
        (other,) = others
        if len(links.get(other, ())) > 1 or len(other) > 1 or _rank(other) < _rank(char):
            mapping[char] = other
    for _ in range(3):
        mapping = {c: "".join([mapping.get(x, x) for x in p]) for c, p in mapping.items()}
    return {c: p for c, p in mapping.items() if p != c}


def _rank(char: str) -> tuple[bool, str]:
    """Which of two characters that name each other is the prototype: the lower."""
    return unicodedata.normalize("NFKC", char) != char, char


_PROTOTYPE = _prototypes()


def grapheme_count(text: str) -> int:
    """How many user-perceived characters (extended grapheme clusters) ``text`` holds."""
    return len(_GRAPHEMES.findall(text))


def longer_than(text: str, max_len: int) -> bool:
    """Whether ``text`` holds more than ``max_len`` graphemes (counting no further than that)."""
    if len(text) <= max_len:
        return False
    return sum(1 for _ in itertools.islice(_GRAPHEMES.finditer(text), max_len + 1)) > max_len


DELETED_NAME = "deleted player"
"""The name a deleted account's daily entries are shown under: no player's (nor one that
looks like it), so that an entry under it is never taken for a live player's."""


def name_problem(name: str, max_len: int) -> str | None:
    """What is wrong with a display name (NFKC, trimmed, spaces collapsed), or None."""
    if not name:
        return "a display name cannot be empty"
    if longer_than(name, max_len):
        return f"a display name has at most {max_len} characters"
    if _CONTROL.search(name):
        return "a display name cannot hold control characters"
    if _REORDERING.search(name):
        return "a display name cannot hold direction marks or overrides, which reorder text"
    if _UNASSIGNED.search(name):
        return "a display name cannot hold unassigned or private-use characters"
    problem = _sequence_problem(name)
    if problem is not None:
        return problem
    if len(name) > max_len and any(
        len(c) > MAX_CHARACTER_CODE_POINTS for c in _GRAPHEMES.findall(name)
    ):
        return (
            "a character of a display name holds at most "
            f"{MAX_CHARACTER_CODE_POINTS} code points (joined emoji or letters count as one)"
        )
    if not _VISIBLE.search(name):
        return "a display name needs at least one visible letter, digit, symbol or emoji"
    if look_alike(name, DELETED_NAME):
        return f"{DELETED_NAME!r} names a deleted account's entries: pick another name"
    return None


def _sequence_problem(name: str) -> str | None:
    """Marks, joiners, selectors and tags each in a place where they belong, or a sentence."""
    based = False  # a visible character stands before, with nothing but marks since
    marks = 0
    varied = False
    index, end = 0, len(name)
    while True:
        found = _SPECIAL.search(name, index)
        if found is None:
            return None
        if found.start() > index:  # plain characters in between: the last is a base
            based, marks, varied = True, 0, False
        index = found.start()
        char = name[index]
        if char == "\U0001f3f4":
            tagged = _TAG_SEQUENCE.match(name, index)
            index = tagged.end() if tagged is not None else index + 1
            based, marks, varied = True, 0, False
            continue
        if char == " ":
            based = False
        elif char in _JOINERS:
            after = name[index + 1] if index + 1 < end else " "
            if not based or not _base(after):
                return _INVISIBLE_TEXT
            based = False
        elif _VARIATION.match(char):
            if not based or varied:
                return "a variation selector goes right after the one character it varies"
            varied = True
        elif _INVISIBLE.match(char):
            return _INVISIBLE_TEXT
        else:  # a combining mark
            if not based:
                return "a combining mark must follow a letter, digit or symbol"
            marks += 1
            if marks > MAX_MARKS:
                return f"a character of a display name takes at most {MAX_MARKS} combining marks"
        index += 1


def _base(char: str) -> bool:
    """Whether a joiner may stand before ``char``: a visible character, not a mark."""
    return not (char == " " or char in _JOINERS or _INVISIBLE.match(char) or _MARK.match(char))


def _skeleton(text: str) -> str:
    """TR39's skeleton: NFD, default-ignorable characters dropped, prototypes, NFD."""
    text = _IGNORED_IN_KEY.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", "".join([_PROTOTYPE.get(c, c) for c in text]))


def _folded_skeleton(text: str) -> str:
    # Again after case folding: a prototype may be a capital (0 → O) or fold to two (ß).
    return _skeleton(_skeleton(text).casefold())


@functools.lru_cache(maxsize=4096)
def name_keys(name: str) -> frozenset[str]:
    """The forms of a name that another name looks the same as when it shares one.

    NFKC, then the TR39 skeleton of the name case-folded (``ALICE`` as ``alice``) and of
    the name as it is (``aIice``, with a capital I, as ``alice``), each case-folded; a
    name with generic combining marks that NFKC leaves apart (no letter of its own takes
    them: ``Quinn72`` with a dot above its 2, struck through, underlined) has the same of
    itself without them too. ``José`` and ``Zoë`` are letters of their own: not ``Jose``.
    """
    text = unicodedata.normalize("NFKC", name)
    keys = {_folded_skeleton(text.casefold()), _folded_skeleton(text)}
    bare = _DIACRITIC.sub("", text)  # the marks NFKC left apart: none of ``é`` or ``ë``
    if bare != text:
        keys |= {_folded_skeleton(bare.casefold()), _folded_skeleton(bare)}
    return frozenset(keys)


def look_alike(name: str, other: str) -> bool:
    """Whether two display names look the same (by :func:`name_keys`)."""
    return not name_keys(name).isdisjoint(name_keys(other))


def _suffixed(name: str, number: int, max_len: int) -> str:
    """``name (number)``, the name cut by whole characters to keep within ``max_len``."""
    suffix = f" ({number})"
    room = max(1, max_len - len(suffix))
    clusters = _GRAPHEMES.findall(name)
    base = name if len(clusters) <= room else "".join(clusters[:room]).rstrip(" \u200c\u200d")
    return base + suffix


def shown_name(
    name: str, others: Iterable[str], max_len: int = MAX_NAME_LEN, keep: str | None = None
) -> str:
    """The name a member is shown under: ``name``, or ``name (2)``, ``name (3)``... when
    another member's looks the same; ``keep``, the member's shown name until now, stays
    if it is still one of these and still unique."""
    taken: set[str] = set()
    for other in others:
        taken |= name_keys(other)

    def free(candidate: str) -> bool:
        return name_keys(candidate).isdisjoint(taken)

    if keep is not None and free(keep):
        if keep == name:
            return keep
        numbered = _SUFFIX.search(keep)
        if numbered is not None and keep == _suffixed(name, int(numbered[1]), max_len):
            return keep
    if free(name):
        return name
    # Each taken key blocks at most one number: the suffixes differ in their digits.
    candidate = name
    for number in range(2, len(taken) + 3):
        candidate = _suffixed(name, number, max_len)
        if free(candidate):
            break
    return candidate
