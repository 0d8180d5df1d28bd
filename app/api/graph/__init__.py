"""The graph's part of the API: states, versions, resources, edges, events."""
