"""Candidate pairs for resolution (at finalize, and at ingest for `llm_verified`): which entities
are worth comparing at all.

Comparing every pair of n entities costs n²/2 comparisons (50 million for 10,000 entities), and
almost all of them compare names with nothing in common. Instead each name is filed under the
keys `name_match.blocking_keys` gives (the same name, a word, a word one typo away, initials and
surname, an acronym) and only entities filed under one key are paired: the cost grows with the
pairs proposed, not with n². A key shared by many entities ("university", "john") tells little:
above `SMALL_BLOCK` members each keeps only its `NEIGHBOURS` nearest in the block, by characters
and, when the store holds name vectors (graph ranking's), by vector too; above `MAX_BLOCK` the
key is not used at all. Every pair proposed is then scored by its names (rules and character
trigrams); the cosine of its name vectors is reported beside.

Vectors choose neighbours but do not make candidates. Measured with all-MiniLM-L6-v2 on the pairs
blocking proposed over the bench titles (`bench/resolution.py`'s names): a cosine of 0.8 or more
holds 31 % of the spelling variants (a typo changes the tokens the model reads) and 513 pairs of
distinct names, mostly numbered series ("3rd Baronet" and "5th Baronet", 0.99), while the name
score at `CANDIDATE_FLOOR` holds 99.9 % of the variants; admitting pairs by cosine would have
added one variant for every 500 pairs of distinct things sent to a judge.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evigraph.ingest.name_match import Names, best_match, blocking_keys, names_of, trigram_dice
from evigraph.store.merging import EntityRecord

SMALL_BLOCK = 24
"""Blocks up to this size are paired completely (at most 276 pairs each)."""

MAX_BLOCK = 400
"""A key shared by more entities than this identifies nothing (a first name, "university") and is
skipped; its members are still reached through their other keys."""

NEIGHBOURS = 6
"""In a block larger than `SMALL_BLOCK`, how many nearest members each member is paired with."""

CANDIDATE_FLOOR = 0.6
"""Pairs whose names score below this are not candidates: they shared a key but little else ("new
york" and "york university" share a word, 0.32; "john smith" and "jane smith" 0.55). Measured by
`bench/resolution.py` over 8,311 names: of the 43,447 pairs of distinct titles blocking proposed
(median score 0.06), 211 score 0.6 or more, and 97.4 % of the spelling variants do. At 0.5 the
distinct pairs are 996 for 99.0 % of the variants: 4.7 times the pairs a judge (an LLM call)
weighs for 1.6 points of variants, mostly one-word names with a typo, which fuzzy would not merge.
"""


@dataclass(frozen=True)
class CandidatePair:
    """Two entities that may be one; `a` < `b` by id."""

    a: str
    b: str
    score: float
    """Name similarity (0-1): a name rule's score, else the character trigram Dice coefficient."""
    reason: str
    """What gave the score: a `name_match.RULE_SCORES` rule, or "chars" (trigram Dice)."""
    cosine: float | None = None
    """Cosine of the two name vectors, when both are stored."""


@dataclass
class Candidates:
    """The candidate pairs, and what finding them cost."""

    pairs: list[CandidatePair] = field(default_factory=list)
    entities: int = 0
    blocks: int = 0
    """Keys shared by two entities or more, and used."""
    skipped_blocks: int = 0
    """Keys shared by more than `MAX_BLOCK` entities, left out."""
    compared: int = 0
    """Pairs scored: what blocking cost, to set beside n²/2."""


class Blocks:
    """The entities filed under their keys; `pairs` then proposes and scores the candidates.

    Two steps, so a caller can fetch name vectors for the entities that share a key with another
    (`linked_ids`), and only for them, between filing and pairing.
    """

    def __init__(self, entities: Sequence[EntityRecord], *, max_block: int = MAX_BLOCK) -> None:
        self.max_block = max_block
        self.entities: list[EntityRecord] = []
        self.names: list[Names] = []
        self._filed: dict[str, set[int]] = defaultdict(set)
        self._oversize = 0
        """Keys left out before filing (`around`): shared by more than `max_block` entities."""
        self.add(entities)

    def add(self, entities: Sequence[EntityRecord]) -> None:
        """File more entities beside those filed: an ingest adds the names each document brought,
        so the next document is blocked against them too without filing the graph again."""
        for entity in entities:
            entity_names = names_of(entity.name, entity.aliases)
            for key in blocking_keys(entity_names):
                self._filed[key].add(len(self.entities))
            self.entities.append(entity)
            self.names.append(entity_names)

    @property
    def skipped(self) -> int:
        return self._oversize + sum(1 for members in self._filed.values() if len(members) > self.max_block)

    @property
    def blocks(self) -> list[list[int]]:
        return [sorted(m) for m in self._filed.values() if 2 <= len(m) <= self.max_block]

    def around(self, entities: Sequence[EntityRecord]) -> Blocks:
        """`entities` filed with every entity here that shares a usable key with one of them, under
        those keys alone: pairing them (`pairs(touching=...)`) then costs the blocks that hold one
        of `entities`, not the graph's. Each such block holds exactly the members it would hold
        were `entities` filed here, and a key `entities` would push over `max_block` is left out
        (counted in `skipped`) as it would be there, so the pairs are the same."""
        mine: dict[str, set[int]] = defaultdict(set)
        for n, e in enumerate(entities):
            for key in blocking_keys(names_of(e.name, e.aliases)):
                mine[key].add(n)
        near = Blocks([], max_block=self.max_block)
        keys, oversize = {}, 0
        for key, members in mine.items():
            if len(self._filed.get(key, ())) + len(members) > self.max_block:
                oversize += 1
            else:
                keys[key] = members
        held = sorted({i for key in keys for i in self._filed.get(key, ())})
        row = {i: n for n, i in enumerate(held)}
        near.entities = [*(self.entities[i] for i in held), *entities]
        near.names = [*(self.names[i] for i in held), *(names_of(e.name, e.aliases) for e in entities)]
        for key, members in keys.items():
            near._filed[key] = {row[i] for i in self._filed.get(key, ())} | {len(held) + n for n in members}
        near._oversize = oversize
        return near

    def linked_ids(self) -> list[str]:
        """Ids of the entities sharing a usable key with another: the only ones ever compared."""
        return sorted({self.entities[i].id for block in self.blocks for i in block})

    def pairs(
        self,
        vectors: Mapping[str, Sequence[float]] | None = None,
        *,
        floor: float = CANDIDATE_FLOOR,
        small_block: int = SMALL_BLOCK,
        neighbours: int = NEIGHBOURS,
        touching: Collection[str] | None = None,
    ) -> Candidates:
        """The candidate pairs scoring `floor` or more, highest first; `vectors` are name vectors by id.

        With `touching`, only pairs of one of those entities and one of the others are scored: an
        ingest resolving a document's new names against the graph pays for nothing else."""
        blocks = self.blocks
        found = Candidates(entities=len(self.entities), blocks=len(blocks), skipped_blocks=self.skipped)
        rows = _Vectors([(vectors or {}).get(e.id) for e in self.entities])
        focus = None if touching is None else {i for i, e in enumerate(self.entities) if e.id in touching}
        proposed: set[tuple[int, int]] = set()
        for block in blocks:
            if focus is not None and focus.isdisjoint(block):
                continue  # none of its pairs touches the focus
            if len(block) > small_block:
                proposed.update(_nearest_pairs(block, self.names, rows, neighbours))
            elif focus is None:
                proposed.update((x, y) for n, x in enumerate(block) for y in block[n + 1 :])
            else:
                inside = [x for x in block if x in focus]
                proposed.update((min(x, y), max(x, y)) for x in inside for y in block if y not in focus)
        if focus is not None:
            proposed = {(i, j) for i, j in proposed if (i in focus) != (j in focus)}
        found.compared = len(proposed)
        ordered = sorted(proposed)
        kept = []
        for i, j in ordered:
            similarity, reason = best_match(self.names[i], self.names[j])
            if similarity >= floor:
                kept.append((i, j, round(similarity, 4), reason))
        cosines = rows.pair_cosines([(i, j) for i, j, _, _ in kept])
        for (i, j, score, reason), cosine in zip(kept, cosines, strict=True):
            a, b = sorted((self.entities[i].id, self.entities[j].id))
            found.pairs.append(CandidatePair(a=a, b=b, score=score, reason=reason, cosine=cosine))
        found.pairs.sort(key=lambda p: (-p.score, p.a, p.b))
        return found


def candidate_pairs(
    entities: Sequence[EntityRecord],
    vectors: Mapping[str, Sequence[float]] | None = None,
    *,
    floor: float = CANDIDATE_FLOOR,
) -> Candidates:
    """The pairs of `entities` worth resolving, highest score first (`Blocks` in one step)."""
    return Blocks(entities).pairs(vectors, floor=floor)


def _nearest_pairs(members: list[int], names: Sequence[Names], vectors: _Vectors, k: int) -> set[tuple[int, int]]:
    """Each member paired with its `k` nearest in the block by the characters of their first
    forms, and its `k` nearest by name vector when every member has one. Costs the block's size
    squared in cheap comparisons, bounded by `MAX_BLOCK`, instead of scoring every pair fully."""
    sims = vectors.block_similarities(members)
    out: set[tuple[int, int]] = set()
    for row, x in enumerate(members):
        fx = names[x].forms[0] if names[x].forms else ""
        rankings = [[(trigram_dice(fx, names[y].forms[0]) if fx and names[y].forms else 0.0, y) for y in members]]
        if sims is not None:
            rankings.append([(sims[row][col], y) for col, y in enumerate(members)])
        for scored in rankings:
            for _, y in heapq.nlargest(k, ((s, y) for s, y in scored if y != x)):
                out.add((x, y) if x < y else (y, x))
    return out


class _Vectors:
    """The entities' name vectors at unit length, for cosines of pairs and within blocks.

    In a numpy matrix (numpy is a base dependency): a pure-Python cosine of two 384-wide vectors
    costs about 20 µs, and Python floats take eight times the memory, which tens of thousands of
    entities would notice.
    """

    def __init__(self, vectors: Sequence[Sequence[float] | None]) -> None:
        width = next((len(v) for v in vectors if v), 0)
        self.has = [v is not None and len(v) == width > 0 for v in vectors]
        self.matrix: Any = None
        if not any(self.has):
            return
        import numpy as np

        matrix = np.zeros((len(vectors), width), dtype=np.float32)
        for i, (v, ok) in enumerate(zip(vectors, self.has, strict=True)):
            if ok:
                matrix[i] = v
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = matrix / np.where(norms > 0, norms, 1.0)

    def pair_cosines(self, pairs: Sequence[tuple[int, int]]) -> list[float | None]:
        if self.matrix is None:
            return [None] * len(pairs)
        import numpy as np

        out: list[float | None] = []
        for start in range(0, len(pairs), 65536):
            part = np.asarray(pairs[start : start + 65536], dtype=np.int64).reshape(-1, 2)
            dots = np.einsum("ij,ij->i", self.matrix[part[:, 0]], self.matrix[part[:, 1]])
            out += [
                round(float(d), 4) if self.has[i] and self.has[j] else None
                for (i, j), d in zip(pairs[start : start + 65536], dots.tolist(), strict=True)
            ]
        return out

    def block_similarities(self, members: Sequence[int]) -> list[list[float]] | None:
        """Cosines among `members` when every one has a vector, else None."""
        if self.matrix is None or not all(self.has[m] for m in members):
            return None
        block = self.matrix[list(members)]
        sims: list[list[float]] = (block @ block.T).tolist()
        return sims
