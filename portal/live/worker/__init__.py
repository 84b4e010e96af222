"""The background worker: `flask --app portal worker` runs the mirror's syncs and every
delivery (webhooks, e-mail) from a Huey task queue; see docs/operations.md."""
