"""A deterministic stand-in for a sentence-transformers model, shared by the benches.

Each text maps to a 384-dim vector drawn from a generator seeded by the text's sha256, so the
numbers measure memdeck's own work (windows, numpy cosine, probes), not a model's encoding.
"""

from __future__ import annotations

import hashlib

import numpy as np


class FakeEncoder:
    """Deterministic 384-dim vectors seeded by each text's sha256 (no model)."""

    dim = 384

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim))
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(t.encode("utf-8")).digest()[:8], "little")
            out[i] = np.random.default_rng(seed).standard_normal(self.dim)
        return out
