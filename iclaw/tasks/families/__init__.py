"""The task families: a module each (a module-level FAMILY), or one module for the families that share a
fixture builder (a module-level tuple FAMILIES); what several modules share is in _shared.py. FAMILIES maps
a family's name to its Family object, shell families first, each kind in name order; a new module in this
package is picked up without being listed anywhere."""

from __future__ import annotations

import importlib
import pkgutil

from iclaw.tasks.family import Family

_MODULES = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]
_ALL = sorted(
    (f for m in _MODULES for f in ([m.FAMILY] if hasattr(m, "FAMILY") else getattr(m, "FAMILIES", ()))),
    key=lambda f: (f.kind != "bash", f.name),
)
FAMILIES: dict[str, Family] = {f.name: f for f in _ALL}
