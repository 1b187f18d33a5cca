"""CLI command modules; each exposes register(app). No heavy imports at module level."""
