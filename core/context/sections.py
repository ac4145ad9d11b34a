"""A stored system prompt, split into the sections Hermes assembled it from.

One concept. Hermes builds the prompt as parts joined by blank lines (0.19
``agent/system_prompt.py`` ``build_system_prompt_parts`` :147-524: the identity from SOUL.md or
``DEFAULT_AGENT_IDENTITY``, tool guidance, the skills index, environment and workspace facts,
the platform hint, the context files (``# Project Context``), the MEMORY and USER blocks, an
external memory provider's block, the ``Conversation started:`` line). The order moved between
versions (0.20 puts the skills index after the context files; 0.22 moves the profile line and the
host facts after the memory blocks, the latter in ``# Hermes runtime environment``), so parts are
found by how each one opens, not by where it sits:

* the MEMORY and USER blocks exactly, by their header's char count (:mod:`.frozen`);
* the identity exactly when it is the home's SOUL.md (Hermes strips it, 0.19
  ``prompt_builder.load_soul_md`` :1875-1905), else up to the first part that opens another section;
* every other part by its opening words (:data:`LANDMARKS`, taken from Hermes 0.17-0.22's
  ``agent/prompt_builder.py`` constants, ``PLATFORM_HINTS`` and builders); a part runs to the next
  part that opens a section. After ``# Project Context`` only the parts Hermes puts after the
  context files open a section (a context file's own ``# Finishing the job`` heading is the
  file's text, not guidance).

A part that opens no known section and follows nothing is *unattributed*, and so are the blank
lines between sections: ``sum(section chars) + unattributed == len(prompt)``, always. An external
memory provider's block has no fixed opening: the text between the last memory block and the next
section is counted as ``provider`` when config.yaml names a provider, else unattributed.

Pure functions of text; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .frozen import FrozenBlock, find_blocks

#: Section names in the order they are listed (``sections[].name``), with their titles.
SECTION_TITLES: dict[str, str] = {
    "identity": "identity (SOUL.md or the default)",
    "guidance": "guidance",
    "skills": "skills index",
    "environment": "environment and workspace",
    "platform": "platform hint",
    "context_files": "context files",
    "memory": "MEMORY block",
    "user": "USER block",
    "provider": "memory provider block",
    "session": "session line",
}
SECTION_NAMES = tuple(SECTION_TITLES)

#: How a part of each section opens (a regex matched at the start of a part), for Hermes
#: 0.17-0.22. Checked in order; the first match names the section.
LANDMARKS: tuple[tuple[str, str], ...] = (
    ("identity", r"You are Hermes Agent\b"),
    ("guidance", r"You run on Hermes Agent \(by Nous Research\)"),
    ("guidance", r"# Finishing the job\n"),
    ("guidance", r"# Parallel tool calls\n"),
    ("guidance", r"You have persistent memory\b"),
    ("guidance", r"You have a persistent user profile\b"),
    ("guidance", r"When the user references something from a past conversation"),
    ("guidance", r"After completing a complex task \(5\+ tool calls\)"),
    ("guidance", r"When you work out a non-trivial workflow"),
    ("guidance", r"## Skill Safety Rule\n"),
    ("guidance", r"## Mid-turn user steering\n"),
    ("guidance", r"# Kanban task execution protocol\n"),
    ("guidance", r"# Computer Use\b"),
    ("guidance", r"# Nous Subscription\b"),
    ("guidance", r"# Tool-use enforcement\n"),
    ("guidance", r"# Google model operational directives\n"),
    ("guidance", r"# Execution discipline\n"),
    ("guidance", r"You are a coding agent pairing with the user\b"),
    ("skills", r"## Skills \(mandatory\)\n"),
    ("skills", r"## Skills\nBefore replying, scan the skills below"),
    ("environment", r"Host: "),
    ("environment", r"Terminal backend: "),
    ("environment", r"You are running inside WSL\b"),
    ("environment", r"Shell: on this Windows host\b"),
    ("environment", r"Workspace \(snapshot at session start"),
    ("environment", r"Python toolchain: "),
    ("environment", r"Active Hermes profile: "),
    ("environment", r"# Hermes runtime environment\n"),
    ("environment", r"You are powered by the model named\b"),
    ("platform", r"You are a CLI AI Agent\b"),
    ("platform", r"You are (?:chatting inside|chatting via|texting via|communicating via|in a |in the Hermes |on |"
                 r"running as a scheduled cron job|running in the Hermes terminal UI)"),
    ("platform", r"You're responding through an API server\b"),
    ("context_files", r"# Project Context\n"),
    ("session", r"Conversation started: "),
)
_COMPILED = tuple((name, re.compile(rx)) for name, rx in LANDMARKS)
#: Sections a part may open after the context files began (Hermes 0.17-0.22 put only these there).
AFTER_CONTEXT = frozenset({"skills", "environment", "platform", "session"})
_PART_START = re.compile(r"\n\n(?=\S)")


@dataclass(frozen=True)
class Span:
    """One part of the prompt: ``[start, end)`` in chars, and the section it belongs to."""

    section: str
    start: int
    end: int

    @property
    def chars(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class PromptLayout:
    """A stored prompt split into sections.

    Attributes:
        length: ``len(prompt)`` in chars.
        spans: the parts found, in prompt order (consecutive parts of one section are merged).
        unattributed: chars in no section (the blank lines between sections, and any part that
            opens no known section); ``sum(chars(name) for name in SECTION_NAMES) + unattributed
            == length``.
        blocks: the MEMORY / USER blocks (:func:`.frozen.find_blocks`).
    """

    length: int
    spans: tuple[Span, ...]
    unattributed: int
    blocks: dict[str, FrozenBlock]

    def chars(self, name: str) -> int:
        """Chars of section ``name`` (0 when absent)."""
        return sum(s.chars for s in self.spans if s.section == name)

    def present(self) -> list[str]:
        """The section names that hold text, in :data:`SECTION_NAMES` order."""
        return [n for n in SECTION_NAMES if self.chars(n)]

    def text_of(self, prompt: str, name: str) -> str:
        """The text of section ``name`` (its parts joined by blank lines)."""
        return "\n\n".join(prompt[s.start:s.end] for s in self.spans if s.section == name)


def _landmark(prompt: str, pos: int) -> str | None:
    for name, rx in _COMPILED:
        if rx.match(prompt, pos):
            return name
    return None


def split_prompt(prompt: str, *, soul: str | None = None, provider: bool = False,
                 blocks: dict[str, FrozenBlock] | None = None) -> PromptLayout:
    """Split a stored system prompt into its sections (see the module docstring).

    Args:
        prompt: the stored system prompt.
        soul: the home's SOUL.md text (None: none); when the prompt opens with it (stripped), the
            identity section is exactly that text.
        provider: config.yaml names a memory provider (``memory.provider``): an unlabelled part
            right after the memory blocks is its block.
        blocks: :func:`.frozen.find_blocks` of ``prompt`` when already known.

    Returns:
        a :class:`PromptLayout`; its sections and ``unattributed`` add up to ``len(prompt)``.
    """
    found = find_blocks(prompt) if blocks is None else blocks
    fixed = sorted(((b.start, b.end, b.target) for b in found.values()), key=lambda t: t[0])
    # part starts: the prompt's start and every blank line followed by text, outside the blocks
    starts = [0] + [m.end() for m in _PART_START.finditer(prompt)]
    starts = [s for s in starts if not any(a < s < e for a, e, _ in fixed)]
    marks: list[tuple[int, int | None, str | None]] = []  # (start, fixed end or None, section or None)
    soul_text = (soul or "").strip()
    soul_end = len(soul_text) if soul_text and prompt.startswith(soul_text) else None
    after_context = False
    for s in sorted(set(starts) | {a for a, _, _ in fixed}):
        blk = next((f for f in fixed if f[0] == s), None)
        if blk is not None:
            marks.append((s, blk[1], blk[2]))
            continue
        if soul_end is not None and s < soul_end:
            if s == 0:
                marks.append((0, soul_end, "identity"))
            continue
        name = _landmark(prompt, s)
        if after_context and name is not None and name not in AFTER_CONTEXT:
            name = None
        if name == "context_files":
            after_context = True
        if name is None and provider and marks and marks[-1][2] in ("memory", "user") and marks[-1][1] is not None:
            name = "provider"  # the unlabelled part right after the memory blocks
        if name is not None or s == 0:
            marks.append((s, None, name))
    spans: list[Span] = []
    for k, (s, fixed_end, name) in enumerate(marks):
        nxt = marks[k + 1][0] if k + 1 < len(marks) else len(prompt)
        end = fixed_end if fixed_end is not None else nxt
        if fixed_end is None:  # a part runs to the next section, less the blank lines before it
            while end > s and prompt[end - 1] == "\n":
                end -= 1
        if name is None or end <= s:
            continue
        if spans and spans[-1].section == name and prompt[spans[-1].end:s].strip() == "":
            spans[-1] = Span(name, spans[-1].start, end)
        else:
            spans.append(Span(name, s, end))
    covered = sum(sp.chars for sp in spans)
    return PromptLayout(len(prompt), tuple(spans), len(prompt) - covered, dict(found))


__all__ = ["AFTER_CONTEXT", "LANDMARKS", "PromptLayout", "SECTION_NAMES", "SECTION_TITLES", "Span", "split_prompt"]
