"""Memory hygiene (issue 36): findings with their evidence on labelled pairs and seeded homes in
English, German, Chinese and Japanese; proposals applied through the locked core as one change
that ``undo`` puts back byte for byte; never applied to entries that changed since."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core.cli import main
from memdeck.core.deck.archive import items
from memdeck.core.demo import DEMO_NOW, build_demo_home
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.hygiene import pairs as P
from memdeck.core.hygiene.apply import apply_finding
from memdeck.core.hygiene.detect import hygiene_report
from memdeck.core.hygiene.similarity import LEXICAL, SEMANTIC, cosine_matrix, hygiene_encoder
from memdeck.core.memory.store import MemoryStore
from memdeck.core.undo import undo

PAIRS = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "hygiene" / "pairs.yaml").read_text(encoding="utf-8"))["pairs"]


HELD_OUT = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "hygiene" / "held_out.yaml")
                         .read_text(encoding="utf-8"))["pairs"]


def test_the_held_out_batch_is_new_and_covers_four_languages_and_all_three_labels() -> None:
    """Issue 36: a held-out batch apart from the tuning pairs (bench/bench_hygiene.py reports its
    precision on its own; it is not asserted here, since nothing may be tuned to pass it)."""
    assert len(HELD_OUT) >= 30
    tuned = {t for r in PAIRS for t in (r["a"], r["b"])}
    assert not [t for r in HELD_OUT for t in (r["a"], r["b"]) if t in tuned]
    for lang in ("en", "de", "zh", "ja"):
        assert {r["label"] for r in HELD_OUT if r["lang"] == lang} == {"duplicate", "contradiction", "distinct"}


def _precision(pred: list[str], cls: str) -> float:
    tp = sum(1 for r, p in zip(PAIRS, pred) if p == cls and r["label"] == cls)
    fp = sum(1 for r, p in zip(PAIRS, pred) if p == cls and r["label"] != cls)
    return tp / max(1, tp + fp)


def _recall(pred: list[str], cls: str) -> float:
    tp = sum(1 for r, p in zip(PAIRS, pred) if p == cls and r["label"] == cls)
    return tp / sum(1 for r in PAIRS if r["label"] == cls)


def test_the_labelled_pairs_cover_four_languages_and_all_three_labels() -> None:
    assert len(PAIRS) >= 60
    assert {r["lang"] for r in PAIRS} >= {"en", "de", "zh", "ja"}
    for lang in ("en", "de", "zh", "ja"):
        assert {r["label"] for r in PAIRS if r["lang"] == lang} == {"duplicate", "contradiction", "distinct"}


def test_lexical_verdicts_meet_the_precision_targets_on_the_labelled_pairs() -> None:
    pred = [P.classify(r["a"], r["b"]).kind for r in PAIRS]
    assert _precision(pred, P.DUPLICATE) >= 0.9
    assert _precision(pred, P.CONTRADICTION) >= 0.8
    assert _recall(pred, P.CONTRADICTION) >= 0.8


def test_semantic_verdicts_meet_the_precision_targets_on_the_labelled_pairs() -> None:
    enc = hygiene_encoder(None)
    if enc.method != SEMANTIC:
        pytest.skip(f"the semantic extra is not usable here: {enc.reason}")
    pred = []
    for r in PAIRS:
        m = cosine_matrix(enc, [r["a"], r["b"]])
        pred.append(P.classify(r["a"], r["b"], float(m[0, 1])).kind)
    assert _precision(pred, P.DUPLICATE) >= 0.9 and _precision(pred, P.CONTRADICTION) >= 0.8
    lexical = [P.classify(r["a"], r["b"]).kind for r in PAIRS]
    assert _recall(pred, P.DUPLICATE) >= _recall(lexical, P.DUPLICATE)  # meaning finds what words miss


def _home(tmp_path: Path, memory: list[str], user: list[str]) -> HermesHome:
    root = tmp_path / "home"
    (root / "memories").mkdir(parents=True)
    (root / "config.yaml").write_text("model: {}\n", encoding="utf-8")
    (root / "memories" / "MEMORY.md").write_text("\n§\n".join(memory), encoding="utf-8")
    (root / "memories" / "USER.md").write_text("\n§\n".join(user), encoding="utf-8")
    return HermesHome(root)


SEEDED_MEMORY = [
    "Deploy target is pi.local",                                   # contradiction with the next
    "Deploy target moved to pi.lan",
    "Project uses uv for Python dependency management",            # duplicate of the next
    "Python dependencies in this project are managed with uv",
    "Das Projekt nutzt Python 3.11",                               # contradiction (de)
    "Das Projekt nutzt Python 3.12",
    "用户喜欢简洁的回答，不要客套话",                                  # duplicate (zh)
    "用户喜欢简洁的回答，不需要客套话",
    "データベースのポートは 5432",                                    # contradiction (ja)
    "データベースのポートは 6543",
    "Config lives in /tmp/memdeck-hygiene-gone-8c1f.toml",          # stale: a path that does not exist
    "User's timezone is Europe/Berlin",                            # wasteful: USER carries it and more
]
SEEDED_USER = ["User's timezone is Europe/Berlin; works 9-17 from Berlin, prefers mornings for reviews"]


def test_a_seeded_home_gives_each_kind_with_its_evidence(tmp_path: Path) -> None:
    home = _home(tmp_path, SEEDED_MEMORY, SEEDED_USER)
    report = hygiene_report(home, semantic=False)
    assert report.method == LEXICAL and report.note
    by_kind: dict[str, list] = {}
    for f in report.findings:
        by_kind.setdefault(f.kind, []).append({e.text for e in f.entries})
    assert {"Deploy target is pi.local", "Deploy target moved to pi.lan"} in by_kind["contradiction"]
    assert {"Das Projekt nutzt Python 3.11", "Das Projekt nutzt Python 3.12"} in by_kind["contradiction"]
    assert {"データベースのポートは 5432", "データベースのポートは 6543"} in by_kind["contradiction"]
    assert {SEEDED_MEMORY[2], SEEDED_MEMORY[3]} in by_kind["duplicate"]
    assert {SEEDED_MEMORY[6], SEEDED_MEMORY[7]} in by_kind["duplicate"]
    assert {SEEDED_MEMORY[10]} in by_kind["stale"]
    assert any(SEEDED_MEMORY[11] in s for s in by_kind["wasteful"])
    assert len(report.findings) == 7  # nothing else: no false pair
    stale = next(f for f in report.findings if f.kind == "stale")
    assert stale.evidence["missing_paths"] == ["/tmp/memdeck-hygiene-gone-8c1f.toml"]
    con = next(f for f in report.findings if "pi.lan" in str(f.entries))
    assert con.evidence["values"] == {"a": ["pi.local"], "b": ["pi.lan"]} and con.proposal.action == "choose"
    assert [f.chars_saved for f in report.findings] == sorted((f.chars_saved for f in report.findings), reverse=True)


def test_the_demo_home_gets_no_merge_and_no_contradiction(tmp_path: Path) -> None:
    home = build_demo_home(tmp_path / "demo", seed=7, now=DEMO_NOW)
    report = hygiene_report(home, now=DEMO_NOW)
    assert [f for f in report.findings if f.kind in ("duplicate", "contradiction")] == []


def test_a_merge_is_one_change_that_undo_puts_back_byte_for_byte(tmp_path: Path) -> None:
    home = _home(tmp_path, SEEDED_MEMORY, SEEDED_USER)
    before = {t: home.memory_file(t).read_bytes() for t in ("memory", "user")}
    dup = next(f for f in hygiene_report(home, semantic=False).findings if f.kind == "duplicate"
               and SEEDED_MEMORY[2] in {e.text for e in f.entries})
    res = apply_finding(home, None, dup.id, text="Python dependencies are managed with uv", semantic=False)
    text = home.memory_file("memory").read_text(encoding="utf-8")
    assert "Python dependencies are managed with uv" in text
    assert SEEDED_MEMORY[2] not in text and SEEDED_MEMORY[3] not in text
    assert text.split("\n§\n")[2] == "Python dependencies are managed with uv"  # in the kept entry's place
    archived = [i.text for i in items(home, kind="memory", state="archived")]
    assert len(archived) == 1 and archived[0] in (SEEDED_MEMORY[2], SEEDED_MEMORY[3])
    assert res.details["archive_ids"]
    undo(home, None)
    assert {t: home.memory_file(t).read_bytes() for t in ("memory", "user")} == before
    assert [i.state for i in items(home, kind="memory", state=None)] == ["restored"]


def test_a_proposal_on_entries_that_changed_since_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    home = _home(tmp_path, SEEDED_MEMORY, SEEDED_USER)
    dup = next(f for f in hygiene_report(home, semantic=False).findings if f.kind == "duplicate")
    MemoryStore(home).replace("memory", dup.entries[0].text, "Dependencies: uv")  # another writer
    snapshot = {t: home.memory_file(t).read_bytes() for t in ("memory", "user")}
    with pytest.raises(Refused) as exc:
        apply_finding(home, None, dup.id, semantic=False)
    assert exc.value.code == "no_match"
    with pytest.raises(Refused) as exc2:  # the store's own check, on a proposal already looked up
        MemoryStore(home).consolidate(archive=[(dup.entries[0].target, dup.entries[0].text)])
    assert exc2.value.code == "conflict"
    assert {t: home.memory_file(t).read_bytes() for t in ("memory", "user")} == snapshot


def test_a_contradiction_needs_the_person_to_pick_a_side(tmp_path: Path, capsys) -> None:
    home = _home(tmp_path, SEEDED_MEMORY, SEEDED_USER)
    con = next(f for f in hygiene_report(home, semantic=False).findings if "pi.lan" in str(f.entries))
    assert main(["--home", str(home.path), "hygiene", "apply", con.id, "--lexical"]) == 1
    assert "--keep 1 or --keep 2" in capsys.readouterr().err
    assert "Deploy target is pi.local" in home.memory_file("memory").read_text(encoding="utf-8")
    assert main(["--home", str(home.path), "hygiene", "apply", con.id, "--keep", "2", "--lexical", "--json"]) == 0
    text = home.memory_file("memory").read_text(encoding="utf-8")
    assert "Deploy target is pi.local" not in text and "Deploy target moved to pi.lan" in text


def test_the_cli_lists_the_same_findings_as_json(tmp_path: Path, capsys) -> None:
    home = _home(tmp_path, SEEDED_MEMORY, SEEDED_USER)
    assert main(["--home", str(home.path), "hygiene", "--json", "--lexical"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "lexical" and out["counts"]["contradiction"] == 3
    assert set(out["findings"][0]) == {"id", "kind", "entries", "evidence", "chars_saved", "proposal"}
    assert [f["id"] for f in out["findings"]] == [f.id for f in hygiene_report(home, semantic=False).findings]
    assert main(["--home", str(home.path), "hygiene", "--lexical"]) == 0
    words = capsys.readouterr().out
    assert "method: lexical" in words and "memdeck hygiene apply" in words and "\x1b" not in words


entry_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40) \
    .map(str.strip).filter(lambda s: s and "§" not in s)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(memory=st.lists(entry_text, min_size=2, max_size=8, unique=True), user=st.lists(entry_text, max_size=4, unique=True),
       data=st.data())
def test_any_consolidation_is_undone_byte_for_byte(tmp_path_factory, memory, user, data) -> None:
    home = _home(tmp_path_factory.mktemp("h"), memory, user)
    before = {t: home.memory_file(t).read_bytes() for t in ("memory", "user")}
    live = {t: MemoryStore(home).path(t) for t in ("memory", "user")}
    from memdeck.core.memory.entries import parse_entries

    ents = {t: parse_entries(live[t].read_text(encoding="utf-8")) for t in ("memory", "user")}
    pool = [(t, e) for t in ("memory", "user") for e in ents[t]]
    drop = data.draw(st.lists(st.sampled_from(pool), max_size=len(pool), unique=True))
    keep = [p for p in pool if p not in drop]
    repl = {}
    if keep and data.draw(st.booleans()):
        repl[keep[0]] = keep[0][1] + " (merged)"
    if not drop and not repl:
        return
    try:
        MemoryStore(home).consolidate(replace=repl, archive=drop, reason="property")
    except Refused as exc:  # a hostile text the scan refuses: nothing written
        assert exc.code in ("threat", "delimiter", "overflow")
        assert {t: home.memory_file(t).read_bytes() for t in ("memory", "user")} == before
        return
    after = {t: parse_entries(live[t].read_text(encoding="utf-8")) for t in ("memory", "user")}
    for t, e in drop:
        assert e not in after[t]
    assert len(items(home, kind="memory", state="archived")) == len(drop)
    undo(home, None)
    assert {t: home.memory_file(t).read_bytes() for t in ("memory", "user")} == {
        t: ("\n§\n".join(ents[t])).encode("utf-8") for t in ("memory", "user")}


def test_a_path_is_stale_only_when_its_place_is_here_and_it_is_gone(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "kept").mkdir()
    home = _home(tmp_path, [f"Repo lives in {tmp_path}/code/gone", f"Other repo in {tmp_path}/code/kept",
                            "Server config in /srv/other-machine-8c1f/app.toml"], ["User likes tea"])
    stale = [f for f in hygiene_report(home, semantic=False).findings if f.kind == "stale"]
    assert [f.evidence["missing_paths"] for f in stale] == [[f"{tmp_path}/code/gone"]]


def test_an_entry_hermes_writes_again_after_the_person_replaced_it_is_stale(tmp_path: Path) -> None:
    import time as _time

    from memdeck.core.history.observation import observe
    from memdeck.core.sessions import hermes_schema as HS
    from memdeck.core.sessions.statedb import StateDB

    home = _home(tmp_path, ["Deploy target is pi.local", "Never push on Fridays"], ["User likes tea"])
    observe(home)  # memdeck's first look: the baseline
    MemoryStore(home, actor="cli").replace("memory", "Deploy target is pi.local", "Deploy target is pi.lan")
    observe(home)
    now = _time.time()
    conn = HS.create_state_db(home.state_db)  # Hermes' tool call that writes the old fact again
    HS.add_session(conn, "s1", started_at=now - 5)
    HS.append_message(conn, "s1", "assistant", "", timestamp=now, tool_calls=[
        {"id": "call_1", "type": "function", "function": {"name": "memory", "arguments": json.dumps(
            {"action": "add", "target": "memory", "content": "Deploy target is pi.local"})}}])
    conn.close()
    text = home.memory_file("memory").read_text(encoding="utf-8")
    home.memory_file("memory").write_text(text + "\n§\nDeploy target is pi.local", encoding="utf-8")
    with StateDB(home.state_db) as db:
        observe(home, statedb=db)
        report = hygiene_report(home, semantic=False, statedb=db)
    stale = [f for f in report.findings if f.kind == "stale"]
    assert len(stale) == 1 and stale[0].entries[0].text == "Deploy target is pi.local"
    ev = stale[0].evidence["replaced_by_person"]
    assert ev["by"] == "cli" and ev["after"] == "Deploy target is pi.lan" and ev["written_again_by"] == "hermes"


def test_thousands_of_entries_are_not_compared_pair_by_pair_and_it_is_said(tmp_path: Path) -> None:
    home = _home(tmp_path, [f"entry number {i}" for i in range(4000)], ["User likes tea"])
    report = hygiene_report(home, semantic=False)
    assert [f for f in report.findings if f.kind in ("duplicate", "contradiction", "wasteful")] == []
    assert any("4001 entries are more than the 300" in u for u in report.unknown)


def test_contradiction_candidates_are_bounded(tmp_path: Path) -> None:
    home = _home(tmp_path, [f"entry number {i}" for i in range(30)], ["User likes tea"])
    report = hygiene_report(home, semantic=False)
    assert report.counts()["contradiction"] == 100 and any("first 100" in u for u in report.unknown)
