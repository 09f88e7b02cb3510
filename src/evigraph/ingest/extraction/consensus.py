"""One label per name: the hits of a batch agree on a label before they become entities.

Entity ids are name + label, so a name the NER model types differently in different sentences
("Docker" as a person once, a place once, an organisation twice) would become several entities,
each holding part of the mentions and relations. The model's per-sentence guesses are votes, and
the label the mentions agree on is kept; when they do not agree, the name is still one thing, and
a neutral label is more honest than any of the guesses. This runs on the hits, before
`graph_from_hits`, so mentions and relations point at the one surviving entity by construction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from evigraph.ingest.extraction.cooccurrence import Hit, graph_from_hits
from evigraph.ingest.extraction.labels import map_candidates
from evigraph.models import UNKNOWN_LABEL, GraphData, Ontology, TextChunk, normalize_name

NEUTRAL_CANDIDATES: tuple[str, ...] = ("Concept",)
"""The label given to a name whose mentions disagree, when the ontology declares it."""


def agreed_labels(hits: Sequence[Hit], ontology: Ontology) -> dict[str, str]:
    """The label each normalised name takes, for names seen under more than one label.

    `UNKNOWN_LABEL` is no vote: it says the extractor could not type that mention, not that the
    name is of another kind, so "Lincoln" typed Person once (after "President") and untyped
    elsewhere is a Person. Among the typed mentions a label wins with a strict majority; a tie or a
    plurality is disagreement, and the name gets the neutral label (or `UNKNOWN_LABEL` when the
    ontology has no neutral label) rather than a coin flip between guesses.
    """
    votes: dict[str, Counter[str]] = {}
    for hit in hits:
        votes.setdefault(normalize_name(hit.name), Counter())[hit.label] += 1
    agreed: dict[str, str] = {}
    neutral: str | None = None
    for norm, counts in votes.items():
        if len(counts) < 2:
            continue
        typed = {label: n for label, n in counts.items() if label != UNKNOWN_LABEL}
        label, top = max(typed.items(), key=lambda item: item[1])
        if top * 2 <= sum(typed.values()):
            if neutral is None:
                neutral = map_candidates(NEUTRAL_CANDIDATES, ontology)
            label = neutral
        agreed[norm] = label
    return agreed


def unify_labels(per_chunk: Sequence[Sequence[Hit]], ontology: Ontology) -> list[list[Hit]]:
    """`per_chunk` with every hit of a name relabelled to the label its mentions agree on.

    Pass the hits of the whole batch (every chunk of every document an extractor call handles), so
    a name gets one label across the documents ingested together, not one per document.
    """
    agreed = agreed_labels([hit for hits in per_chunk for hit in hits], ontology)
    if not agreed:
        return [list(hits) for hits in per_chunk]
    out: list[list[Hit]] = []
    for hits in per_chunk:
        relabelled: list[Hit] = []
        for hit in hits:
            label = agreed.get(normalize_name(hit.name))
            relabelled.append(hit if label is None or label == hit.label else hit._replace(label=label))
        out.append(relabelled)
    return out


def graphs_for_batch(
    documents: Sequence[Sequence[TextChunk]], per_chunk: Sequence[Sequence[Hit]], ontology: Ontology
) -> list[GraphData]:
    """One graph per document from the hits of every chunk of the batch, in order, labels agreed first.

    Shared by the offline extractors so that each gets the batch-wide label agreement the same way.
    """
    unified = unify_labels(per_chunk, ontology)
    graphs: list[GraphData] = []
    offset = 0
    for chunks in documents:
        graphs.append(graph_from_hits(chunks, unified[offset : offset + len(chunks)]))
        offset += len(chunks)
    return graphs
