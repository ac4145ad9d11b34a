"""The constraint ledger (issue 34): what each compaction did to every rule the user gave.

Modules: :mod:`.markers` (the binding and scope words of the languages Hermes users write),
:mod:`.rules` (the user's rules in the compacted turns), :mod:`.summary` (the summary's
constraint lines, every Hermes layout 0.17-0.23 and the legacy form), :mod:`.classify` (kept,
weakened, lost, promoted, orphan, each with its evidence), :mod:`.ledger` (one compaction of a
session in state.db).
"""
