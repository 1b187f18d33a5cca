"""The task families, one module each (a module-level FAMILY). FAMILIES maps a family's name to its Family
object, shell families first, each kind in module-name order; a new module in this package is picked up
without being listed anywhere."""

from __future__ import annotations

import importlib
import pkgutil

from iclaw.tasks.family import Family

_MODULES = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]
_ALL = sorted((m.FAMILY for m in _MODULES if hasattr(m, "FAMILY")), key=lambda f: (f.kind != "bash", f.name))
FAMILIES: dict[str, Family] = {f.name: f for f in _ALL}
