"""evigraph: a local-first GraphRAG knowledge base for AI agents.

Names are imported on first use, so `import evigraph` and `evigraph --help` stay fast: the
graph engine, the PDF reader and NLP models load only when something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evigraph.version import __version__

_EXPORTS = {
    "KnowledgeBase": "evigraph.kb",
    "Status": "evigraph.kb",
    "EvigraphError": "evigraph.errors",
    "InputError": "evigraph.errors",
    "ConfigurationError": "evigraph.errors",
    "StoreError": "evigraph.errors",
    "DatabaseLockedError": "evigraph.errors",
    "NotAKnowledgeBaseError": "evigraph.errors",
    "KnowledgeBaseMissingError": "evigraph.errors",
    "EngineUnavailableError": "evigraph.errors",
    "GraphStore": "evigraph.store.base",
    "EmbeddedStore": "evigraph.store.embedded.store",
    "Ontology": "evigraph.models",
    "EntityType": "evigraph.models",
    "RelationType": "evigraph.models",
    "PropertyType": "evigraph.property_types",
    "IngestReport": "evigraph.models",
    "IngestStatus": "evigraph.models",
    "DocumentOutcome": "evigraph.models",
    "LoadedDocument": "evigraph.models",
    "TextChunk": "evigraph.models",
    "GraphData": "evigraph.models",
    "ExtractedEntity": "evigraph.models",
    "ExtractedRelation": "evigraph.models",
    "Mention": "evigraph.models",
    "Span": "evigraph.models",
    "DEFAULT_ONTOLOGY": "evigraph.ingest.ontology",
    "LoaderStrategy": "evigraph.ingest.loaders",
    "TextLoader": "evigraph.ingest.loaders",
    "MarkdownLoader": "evigraph.ingest.loaders",
    "PdfLoader": "evigraph.ingest.loaders",
    "JsonlLoader": "evigraph.ingest.loaders",
    "ChunkingStrategy": "evigraph.ingest.chunking",
    "FixedSizeChunking": "evigraph.ingest.chunking",
    "SentenceTokenCapChunking": "evigraph.ingest.chunking",
    "StructuralChunking": "evigraph.ingest.chunking",
    "CallableChunking": "evigraph.ingest.chunking",
    "ExtractionStrategy": "evigraph.ingest.extraction",
    "SpacyExtraction": "evigraph.ingest.extraction",
    "RuleBasedExtraction": "evigraph.ingest.extraction",
    "ResolutionStrategy": "evigraph.ingest.resolution",
    "ExactMatchResolution": "evigraph.ingest.resolution",
    "LLMVerifiedResolution": "evigraph.ingest.llm_resolution",
    "FinalizeReport": "evigraph.kb",
    "ToolError": "evigraph.errors",
    "DeadlineExceeded": "evigraph.errors",
    "Limits": "evigraph.limits",
    "ReadOnlyViolation": "evigraph.errors",
    "Toolkit": "evigraph.tools.toolkit",
    "ToolSpec": "evigraph.tools.registry",
    "ToolResult": "evigraph.tools.results",
    "CHEAP_PLAN_LIMITS": "evigraph.tools.plans",
    "PruneReport": "evigraph.models",
    "RetrieveInput": "evigraph.retrieval.query",
    "RetrievalResult": "evigraph.retrieval.result",
    "RetrievalStrategy": "evigraph.retrieval.strategy",
    "RetrievalContext": "evigraph.retrieval.strategy",
    "Reranker": "evigraph.retrieval.strategy",
    "RetrievalRecipe": "evigraph.retrieval.recipe",
    "RECIPES": "evigraph.retrieval.recipe",
    "MultiPathRetrieval": "evigraph.retrieval.retriever",
    "CosineReranker": "evigraph.retrieval.rerankers",
    "CrossEncoderReranker": "evigraph.retrieval.rerankers",
    "EvidenceId": "evigraph.evidence",
    "EvidenceLedger": "evigraph.evidence",
    "PassageItem": "evigraph.evidence",
    "EntityItem": "evigraph.evidence",
    "RelationItem": "evigraph.evidence",
    "Source": "evigraph.evidence",
    "NotFoundError": "evigraph.errors",
    "TaskExistsError": "evigraph.errors",
    "TaskNotFoundError": "evigraph.errors",
    "RequestConflictError": "evigraph.errors",
    "Traces": "evigraph.kb",
    "LLMError": "evigraph.errors",
    "LLMConfigurationError": "evigraph.errors",
    "LLMTimeoutError": "evigraph.errors",
    "LLMResponseError": "evigraph.errors",
    "LLM": "evigraph.providers.llms",
    "OpenAICompatibleLLM": "evigraph.providers.llms",
    "Message": "evigraph.providers.llms",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evigraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from evigraph.errors import (
        ConfigurationError,
        DatabaseLockedError,
        DeadlineExceeded,
        EngineUnavailableError,
        EvigraphError,
        InputError,
        KnowledgeBaseMissingError,
        LLMConfigurationError,
        LLMError,
        LLMResponseError,
        LLMTimeoutError,
        NotAKnowledgeBaseError,
        NotFoundError,
        ReadOnlyViolation,
        RequestConflictError,
        StoreError,
        TaskExistsError,
        TaskNotFoundError,
        ToolError,
    )
    from evigraph.evidence import EntityItem, EvidenceId, EvidenceLedger, PassageItem, RelationItem, Source
    from evigraph.ingest.chunking import (
        CallableChunking,
        ChunkingStrategy,
        FixedSizeChunking,
        SentenceTokenCapChunking,
        StructuralChunking,
    )
    from evigraph.ingest.extraction import ExtractionStrategy, RuleBasedExtraction, SpacyExtraction
    from evigraph.ingest.llm_resolution import LLMVerifiedResolution
    from evigraph.ingest.loaders import JsonlLoader, LoaderStrategy, MarkdownLoader, PdfLoader, TextLoader
    from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
    from evigraph.ingest.resolution import ExactMatchResolution, ResolutionStrategy
    from evigraph.kb import FinalizeReport, KnowledgeBase, Status, Traces
    from evigraph.limits import Limits
    from evigraph.models import (
        DocumentOutcome,
        EntityType,
        ExtractedEntity,
        ExtractedRelation,
        GraphData,
        IngestReport,
        IngestStatus,
        LoadedDocument,
        Mention,
        Ontology,
        PruneReport,
        RelationType,
        Span,
        TextChunk,
    )
    from evigraph.property_types import PropertyType
    from evigraph.providers.llms import LLM, Message, OpenAICompatibleLLM
    from evigraph.retrieval.query import RetrieveInput
    from evigraph.retrieval.recipe import RECIPES, RetrievalRecipe
    from evigraph.retrieval.rerankers import CosineReranker, CrossEncoderReranker
    from evigraph.retrieval.result import RetrievalResult
    from evigraph.retrieval.retriever import MultiPathRetrieval
    from evigraph.retrieval.strategy import Reranker, RetrievalContext, RetrievalStrategy
    from evigraph.store.base import GraphStore
    from evigraph.store.embedded.store import EmbeddedStore
    from evigraph.tools.definitions import ToolSpec
    from evigraph.tools.plans import CHEAP_PLAN_LIMITS
    from evigraph.tools.results import ToolResult
    from evigraph.tools.toolkit import Toolkit
