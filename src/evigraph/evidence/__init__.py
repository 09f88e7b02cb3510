"""Evidence: the items reads return, their ids, the per-session ledger that numbers them, how
they are rendered and packed into a budget, how a draft's `[n]` citations are checked
against them (`citations`), and what each cited number or evidence id is worth as a citation
(`cited`). Everything that shows or cites evidence uses this."""

from evigraph.evidence.ids import EvidenceId, EvidenceKind
from evigraph.evidence.items import (
    EntityCard,
    EntityItem,
    Item,
    PassageItem,
    PassageText,
    RelationItem,
    Source,
    ThemeItem,
)
from evigraph.evidence.ledger import EvidenceLedger, EvidenceRecord, passage_digest

__all__ = [
    "EntityCard",
    "EntityItem",
    "EvidenceId",
    "EvidenceKind",
    "EvidenceLedger",
    "EvidenceRecord",
    "Item",
    "PassageItem",
    "PassageText",
    "RelationItem",
    "Source",
    "ThemeItem",
    "passage_digest",
]
