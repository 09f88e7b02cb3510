"""Extraction strategies: turn the chunks of a document into entities, relations and mentions.

Two offline strategies ship with evigraph: spaCy NER when a model is installed and pure regex
rules otherwise. `default_extractor()` picks the better one available so that ingestion works
out of the box on any machine; `extractor_by_name()` serves configuration and the CLI.
"""

from __future__ import annotations

from evigraph.errors import ConfigurationError
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.ingest.extraction.rules import RuleBasedExtraction
from evigraph.ingest.extraction.spacy_ner import INSTALL_HINT, SpacyExtraction, available_spacy_model

EXTRACTOR_NAMES: tuple[str, ...] = ("auto", "spacy", "rules")
"""Names accepted by `extractor_by_name`."""

__all__ = [
    "EXTRACTOR_NAMES",
    "ExtractionStrategy",
    "RuleBasedExtraction",
    "SpacyExtraction",
    "available_spacy_model",
    "default_extractor",
    "extractor_by_name",
]


def default_extractor() -> ExtractionStrategy:
    """spaCy NER when a model is installed, else the regex rules (which need nothing)."""
    model = available_spacy_model()
    if model is not None:
        return SpacyExtraction(model)
    return RuleBasedExtraction()


def extractor_by_name(name: str) -> ExtractionStrategy:
    """The extractor a configuration names: "spacy", "rules" or "auto" (= `default_extractor()`).

    Asking for "spacy" without an installed model fails here, with the install hint, rather than
    halfway through an ingest.
    """
    key = name.strip().lower()
    if key == "auto":
        return default_extractor()
    if key == "spacy":
        if available_spacy_model() is None:
            raise ConfigurationError("no spaCy model is installed", hint=INSTALL_HINT)
        return SpacyExtraction()
    if key == "rules":
        return RuleBasedExtraction()
    raise ConfigurationError(f"unknown extractor {name!r}", hint=f"use one of: {', '.join(EXTRACTOR_NAMES)}")
