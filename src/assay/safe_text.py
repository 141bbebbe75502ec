"""Stored and server-provided text made safe to put on a terminal: one rule, one place.

Cases, reviews, audit payloads, plans and resolutions carry text its writer chose (a case's
subject, a reviewer's reason, a claim's value). Printed raw, an escape sequence in it clears
an operator's screen, sets the window title or disguises a link (OSC 8); a bidi override
(U+202E) reorders what an auditor reads; a C1 control (U+009B, a CSI on many terminals) acts
as ESC + ``[``; rich markup (``[red]``, ``[link=…]``) would be styled or linked by ``rich``.

The rule: every character of the categories in ``UNSAFE_CATEGORIES`` is shown as its escape
(``\\x1b``, ``\\u202e``, ``\\U000e0001``): visible and inert; the text around it is left
alone. Data goes to ``rich`` as ``Text`` (``text``), never as markup; a line written as
markup interpolates data through ``markup``. JSON output needs no such rule: ``json``'s
``ensure_ascii`` (used by the CLI's JSON and the services' logs) escapes a superset of these.
Nothing here imports ``rich`` at import time, so the client library and the services may
import this module (``rich`` is the CLI's dependency).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# The categories a terminal acts on, or that change how the text around them reads: Cc (C0
# controls, DEL, C1 controls; newline and tab included, so a table cell stays one cell), Cf
# (format characters: bidi embeddings, overrides, isolates and marks, zero-width spaces and
# joiners, the BOM, the soft hyphen), Zl and Zp (line and paragraph separators) and Cs (a
# lone surrogate).
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def is_unsafe(char: str) -> bool:
    """Whether ``char`` (one character) is shown escaped."""
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def escape_char(char: str) -> str:
    """The visible escape of one character: ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``."""
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(value: object) -> str:
    """``str(value)`` with every unsafe character shown as its escape."""
    text = value if isinstance(value, str) else str(value)
    # ``isprintable`` is False for every unsafe character (and for some harmless ones,
    # such as a no-break space): the common all-printable text costs one C-level scan.
    if text.isprintable():
        return text
    return "".join(escape_char(c) if is_unsafe(c) else c for c in text)


# An empty span: rich reads backslashes as escapes only before a tag, so data ending in a
# backslash is followed by one, whatever the markup after it (see ``markup``).
_EMPTY_TAG = "[i][/i]"


def markup(value: object) -> str:
    """``value`` to interpolate into a ``rich`` markup string: made ``printable``, and
    its square brackets escaped so that none of it is read as a tag.

    ``rich.markup.escape`` doubles a trailing backslash, which is right only when a tag
    follows (the pair then prints as one backslash, and cannot escape the tag); an empty
    span after it makes a tag always follow, so the data prints exactly as written."""
    from rich.markup import escape

    escaped = escape(printable(value))
    return escaped + _EMPTY_TAG if escaped.endswith("\\") else escaped


def text(value: object, style: str = "") -> Text:
    """``value`` as a ``rich`` ``Text``: made ``printable``, never parsed as markup."""
    from rich.text import Text

    return Text(printable(value), style=style)
