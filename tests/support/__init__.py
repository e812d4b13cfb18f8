"""Helpers shared by the tests: real processes, real databases, recorded sessions."""
