"""Traceability generator: ties documentation pages to the code they explain."""
