"""The configuration graph: modules and the references behind each dependency."""
