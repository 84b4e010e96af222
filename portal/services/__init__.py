"""Services the blueprints share: the way to the Merchant API."""
