"""One label per name: the hits of a batch agree on a label before they become entities.

Entity ids are name + label, so a name the NER model types differently in different sentences
("Docker" as a person once, a place once, an organisation twice) would become several entities,
each holding part of the mentions and relations. So the hits of a whole batch are typed together
(`entity_types.type_hits`: the documents' own cues first, the model's votes after), junk is
dropped, and only then do hits become entities, so mentions and relations point at the one
surviving entity by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.ingest.extraction.cooccurrence import Hit, graph_from_hits
from evigraph.ingest.extraction.entity_types import type_hits
from evigraph.ingest.extraction.found_hits import encode_hits
from evigraph.models import GraphData, Ontology, TextChunk


def graphs_for_batch(
    documents: Sequence[Sequence[TextChunk]],
    per_chunk: Sequence[Sequence[Hit]],
    ontology: Ontology,
    *,
    keep_found: bool = True,
) -> list[GraphData]:
    """One graph per document from the hits of every chunk of the batch, in order, typed first.

    Shared by the offline extractors so that each gets the batch-wide typing the same way. Each
    graph also carries its passages' hits before typing (`found_hits`), for finalize to type again;
    finalize itself, typing what passages kept already, passes `keep_found=False`.
    """
    typed = type_hits(documents, per_chunk, ontology)
    graphs: list[GraphData] = []
    offset = 0
    for chunks in documents:
        end = offset + len(chunks)
        graph = graph_from_hits(chunks, typed[offset:end])
        if keep_found:
            graph = graph.model_copy(update={"found": tuple(encode_hits(hits) for hits in per_chunk[offset:end])})
        graphs.append(graph)
        offset = end
    return graphs
