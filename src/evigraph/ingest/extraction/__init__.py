"""Extraction strategies: turn the chunks of a document into entities, relations and mentions.

Two offline strategies ship with evigraph: spaCy NER when a model is installed and pure regex
rules otherwise. `default_extractor()` picks the better one available so that ingestion works
out of the box on any machine; `EXTRACTORS` (and `extractor_by_name()`) serve configuration,
the CLI and agent plans. The classes are imported on first use, so the CLI can list the names
without loading pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from evigraph.errors import ConfigurationError
from evigraph.extras import requires
from evigraph.lazy import lazy_callable, lazy_exports
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.ingest.extraction.base import ExtractionStrategy
    from evigraph.ingest.extraction.llm import LLMExtraction
    from evigraph.ingest.extraction.rules import RuleBasedExtraction
    from evigraph.ingest.extraction.spacy_models import available_spacy_model
    from evigraph.ingest.extraction.spacy_ner import SpacyExtraction


def default_extractor() -> ExtractionStrategy:
    """spaCy NER when a model is installed, else the regex rules (which need nothing)."""
    from evigraph.ingest.extraction.rules import RuleBasedExtraction
    from evigraph.ingest.extraction.spacy_models import available_spacy_model
    from evigraph.ingest.extraction.spacy_ner import SpacyExtraction

    model = available_spacy_model()
    if model is not None:
        return SpacyExtraction(model)
    return RuleBasedExtraction()


def _need_spacy_model() -> None:
    from evigraph.extras import install_hint
    from evigraph.ingest.extraction.spacy_models import available_spacy_model

    if available_spacy_model() is None:
        raise ConfigurationError("no spaCy model is installed", hint=install_hint("spacy"))


_need_llm_client = requires("httpx", "the LLM client (httpx)", "")
"""Which LLM is decided by the knowledge base (`--llm`, EVIGRAPH_LLM_MODEL, the one it recorded), so
it is checked when an ingest binds the extractor (`LLMExtraction.for_run`); here, the client."""


EXTRACTORS: Registry[ExtractionStrategy] = Registry("extractor")
EXTRACTORS.register(
    "auto",
    default_extractor,
    description="spaCy NER when a model is installed, else rules (local, no LLM)",
)
EXTRACTORS.register(
    "spacy",
    lazy_callable("evigraph.ingest.extraction.spacy_ner", "SpacyExtraction"),
    description="spaCy NER, local, about 40 passages/s on 2 cores",
    check=_need_spacy_model,
)
EXTRACTORS.register(
    "rules",
    lazy_callable("evigraph.ingest.extraction.rules", "RuleBasedExtraction"),
    description="capitalised-name rules, local, about 75 passages/s; lower precision",
)

EXTRACTORS.register(
    "llm",
    lazy_callable("evigraph.ingest.extraction.llm", "LLMExtraction"),
    description="an LLM confirms the local tagger's names and relates them, typed by the ontology, each relation "
    "with its fact sentence; needs an LLM (--llm or EVIGRAPH_LLM_MODEL); about 1 call per 8 passages and "
    "250-400 input tokens per passage, cached by passage content",
    cheap=False,
    check=_need_llm_client,
)

ExtractorName = Annotated[str, EXTRACTORS.enum_schema()]
"""An extractor's name in an input model: its JSON Schema lists the registered extractors."""

EXTRACTOR_NAMES: tuple[str, ...] = EXTRACTORS.names()
"""Names accepted by `extractor_by_name` (the built-ins; `EXTRACTORS` also lists later entries)."""


def extractor_by_name(name: str) -> ExtractionStrategy:
    """The extractor a configuration names: "spacy", "rules", "llm" or "auto" (= `default_extractor()`).

    Asking for "spacy" without an installed model fails here, with the install hint, rather than
    halfway through an ingest.
    """
    return EXTRACTORS.create(name)


__getattr__ = lazy_exports(
    __name__,
    {
        "ExtractionStrategy": "evigraph.ingest.extraction.base",
        "LLMExtraction": "evigraph.ingest.extraction.llm",
        "RuleBasedExtraction": "evigraph.ingest.extraction.rules",
        "SpacyExtraction": "evigraph.ingest.extraction.spacy_ner",
        "available_spacy_model": "evigraph.ingest.extraction.spacy_models",
    },
)

__all__ = [
    "EXTRACTORS",
    "EXTRACTOR_NAMES",
    "ExtractionStrategy",
    "ExtractorName",
    "LLMExtraction",
    "RuleBasedExtraction",
    "SpacyExtraction",
    "available_spacy_model",
    "default_extractor",
    "extractor_by_name",
]
