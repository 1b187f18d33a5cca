"""iclaw: a terminal agent with a local GPT-2-family policy that trains itself on what it did."""

import os

# oneDNN (bf16 matmuls on CPU) caches a kernel per shape, 1,024 by default; batches of every length from 43 to 512
# tokens outgrow it and SFT steps slowed from 0.38 to 0.50 s over a run (docs/LOG.md, 2026-12-04).
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16384")

__version__ = "0.1.0"
