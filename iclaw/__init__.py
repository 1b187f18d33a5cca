"""iclaw: a terminal agent with a local GPT-2-family policy that trains itself on what it did."""

__version__ = "0.1.0"
