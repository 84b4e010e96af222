"""The WSGI entry point for gunicorn: `gunicorn wsgi:app` (configured by PORTAL_* variables)."""

from portal import create_app

app = create_app()
