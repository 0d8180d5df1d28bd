"""The graph: owns the seed's tables (states, versions, resources, edges, outputs, events)."""
