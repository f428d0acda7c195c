"""The service's rules, without a database: validation, PATCH, digests."""
