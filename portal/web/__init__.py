"""What every page shares: access, rendering, error pages, the one way to handle an API error,
list filters, form fields, forms sent once (idempotency keys), formatting. Every subsystem's
pages build on it."""
