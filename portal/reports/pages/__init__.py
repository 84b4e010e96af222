"""The reports' pages."""
