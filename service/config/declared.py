"""Each setting declared once: a field of a settings struct annotated with its ``Env`` (variable, meaning, bounds).

A setting is one line of a struct derived from ``DeclaredSettings``::

    max_body_bytes: Annotated[int, Env("MAX_BODY_BYTES", "largest request body (413 above it)", ge=1024)] = 10_000_000

The field's name is what the service reads (``settings.max_body_bytes``), its type says how the variable is parsed,
its default is the only default (an empty variable keeps it), and ``Env`` holds the rest. From these declarations
come the reader (``from_env``), the checks (run on every construction, from the environment or in code) and the
settings table of docs/operations.md (tools/settings_table.py, ``make settings-table``). A field whose type is itself
a ``DeclaredSettings`` (``limits``, ``jobs``) is read from the same environment.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import msgspec

from service.config.errors import SettingsError

__all__ = ["DeclaredSettings", "Declaration", "Env"]

Bound = int | float | str  # a number, or the name of a sibling field whose value bounds this one


@dataclass(frozen=True)
class Env:
    """How a settings field is configured: its variable, a one-line meaning, its bounds and any other rule."""

    variable: str
    doc: str
    ge: Bound | None = None
    gt: Bound | None = None
    le: Bound | None = None
    lt: Bound | None = None
    choices: tuple[str, ...] = ()
    normalise: Callable[[str], str] | None = None  # applied to the raw text first (e.g. ``str.upper``)
    check: Callable[[Any], bool] | None = None  # a rule bounds cannot state ...
    must: str = ""  # ... and what it requires, completing "VARIABLE=value must be ..."
    unset: str = ""  # what an unset optional variable means ("no auth"), for the docs
    secret: bool = False  # its value never appears in an error message


@dataclass(frozen=True)
class Declaration:
    """One declared field: its name, its type with ``None`` removed, whether ``None`` is allowed, and its ``Env``."""

    name: str
    type: Any
    optional: bool
    env: Env


class DeclaredSettings(msgspec.Struct, frozen=True, kw_only=True):
    """A settings struct whose fields are declared with ``Env``: ``from_env`` reads them, construction checks them."""

    declarations: ClassVar[tuple[Declaration, ...]] = ()
    nested: ClassVar[tuple[tuple[str, type[DeclaredSettings]], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Resolved once per class: resolving a struct's annotations costs milliseconds, construction is frequent.
        declarations: list[Declaration] = []
        nested: list[tuple[str, type[DeclaredSettings]]] = []
        # msgspec sets the struct's own attributes after this hook: read the annotations themselves
        for name, annotation in typing.get_type_hints(cls, include_extras=True).items():
            if typing.get_origin(annotation) is ClassVar:
                continue
            base, metadata = annotation, []
            if typing.get_origin(base) is typing.Annotated:
                base, *metadata = typing.get_args(base)
            envs: list[Env] = [item for item in metadata if isinstance(item, Env)]
            if isinstance(base, type) and issubclass(base, DeclaredSettings):
                nested.append((name, base))
            elif len(envs) != 1:
                raise TypeError(f"{cls.__name__}.{name} needs one Env(...) declaration")
            else:
                members = typing.get_args(base) if isinstance(base, types.UnionType) else (base,)
                concrete = [member for member in members if member is not type(None)]
                declarations.append(Declaration(name, concrete[0], len(concrete) < len(members), envs[0]))
        cls.declarations, cls.nested = tuple(declarations), tuple(nested)

    def __post_init__(self) -> None:
        for declaration in self.declarations:
            value = getattr(self, declaration.name)
            if value is not None:
                _check(self, declaration, value)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        """The settings from ``environ``: a blank or missing variable keeps the field's default."""
        values: dict[str, Any] = {name: struct.from_env(environ) for name, struct in cls.nested}
        for declaration in cls.declarations:
            raw = environ.get(declaration.env.variable, "").strip()
            if raw:
                values[declaration.name] = _parse(declaration, raw)
        return cls(**values)


def variable_of(struct: DeclaredSettings, field: str) -> str:
    """The environment variable of ``struct``'s ``field``."""
    return next(d.env.variable for d in struct.declarations if d.name == field)


def bounds_text(struct: type[DeclaredSettings], env: Env) -> str:
    """The bounds and rules of ``env`` in words ("in 1..65535", "in (0, 1)", "> ACCEPT_MAX_SET_SIZE", "one of a, b"),
    completing "must be"."""

    def shown(bound: Bound) -> str:
        if isinstance(bound, str):
            return next(d.env.variable for d in struct.declarations if d.name == bound)
        return f"{bound:g}" if isinstance(bound, float) else str(bound)

    low = ("[", env.ge) if env.ge is not None else ("(", env.gt) if env.gt is not None else None
    high = ("]", env.le) if env.le is not None else (")", env.lt) if env.lt is not None else None
    parts = []
    if low and high:
        if (low[0], high[0]) == ("[", "]"):
            parts.append(f"in {shown(low[1])}..{shown(high[1])}")
        else:
            parts.append(f"in {low[0]}{shown(low[1])}, {shown(high[1])}{high[0]}")
    elif low:
        parts.append(f"{'>=' if low[0] == '[' else '>'} {shown(low[1])}")
    elif high:
        parts.append(f"{'<=' if high[0] == ']' else '<'} {shown(high[1])}")
    if env.choices:
        parts.append(f"one of {', '.join(env.choices)}")
    if env.must:
        parts.append(env.must)
    return "; ".join(parts)


def _parse(declaration: Declaration, raw: str) -> Any:
    env = declaration.env
    text = env.normalise(raw) if env.normalise else raw
    try:
        if declaration.type in (int, float, str, Path):
            return declaration.type(text)
        if typing.get_origin(declaration.type) is tuple:  # tuple[str, ...]: comma-separated, blanks dropped
            return tuple(part.strip() for part in text.split(",") if part.strip())
    except ValueError as error:
        shown = "<hidden>" if env.secret else repr(raw)
        raise SettingsError(f"{env.variable}={shown} is not valid: {error}") from None
    raise TypeError(f"{env.variable}: no parser for {declaration.type!r}")  # a declaration the reader cannot read


def _check(struct: DeclaredSettings, declaration: Declaration, value: Any) -> None:
    env = declaration.env

    def bound(value_or_field: Bound) -> Any:
        return getattr(struct, value_or_field) if isinstance(value_or_field, str) else value_or_field

    ok = (
        (env.ge is None or value >= bound(env.ge))
        and (env.gt is None or value > bound(env.gt))
        and (env.le is None or value <= bound(env.le))
        and (env.lt is None or value < bound(env.lt))
        and (not env.choices or value in env.choices)
        and (env.check is None or env.check(value))
    )
    if not ok:
        rule = bounds_text(type(struct), env)
        siblings = [b for b in (env.ge, env.gt, env.le, env.lt) if isinstance(b, str)]
        context = "".join(f" ({variable_of(struct, name)}={getattr(struct, name)!r})" for name in siblings)
        shown = "<hidden>" if env.secret else repr(value)
        raise SettingsError(f"{env.variable}={shown} must be {rule}{context}")
