"""The one settings loader of every Reconcilery process (pydantic-settings underneath).

Each layer and domain declares its own :class:`Settings` subclass: one typed field per environment
variable, documented with ``Field(description=...)``, named by the class's ``env_prefix`` plus the
field name in upper case unless the field gives its exact variable as ``validation_alias``.

- **Read lazily.** Nothing is read at import: :meth:`Settings.load` reads a mapping (default
  ``os.environ``) when called, and :func:`cached` gives a layer its process-wide ``current()``
  accessor, read on first use; :func:`reset` forgets every cached value (tests, and a process that
  changes its own environment) and :func:`validate` loads every declared class at process start.
- **One error.** A bad value raises :class:`SettingsError` (a ``ValueError``) naming every bad
  variable, its value and what was expected, e.g.
  ``RECONCILERY_LEASE_SECONDS='soon': expected seconds (a number >= 0)``.
- **Blank is unset.** An empty (or all-space) variable means the default (compose files pass
  ``${VAR:-}``).
- **Seconds** (:data:`Seconds`) are numbers >= 0; a negative value is an error, never clamped: a
  typo such as ``-5`` should stop the process at start rather than silently mean "now".
- **Flags** (:data:`Flag`) accept ``1/true/yes/on`` and ``0/false/no/off`` (any case); any other
  word is an error instead of silently counting as false.

This package is the lowest layer of the house: it imports nothing of Reconcilery's.
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BeforeValidator, ValidationError, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

#: Words a flag reads as true / false (lower case; the value is stripped and lowered first).
FLAG_YES: tuple[str, ...] = ("1", "true", "yes", "on")
FLAG_NO: tuple[str, ...] = ("0", "false", "no", "off")

_T = TypeVar("_T")


class SettingsError(ValueError):
    """Settings that do not validate. ``problems`` lists one line per bad variable:
    ``NAME='value': expected ...`` (the message joins them with ``; ``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def flag(yes: Iterable[str] = FLAG_YES, no: Iterable[str] = FLAG_NO) -> Callable[[Any], bool]:
    """A parser of yes/no words: ``yes`` are true, ``no`` false (case-insensitive, stripped); a
    ``bool`` passes. Raises ``ValueError("expected one of ...")`` on any other value."""
    yes_words, no_words = tuple(yes), tuple(no)

    def parse(value: Any) -> bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in yes_words:
            return True
        if word in no_words:
            return False
        raise ValueError(f"expected one of {'/'.join(yes_words)} or {'/'.join(no_words)}")

    return parse


def _seconds(value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError("expected seconds (a number >= 0)") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:  # NaN
        raise ValueError("expected seconds (a number >= 0)")
    if value < 0:
        raise ValueError("expected seconds (a number >= 0), got a negative value")
    return float(value)


#: Seconds: a number >= 0 (see the module doc for why negatives are rejected).
Seconds = Annotated[float, BeforeValidator(_seconds)]
def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError("expected JSON") from None
    return value


#: A JSON value in the environment (a mapping or list field): ``Json[Mapping[str, int]]``.
Json = Annotated[_T, NoDecode, BeforeValidator(_json)]

#: A yes/no switch with :data:`FLAG_YES` / :data:`FLAG_NO` words.
Flag = Annotated[bool, BeforeValidator(flag())]


def _port(value: int) -> int:
    if not 0 <= value <= 65535:
        raise ValueError("expected a port number 0-65535")
    return value


#: A TCP port, 0-65535 (0 usually means "off" or "any free port").
Port = Annotated[int, AfterValidator(_port)]

_environ: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("settings_environ",
                                                                                     default=None)


class _MappingSource(EnvSettingsSource):
    """pydantic-settings' environment source over the mapping :meth:`Settings.load` was given; empty
    outside ``load``, so that ``SomeSettings(field=...)`` in code or tests never reads the environment."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        env = _environ.get()
        if env is None:
            return {}
        return {(name if self.case_sensitive else name.lower()): value for name, value in env.items()
                if not (self.env_ignore_empty and value == "")}


_EXPECTED = {
    "float_parsing": "expected a number", "float_type": "expected a number",
    "int_parsing": "expected an integer", "int_type": "expected an integer", "int_from_float": "expected an integer",
    "json_invalid": "expected JSON", "json_type": "expected JSON",
}


class Settings(BaseSettings):
    """Base of every settings class: :meth:`load` reads the environment only (no ``.env`` files, no
    secrets directory), ignores unknown variables, treats blank values as unset; the object is frozen.
    Constructing one directly (``SomeSettings(field=value)``) reads nothing: defaults fill the rest."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, env_ignore_empty=True,
                                      validate_default=False, populate_by_name=True)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _MappingSource(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        # pydantic-settings' env_ignore_empty drops "" only; "  " is as blank to a person
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (isinstance(v, str) and not v.strip())}
        return data

    @classmethod
    def env_name(cls, field: str) -> str:
        """The environment variable of ``field`` (its alias, else the prefix plus its upper-case name)."""
        info = cls.model_fields[field]
        alias = info.validation_alias
        if isinstance(alias, str):
            return alias
        if alias is not None and hasattr(alias, "choices"):
            return str(alias.choices[0])
        return f"{cls.model_config.get('env_prefix', '')}{field}".upper()

    @classmethod
    def env_choices(cls, field: str) -> tuple[str, ...]:
        """Every environment variable ``field`` is read from, in order of precedence."""
        alias = cls.model_fields[field].validation_alias
        if alias is not None and hasattr(alias, "choices"):
            return tuple(str(c) for c in alias.choices)
        return (cls.env_name(field),)

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """``{field name: environment variable}`` of every field."""
        return {name: cls.env_name(name) for name in cls.model_fields}

    @classmethod
    def load(cls: type[_S], environ: Mapping[str, str] | None = None) -> _S:
        """The settings from ``environ`` (default ``os.environ``). Raises :class:`SettingsError`
        naming every bad variable, its value and what was expected."""
        token = _environ.set(os.environ if environ is None else environ)
        try:
            return cls()
        except ValidationError as exc:
            raise SettingsError(_problems(cls, exc, os.environ if environ is None else environ)) from None
        finally:
            _environ.reset(token)


_S = TypeVar("_S", bound=Settings)


def _problems(cls: type[Settings], exc: ValidationError, env: Mapping[str, str]) -> list[str]:
    choices = {field: cls.env_choices(field) for field in cls.model_fields}
    problems = []
    for error in exc.errors(include_url=False):
        loc = error.get("loc") or ()
        field = str(loc[0]) if loc else ""
        found = choices.get(field) or next((c for c in choices.values() if field.lower() in (n.lower() for n in c)),
                                           (field,))
        name = next((n for n in found if n in env), found[0])  # the variable the user set
        message = _EXPECTED.get(error["type"]) or str(error["msg"]).removeprefix("Value error, ")
        bound = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
        if error["type"] in bound:
            limit = next(iter((error.get("ctx") or {}).values()), "")
            message = f"expected a number {bound[error['type']]} {limit:g}" if isinstance(limit, int | float) else \
                f"expected a number {bound[error['type']]} {limit}"
        if not field:  # a check across fields words its own message
            problems.append(message)
        elif name in env:
            problems.append(f"{name}={env[name]!r}: {message}")
        else:
            problems.append(f"{name}: {message}")
    return problems


_caches: list[Cached[Any]] = []
_caches_lock = threading.Lock()


class Cached(Generic[_S]):
    """A process-wide, lazily loaded settings value: calling it reads the environment on first use
    (thread-safe) and then returns the same object until :meth:`override` or :func:`reset` (tests, or a
    process that changes its own environment; no Reconcilery process does)."""

    def __init__(self, cls: type[_S]) -> None:
        self.cls = cls
        self._value: _S | None = None
        self._lock = threading.Lock()
        with _caches_lock:
            _caches.append(self)

    def __call__(self) -> _S:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self.cls.load()
                value = self._value
        return value

    def override(self, value: _S | None) -> None:
        """Use ``value`` from now on (tests, benchmarks); ``None`` reads the environment again on next use."""
        with self._lock:
            self._value = value


def cached(cls: type[_S]) -> Cached[_S]:
    """A ``current()`` accessor for ``cls`` (see :class:`Cached`)."""
    return Cached(cls)


def reset() -> None:
    """Forget every cached settings value: the next ``current()`` of each reads the environment again."""
    with _caches_lock:
        caches = list(_caches)
    for cache in caches:
        cache.override(None)


def validate() -> None:
    """Load every settings class declared so far (those of the layers and domains this process
    imported). Raises one :class:`SettingsError` listing the problems of all of them."""
    with _caches_lock:
        caches = list(_caches)
    problems: list[str] = []
    for cache in caches:
        try:
            cache()
        except SettingsError as exc:
            problems.extend(p for p in exc.problems if p not in problems)
    if problems:
        raise SettingsError(problems)


def settings_classes() -> list[type[Settings]]:
    """Every settings class with a cached accessor, in the order they were declared."""
    with _caches_lock:
        return [cache.cls for cache in _caches]
