"""Helpers for testing tether itself and applications built on it (no production code uses them)."""
