"""Cross-encoder relevance models: a question and a passage read together, one score per pair.

They score better than comparing two vectors (the model sees both texts at once) at the cost of
one model pass per passage, which is why they rerank a retrieval's few candidates and never
search. Loaded like the sentence-transformers embedders (a folder, the local cache, then the
hub) and shared per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.providers.embedders.base import _load_once


class CrossEncoderModel:
    """A sentence-transformers `CrossEncoder` by hub name or local folder, loaded on first use."""

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 32) -> None:
        if not model.strip():
            raise ConfigurationError(
                "a cross-encoder needs a model", hint="e.g. cross-encoder:cross-encoder/ms-marco-MiniLM-L6-v2"
            )
        self.model = model
        self.device = device
        self.batch_size = batch_size

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        """Each text's relevance to `question`, higher is better (the model's own scale)."""
        if not texts:
            return []
        scores = self._load().predict(
            [(question, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(s) for s in scores]

    def _load(self) -> Any:
        return _load_once(("cross-encoder", self.model, self.device), self._load_uncached)

    def _load_uncached(self) -> Any:
        from evigraph.providers.embedders.sentence_transformers import load_model, model_class

        return load_model(model_class("CrossEncoder"), self.model, self.model, self.device, "cross-encoder model")
