"""Import on first use, so `import evigraph` and `evigraph --help` stay fast.

A package that re-exports its classes loads every module behind them (pydantic, the PDF reader,
NLP models) as soon as anyone imports one light name from it, such as its strategy registry for
the CLI's choices. These helpers let a package name its classes without importing them yet.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `exports[name]` (a module) on first use.

    The value is then stored on the package, so the hook runs once per name.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def lazy_callable(module: str, name: str) -> Callable[..., Any]:
    """A callable that imports `module` when first called and then calls its `name` with the same arguments."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call
