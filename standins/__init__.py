"""HTTP stand-ins for external APIs that speak their real wire protocols (tests and ``reconcilery up``)."""
