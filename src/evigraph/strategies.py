"""One registry shape for every strategy kind chosen by name.

Loaders, chunkers, extractors, resolvers and embedders (and the LLM providers to come) are each
picked by a short name in the CLI, in environment variables and in an agent's ingest plan. Each
kind keeps one `Registry` where its strategies are defined, and everything that lists the names
(by-name lookups and their error hints, CLI choices, plan costs and limits, tool input enums)
reads it, so a new entry shows up everywhere by itself instead of in five hand-kept lists.

Registries are imported by `evigraph --help`, so they hold only names, texts and factories:
a factory imports its strategy's module when it is called (`evigraph.lazy.lazy_callable`).

An entry may take an argument (`sentence-transformers:<model or folder>`): the spec is split at
its first colon, the name before it is matched case-insensitively and the rest is passed to the
factory as is (model names are case-sensitive and may hold colons themselves).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from evigraph.errors import ConfigurationError

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Entry(Generic[T]):
    """One named strategy: how to build it and what it is and costs, in words an agent reads."""

    name: str
    factory: Callable[..., T]
    """Called with the spec's argument first when `argument` is set, then the caller's options."""
    description: str
    argument: str | None = None
    """What follows `name:` in a spec (e.g. "model"); None when the name stands alone."""
    aliases: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    """File extensions the entry claims (loaders), lower case with the dot."""
    cheap: bool = True
    """Local and quick, so an agent may pick it under the default plan limits."""
    check: Callable[[], None] | None = None
    """Raises `ConfigurationError` naming the fix when the entry cannot run here (a missing model
    or package), so asking for it fails at once rather than halfway through an ingest."""

    @property
    def form(self) -> str:
        """How a user spells the entry: `name`, or `name:<argument>`."""
        return f"{self.name}:<{self.argument}>" if self.argument else self.name

    def available(self) -> bool:
        """Whether `check` passes on this machine (always, for entries without one)."""
        if self.check is None:
            return True
        try:
            self.check()
        except ConfigurationError:
            return False
        return True


class Registry(Generic[T]):
    """The named strategies of one kind ("chunker", "embedder"...), in registration order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self._names: dict[str, str] = {}  # lower-case name or alias -> entry name

    def register(
        self,
        name: str,
        factory: Callable[..., T],
        *,
        description: str,
        argument: str | None = None,
        aliases: tuple[str, ...] = (),
        extensions: tuple[str, ...] = (),
        cheap: bool = True,
        check: Callable[[], None] | None = None,
    ) -> Entry[T]:
        """Adds an entry; a name or alias already taken is refused, so no entry shadows another."""
        entry = Entry(
            name=name,
            factory=factory,
            description=description,
            argument=argument,
            aliases=aliases,
            extensions=tuple(_extension(e) for e in extensions),
            cheap=cheap,
            check=check,
        )
        for spelling in (name, *aliases):
            if not spelling or spelling != spelling.lower() or any(c in spelling for c in ": \t"):
                raise ConfigurationError(
                    f"invalid {self.kind} name {spelling!r}", hint="use a lower-case name without spaces or ':'"
                )
            if spelling in self._names:
                raise ConfigurationError(
                    f"{self.kind} {spelling!r} is already registered", hint=f"pick a name other than: {self.choices}"
                )
        self._entries[name] = entry
        self._names.update(dict.fromkeys((name, *aliases), name))
        return entry

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(tuple(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._names

    def names(self) -> tuple[str, ...]:
        """Entry names (not aliases), as CLI choices and schema enums list them."""
        return tuple(self._entries)

    def cheap_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self._entries.values() if e.cheap)

    def forms(self) -> tuple[str, ...]:
        """How each entry is spelt, arguments included: `none, minilm, openai:<model>`."""
        return tuple(e.form for e in self._entries.values())

    @property
    def choices(self) -> str:
        return ", ".join(self.forms())

    def descriptions(self) -> dict[str, str]:
        """Name -> what it is and what it costs, for plan options and help texts."""
        return {e.name: e.description for e in self._entries.values()}

    def get(self, name: str) -> Entry[T]:
        """The entry called `name` (or one of its aliases); an unknown name is refused with the choices."""
        key = self._names.get(name.strip().lower())
        if key is None:
            raise self.unknown(name)
        return self._entries[key]

    def for_extension(self, extension: str) -> Entry[T] | None:
        """The first entry claiming `extension` (".md" or "md", any case), if any."""
        ext = _extension(extension)
        return next((e for e in self._entries.values() if ext in e.extensions), None)

    def extensions(self) -> frozenset[str]:
        return frozenset(ext for e in self._entries.values() for ext in e.extensions)

    def create(self, spec: str, **options: Any) -> T:
        """The strategy `spec` names (`name` or `name:argument`), built with `options`.

        A spec that names no entry, gives an argument to an entry taking none or leaves out the
        argument of one that needs it is refused with every form listed in the hint.
        """
        head, sep, argument = spec.strip().partition(":")
        key = self._names.get(head.strip().lower())
        argument = argument.strip()
        if key is None:
            raise self.unknown(spec)
        entry = self._entries[key]
        if (entry.argument is None) == bool(sep) or (sep and not argument):
            raise self.unknown(spec)
        if entry.check is not None:
            entry.check()
        return entry.factory(argument, **options) if entry.argument else entry.factory(**options)

    def unknown(self, spec: str) -> ConfigurationError:
        return ConfigurationError(f"unknown {self.kind} {spec!r}", hint=f"use one of: {self.choices}")

    def enum_schema(self) -> RegisteredName:
        """Pydantic metadata for a `str` field naming an entry: listed as the JSON Schema `enum`, and enforced."""
        return RegisteredName(self)


@dataclass(frozen=True)
class RegisteredName:
    """Makes a `str` field accept exactly the registry's entry names, and says so in its JSON Schema.

    Validation matches the schema to the letter (names only, no aliases, no case folding), so an
    agent's client and the toolkit never disagree on an input. Both read the registry when they
    run, not when the model is defined, so entries registered later (plugins) are accepted and
    listed too; pydantic is imported only when it calls back, keeping registries light.
    """

    registry: Registry[Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, core_schema: Any, handler: Callable[[Any], dict[str, Any]]
    ) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["enum"] = list(self.registry.names())
        return schema

    def _check(self, value: str) -> str:
        if value not in self.registry.names():
            raise ValueError(f"unknown {self.registry.kind} {value!r}; use one of: {', '.join(self.registry.names())}")
        return value


def _extension(ext: str) -> str:
    ext = ext.strip().lower()
    return ext if ext.startswith(".") else f".{ext}"
