"""spaCy named-entity extraction: a statistical model, still fully offline.

spaCy's small English model finds and types names far better than regexes while costing no
network and little CPU, so it is the default extractor whenever it is installed. It is an
optional dependency, hence imported lazily: importing evigraph must not pay spaCy's import time
nor fail without it. Only the NER component is run (the parser, tagger and lemmatizer do not
change what NER finds but cost most of the time), every chunk of every document goes through one
`nlp.pipe` call so spaCy can batch, and that call runs in a worker thread so the event loop that
drives ingestion stays responsive.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.ingest.extraction import spacy_models
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.ingest.extraction.consensus import graphs_for_batch
from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.labels import keep_tag
from evigraph.ingest.extraction.names import clean_name_span
from evigraph.ingest.extraction.rules import find_hits
from evigraph.models import GraphData, Ontology, TextChunk

UNNEEDED_COMPONENTS: tuple[str, ...] = (
    "parser",
    "lemmatizer",
    "tagger",
    "attribute_ruler",
    "senter",
    "morphologizer",
)
"""Components NER does not read; excluding them leaves NER output unchanged and saves most of the time."""

NUMERIC_TAGS = frozenset({"DATE", "TIME"})
"""Tags whose names may legitimately be all digits ("1998") and must hold one."""

_MODELS: dict[tuple[str, bool], Any] = {}
_MODELS_LOCK = threading.Lock()
_PIPE_LOCK = threading.Lock()
"""Serialises `nlp.pipe` on the shared pipelines: spaCy does not promise thread safety, and
concurrent calls would not run faster under the GIL anyway."""


def load_model(name: str | None = None, reduced: bool = True) -> Any:
    """Load (once per process) the spaCy pipeline `name`, or the first loadable candidate.

    Loading takes about a second, so pipelines are cached by (name, reduced) under a lock: several
    extractors or concurrent ingest tasks share one copy. `reduced` keeps only what NER needs.
    """
    names = (name,) if name else spacy_models.MODEL_CANDIDATES
    errors: list[str] = []
    with _MODELS_LOCK:
        default_key = (name or "", reduced)  # "" caches the outcome of the candidate search
        if default_key in _MODELS:
            return _MODELS[default_key]
        for candidate in names:
            key = (candidate, reduced)
            if key not in _MODELS:
                try:
                    _MODELS[key] = _load(candidate, reduced)
                except ConfigurationError:
                    raise
                except Exception as exc:  # spaCy raises OSError, ImportError, ValueError...
                    errors.append(f"{candidate}: {exc}")
                    continue
            _MODELS[default_key] = _MODELS[key]
            return _MODELS[key]
    tried = ", ".join(names)
    raise ConfigurationError(
        f"no spaCy model could be loaded (tried {tried})",
        hint=f"{install_hint('spacy')}, or pass an installed model name; {'; '.join(errors)[:300]}",
    )


class _HideTorch(importlib.abc.MetaPathFinder):
    """Refuses `torch` to the one thread that made it, while that thread imports spaCy."""

    def __init__(self) -> None:
        self._thread = threading.get_ident()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if threading.get_ident() == self._thread and fullname.partition(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def import_spacy(*, without_torch: bool) -> Any:
    """spaCy, imported without torch unless torch is loaded already or `without_torch` is False.

    thinc (spaCy's machine learning library) imports torch at import time whenever it is
    installed (thinc 8.3 `compat.py`), though the small English models run on numpy alone:
    `import spacy` took 3.0 s with torch installed and 0.68 s with it refused, and NER found the
    same entities in all 200 hotpotqa dev questions either way. A cold `evigraph search` with an
    embedder loads spaCy to find the question's names, so this was most of its extractor's cost.
    Only this thread is refused torch, and only during the import: a thread importing torch
    meanwhile gets it, and torch imports as usual afterwards (a sentence-transformers embedder);
    thinc then runs its numpy ops, as on a machine without torch. Pass False for a model that may
    need torch (one the user named, such as a transformer pipeline).
    """
    if not without_torch or "spacy" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    hide = _HideTorch()
    sys.meta_path.insert(0, hide)
    try:
        import spacy
    finally:
        sys.meta_path.remove(hide)
    return spacy


def _load(name: str, reduced: bool) -> Any:
    try:
        spacy = import_spacy(without_torch=name in spacy_models.MODEL_CANDIDATES)
    except ImportError as exc:
        raise ConfigurationError("spaCy is not installed", hint=install_hint("spacy")) from exc
    if not reduced:
        return spacy.load(name)
    nlp = spacy.load(name, exclude=list(UNNEEDED_COMPONENTS))
    if "ner" not in nlp.pipe_names:
        raise ConfigurationError(f"spaCy model {name!r} has no NER component", hint=install_hint("spacy"))
    # The small English models give NER its own embedding layer; the shared tok2vec then feeds
    # only the excluded tagger/parser and can be switched off too.
    if "tok2vec" in nlp.pipe_names and not getattr(nlp.get_pipe("tok2vec"), "listening_components", ["?"]):
        nlp.disable_pipe("tok2vec")
    return nlp


class SpacyExtraction(ExtractionStrategy):
    """Named entities from a spaCy model, mapped onto the ontology, with co-occurrence relations.

    The model is loaded on first use, not in the constructor, so building an extractor (for a
    CLI option, a config check) stays instant.
    """

    name = "spacy"

    def __init__(
        self,
        model: str | None = None,
        batch_size: int = 64,
        n_process: int = 1,
        *,
        reduced_pipeline: bool = True,
    ) -> None:
        if batch_size < 1 or n_process < 1:
            raise ConfigurationError("batch_size and n_process must be at least 1", hint="pass positive values")
        self.model = model
        self.batch_size = batch_size
        self.n_process = n_process
        self.reduced_pipeline = reduced_pipeline

    @property
    def nlp(self) -> Any:
        """The loaded pipeline (loaded and cached on first access)."""
        return load_model(self.model, self.reduced_pipeline)

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        """Extract one document; the same batched path as `extract_many`."""
        return (await self.extract_many([chunks], ontology))[0]

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        """Extract every document with one `nlp.pipe` call over all their chunks, in a worker thread."""
        return await asyncio.to_thread(self.extract_sync, documents, ontology)

    def extract_sync(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        """The synchronous core, for callers without an event loop (and for benchmarks)."""
        if not any(documents):
            return [GraphData() for _ in documents]
        nlp = self.nlp
        texts = [chunk.text for chunks in documents for chunk in chunks]
        with _PIPE_LOCK:
            docs = nlp.pipe(texts, batch_size=self.batch_size, n_process=self.n_process)
            per_chunk = [
                _with_shapes(_hits(doc, text, ontology), text, ontology) for doc, text in zip(docs, texts, strict=True)
            ]
        return graphs_for_batch(documents, per_chunk, ontology)


_DAY = re.compile(r"\d{1,2}(?:st|nd|rd|th)[ \t]+$")
"""A day's ordinal right before a date the model tagged without it: "13th" of "13th October, 2021"
is tagged ORDINAL apart from "October, 2021"."""


def _hits(doc: Any, text: str, ontology: Ontology) -> list[Hit]:
    hits: list[Hit] = []
    for ent in doc.ents:
        tag = str(ent.label_)
        label = keep_tag(tag, ontology)
        if label is None:
            continue
        first = int(ent.start_char)
        if tag == "DATE":
            day = _DAY.search(text, max(0, first - 8), first)
            first = (
                day.start() if day is not None and (day.start() == 0 or not text[day.start() - 1].isalnum()) else first
            )
        span = clean_name_span(text, first, int(ent.end_char), numeric_ok=tag in NUMERIC_TAGS)
        if span is None or (tag in NUMERIC_TAGS and not _plausible_date(text[span[0] : span[1]])):
            continue
        start, end = span
        hits.append(Hit(start, end, text[start:end], label))
    return hits


def _with_shapes(hits: list[Hit], text: str, ontology: Ontology) -> list[Hit]:
    """The model's spans, then the names the rules find by shape where the model found none.

    The small model misses most names it never saw in news: on the docs of four Python projects
    it kept 53 % of the labelled real entities (third-party packages, sponsors' names, classes in
    prose); the rules' capitalised runs find them, and typing (`entity_types`) judges each by the
    documents' cues. Cost: about 1.3 ms a passage, against the model's 25.
    """
    extra = [r for r in find_hits(text, ontology) if not any(r.start < h.end and h.start < r.end for h in hits)]
    return sorted([*hits, *extra], key=lambda h: h.start) if extra else hits


def _plausible_date(name: str) -> bool:
    """A date names a fixed time: it holds a number ("today" and "last year" are relative), and a
    bare number is a year. The small model tags issue numbers ("27365") and ports ("80") DATE."""
    if not any(ch.isdigit() for ch in name):
        return False
    return not name.isdigit() or (len(name) == 4 and name[0] in "12")
