"""The graph's part of the API: states, versions, resources, edges, events.

An object's scalar fields are plain attributes filled from its row; the lists hanging
off an object load through the per-request loaders, so a page of N objects costs one
statement per list, not N.

inputs.py    enums, filters and shared arguments; nodes.py: global ids
state.py     State, its Lock          version.py   StateVersion, its outputs
resource.py  Resource                 event.py     Event (the audit trail)
links.py     links between states     history.py   a resource's history, version diffs
blast.py     a blast radius page      columns.py   the columns a page reads (the partial row)
lists.py     a resource's list fields, filled ahead for a page
rows.py      the objects built from the graph module's rows
refs.py      how the node types name one another (they refer to each other in a cycle)
loaders.py   the per-request dataloaders; queries, mutations, subscriptions: root fields
"""
