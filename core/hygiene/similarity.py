"""How alike two memory entries are: the lexical overlap of their :mod:`.words`, and their
meaning with memdeck's verified all-MiniLM-L6-v2 (``core/anchors/encoder.py``) when the
semantic extra is installed. Nothing is downloaded: the model is the one the package ships.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

#: the method names as ``memdeck hygiene --json`` reports them
SEMANTIC, LEXICAL = "semantic", "lexical"


@dataclass(frozen=True)
class Encoder:
    """A sentence encoder for hygiene: ``method`` is ``semantic`` with the verified model, else
    ``lexical`` (``reason`` says why, e.g. the extra is not installed)."""

    method: str
    model: Any = None
    reason: str | None = None


def hygiene_encoder(home: Any = None, *, allow_semantic: bool = True) -> Encoder:
    """The verified all-MiniLM-L6-v2 from the installed model package when it loads, whatever
    MemLock's own ``detection`` setting (hygiene is memdeck's, not MemLock's); otherwise the
    lexical method with the reason. Never raises."""
    if not allow_semantic:
        return Encoder(LEXICAL, None, "the lexical method was asked for")
    try:
        from ..anchors.encoder import package_model_folder, semantic_encoder

        folder = package_model_folder()
        if folder is None:
            return Encoder(LEXICAL, None, "memdeck's semantic extra is not installed (pip install 'memdeck[semantic]')")
        cfg = SimpleNamespace(detection="semantic", embedding_model=str(folder))
        enc, status = semantic_encoder(cfg, home)
        if enc is None:
            return Encoder(LEXICAL, None, status.reason or "the model cannot be loaded")
        return Encoder(SEMANTIC, enc, None)
    except Exception as exc:  # noqa: BLE001 - hygiene falls back to the lexical method, and says why
        return Encoder(LEXICAL, None, f"the model cannot be loaded: {type(exc).__name__}: {exc}")


def cosine_matrix(encoder: Encoder, texts: Sequence[str]) -> Any:
    """``len(texts)`` x ``len(texts)`` cosine similarities (numpy), or None for the lexical
    method or no texts. Vectors are cached in the home's memdeck.db by the encoder."""
    if encoder.method != SEMANTIC or not texts:
        return None
    import numpy as np

    vecs = np.asarray(encoder.model.encode(list(texts)), dtype=float)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit = vecs / norms
    return unit @ unit.T
