"""The attacker suite: CSRF, access and IDOR, hostile strings, headers,
sessions, sign-in throttling, open redirects and secrets, over every route of url_map.

Run it with `.venv/bin/pytest tests/security -n auto`; conftest.py builds one hostile world per
worker (a sandbox with markup and formulas in its records, a portal connected to it).
"""
