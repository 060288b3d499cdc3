"""taskring: the client and executor library for business services."""
