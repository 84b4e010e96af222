"""Business rules: what the portal decides and keeps, apart from any page.

Nothing here imports the web layer (portal.web, the feature packages, the request, the session,
rendering) or holds words for pages; rules may use the application's configuration, the database
and the API client, and commit their own work (docs/architecture.md).
"""
