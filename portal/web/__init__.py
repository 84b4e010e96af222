"""What every page shares: access, rendering, error pages, the one way to handle an API error,
list filters, form fields, one-time forms, formatting. The feature packages build on it."""
