"""Finding the JSON value in what a model wrote.

JSON mode is not everywhere: older llama.cpp and vLLM builds, some proxies and most models run
without it wrap their JSON in a code fence, a sentence, or a reasoning model's `<think>` block.
The value is taken from wherever it is; a value that is not there is an error that says so.
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.S)
_MAX_CANDIDATES = 32
"""Starts of a JSON value tried in prose; past that the text is not JSON with some words around it."""


def parse_json_text(text: str) -> Any:
    """The JSON value `text` holds: the whole text, a fenced block, or the first object (then
    array) inside prose. Raises `json.JSONDecodeError` for the whole text when none is found, as
    that error says best what is wrong with an answer that was meant to be JSON."""
    cleaned = _THINK.sub("", text).strip()
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError as exc:
        whole_error = exc
    for fenced in _FENCE.finditer(cleaned):
        try:
            return json.loads(fenced.group(1).strip())
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for opener in "{[":  # an object first: "the [2] entities: {...}" holds a list that is not the answer
        start = cleaned.find(opener)
        tried = 0
        while start >= 0 and tried < _MAX_CANDIDATES:
            try:
                value, _ = decoder.raw_decode(cleaned, start)
            except json.JSONDecodeError:
                start = cleaned.find(opener, start + 1)
                tried += 1
                continue
            return value
    raise whole_error
