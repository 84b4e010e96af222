"""Helpers shared by the test suites: real servers on loopback ports."""
