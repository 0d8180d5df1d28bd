"""A state document read a resource at a time, in bounded memory.

Loaded whole, a state is several times its size in Python objects. Read from a file
here, only its top-level members before `resources` are held whole (what Terraform and
OpenTofu write there: version, serial, lineage, outputs), then its resources one at a
time, then the members after them. The JSON is read by the standard library's C scanner
over a window of text that grows only while a value does not fit in it.

What `app.jsonutil.read` refuses is refused here too (the same checks, per resource).
A document this reader cannot stream (not an object, no serial or lineage before its
resources, `resources` twice or not a list) raises NotStreamable before any resource is
read; one that is not valid JSON raises it when the reader gets there. Either way the
caller reads the document whole, which says exactly what is wrong with it.
"""

import codecs
import re
from collections.abc import Callable, Iterator
from typing import Any

from app.jsonutil import JsonInputError, check_value, has_long_digit_run, scan_value

BLOCK = 1 << 18  # bytes read at a time
# Members a write needs before any row (app/graph/write/): what to check and number
# the rows with, and the outputs whose values the instances may hold.
NEEDED_FIRST = ("version", "serial", "lineage", "outputs")

_SPACE = re.compile(r"[ \t\n\r]*")
# What makes every value read after it checked string by string (rare in states)
_CAREFUL = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_AFTER = {",", "]", "}", ":", " ", "\t", "\n", "\r"}  # what may follow a value
_OVERLAP = 24  # bytes of the block before kept for a mark cut in two, 19 digits included


class NotStreamable(Exception):
    """Read the document whole: this reader cannot, or it is not valid."""


class _Text:
    """A UTF-8 byte stream read as text through a window; `pos` is the next character."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.eof = False
        self._block = BLOCK
        self._last = b""
        # a block held an escaped U+0000 or surrogate, or a number past 64 bits: from there
        # on, values are checked string by string (and orjson cannot encode them)
        self.careful = False

    def _more(self, grow: bool = False) -> None:
        if self.eof:
            raise NotStreamable("the document ends early")
        # a value bigger than the window: read twice as much each time (not quadratic)
        self._block = self._block * 2 if grow else BLOCK
        data = self._read(self._block)
        if not self.careful:
            seen = self._last + data
            self.careful = _CAREFUL.search(seen) is not None or has_long_digit_run(seen)
            self._last = seen[-_OVERLAP:]
        try:
            added = self._decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise NotStreamable("not valid UTF-8") from None
        self.eof = not data
        self.text = self.text[self.pos :] + added
        self.pos = 0

    def peek(self) -> str:
        """The next character after white space ('' at the end)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text) or self.eof:
                return self.text[self.pos : self.pos + 1]
            self._more()

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise NotStreamable(f"expected {char!r}")
        self.pos += 1

    def value(self, level: int) -> Any:
        """The next JSON value, at depth `level` of the document, checked as
        app.jsonutil.read checks a document."""
        self.peek()
        grow = False
        while True:
            start = self.pos
            try:
                value, end = scan_value(self.text, start)
            except (StopIteration, ValueError, RecursionError):
                # cut by the window, or not valid (or an integer past the digit limit):
                # read on, then say
                end = None
            # a number cut by the window's end ("1.5e" read as 1.5) has no delimiter after it
            if end is not None and (self.text[end : end + 1] in _AFTER or self.eof):
                break
            if self.eof:
                raise NotStreamable("not valid JSON")
            self._more(grow)
            grow = True
        try:
            check_value(value, level=level, strings=self.careful)
        except JsonInputError:
            raise NotStreamable("refused by the JSON checks") from None
        self.pos = end
        return value


class StreamedDocument:
    """A document's members before `resources` (`head`), then its resources one at a time
    (`resources()`, once), then its other members (`tail()`, after the resources)."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._text = _Text(read)
        self._text.expect("{")
        self.head: dict[str, Any] = {}
        self._in_resources = False
        self._read = False
        self._done = self._text.peek() == "}"
        self._text.pos += self._done
        while not self._done:
            key = self._key()
            if key == "resources":
                if self._text.peek() != "[":
                    raise NotStreamable("'resources' is not a list")
                self._text.expect("[")
                self._in_resources = True
                break
            self.head[key] = self._text.value(2)
            self._done = self._next_member()
        missing = [key for key in NEEDED_FIRST[:3] if key not in self.head]
        if missing:
            raise NotStreamable(f"{missing[0]!r} does not come before the resources")

    @property
    def has_resources(self) -> bool:
        return self._in_resources

    def _key(self) -> str:
        key = self._text.value(2)
        if not isinstance(key, str):
            raise NotStreamable("a key is not a string")
        self._text.expect(":")
        return key

    def _next_member(self) -> bool:
        """Past the separator after a member: True at the object's end."""
        char = self._text.peek()
        self._text.expect(char if char in ",}" else ",")
        return char == "}"

    @property
    def fresh(self) -> bool:
        """Whether its resources are still to be read."""
        return not self._read

    def resources(self) -> Iterator[Any]:
        self._read = True
        text = self._text
        if not self._in_resources or text.peek() == "]":
            text.pos += self._in_resources
            return
        while True:
            yield text.value(3)
            char = text.peek()
            text.expect(char if char in ",]" else ",")
            if char == "]":
                return

    def tail(self) -> dict[str, Any]:
        """The members after `resources`; then the document must end."""
        text = self._text
        tail: dict[str, Any] = {}
        done = self._done or self._next_member()
        while not done:
            key = self._key()
            if key == "resources" or key in self.head:
                raise NotStreamable(f"{key!r} appears twice")
            if key == "outputs":  # the write needed them before the resources
                raise NotStreamable("'outputs' comes after the resources")
            tail[key] = text.value(2)
            done = self._next_member()
        if text.peek() != "":
            raise NotStreamable("data after the document")
        return tail
