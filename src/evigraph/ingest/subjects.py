"""The document's subject as an entity: every passage of a document is about its title.

Encyclopaedia articles, READMEs and man pages name their subject in the title and then say "he",
"it" or nothing at all; NER finds the subject only where the text spells it out. A title entity
mentioned by every passage of its document links those passages to each other and to every
passage elsewhere that names the subject, which is the hop a multi-hop question takes ("the
director of film X" lands in X's article, "his mother" in the director's). When the extractor
already found the title's name in the document, that entity is the subject, so no second entity
is made for the same thing.
"""

from __future__ import annotations

import re

from evigraph.ingest.extraction.labels import map_candidates
from evigraph.ingest.extraction.names import clean_name_span
from evigraph.models import UNKNOWN_LABEL, ExtractedEntity, GraphData, Mention, Ontology, normalize_name

SUBJECT_CANDIDATES: tuple[str, ...] = ("Concept",)
"""Label of a subject the extractor did not type, when the ontology declares it."""

_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")
"""A trailing disambiguation such as "Move (1970 film)": the subject is named without it."""

_MAX_SUBJECT_WORDS = 8
"""Longer titles are sentences or file descriptions, not names of a subject."""


def subject_name(title: str) -> str | None:
    """The name a title gives its subject without its qualifier, or None when the title names
    nothing (a path, a number, markup)."""
    name = _QUALIFIER.sub("", " ".join(title.split()))
    if not name or len(name.split()) > _MAX_SUBJECT_WORDS:
        return None
    span = clean_name_span(name, 0, len(name))
    if span is None:
        return None  # markup, a URL, a file name or code: not a subject
    return name[span[0] : span[1]]  # trimmed as the extractor trims the names it finds ("The ...")


def with_subject(graph: GraphData, title: str, chunk_indexes: list[int], ontology: Ontology) -> GraphData:
    """`graph` with the title's subject mentioned in every chunk (`chunk_indexes`) of the document.

    A qualified title ("Move (1970 film)") names one of several things the bare name could be,
    so its subject is an entity of its own under the full title, with the bare name as an alias
    (found by name look-ups, never merged with the other "Move"s). An unqualified title is the
    entity the extractor found under that name in the document, when it found one.
    """
    name = subject_name(title)
    if name is None or not chunk_indexes:
        return graph
    qualifier = _QUALIFIER.search(" ".join(title.split()))
    full = f"{name} {qualifier.group().strip()}" if qualifier else name
    key = normalize_name(name)
    found = None if qualifier else next((e for e in graph.entities if normalize_name(e.name) == key), None)
    entities = list(graph.entities)
    if found is None:
        label = map_candidates(SUBJECT_CANDIDATES, ontology)
        if label == UNKNOWN_LABEL:
            return graph  # an ontology without a neutral label: no untyped entity for every title
        found = ExtractedEntity.create(full, label)
        if full != name:
            found = found.model_copy(update={"aliases": (*found.aliases, name)})
        entities.append(found)
    mentioned = {m.chunk_index for m in graph.mentions if m.entity_id == found.id}
    extra = tuple(Mention(entity_id=found.id, chunk_index=i) for i in chunk_indexes if i not in mentioned)
    return graph.model_copy(update={"entities": tuple(entities), "mentions": (*graph.mentions, *extra)})
