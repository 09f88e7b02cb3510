"""Linking names to symbols: which module an import names, which class a base is, which function
a call reaches, across every repository of the knowledge base.

Resolution reads only what the graph holds (symbols and their raw refs), so an edge into a module
changed later is found again without parsing its callers. A name resolves, in order, through:
`self`/`cls` (the enclosing class and its bases), `super()` (the bases), functions nested in the
enclosing functions, the module's own (or its package's) top-level symbols, the module's imports
(longest alias first: `np.linalg` before `np`), then a fully dotted name. A module is found by the
longest dotted prefix of a name that is a module's name, preferring the same repository, else
any: that is how an import reaches another ingested repository. A class called is a call to its
constructor (`__init__`, `constructor`). What resolves to nothing is dropped as an edge and
stays in the caller's `calls` list as written: an attribute of unknown type (`self.store.search`),
a local variable's method, a library outside the graph. Guessing by bare method name would link
every `.run()` to every `run`, and an agent reading CALLS must be able to trust each edge.

Rust paths are read as dotted names (`crate::store::Store` is `crate.store.Store`). Java needs two
rules of its own, as a Java module is one class's file: a name reaching a Java module reaches its
class (`com.shop.Order` is the class `Order`), and a name nothing else binds is looked up among
the top-level classes of the module's package, which Java code uses without importing them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from evigraph.code_records import CodeEdge, CodeSymbol, EdgeKind

_MAX_DEPTH = 12
"""Re-exports and base classes followed at most this deep: a cycle or a pathological chain ends."""
_CONSTRUCTORS = ("__init__", "constructor")
"""A constructor's name; one named as its class (Java) is found too."""

Part = tuple[str, bool]
"""One component of a dotted name, and whether it was called (`Retriever()` in `Retriever().search`)."""


def _parts(ref: str) -> list[Part]:
    return [(p.removesuffix("()"), p.endswith("()")) for p in _dotted(ref).split(".") if p]


def _dotted(name: str) -> str:
    return name.replace("::", ".")


class Resolver:
    """Every symbol of the knowledge base, indexed for the look-ups above."""

    def __init__(self, symbols: Iterable[CodeSymbol]) -> None:
        self.by_id: dict[str, CodeSymbol] = {}
        self.modules: dict[str, list[CodeSymbol]] = defaultdict(list)
        self.members: dict[tuple[str, str], dict[str, CodeSymbol]] = defaultdict(dict)
        self.children: dict[str, dict[str, CodeSymbol]] = defaultdict(dict)
        self.aliases: dict[str, dict[str, str]] = {}
        self.packages: dict[str, list[CodeSymbol]] = defaultdict(list)
        """A Java package's name -> its modules."""
        for s in symbols:
            self.by_id[s.id] = s
            if s.kind == "Module":
                self.modules[_dotted(s.name)].append(s)
                if s.language == "java":
                    self.packages[s.name.rpartition(".")[0]].append(s)
                self.aliases[s.id] = dict(zip(s.aliases, s.refs, strict=False))
            else:
                self.members[(s.repo, s.module)].setdefault(s.qualname, s)
                self.children[s.parent].setdefault(s.name, s)
        self._bases: dict[str, list[CodeSymbol]] = {}

    # -- edges -----------------------------------------------------------------------------------

    def edges(self, kinds: Sequence[EdgeKind] = ("IMPORTS", "INHERITS", "CALLS")) -> set[CodeEdge]:
        found: set[CodeEdge] = set()
        for s in self.by_id.values():
            if s.kind == "Module" and "IMPORTS" in kinds:
                for target in dict.fromkeys(s.refs):
                    found.update(
                        CodeEdge(kind="IMPORTS", source=s.id, target=m.id)
                        for m in self.modules_named(target, s.repo)
                        if m.module != s.module
                    )
            elif s.kind == "Class" and "INHERITS" in kinds:
                found.update(CodeEdge(kind="INHERITS", source=s.id, target=b.id) for b in self.bases(s))
            elif s.kind == "Function" and "CALLS" in kinds:
                for ref in s.refs:
                    callee = self.callee(s, ref)
                    if callee is not None:
                        found.add(CodeEdge(kind="CALLS", source=s.id, target=callee.id))
        return found

    def modules_named(self, target: str, repo: str) -> list[CodeSymbol]:
        """The modules an import of `target` reaches: its longest dotted prefix naming a module
        (all files of a Go package), in `repo` when it has one, else in any repository."""
        names = _dotted(target).split(".")
        for i in range(len(names), 0, -1):
            found = self.modules.get(".".join(names[:i]))
            if found:
                own = [m for m in found if m.repo == repo]
                return own or found
        return []

    def bases(self, cls: CodeSymbol) -> list[CodeSymbol]:
        if cls.id not in self._bases:
            self._bases[cls.id] = []  # a class inheriting from itself through a cycle stops here
            module = self._module_of(cls)
            found = [self.name(cls, module, _parts(ref)) for ref in cls.refs] if module else []
            self._bases[cls.id] = [b for b in found if b is not None and b.kind == "Class" and b.id != cls.id]
        return self._bases[cls.id]

    def callee(self, fn: CodeSymbol, ref: str) -> CodeSymbol | None:
        module = self._module_of(fn)
        if module is None:
            return None
        found = self.name(fn, module, _parts(ref))
        if found is not None and found.kind == "Class":
            names = (*_CONSTRUCTORS, found.name)
            found = next((m for c in names if (m := self.member(found, c)) is not None), None)
        return found if found is not None and found.kind == "Function" else None

    # -- look-ups ----------------------------------------------------------------------------------

    def name(self, scope: CodeSymbol, module: CodeSymbol, parts: list[Part]) -> CodeSymbol | None:
        """What the dotted name `parts`, written inside `scope`, refers to."""
        if not parts:
            return None
        head = parts[0][0]
        cls = self._enclosing_class(scope)
        if head in ("self", "cls", "this") and cls is not None:
            return self.attributes(cls, parts[1:])
        if head == "super" and parts[0][1] and cls is not None:
            for base in self.bases(cls):
                if (found := self.attributes(base, parts[1:])) is not None:
                    return found
            return None
        local = self._local(scope, module, head)
        if local is not None:
            return self.attributes(local, parts[1:]) if local.id != scope.id or len(parts) == 1 else None
        found = self._imported(module, parts, 0)
        if found is None and module.language == "java":
            return self._in_package(module, parts)
        return found

    def _in_package(self, module: CodeSymbol, parts: list[Part]) -> CodeSymbol | None:
        """A Java name without import: a top-level class of the module's package, in any of its files."""
        siblings = self.packages.get(module.name.rpartition(".")[0], [])
        for sibling in sorted(siblings, key=lambda m: m.repo != module.repo):
            found = self.members[(sibling.repo, sibling.module)].get(parts[0][0])
            if found is not None and found.kind == "Class":
                return self.attributes(found, parts[1:])
        return None

    def _imported(self, module: CodeSymbol, parts: list[Part], depth: int) -> CodeSymbol | None:
        aliases = self.aliases.get(module.id, {})
        for k in range(len(parts), 0, -1):
            key = ".".join(p for p, _ in parts[:k])
            if key in aliases and not any(called for _, called in parts[: k - 1]):
                target = _parts(aliases[key])
                if target:
                    target[-1] = (target[-1][0], parts[k - 1][1])
                return self.dotted(target + parts[k:], module.repo, depth + 1)
        return self.dotted(parts, module.repo, depth + 1)

    def dotted(self, parts: list[Part], repo: str, depth: int = 0) -> CodeSymbol | None:
        """A fully dotted name: the longest prefix naming a module, then members and attributes."""
        if depth > _MAX_DEPTH:
            return None
        names = [p for p, _ in parts]
        for i in range(len(parts), 0, -1):
            modules = self.modules.get(".".join(names[:i]))
            if not modules:
                continue
            module = next((m for m in modules if m.repo == repo), modules[0])
            if module.language == "java":  # the module is its class's file: go on from the class
                cls = self.members[(module.repo, module.module)].get(names[i - 1])
                if cls is not None:
                    return self.attributes(cls, parts[i:])
            if i == len(parts):
                return module
            head = parts[i][0]
            member = self.members[(module.repo, module.module)].get(head)
            if member is not None:
                return self.attributes(member, parts[i + 1 :])
            for m in modules:  # re-exported: `from .core import X` in a package's __init__
                if head in self.aliases.get(m.id, {}):
                    return self._imported(m, parts[i:], depth)
            return None
        return None

    def attributes(self, symbol: CodeSymbol, parts: list[Part]) -> CodeSymbol | None:
        current: CodeSymbol | None = symbol
        for name, _ in parts:
            if current is None or current.kind == "Function":
                return None  # a function's result or attribute: its type is not known
            if current.kind == "Class":
                current = self.member(current, name)
            else:
                current = self.members[(current.repo, current.module)].get(name)
        return current

    def member(self, cls: CodeSymbol, name: str, depth: int = 0) -> CodeSymbol | None:
        """A method (or nested class) of `cls`, else of its bases, nearest first."""
        found = self.members[(cls.repo, cls.module)].get(f"{cls.qualname}.{name}")
        if found is not None or depth > _MAX_DEPTH:
            return found
        for base in self.bases(cls):
            if (found := self.member(base, name, depth + 1)) is not None:
                return found
        return None

    def _local(self, scope: CodeSymbol, module: CodeSymbol, name: str) -> CodeSymbol | None:
        """`name` defined in an enclosing function (nested defs), else at the top of the module or package."""
        current: CodeSymbol | None = scope
        while current is not None and current.kind != "Module":
            if current.kind == "Function" and (found := self.children[current.id].get(name)) is not None:
                return found
            current = self.by_id.get(current.parent)
        return self.members[(module.repo, module.module)].get(name)

    def _enclosing_class(self, scope: CodeSymbol) -> CodeSymbol | None:
        current = self.by_id.get(scope.parent) if scope.kind != "Class" else scope
        while current is not None and current.kind != "Module":
            if current.kind == "Class":
                return current
            current = self.by_id.get(current.parent)
        if scope.kind == "Function" and "." in scope.qualname:  # a Go method of a type in another file
            owner = self.members[(scope.repo, scope.module)].get(scope.qualname.rsplit(".", 1)[0])
            return owner if owner is not None and owner.kind == "Class" else None
        return None

    def _module_of(self, symbol: CodeSymbol) -> CodeSymbol | None:
        current: CodeSymbol | None = symbol
        while current is not None and current.kind != "Module":
            current = self.by_id.get(current.parent)
        return current
