"""Every third-party module our code imports comes from a distribution the project declares (a
module that only arrives as another package's dependency can vanish with that package's next
release)."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported() -> dict[str, str]:
    """Top-level third-party modules imported anywhere in the package, with one file importing each."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "iwr_bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "iwr_bench":
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = [
        *project["dependencies"],
        *(d for extra in project["optional-dependencies"].values() for d in extra),
    ]
    return {_norm(re.split(r"[\[=<>;!~ ]", spec, maxsplit=1)[0]) for spec in specs}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_module_is_declared() -> None:
    declared = _declared()
    providers = metadata.packages_distributions()
    missing = {
        module: (where, providers.get(module, []))
        for module, where in _imported().items()
        if not any(_norm(d) in declared for d in providers.get(module, []))
    }
    assert not missing, (
        f"imported but not declared in pyproject.toml (module: (file, distributions)): {missing}"
    )
