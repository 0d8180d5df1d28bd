"""The graph's node types and their row builders refer to each other in a cycle; they
import one another as whole modules (app/api/graph/refs.py), so that whichever of them
a program imports first, the others load."""

import subprocess
import sys

CYCLE = ("state", "version", "resource", "event", "rows", "lists")
# Each module imported first, in one interpreter: the package forgotten before each.
FIRST = """
import importlib, sys
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith("app.api.graph")]:
        del sys.modules[loaded]
    importlib.import_module("app.api.graph." + name)
"""


def test_each_module_of_the_cycle_can_be_imported_first() -> None:
    found = subprocess.run(
        [sys.executable, "-c", FIRST, *CYCLE], capture_output=True, text=True, check=False
    )
    assert found.returncode == 0, found.stderr
