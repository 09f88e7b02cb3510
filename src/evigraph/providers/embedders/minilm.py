"""all-MiniLM-L6-v2 shipped inside evigraph: semantic search with no torch.

The weights (float16, 45 MB) are package data, so the model works offline from the first run
and nothing is ever downloaded; the tokenizer is Hugging Face's `tokenizers` (Rust, 12 MB).
Two runtimes give the same vectors: ONNX Runtime (the default when installed, as the `embed`
extra does) over a graph derived once from the weights and cached per user, and a numpy
forward pass, the fallback without it. Both match the sentence-transformers model (cosine
>= 0.999 per text, checked by the tests), so knowledge bases embedded either way mix.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.providers.embedders.base import (
    MINILM_NAME,
    ArrayEmbedder,
    _load_once,
    pool_tokens,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MODEL_DIR = Path(__file__).resolve().parent / "models" / "all-MiniLM-L6-v2"
Runtime = Literal["auto", "onnx", "numpy"]
_ONNX_PACKAGES = ("onnxruntime", "onnx")


def onnx_available() -> bool:
    """Whether ONNX Runtime and onnx (the graph builder) are installed, without importing them."""
    return all(importlib.util.find_spec(name) is not None for name in _ONNX_PACKAGES)


class _Model:
    """The tokenizer and encoder, loaded together once per process."""

    def __init__(self, folder: Path, runtime: Literal["onnx", "numpy"], cache_dir: Path | None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigurationError("the tokenizers package is not installed", install_hint("embed")) from exc
        if runtime == "onnx" and not onnx_available():
            missing = [n for n in _ONNX_PACKAGES if importlib.util.find_spec(n) is None]
            raise ConfigurationError(
                f"the onnx runtime of the minilm embedder needs {' and '.join(missing)}, not installed",
                f"{install_hint('embed-onnx')} (or use runtime='numpy', slower, no extra package)",
            )
        from evigraph.providers.embedders.bert_numpy import BertEncoder, read_safetensors

        self.runtime = runtime
        try:
            config = json.loads((folder / "config.json").read_text())
            self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            weights = folder / "model.safetensors"
            if runtime == "onnx":
                from evigraph.providers.embedders.bert_ort import OrtEncoder

                self.encoder: Any = OrtEncoder(weights, config, cache_dir)
            else:
                self.encoder = BertEncoder(read_safetensors(weights), config["heads"], config["eps"])
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigurationError(
                f"the MiniLM model files in {folder} cannot be read: {exc}",
                "reinstall evigraph (the weights are part of the package)",
            ) from exc
        self.max_tokens = int(config["max_tokens"])
        self.dimension = int(config["dimension"])
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)


class MiniLMEmbedder(ArrayEmbedder):
    """The default local embedder: all-MiniLM-L6-v2, 384 dimensions, mean-pooled, normalised.

    Texts are sorted by token count and batched so each batch pads to its own longest text:
    a corpus mixes names of three tokens with passages of two hundred, and padding every
    batch to the longest costs quadratic attention on tokens that are thrown away.

    `runtime`: "onnx" (ONNX Runtime), "numpy", or "auto" (onnx when installed, else numpy).
    `cache_dir` holds the derived ONNX model (default $XDG_CACHE_HOME/evigraph).
    """

    name = MINILM_NAME
    dimension = 384

    def __init__(
        self,
        batch_size: int = 32,
        folder: Path | None = None,
        runtime: Runtime = "auto",
        cache_dir: Path | None = None,
    ) -> None:
        if runtime not in ("auto", "onnx", "numpy"):
            raise ConfigurationError(f"unknown minilm runtime {runtime!r}", "use 'auto', 'onnx' or 'numpy'")
        if batch_size < 1:  # a batch of none would embed nothing and fail on its first text
            raise ConfigurationError(f"minilm batch_size must be at least 1, not {batch_size}", "use batch_size=32")
        self.batch_size = batch_size
        self._folder = folder or MODEL_DIR
        self.runtime: Literal["onnx", "numpy"] = (
            runtime if runtime != "auto" else ("onnx" if onnx_available() else "numpy")
        )
        self._cache_dir = cache_dir

    @property
    def spec(self) -> str:
        return "minilm"

    def _model(self) -> _Model:
        key = ("minilm", self.runtime, str(self._folder), str(self._cache_dir or ""))
        model: _Model = _load_once(key, lambda: _Model(self._folder, self.runtime, self._cache_dir))
        return model

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._model().tokenizer.encode_batch(list(texts))]

    def embed_array(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Normalised vectors as one float32 array, for the bulk paths that never need lists."""
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for rows, tokens, mask in self._batches(texts):
            pooled = (tokens * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            out[rows] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def pool_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        """One pass per text: the text's vector pools all its tokens, each span's the tokens
        inside the span (read in the text's context); None for a span past the input limit."""
        if not texts:
            return [], []
        vectors: list[list[float]] = [[] for _ in texts]
        pooled: list[list[list[float] | None]] = [[] for _ in texts]
        for rows, tokens, mask, offsets in self._batches(texts, with_offsets=True):
            for k, i in enumerate(rows):
                vectors[i], pooled[i] = pool_tokens(tokens[k, : int(mask[k].sum())], offsets[k], spans[i])
        return vectors, pooled

    def _batches(self, texts: Sequence[str], with_offsets: bool = False) -> Any:
        """(rows, token vectors, mask[, offsets]) per batch of texts of similar token count."""
        import numpy as np

        model = self._model()
        encodings = model.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for k, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[k, :n] = encodings[i].ids
                mask[k, :n] = 1
            tokens = model.encoder(ids, mask)
            if with_offsets:
                yield rows, tokens, mask, [encodings[i].offsets for i in rows]
            else:
                yield rows, tokens, mask
