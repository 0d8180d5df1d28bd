"""Globs over names: the one dialect of tokens, policies and prune (pure).

`*` matches any run of characters, `/` included (`team/*` reaches `team/prod/network`);
`?` matches exactly one character; every other character, `[`, `]` and `\\` included,
matches itself. Matching is case-sensitive and covers the whole name.

Python matches with `regex`; SQL matches with `name LIKE glob_like(glob)`, the function
of migration 0011, whose translation `like_pattern` gives in Python (tests hold the two
equal, and the three users in agreement, on random names and globs).
"""

import functools
import re

ANY_RUN = "*"
ONE_CHAR = "?"
LIKE_ESCAPE = "\\"  # PostgreSQL's default LIKE escape


@functools.lru_cache(maxsize=1024)
def regex(glob: str) -> re.Pattern[str]:
    """The glob as a regular expression, for `fullmatch`."""
    parts = (".*" if c == ANY_RUN else "." if c == ONE_CHAR else re.escape(c) for c in glob)
    return re.compile("".join(parts), re.DOTALL)


def matches(glob: str, name: str) -> bool:
    return regex(glob).fullmatch(name) is not None


def like_pattern(glob: str) -> str:
    """The glob as a LIKE pattern (escape: backslash): what SQL's glob_like returns."""
    out = []
    for c in glob:
        if c in (LIKE_ESCAPE, "%", "_"):
            out.append(LIKE_ESCAPE + c)
        elif c == ANY_RUN:
            out.append("%")
        elif c == ONE_CHAR:
            out.append("_")
        else:
            out.append(c)
    return "".join(out)
