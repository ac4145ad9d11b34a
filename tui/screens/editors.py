"""Modal editors: a memory entry (live char budget + live threat scan) and an anchor / pin.

The editors only *preview* the core's checks (the same scan, the same usage arithmetic from
``core.memory``) so the Save button is disabled for what the core would refuse; the write
itself still goes through the core, which checks again under its lock.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from memdeck.core.home import TARGET_FILES
from memdeck.core.memory.entries import archive_candidates, usage_chars
from memdeck.core.text import percent_text

from ..safe_text import safe_text
from .modal import Dialog


def scan_findings(text: str) -> list[Any]:
    """:func:`core.threats.scan` of ``text`` (``[]`` when the scanner is unavailable)."""
    try:
        from memdeck.core.memory.threats import scan
    except ImportError:
        return []
    try:
        return list(scan(text))
    except Exception:  # noqa: BLE001 - the threat preview is a courtesy; the core scans on write
        return []


def finding_ids(findings: list[Any]) -> list[str]:
    """The distinct pattern ids of ``findings``, in order."""
    return list(dict.fromkeys(str(getattr(f, "pattern_id", f)) for f in findings))


def what_if_text(lines: list[str], note: str | None = None, heading: str = "if you save") -> Text:
    """The what-if lines (``core/context/whatif.py``) after ``heading``, then ``note`` (the running
    session keeps its frozen copy until a new session)."""
    t = Text(f"{heading}: ", style="bold")
    for i, line in enumerate(lines):
        t.append(("\n  " if i else "") + line, "bold red" if "refused" in line else "")
    if note:
        t.append("\n  ")
        t.append_text(safe_text(note, style="dim"))
    return t


def running_note(app: Any, target: str | None = None, delta_chars: int | None = None) -> str | None:
    """The running session's note for a memory write (``tui/views/context.py`` ``write_note``), then,
    when ``delta_chars`` is given, what the write costs in prompt cache (``cost_note``, issue 37)."""
    from ..views.context import cost_note, write_note

    snap = getattr(app, "snapshot", None)
    try:
        note = write_note(snap, "memory")
    except Exception:  # noqa: BLE001 - the note is a courtesy
        note = None
    if delta_chars is None:
        return note
    try:
        cost = cost_note(snap, target or "memory", delta_chars)
    except Exception:  # noqa: BLE001 - the cost is a courtesy; the write does not depend on it
        cost = None
    return "\n  ".join(x for x in (note, cost) if x) or None


def findings_text(text: str, findings: list[Any]) -> Text:
    if not findings:
        return Text("✓ threat scan: clean", style="green")
    t = Text("✗ threat scan: ", style="bold red")
    t.append(", ".join(finding_ids(findings)), "red")
    for f in findings[:3]:
        s, e = getattr(f, "start", None), getattr(f, "end", None)
        if isinstance(s, int) and isinstance(e, int):
            t.append("\n  at ", "dim")
            t.append_text(safe_text(text[max(0, s - 10): e + 10], single_line=True, highlights=[(min(s, 10), min(s, 10) + (e - s))]))
    return t


class FormScreen(Dialog["dict[str, Any] | None"]):
    """A modal form that checks itself on every change and saves only what passes.

    Subclasses compose a text area ``#{FORM}-text`` and buttons ``#{FORM}-save`` /
    ``#{FORM}-cancel``, and implement :meth:`_check` (which calls :meth:`_set_problems`) and
    :meth:`_result` (what the screen dismisses with). ``ctrl+s`` saves, ``escape`` cancels; a
    save with problems stays open and its toast says what the problems are.
    """

    FORM = ""

    def __init__(self) -> None:
        super().__init__()
        self.ok = False
        self.problems: list[str] = []

    def on_mount(self) -> None:
        self.query_one(f"#{self.FORM}-text", TextArea).focus()
        self._check()

    def _check(self) -> None:
        raise NotImplementedError

    def _result(self) -> dict[str, Any]:
        raise NotImplementedError

    def _set_problems(self, problems: list[str]) -> None:
        """Remember why the form may not be saved (``[]``: it may); Save is disabled if so."""
        self.problems = problems
        self.ok = not problems
        self.query_one(f"#{self.FORM}-save", Button).disabled = not self.ok

    @on(TextArea.Changed)
    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self) -> None:
        self._check()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == f"{self.FORM}-save":
            self.action_save()
        elif event.button.id == f"{self.FORM}-cancel":
            self.dismiss(None)

    def action_save(self) -> None:
        self._check()
        if not self.ok:
            self.app.notify("not saved: " + "; ".join(self.problems), severity="warning", markup=False, timeout=6)
            return
        self.dismiss(self._result())

    def action_cancel(self) -> None:
        self.dismiss(None)


class EntryEditScreen(FormScreen):
    """Edit or write a memory entry. Dismisses with ``{"target", "text"}`` or ``None``."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="editor.save"),
        Binding("escape", "cancel", "Cancel", id="editor.cancel"),
    ]

    FORM = "editor"

    def __init__(self, home: Any, config: Any, target: str, text: str, *, title: str, choose_target: bool = False,
                 replaces: str | None = None, compose: Any = None, allow_unchanged: bool = False,
                 save_label: str = "Save") -> None:
        """``replaces``: the entry the saved text takes the place of when it is not ``text`` itself (a
        pending replace's target entry); ``compose``: typed text -> the entry that would land (a
        pending patch's span into its entry), for the budget, the what-if and the threat scan;
        ``allow_unchanged``: saving the text as given is allowed (edit before approve)."""
        super().__init__()
        self.home = home
        self.config = config
        self.target = target
        self.original = text
        self.title_text = title
        self.choose_target = choose_target
        self.replaces = replaces
        self.compose_entry = compose or (lambda t: t)
        self.allow_unchanged = allow_unchanged
        self.save_label = save_label

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="editor-box", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            if self.choose_target:
                yield Select([("MEMORY.md (memory)", "memory"), ("USER.md (user)", "user")], value=self.target,
                             allow_blank=False, id="editor-target", compact=True)
            yield TextArea(self.original, id="editor-text", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
            yield Static(id="editor-budget")
            yield Static(id="editor-whatif")
            yield Static(id="editor-findings")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.save_label} (ctrl+s)", variant="primary", id="editor-save", compact=True)
                yield Button("Cancel (esc)", id="editor-cancel", compact=True)

    def _entries(self, target: str) -> list[str]:
        snap = getattr(self.app, "snapshot", None)
        state = snap.memory.get(target) if snap is not None else None
        out = []
        for e in getattr(state, "entries", None) or ():
            out.append(e if isinstance(e, str) else str(getattr(e, "text", "")))
        return out

    def _usage_after(self, target: str, new: str) -> tuple[int, int]:
        """Chars the target would use after this save (Hermes counts ``"\\n§\\n".join``)."""
        entries = self._entries(target)
        new = self.compose_entry(new)
        if self.replaces is not None and self.replaces in entries:
            entries = [new if e == self.replaces else e for e in entries]
        elif not self.choose_target and self.original in entries:
            entries = [new if e == self.original else e for e in entries]
        elif new not in entries:
            entries = entries + [new]
        return usage_chars([e for e in entries if e]), int(self.config.char_limit(target))

    def _what_if(self, target: str, text: str) -> Text:
        """How this save moves the next session's frozen block (``core/context/whatif.py``)."""
        from memdeck.core.context.whatif import what_if

        entries = [e for e in self._entries(target) if e]
        limit = int(self.config.char_limit(target))
        text = self.compose_entry(text)
        if self.replaces is not None and self.replaces in entries:
            w = what_if(target, entries, limit, remove=self.replaces, replace_with=text or None)
            delta = len(text) - len(self.replaces) if text else -(len(self.replaces) + 3)
        elif self.choose_target or self.original not in entries:
            w = what_if(target, entries, limit, add=text)
            delta = len(text) + (3 if entries else 0)
        else:
            w = what_if(target, entries, limit, remove=self.original, replace_with=text or None)
            delta = len(text) - len(self.original) if text else -(len(self.original) + 3)
        return what_if_text(w.lines(), running_note(self.app, target, delta))

    def _current_target(self) -> str:
        if self.choose_target:
            v = self.query_one("#editor-target", Select).value
            return v if isinstance(v, str) else self.target
        return self.target

    def _check(self) -> None:
        text = self.query_one("#editor-text", TextArea).text.strip()
        target = self._current_target()
        used, limit = self._usage_after(target, text)
        findings = scan_findings(self.compose_entry(text)) if text else []
        name = TARGET_FILES.get(target, "USER.md")
        unchanged = not self.choose_target and text == self.original.strip() and not self.allow_unchanged
        problems: list[str] = []
        budget = Text()
        budget.append(f"{len(text):,} chars · {name} after save: ")
        over = used > limit
        # memdeck's one percent (Hermes' truncation, as the Capacity bar and the what-if below): past 100 when over
        budget.append(f"{used:,}/{limit:,} ({percent_text(used, limit)})", "bold red" if over else "green")
        if over:
            budget.append(f"  ✗ {used - limit:,} chars over the limit", "bold red")
            others = [e for e in self._entries(target) if e != self.original or self.choose_target]
            cands = archive_candidates(others, used - limit)
            hint = ", ".join(f"{cid} ({chars:,} chars)" for cid, chars, _t in cands[:4])
            problems.append(f"{name} would be {used - limit:,} chars over its {limit:,}-char limit: shorten the text, "
                            f"or archive (a in Capacity) {hint}" if hint else
                            f"{name} would be {used - limit:,} chars over its {limit:,}-char limit: shorten the text")
        if not text:
            budget.append("  ✗ empty" if self.original.strip() else "  (type the entry)", "bold red" if self.original.strip() else "dim")
            problems.append("the entry is empty")
        elif unchanged:
            budget.append("  (unchanged)", "dim")
            problems.append("nothing changed")
        if findings:
            problems.append(f"the threat scan flags it ({', '.join(finding_ids(findings))})")
        self.query_one("#editor-budget", Static).update(budget)
        self.query_one("#editor-whatif", Static).update(self._what_if(target, text))
        self.query_one("#editor-findings", Static).update(findings_text(text, findings))
        self._set_problems(problems)

    def _result(self) -> dict[str, Any]:
        return {"target": self._current_target(), "text": self.query_one("#editor-text", TextArea).text.strip()}


class WhatIfReady(Message):
    """The pin dialog's what-if finished: ``result`` is a ``WhatIf`` or the exception."""

    def __init__(self, key: Any, result: Any) -> None:
        super().__init__()
        self.key = key
        self.result = result


class PinScreen(FormScreen):
    """Pin text as an anchor: text, priority (1-100), probes (comma separated; empty = derived),
    scope (session / global). Dismisses with the values or ``None``."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Pin", id="pin.save"),
        Binding("escape", "cancel", "Cancel", id="pin.cancel"),
    ]

    FORM = "pin"

    #: Seconds after the last keystroke before the what-if replays the text.
    WHAT_IF_DELAY_S = 0.4

    def __init__(self, text: str, config: Any, *, title: str = "Pin an anchor", priority: int = 50,
                 probes: list[str] | None = None, reminder: str = "", show_scope: bool = True,
                 what_if: Any = None) -> None:
        super().__init__()
        self.text = text
        self.config = config
        self.title_text = title
        self.priority = priority
        self.probes = probes or []
        self.reminder = reminder
        self.show_scope = show_scope
        #: ``what_if(text, probes, priority) -> WhatIf`` (core/anchors/whatif.py), run on a
        #: thread worker; None: no what-if line.
        self.what_if_fn = what_if
        self.what_if_result: Any = None
        self._what_if_key: Any = None
        self._what_if_timer: Any = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="pin-box", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            yield TextArea(self.text, id="pin-text", soft_wrap=True, tab_behavior="focus")
            with Horizontal(classes="form-row"):
                yield Label("priority")
                yield Input(str(self.priority), id="pin-priority", type="integer", max_length=3, compact=True)
                if self.show_scope:
                    yield Label("scope")
                    yield Select([("session", "session"), ("global", "global")], value="session", allow_blank=False,
                                 id="pin-scope", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("probes")
                yield Input(", ".join(self.probes), placeholder="comma separated; empty = derived from the text",
                            id="pin-probes", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("reminder")
                yield Input(self.reminder, placeholder="empty = first sentence of the text", id="pin-reminder", compact=True)
            yield Static(id="pin-check")
            yield Static(id="pin-budget")
            if self.what_if_fn is not None:
                yield Static(Text("what if: replaying the past compactions…", style="dim"), id="pin-whatif")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (ctrl+s)", variant="primary", id="pin-save", compact=True)
                yield Button("Cancel (esc)", id="pin-cancel", compact=True)

    def _values(self) -> dict[str, Any]:
        probes_raw = self.query_one("#pin-probes", Input).value
        probes = [p.strip() for p in probes_raw.split(",") if p.strip()]
        scope = "session"
        if self.show_scope:
            v = self.query_one("#pin-scope", Select).value
            scope = v if isinstance(v, str) else "session"
        prio_raw = self.query_one("#pin-priority", Input).value.strip()
        try:
            prio: Any = int(prio_raw)
        except ValueError:
            prio = prio_raw
        return {
            "text": self.query_one("#pin-text", TextArea).text.strip(),
            "priority": prio,
            "probes": probes or None,
            "reminder": self.query_one("#pin-reminder", Input).value.strip(),
            "scope": scope,
        }

    def _check(self) -> None:
        v = self._values()
        problems: list[str] = []
        if not v["text"]:
            problems.append("an anchor needs text")
        if not isinstance(v["priority"], int) or not 1 <= v["priority"] <= 100:
            problems.append("priority must be a whole number 1-100")
        joined = " ".join([v["text"], v["reminder"], " ".join(v["probes"] or [])])
        findings = scan_findings(joined) if joined.strip() else []
        t = Text()
        if problems:
            t.append("✗ " + "; ".join(problems) + "\n", "bold red")
        t.append_text(findings_text(joined, findings))
        if not v["probes"] and v["text"]:
            try:
                from memdeck.core.anchors.rules import derive_probes

                t.append("\nprobes derived: ", "dim")
                t.append_text(safe_text(", ".join(derive_probes(v["text"])) or "(none)", single_line=True))
            except Exception:  # noqa: BLE001 - the probes preview is a courtesy; the core checks the pin
                pass
        self.query_one("#pin-check", Static).update(t)
        try:
            from memdeck.core.anchors.rules import auto_reminder
            from memdeck.core.context.whatif import pin_what_if

            from ..views.context import pin_cost_note

            reminder = v["reminder"] or auto_reminder(v["text"])
            self.query_one("#pin-budget", Static).update(
                what_if_text(pin_what_if(reminder, self.config.memlock).lines(), pin_cost_note((len(reminder) + 3) // 4),
                             heading="if you pin it") if reminder else Text())
        except Exception:  # noqa: BLE001 - the preview is a courtesy; the core checks the pin
            pass
        if findings:
            problems.append(f"the threat scan flags it ({', '.join(finding_ids(findings))})")
        self._set_problems(problems)
        self._schedule_what_if(v)

    # ── the what-if (issue 28): replayed off the UI thread, after typing pauses ──

    def _schedule_what_if(self, v: dict[str, Any]) -> None:
        if self.what_if_fn is None or not self.is_mounted:
            return
        key = (v["text"], tuple(v["probes"] or ()), v["priority"] if isinstance(v["priority"], int) else 50)
        if key == self._what_if_key:
            return
        self._what_if_key = key
        if self._what_if_timer is not None:
            self._what_if_timer.stop()
        if not key[0]:
            self.query_one("#pin-whatif", Static).update(Text("what if: type the anchor's text", style="dim"))
            return
        self._what_if_timer = self.set_timer(self.WHAT_IF_DELAY_S, lambda: self._run_what_if(key))

    @work(thread=True, exclusive=True, exit_on_error=False, group="what-if")
    def _run_what_if(self, key: Any) -> None:
        text, probes, priority = key
        try:
            result: Any = self.what_if_fn(text, list(probes) or None, priority if 1 <= priority <= 100 else 50)
        except Exception as exc:  # noqa: BLE001 - the what-if shows any failure as its result, never a crash
            result = exc
        self.post_message(WhatIfReady(key, result))

    def on_what_if_ready(self, message: WhatIfReady) -> None:
        if message.key != self._what_if_key:
            return  # superseded by later typing
        self.what_if_result = message.result
        if isinstance(message.result, BaseException):
            body = Text("what if: ", style="bold")
            body.append_text(safe_text(f"cannot replay: {message.result}", single_line=True, max_chars=160,
                                       style="yellow"))
        else:
            from ..views.whatif import whatif_text

            body = whatif_text(message.result)
        self.query_one("#pin-whatif", Static).update(body)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_save()

    def _result(self) -> dict[str, Any]:
        return self._values()


class AnchorEditScreen(PinScreen):
    """Edit an anchor's text, priority, probes and reminder (the core keeps the old version)."""

    def __init__(self, anchor: Any, config: Any) -> None:
        super().__init__(
            anchor.text, config, title=f"Edit anchor {anchor.id}", priority=int(anchor.priority),
            probes=list(anchor.probes), reminder=anchor.reminder, show_scope=False,
        )
