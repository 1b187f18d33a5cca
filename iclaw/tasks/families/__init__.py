"""The task families, one module each. FAMILIES maps a family's name to its Family object, shell first."""

from __future__ import annotations

from iclaw.tasks.families import (
    cmd_typo,
    file_typo,
    flag_typo,
    listed_file,
    mkdir_exists,
    mkdir_outcome,
    pipe,
    py_attr,
    py_file_typo,
    py_indent,
    py_listed_file,
    py_name,
    py_syntax,
    py_type,
    py_wrong_ext,
    py_wrong_file,
    quote,
    wrong_ext,
    wrong_file,
)
from iclaw.tasks.family import Family

_MODULES = [
    cmd_typo,
    flag_typo,
    quote,
    pipe,
    file_typo,
    listed_file,
    wrong_file,
    wrong_ext,
    mkdir_exists,
    mkdir_outcome,
    py_syntax,
    py_name,
    py_indent,
    py_type,
    py_attr,
    py_file_typo,
    py_listed_file,
    py_wrong_file,
    py_wrong_ext,
]
FAMILIES: dict[str, Family] = {m.FAMILY.name: m.FAMILY for m in _MODULES}
