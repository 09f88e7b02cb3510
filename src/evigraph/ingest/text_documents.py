"""Documents given as text rather than read by a loader, and the check every document passes
before the engine sees it."""

from __future__ import annotations

from evigraph.errors import InputError
from evigraph.models import LoadedDocument
from evigraph.surrogates import escaped, surrogate_at


def unstorable(doc: LoadedDocument) -> str | None:
    """Why the store cannot hold `doc` (text UTF-8 cannot encode), or None.

    Loaders decode strictly, but a custom loader or `text=` can still hand over a lone surrogate
    (from a JSON escape or a non-UTF-8 file name); the engine would fail the whole batch on it.
    """
    fields = {"key": doc.key, "title": doc.title, "path": doc.path or "", "text": doc.text}
    fields.update({f"metadata {name!r}": value for name, value in doc.metadata.items()})
    fields.update({f"metadata name {name!r}": name for name in doc.metadata})
    for name, value in fields.items():
        if (at := surrogate_at(value)) is not None:
            return (
                f"the document's {escaped(name)} has a character that is not valid Unicode (a lone surrogate at "
                f"offset {at}); fix the source's encoding or its escapes"
            )
    return None


def text_document(text: str, key: str, title: str | None = None) -> LoadedDocument:
    """A document given as text, which skips the loader."""
    if not key.strip():
        raise InputError("a text document needs a key", hint="pass key='my-note'")
    if not text.strip():
        raise InputError(f"the text for {key!r} is empty", hint="pass the document's text")
    return LoadedDocument(key=key, title=title or key, path=None, text=text, loader="text")
