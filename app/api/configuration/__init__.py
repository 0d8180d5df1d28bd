"""The configuration graph in GraphQL: modules, configuration versions, reasons of edges."""
