"""fastembed (ONNX, no torch) models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.providers.embedders.base import Embedder, _hf_offline, _hub_reachable, _load_once, _normalise


class FastEmbedEmbedder(Embedder):
    """A fastembed model run on ONNX Runtime: a light install with no torch.

    fastembed downloads its model on first use into `cache_dir` (fastembed's default cache
    when None). `model_path` loads an already downloaded model folder instead, which is the
    way to use it on a machine with no internet.
    """

    def __init__(
        self,
        model: str = "BAAI/bge-small-en-v1.5",
        cache_dir: str | None = None,
        batch_size: int = 64,
        model_path: str | None = None,
    ) -> None:
        self.model = model
        self.name = model
        self.cache_dir = cache_dir
        self.model_path = model_path
        self.batch_size = batch_size
        self._dimension: int | None = None

    @property
    def spec(self) -> str | None:
        # A model loaded from a folder is named by the folder, which the spec cannot carry.
        return None if self.model_path else f"fastembed:{self.model}"

    @property
    def dimension(self) -> int:
        """fastembed knows each supported model's size without loading it."""
        if self._dimension is None:
            text_embedding = _fastembed_class()
            try:
                self._dimension = int(text_embedding.get_embedding_size(self.model))
            except ValueError as exc:
                raise _unsupported_fastembed_model(self.model) from exc
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = value

    def _load(self) -> Any:
        key = ("fastembed", self.model, self.cache_dir or "", self.model_path or "")
        return _load_once(key, self._load_uncached)

    def _load_uncached(self) -> Any:
        text_embedding = _fastembed_class()
        supported = {str(m["model"]).lower() for m in text_embedding.list_supported_models()}
        if self.model.lower() not in supported:
            raise _unsupported_fastembed_model(self.model)
        kwargs: dict[str, Any] = {}
        if self.cache_dir:
            kwargs["cache_dir"] = self.cache_dir
        if self.model_path:
            kwargs["specific_model_path"] = self.model_path
        try:
            # The cache first: offline, fastembed's own retries sleep ~40 s before failing.
            return text_embedding(self.model, local_files_only=True, **kwargs)
        except Exception as exc:
            cached_error: Exception = exc
        if self.model_path:
            raise ConfigurationError(
                f"cannot load fastembed model {self.model!r} from {self.model_path}: {cached_error}",
                "point model_path to the folder fastembed downloaded for this model",
            ) from cached_error
        if _hf_offline() or not _hub_reachable():
            raise ConfigurationError(
                f"fastembed model {self.model!r} is not downloaded and the hub is unreachable",
                "it needs internet once to download (then it is cached), or a local model folder as model_path",
            ) from cached_error
        try:
            return text_embedding(self.model, **kwargs)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot download fastembed model {self.model!r}: {exc}",
                "it needs internet once to download (then it is cached), or a local model folder as model_path",
            ) from exc

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.embed(list(texts), batch_size=self.batch_size)
        return [_normalise([float(x) for x in vector]) for vector in vectors]

    def embed_query(self, text: str) -> list[float]:
        """BGE-style models prefix queries with an instruction; fastembed knows which do."""
        model = self._load()
        vector = next(iter(model.query_embed([text])))
        return _normalise([float(x) for x in vector])


def _fastembed_class() -> Any:
    try:
        from fastembed import TextEmbedding  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ConfigurationError("fastembed is not installed", install_hint("embed-fastembed")) from exc
    return TextEmbedding


def _unsupported_fastembed_model(model: str) -> ConfigurationError:
    return ConfigurationError(
        f"{model!r} is not a fastembed text embedding model",
        "see fastembed.TextEmbedding.list_supported_models(), or use sentence-transformers:<model>",
    )


# --------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP endpoints
# --------------------------------------------------------------------------------------------
