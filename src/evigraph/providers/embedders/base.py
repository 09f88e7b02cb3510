"""The embedder contract and what every built-in shares: batching, normalising, loading once, offline checks."""

from __future__ import annotations

import math
import os
import socket
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlparse


class Embedder(ABC):
    """Turns texts into fixed-size vectors.

    `name` identifies the model (two embedders with one name must give the same vectors);
    vectors are L2-normalised so a dot product is the cosine similarity.

    Example::

        class HashEmbedder(Embedder):
            name, dimension = "hash-16", 16

            def embed(self, texts):
                return [normalise([hash((t, i)) % 97 for i in range(16)]) for t in texts]
    """

    name: str
    dimension: int
    batch_size: int = 64

    @property
    def spec(self) -> str | None:
        """The `EMBEDDERS` spec that builds this embedder again (`minilm`, `openai:<model>`), or
        None when evigraph cannot rebuild it by name (a class of your own).

        A knowledge base records it with its vectors, so every later session, the CLI and the MCP
        server search with the same model without being told which; one that cannot be rebuilt
        must be passed again, and searching without it is an error, not full-text in disguise.
        """
        return None

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for `texts`, in order; blocking (callers run it in a worker thread)."""

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query; models with query instructions override this."""
        return self.embed([text])[0]

    def token_lengths(self, texts: Sequence[str]) -> list[int] | None:
        """How many tokens the model reads of each text (its special tokens and input limit
        counted), or None when it cannot tell cheaply.

        Bulk embedding groups texts of like token count so a forward pass pads little
        (`evigraph.ingest.embedding`); without counts it groups by characters, which pads
        names of rare words (many pieces for few characters) by about two thirds.
        """
        return None

    def pool_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        """Vectors of `texts`, and of the character spans `spans[i]` of each text pooled from that
        text's own pass, None where the model cannot give one so (it does not pool by mean, or
        the span lies past its input limit).

        A model that exposes its token vectors overrides this: a span then costs nothing beside
        its text, and reads the text's context ("he" is the subject the text named before). The
        caller decides what a None costs: the ingest embeds a missing sentence on its own but
        gives a missing name mention up for the name (`ingest.passage_vectors`), one pass per
        name instead of one per mention. The default pools nothing.
        """
        return self.embed(texts), [[None] * len(s) for s in spans]

    def embed_with_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[list[list[float]], list[list[list[float]]]]:
        """Vectors of `texts`, and of every character span `spans[i]` of each text: pooled where
        `pool_spans` gives it, else embedded as a text of its own."""
        vectors, pooled = self.pool_spans(texts, spans)
        return vectors, fill_missing_spans(self.embed, texts, spans, pooled)


class ArrayEmbedder(Embedder):
    """An in-process model that computes all its vectors as one numpy array: `embed` is that
    array as lists, and bulk paths (ingest, brute-force similarity) take the array itself."""

    @abstractmethod
    def embed_array(self, texts: Sequence[str]) -> Any:
        """Vectors of `texts` as one float32 array, shape (len(texts), dimension)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        result: list[list[float]] = self.embed_array(texts).tolist()
        return result


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_ALIASES = frozenset({MINILM_NAME.lower(), "all-minilm-l6-v2"})
_OFFLINE_HINT = "download it once with internet access (it is cached), or pass the path of a local model folder"


def _normalise(vector: Sequence[float]) -> list[float]:
    """L2-normalised copy in pure Python, so remote embedders need neither numpy nor torch."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [float(x) / norm for x in vector] if norm > 0 else [float(x) for x in vector]


def pool_tokens(
    matrix: Any, offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]], normalize: bool = True
) -> tuple[list[float], list[list[float] | None]]:
    """A text's vector (the mean of its token vectors) and each character span's (the mean of
    the tokens inside it), from one pass of a mean-pooling model. None marks a span with no token
    inside (cut off by the model's input limit): the caller embeds it on its own."""
    import numpy as np

    starts = np.asarray([a for a, _ in offsets])
    ends = np.asarray([b for _, b in offsets])
    real = ends > starts  # special tokens map to (0, 0)
    pooled: list[list[float] | None] = []
    for a, b in spans:
        inside = real & (starts < b) & (ends > a)
        pooled.append(unit(matrix[inside].mean(axis=0), normalize) if inside.any() else None)
    return unit(matrix.mean(axis=0), normalize), pooled


def fill_missing_spans(
    embed: Callable[[Sequence[str]], list[list[float]]],
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    pooled: list[list[list[float] | None]],
) -> list[list[list[float]]]:
    """`pool_tokens`' None spans, embedded as texts of their own (each distinct text once)."""
    missing = [(i, j) for i, row in enumerate(pooled) for j, v in enumerate(row) if v is None]
    if missing:
        words = [texts[i][spans[i][j][0] : spans[i][j][1]] for i, j in missing]
        distinct = list(dict.fromkeys(words))
        alone = dict(zip(distinct, embed(distinct), strict=True))
        for (i, j), word in zip(missing, words, strict=True):
            pooled[i][j] = alone[word]
    return [[v for v in row if v is not None] for row in pooled]


def unit(vector: Any, normalize: bool = True) -> list[float]:
    """A numpy vector as float32 values, L2-normalised unless `normalize` is False."""
    import numpy as np

    norm = float(np.linalg.norm(vector))
    out: list[float] = (vector / norm if normalize and norm > 0 else vector).astype(np.float32).tolist()
    return out


def _hf_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connect.

    Both sentence-transformers and fastembed retry a failed download for over a minute with
    growing sleeps; offline that is a minute of silence before a useless error. One short
    connect tells us first. Behind a proxy a direct connect proves nothing, so we then assume
    the hub is reachable and let the library try.
    """
    if any(os.environ.get(var) for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    parsed = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (80 if parsed.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _chunks(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    size = max(1, size)
    return [texts[i : i + size] for i in range(0, len(texts), size)]


# --------------------------------------------------------------------------------------------
# sentence-transformers (torch)
# --------------------------------------------------------------------------------------------

_MODELS: dict[tuple[str, ...], Any] = {}
_MODELS_LOCK = threading.Lock()


def _load_once(key: tuple[str, ...], load: Callable[[], Any]) -> Any:
    """One loaded model per key and process: loading costs seconds and the weights hundreds of MB."""
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _MODELS[key] = load()
    return model
