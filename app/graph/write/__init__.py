"""Writing a state version (version.py): the rules of its serial and lineage (rules.py),
its instance rows (rows.py, diffed in a worker thread by stream.py), their edges
(edges.py) and its outputs (outputs.py); what it did to the rows (result.py) is what
links and lineage (app/graph/links.py) are written from."""
