"""The names an offline extractor found in a passage, before typing, as the store keeps them.

Typing (`entity_types.type_hits`) judges every name by cues read across the documents typed
together, so a name's label and whether it is junk depend on which documents shared its batch:
the Starlette docs ingested file by file gave 515 entities, all at once 484, with 45 (id, label)
pairs only in the first. Each passage therefore keeps what the extractor found before typing
(the spans and the model's labels), and `finalize` types the whole knowledge base again from
those (`ingest/retyping.py`): the graph is then a function of the documents it holds, not of the
order they came in. The spaCy model does not run again, which is most of the extraction's cost.

Stored as compact JSON, `[[start, end, label], ...]`, one text a passage: the name itself is the
passage's own text between the offsets, so it is not repeated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from evigraph.ingest.extraction.cooccurrence import Hit


def encode_hits(hits: Sequence[Hit]) -> str:
    """`hits` as the text a passage keeps; `[]` says "found nothing", not "not recorded"."""
    return json.dumps([[h.start, h.end, h.label] for h in hits], ensure_ascii=False, separators=(",", ":"))


def decode_hits(text: str, encoded: str) -> list[Hit]:
    """The hits `encode_hits` wrote for the passage `text`, names read back from the text.

    A span outside the text (a passage changed without its hits, which a version write never
    does) is dropped rather than raising: typing runs at finalize over every passage, and one
    stale row must not stop it.
    """
    out: list[Hit] = []
    for start, end, label in json.loads(encoded):
        if 0 <= start < end <= len(text):
            out.append(Hit(int(start), int(end), text[start:end], str(label)))
    return out
