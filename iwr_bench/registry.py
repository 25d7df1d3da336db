"""Named factories for pluggable roles (generators, grounders, judges, metrics, backends, displays).

A factory is registered under a role and a name with :func:`register`. Building through
:func:`create` (or :func:`build`) returns the object plus a :class:`Spec` (role, name, arguments)
that a run manifest stores, so the same object can be rebuilt later from the manifest alone.

Designs from outside the package arrive in two ways, both before anything is built:

- an installed distribution declares an entry point in the ``iwr_bench.plugins`` group whose value
  is a module; importing it registers its factories (:func:`load_entry_points`);
- a run file's ``plugins = ["module", "path/to/file.py"]`` or ``--plugin`` (:func:`load_plugins`).

:func:`origin_of` says where a design came from (built in, an entry point of a distribution, a
module, or a file with its sha256), which the manifest records.

Example:
    >>> @register("metric", "phash")
    ... def phash_metric(hash_size: int = 16) -> PHashMetric: ...
    >>> metric, spec = create("metric", "phash", hash_size=8)
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from iwr_bench.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])

ENTRY_POINT_GROUP = "iwr_bench.plugins"
"""Entry-point group whose values name modules that register designs when imported."""

_FACTORIES: dict[tuple[str, str], Callable[..., Any]] = {}
_MODULE_ORIGINS: dict[str, Origin] = {}
_LOADED_REFS: dict[str, str] = {}
_ENTRY_POINTS_SEEN: set[tuple[str, str]] = set()

ROLES: dict[str, tuple[str, ...]] = {
    "generator": ("__call__", "name"),
    "grounder": ("__call__",),
    "assertions": ("__call__",),
    "rubric": ("__call__", "name"),
    "replay": ("__call__", "name"),
    "step": ("__call__", "name"),
    "metric": ("__call__", "backend"),
    "backend": ("name", "connect", "describe", "metrics", "open", "replay", "measure", "replays_over"),
    "display": ("__call__", "drive"),
}
"""The roles a design can play (a closed set), each with the members its factory's product must
have: those its Protocol requires (``iwr_bench.plugins`` documents them), ``__call__`` included
for the roles whose product is called (all but ``backend``). Capabilities with a default, such as
a grounder's ``wants_screenshot``, are not required. :func:`build` checks every product, so a
plugin whose factory returns the wrong thing fails at start-up in one line naming it, not in the
middle of a run."""

BUILTIN_MODULES: dict[str, tuple[str, ...]] = {
    "generator": ("iwr_bench.agents.generation", "iwr_bench.agents.generation.pages"),
    "grounder": (
        "iwr_bench.agents.grounding",
        "iwr_bench.agents.grounding_llm",
        "iwr_bench.agents.judge.official_prompts",
    ),
    "assertions": (
        "iwr_bench.agents.judge.assertions",
        "iwr_bench.agents.judge.llm",
        "iwr_bench.agents.judge.official_prompts",
    ),
    "rubric": ("iwr_bench.agents.judge.rubric", "iwr_bench.agents.judge.official_prompts"),
    "replay": ("iwr_bench.agents.judge.replay",),
    "step": ("iwr_bench.agents.judge.agent",),
    "metric": ("iwr_bench.metrics.pair",),
    "backend": ("iwr_bench.engine.backends.designs",),
    "display": ("iwr_bench.engine.progress", "iwr_bench.tui.display"),
}
"""Modules whose import registers the built-in factories of each role (loaded on first lookup)."""

CONTEXT_PARAMETERS: dict[str, str] = {
    "judge_model": "the run's judge model (a pydantic-ai Model; its answers kept in the run store)",
    "votes": "[judge] votes",
    "retries": "[judge] retries",
    "config": "the run's configuration (a RunConfig)",
}
"""Parameters the engine fills from the run (when a factory declares them and no option sets them)."""


def _load_builtins(role: str) -> None:
    for module in BUILTIN_MODULES.get(role, ()):
        importlib.import_module(module)
    if not _ENTRY_POINTS_SEEN:
        load_entry_points()


class Spec(BaseModel):
    """How to rebuild a registered object."""

    role: str
    """Role it plays, e.g. ``generator`` or ``grounder``."""
    name: str
    """Registered name within the role."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments given to the factory (JSON-serialisable)."""


class Origin(BaseModel):
    """Where a design's code came from (what the manifest records to find it again)."""

    kind: Literal["builtin", "entry point", "module", "file"]
    """Built into iwr-bench, an entry point of an installed distribution, a module named by
    ``plugins``/``--plugin``, or a Python file named the same way."""
    module: str
    """Module whose import registers the design."""
    distribution: str | None = None
    """Installed distribution that holds the module, if any."""
    version: str | None = None
    """Its version."""
    entry_point: str | None = None
    """Entry-point name (kind ``entry point``)."""
    path: str | None = None
    """Absolute path of the file (kind ``file``)."""
    sha256: str | None = None
    """Digest of that file when it was loaded."""

    def label(self) -> str:
        """One short phrase: ``builtin``, ``entry point dist==1.0``, ``file /x/y.py``, ``module m``."""
        if self.kind == "entry point":
            return f"entry point {self.distribution}=={self.version}"
        if self.kind == "file":
            return f"file {self.path}"
        if self.kind == "module":
            dist = f" ({self.distribution}=={self.version})" if self.distribution else ""
            return f"module {self.module}{dist}"
        return "builtin"

    def how_to_get(self) -> str:
        """What a user does to make this design available again."""
        if self.kind == "file":
            return f"restore {self.path} or point to a copy with --plugin PATH"
        if self.distribution:
            return (
                f"install it (pip install '{self.distribution}=={self.version}') "
                f"or point to it with --plugin {self.module}"
            )
        return f"make module {self.module} importable or point to its file with --plugin PATH"


class Option(BaseModel):
    """One option of a design, read from its factory's signature."""

    name: str
    """Keyword."""
    annotation: str
    """Type as written in the signature."""
    default: Any = None
    """Default value (None with ``required``)."""
    required: bool = False
    """Whether the option has no default."""


class Design(BaseModel):
    """A registered design: what ``iwr judges list`` shows."""

    role: str
    """Role it plays."""
    name: str
    """Registered name."""
    origin: Origin
    """Where its code came from."""
    options: list[Option]
    """Options a run file may set (``[judge.<role>] options``, ``[backend] options``)."""
    receives: list[str]
    """Run context it is given (``judge_model``, ``votes``, ``retries``, ``config``)."""
    summary: str
    """First line of the factory's docstring."""


def register(role: str, name: str) -> Callable[[F], F]:
    """Decorator registering ``factory`` as ``name`` for ``role``.

    Raises:
        ValueError: an unknown role (:data:`ROLES`), or a name already taken for that role by another
            factory.
    """

    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")

    def decorate(factory: F) -> F:
        key = (role, name)
        existing = _FACTORIES.get(key)
        if existing is not None and existing.__qualname__ != factory.__qualname__:
            raise ValueError(f"{role} {name!r} is already registered by {existing.__qualname__}")
        _FACTORIES[key] = factory
        return factory

    return decorate


def capability(design: object, protocol: type, name: str) -> Any:
    """A capability ``design`` declares (e.g. ``wants_screenshot``), else its role Protocol's default."""
    return getattr(design, name, getattr(protocol, name))


def names(role: str) -> list[str]:
    """Registered names for a role, sorted."""
    _load_builtins(role)
    return sorted(n for r, n in _FACTORIES if r == role)


def roles() -> list[str]:
    """Every role (:data:`ROLES`), sorted."""
    return sorted(ROLES)


def factory_of(role: str, name: str) -> Callable[..., Any]:
    """The factory registered as ``name`` for ``role``.

    Raises:
        UserError: when nothing is registered under that name.
    """
    _load_builtins(role)
    factory = _FACTORIES.get((role, name))
    if factory is None:
        known = ", ".join(names(role)) or "none"
        raise UserError(f"unknown {role} {name!r} (known: {known})")
    return factory


def parameters(role: str, name: str) -> list[str]:
    """Keyword parameters of a design's factory."""
    return list(inspect.signature(factory_of(role, name)).parameters)


def build(
    role: str, name: str, options: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None
) -> tuple[Any, Spec]:
    """Build a design from its options, plus any run ``context`` its factory declares.

    Context values (see :data:`CONTEXT_PARAMETERS`) go only to factories with a parameter of that
    name, and never override an option. The :class:`Spec` records the options alone.

    Raises:
        UserError: one line naming the design: unknown name, an option that does not fit the
            signature, or a value the factory refuses.
    """
    factory = factory_of(role, name)
    opts = dict(options or {})
    accepted = inspect.signature(factory).parameters
    given = {k: v for k, v in (context or {}).items() if k in accepted and k not in opts}
    try:
        inspect.signature(factory).bind(**opts, **given)
    except TypeError as exc:
        raise UserError(f"bad options for {role} {name!r}: {exc}") from exc
    try:
        obj = factory(**opts, **given)
    except (ValidationError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"bad options for {role} {name!r}: {first}") from exc
    check_product(role, name, obj)
    return obj, Spec(role=role, name=name, args=opts)


def check_product(role: str, name: str, obj: object) -> None:
    """Refuse a design's product that cannot play its role (see :data:`ROLES`).

    Raises:
        UserError: one line naming the design, where its code came from, and what it lacks.
    """
    lacks = [member for member in ROLES[role] if not hasattr(obj, member)]
    if lacks:
        raise UserError(
            f"{role} {name!r} ({origin_of(role, name).label()}): its factory returned "
            f"{type(obj).__name__}, which cannot play the {role} role: it has no {', '.join(lacks)}"
        )


def create(role: str, name: str, **args: Any) -> tuple[Any, Spec]:
    """Build the object registered as ``name`` for ``role``.

    Raises:
        UserError: when nothing is registered under that name, or the arguments do not fit.
    """
    return build(role, name, args)


def rebuild(spec: Spec) -> Any:
    """Build again the object a :class:`Spec` describes."""
    obj, _ = create(spec.role, spec.name, **spec.args)
    return obj


# -- plugins -------------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _dist_of(module: str) -> tuple[str | None, str | None]:
    top = module.split(".", 1)[0]
    dists = importlib.metadata.packages_distributions().get(top) or []
    if not dists:
        return None, None
    try:
        return dists[0], importlib.metadata.version(dists[0])
    except importlib.metadata.PackageNotFoundError:
        return dists[0], None


def load_entry_points() -> list[Origin]:
    """Import every module named in the ``iwr_bench.plugins`` entry-point group (new ones only).

    Raises:
        UserError: one line naming the entry point, its distribution and why its import failed.
    """
    _ENTRY_POINTS_SEEN.add(("", ""))  # scanned at least once
    loaded: list[Origin] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = (ep.name, ep.value)
        if key in _ENTRY_POINTS_SEEN:
            continue
        dist = ep.dist.name if ep.dist is not None else None
        version = ep.dist.version if ep.dist is not None else None
        origin = Origin(
            kind="entry point", module=ep.module, distribution=dist, version=version, entry_point=ep.name
        )
        _MODULE_ORIGINS[ep.module] = origin
        try:
            _with_torchvision(lambda: importlib.import_module(ep.module))  # noqa: B023 - called at once
        except Exception as exc:  # any error in foreign code: one line, before any work
            del _MODULE_ORIGINS[ep.module]
            where = f"{dist}=={version}" if dist else "an installed distribution"
            raise UserError(
                f"plugin {ep.name!r} (entry point of {where}): cannot import {ep.module}: {_first_line(exc)}"
            ) from exc
        _ENTRY_POINTS_SEEN.add(key)
        loaded.append(origin)
    return loaded


def is_file_ref(ref: str) -> bool:
    """Whether a plugin reference names a file (``.py`` or a path) rather than a module."""
    return ref.endswith(".py") or "/" in ref or "\\" in ref


def _load_file(ref: str, base: Path | None) -> Origin:
    path = Path(ref).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    path = path.resolve()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"plugin {ref!r}: cannot read {path}: {exc.strerror or exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    module = f"iwr_plugin_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    origin = Origin(kind="file", module=module, path=str(path), sha256=digest)
    if module in sys.modules:
        return _MODULE_ORIGINS.get(module, origin)
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None:
        raise UserError(f"plugin {ref!r}: {path} is not a Python file")
    _MODULE_ORIGINS[module] = origin
    try:
        _with_torchvision(lambda: _exec_file(module, spec))
    except Exception as exc:  # any error in foreign code: one line, before any work
        del _MODULE_ORIGINS[module]
        raise UserError(f"plugin {ref!r}: cannot import {path}: {_first_line(exc)}") from exc
    return origin


def _exec_file(module: str, spec: importlib.machinery.ModuleSpec) -> None:
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[module]
        raise


_T = TypeVar("_T")


def _with_torchvision(load: Callable[[], _T]) -> _T:
    """``load()``; when it fails on torchvision's compiled operators (a CUDA torchvision beside a
    CPU torch), make torchvision importable and load again."""
    try:
        return load()
    except RuntimeError as exc:
        if "torchvision::" not in str(exc):
            raise
    from iwr_bench._torch import import_torchvision

    import_torchvision()
    return load()


def _load_module(ref: str) -> Origin:
    known = _MODULE_ORIGINS.get(ref)
    if known is not None and ref in sys.modules:
        return known
    dist, version = _dist_of(ref)
    origin = Origin(kind="module", module=ref, distribution=dist, version=version)
    try:
        _with_torchvision(lambda: importlib.import_module(ref))
    except ModuleNotFoundError as exc:
        if exc.name and ref.startswith(exc.name):
            raise UserError(
                f"plugin {ref!r}: no module named {exc.name!r} "
                "(install the package that provides it, or give the path of a .py file)"
            ) from exc
        raise UserError(f"plugin {ref!r}: cannot import {ref}: {_first_line(exc)}") from exc
    except Exception as exc:  # any error in foreign code: one line, before any work
        raise UserError(f"plugin {ref!r}: cannot import {ref}: {_first_line(exc)}") from exc
    if not ref.startswith("iwr_bench."):
        _MODULE_ORIGINS[ref] = origin
    return origin


def load_plugins(refs: Iterable[str], base: Path | None = None) -> list[Origin]:
    """Load installed entry points, then each plugin given as a module name or a ``.py`` path.

    Relative file paths are taken from ``base`` (the run file's folder) when given, else the
    current folder. Loading the same plugin again does nothing.

    Raises:
        UserError: one line naming the plugin and why it cannot be loaded.
    """
    load_entry_points()
    origins: list[Origin] = []
    for ref in refs:
        origin = _load_file(ref, base) if is_file_ref(ref) else _load_module(ref)
        _LOADED_REFS[ref] = origin.module
        origins.append(origin)
    return origins


def origin_of(role: str, name: str) -> Origin:
    """Where the design registered as ``name`` for ``role`` came from."""
    return origin_of_module(getattr(factory_of(role, name), "__module__", "") or "")


def origin_of_module(module: str) -> Origin:
    """Where the code of ``module`` came from (a plugin file or module, an entry point, built in)."""
    if module in _MODULE_ORIGINS:
        return _MODULE_ORIGINS[module]
    for known, origin in _MODULE_ORIGINS.items():
        if module.startswith(known + "."):
            return origin
    if module == "iwr_bench" or module.startswith("iwr_bench."):
        return Origin(kind="builtin", module=module)
    dist, version = _dist_of(module)
    return Origin(kind="module", module=module, distribution=dist, version=version)


def _option(param: inspect.Parameter) -> Option:
    annotation = param.annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    if param.annotation is inspect.Parameter.empty:
        text = "any"
    if param.default is inspect.Parameter.empty:
        return Option(name=param.name, annotation=text, required=True)
    return Option(name=param.name, annotation=text, default=param.default)


def describe(role: str, name: str) -> Design:
    """A design's role, origin, options (from the factory signature) and the context it receives."""
    factory = factory_of(role, name)
    options: list[Option] = []
    receives: list[str] = []
    for param in inspect.signature(factory).parameters.values():
        if param.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
            continue
        if param.name in CONTEXT_PARAMETERS and (role != "generator"):
            receives.append(param.name)
            if param.default is inspect.Parameter.empty:
                continue
        options.append(_option(param))
    doc = (inspect.getdoc(factory) or "").strip().splitlines()
    return Design(
        role=role,
        name=name,
        origin=origin_of(role, name),
        options=options,
        receives=receives,
        summary=doc[0] if doc else "",
    )


def designs(role: str | None = None) -> list[Design]:
    """Every usable design (of one role, or all), sorted by role then name."""
    wanted = [role] if role else roles()
    return [describe(r, n) for r in wanted for n in names(r)]


def reload_recorded(recorded: Iterable[str], extra: Iterable[str], designs: Mapping[str, Any]) -> list[str]:
    """Load a resumed run's plugins and check that every design it used is available again.

    ``recorded`` are the run's own ``plugins`` (one that no longer loads is passed over when
    ``extra``, the ``--plugin`` given now, provides its designs); ``designs`` is the manifest's
    record per role, or per ``<label>/<role>`` (``name``, ``module``, ``distribution``,
    ``version``, ``path``, ...).

    Returns:
        The plugins to keep for the run (those that loaded, then ``extra``).

    Raises:
        UserError: one line naming the first missing design, the module it came from and how to
            install it or point to it.
    """
    extra = list(extra)
    load_plugins(extra)
    kept: list[str] = []
    problems: dict[str, str] = {}
    for ref in recorded:
        try:
            load_plugins([ref])
        except UserError as exc:
            problems[ref] = str(exc)
            continue
        kept.append(ref)
    for key, record in designs.items():
        role = key.rsplit("/", 1)[-1]  # (``<label>/<role>`` in a run comparing several designs)
        if not isinstance(record, Mapping) or record.get("name") in names(role):
            continue
        fields = {k: v for k, v in record.items() if k in Origin.model_fields}  # pyright: ignore[reportUnknownVariableType]
        origin = Origin.model_validate(fields)
        raise UserError(
            f"cannot resume: {key} {record.get('name')!r} came from {origin.label()} "
            f"(module {origin.module}), which is not available: {origin.how_to_get()}"
        )
    if problems and not extra:
        raise UserError(next(iter(problems.values())))
    return [*kept, *(e for e in extra if e not in kept)]
