"""Memory hygiene: duplicates, contradictions, stale and wasteful entries of MEMORY.md, USER.md
and memdeck's archive, each with its evidence, and the proposals that fix them through the
locked core (issue 36). Nothing here writes on its own: a proposal is applied only when a person
asks (:mod:`.apply`), as one journaled change that ``memdeck undo`` puts back.

Modules: :mod:`.words` (the lexical view of an entry), :mod:`.similarity` (pairwise scores,
semantic with memdeck's verified all-MiniLM-L6-v2 when the semantic extra is installed, lexical
otherwise), :mod:`.findings` (the values), :mod:`.detect` (the four kinds), :mod:`.apply`.
"""
