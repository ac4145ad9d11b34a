"""JSON that memdeck did not write: MemLock's session files, global pins and manifest, Hermes'
pending records, and the tool calls and content Hermes stores in state.db.

The standard library parses anything JSON allows, and two things it allows break memdeck far
from the file they came from (issue 22 #4, found by the hostile homes, tests/helpers/hostile.py):

* a lone surrogate escape (``"\\ud800"``): ``json.loads`` returns a ``str`` holding a lone
  surrogate, which is not Unicode text: SQLite, ``str.encode("utf-8")`` and a UTF-8 terminal all
  raise on it, so a session id like that made every command exit with a traceback when the change
  history stored it;
* deep nesting (``[[[[...]]]]``): ``json.loads`` raises ``RecursionError`` (not a ``ValueError``)
  past about 1,000 levels, and code walking a value nested a few hundred levels deep may too.

:func:`loads` is ``json.loads`` plus both checks, raising :class:`JSONDataError` (a
``ValueError``, like ``json.JSONDecodeError``), so every reader's existing "not valid JSON"
path refuses such a file with a reason instead of carrying the value on.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: the deepest nesting of arrays/objects accepted (MemLock and Hermes write 3-5 levels)
MAX_DEPTH = 64

#: a ``\\uD800``-``\\uDFFF`` escape: the only way a lone surrogate gets into parsed JSON text
#: (UTF-8 decoding refuses encoded surrogates), so without one no walk is needed
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONDataError(ValueError):
    """The JSON text parses but is not data memdeck can carry (see the module docstring)."""


def loads(text: str | bytes) -> Any:
    """Parse JSON text from a file or database memdeck did not write.

    Args:
        text: the JSON text (bytes are decoded as UTF-8, strictly).

    Returns:
        the value, as ``json.loads`` returns it.

    Raises:
        json.JSONDecodeError: not JSON (a ``ValueError``).
        UnicodeDecodeError: ``text`` is bytes that are not UTF-8 (a ``ValueError``).
        JSONDataError: nested deeper than :data:`MAX_DEPTH`, or a string (key or value)
            holds a lone surrogate (a ``ValueError``).
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    deep = text.count("[") + text.count("{") > MAX_DEPTH  # only then can it nest that deep
    try:
        data = json.loads(text)
    except RecursionError:
        raise JSONDataError(f"nested deeper than {MAX_DEPTH} levels") from None
    surrogates = _SURROGATE_ESCAPE.search(text) is not None
    if deep or surrogates:
        _check(data, surrogates)
    return data


def _check(data: Any, surrogates: bool) -> None:
    """Walk ``data`` without recursion: refuse nesting past :data:`MAX_DEPTH` and (when
    ``surrogates``) any string holding a lone surrogate."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if surrogates and (lone := _SURROGATE.search(value)):
                raise JSONDataError(f"holds a lone surrogate escape (\\u{ord(lone.group()):04x}),"
                                    " which is not valid Unicode text")
            continue
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise JSONDataError(f"nested deeper than {MAX_DEPTH} levels")
            if isinstance(value, dict):
                for k, v in value.items():
                    stack.append((k, depth + 1))
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in value)


__all__ = ["MAX_DEPTH", "JSONDataError", "loads"]
