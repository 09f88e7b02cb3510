"""Keeping extraction inside the ontology, and telling the user what that cost.

Extractors may find more than the ontology declares. What falls outside is dropped (or kept as
`Unknown`), and the report says exactly what, with one example per undeclared relation pattern,
so an agent can extend the ontology and re-extract instead of silently losing facts.
"""

from __future__ import annotations

from evigraph.models import UNKNOWN_LABEL, GraphData, Ontology, PatternExample, PruneReport


def prune(graph: GraphData, ontology: Ontology) -> tuple[GraphData, PruneReport]:
    """`graph` without what `ontology` does not declare, and a report of what was dropped.

    An ontology with no relation types accepts every relation; a relation type with no
    patterns accepts any pair of labels.
    """
    report = PruneReport()
    labels = set(ontology.labels) | {UNKNOWN_LABEL}
    entities = []
    for e in graph.entities:
        if e.label in labels:
            entities.append(e)
            report.unknown_entities += e.label == UNKNOWN_LABEL
        else:
            report.entity_types[e.label] = report.entity_types.get(e.label, 0) + 1
    kept_ids = {e.id: e.label for e in entities}
    declared = {r.type: r for r in ontology.relations}
    relations = []
    examples: dict[tuple[str, str, str], PatternExample] = {}
    for r in graph.relations:
        if r.source not in kept_ids or r.target not in kept_ids:
            continue  # an end was dropped above; counted there
        if declared and r.type not in declared:
            report.relation_types[r.type] = report.relation_types.get(r.type, 0) + 1
            continue
        rtype = declared.get(r.type)
        pair = (kept_ids[r.source], kept_ids[r.target])
        if rtype is not None and rtype.patterns and pair not in rtype.patterns:
            if UNKNOWN_LABEL in pair:
                report.unknown_endpoints += 1
            else:
                key = (r.type, *pair)
                if key in examples:
                    examples[key].count += 1
                else:
                    examples[key] = PatternExample(
                        relation=r.type, source_label=pair[0], target_label=pair[1], fact=r.fact
                    )
            continue
        relations.append(r)
    report.pattern_examples = list(examples.values())
    mentions = [m for m in graph.mentions if m.entity_id in kept_ids]
    return GraphData(entities=tuple(entities), relations=tuple(relations), mentions=tuple(mentions)), report
