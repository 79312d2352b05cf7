"""The settings ``dagctx render``, ``watch`` (and ``viz``) and ``mcp`` share, from the command
line and two config files: the focus, the budget, the encoding, and the steering of the
tree (:class:`~dagctx.watch.steering.Steering`: include / exclude patterns, priority and
state rules).

Where they come from, highest first:

1. the command line: ``--focus``, ``--budget``, ``--encoding``, and the repeatable
   ``--include GLOB``, ``--exclude GLOB``, ``--priority GLOB=N``, ``--state GLOB=STATE``;
2. ``PATH/.dagctx/config.toml``, its top-level keys;
3. ``PATH/pyproject.toml``, its ``[tool.dagctx]`` table.

Keys (the same in both files): ``focus`` (a string), ``budget`` (a positive integer),
``encoding`` (a tiktoken encoding name), ``include`` and ``exclude`` (a list of globs, or
one), ``priority`` (a table glob → integer) and ``state`` (a table glob → state name:
hidden, collapsed, summary, details or all). A key not in this list is an error.

Precedence: ``focus``, ``budget`` and ``encoding`` come from the highest place that sets
them. ``include``, ``exclude``, ``priority`` and ``state`` merge: the rules of
``pyproject.toml`` first, then those of ``config.toml``, then the command line's, and the
last rule matching a path wins; so a higher place overrides a lower one for the paths both
name, and ``!GLOB`` in a higher ``include`` or ``exclude`` list takes back what a lower one
said for those paths.

Every value is checked before anything is opened or written: a bad one (a malformed
``GLOB=N``, a priority that is not an integer, an unknown state or key, a glob that can
never match, a file that cannot be read or is not TOML) raises
:class:`~dagctx.errors.SettingsError` naming the value and where it came from (the flag,
``FILE:LINE`` for TOML syntax, ``FILE KEY`` for a value); ``dagctx`` prints it as one line
and exits with status 2.

Imports from dagctx only the steering, patterns, node states, tokens, validation and
:mod:`dagctx.cli._options`.
"""

from __future__ import annotations

import argparse
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagctx._validate import is_int
from dagctx.cli._options import DEFAULT_BUDGET
from dagctx.errors import EncodingError, SettingsError
from dagctx.nodes.base import NodeState
from dagctx.tokens import DEFAULT_ENCODING, get_encoding
from dagctx.watch.patterns import Pattern, compile_line
from dagctx.watch.steering import Steering

#: The config file under the root (its top-level keys are the settings).
CONFIG_FILE = Path(".dagctx") / "config.toml"
#: The keys a config file may set.
KEYS = ("budget", "encoding", "exclude", "focus", "include", "priority", "state")
_STATES = ", ".join(name.lower() for name in NodeState.__members__)
_LINE = re.compile(r"at line (\d+)")


@dataclass(frozen=True, slots=True)
class Settings:
    """What a command runs with, every place merged (see the module docstring)."""

    budget: int = DEFAULT_BUDGET
    encoding: str = DEFAULT_ENCODING
    focus: str | None = None
    steering: Steering = field(default_factory=Steering)


@dataclass(slots=True)
class _Merged:
    """The places read so far, lowest first."""

    scalars: dict[str, tuple[Any, str]] = field(default_factory=dict)  # key -> (value, source)
    include: list[Pattern] = field(default_factory=list)
    exclude: list[Pattern] = field(default_factory=list)
    priority: list[tuple[Pattern, int]] = field(default_factory=list)
    state: list[tuple[Pattern, NodeState]] = field(default_factory=list)


def load_settings(args: argparse.Namespace) -> Settings:
    """The settings of a command whose parsed arguments are ``args`` (``path``, and the
    options :func:`dagctx.cli._options.add_steering`, ``add_budget`` and ``add_encoding``
    added), merged with the config files under ``args.path``.

    Raises:
        SettingsError: a value of any place cannot be used (see the module docstring).
    """
    merged = _Merged()
    root = Path(args.path).expanduser()
    if root.is_dir():
        pyproject = root / "pyproject.toml"
        table = _read_toml(pyproject)
        if table is not None:
            tool = table.get("tool", {})
            section = tool.get("dagctx") if isinstance(tool, dict) else None
            if section is not None:
                where = f"{_shown(args.path, 'pyproject.toml')} [tool.dagctx]"
                if not isinstance(section, dict):
                    raise SettingsError(
                        f"{where}: expected a table, got {section!r}",
                        source=where,
                        name="tool.dagctx",
                        value=section,
                    )
                _merge_file(merged, section, where)
        config = root / CONFIG_FILE
        table = _read_toml(config)
        if table is not None:
            _merge_file(merged, table, _shown(args.path, CONFIG_FILE.as_posix()))
    _merge_flags(merged, args)
    scalars = merged.scalars
    encoding, source = scalars.get("encoding", (DEFAULT_ENCODING, ""))
    if source and not source.startswith("--"):  # a flag's encoding fails as it always did
        try:
            get_encoding(encoding)
        except EncodingError as exc:
            raise SettingsError(
                f"{source}: {exc}", source=source, name="encoding", value=encoding
            ) from None
    return Settings(
        budget=scalars.get("budget", (DEFAULT_BUDGET, ""))[0],
        encoding=encoding,
        focus=scalars.get("focus", (None, ""))[0],
        steering=Steering.of(
            include=merged.include,
            exclude=merged.exclude,
            priority=merged.priority,
            state=merged.state,
        ),
    )


def _shown(path: str, name: str) -> str:
    """A config file's path as the user named its root."""
    return os.path.join(path, name)


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The table of a TOML file, or None if there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        shown = str(path)
        raise SettingsError(
            f"{shown}: cannot be read: {exc.strerror or exc}", source=shown, value=shown
        ) from None
    try:
        text = data.decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as exc:
        shown = str(path)
        raise SettingsError(
            f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start})", source=shown
        ) from None
    except tomllib.TOMLDecodeError as exc:
        found = _LINE.search(str(exc))
        line = found[1] if found else max(1, len(text.splitlines()))  # "at end of document"
        shown = f"{path}:{line}"
        raise SettingsError(f"{shown}: not valid TOML: {exc}", source=shown) from None


def _merge_file(merged: _Merged, table: dict[str, Any], where: str) -> None:
    """Check and add the settings of one config file's table."""
    for key, value in table.items():
        source = f"{where} {key}"
        if key not in KEYS:
            raise SettingsError(
                f"{where}: unknown key {key!r}; expected one of {', '.join(KEYS)}",
                source=where,
                name=key,
                value=key,
            )
        if key in ("include", "exclude"):
            globs = [value] if isinstance(value, str) else value
            if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
                raise _bad(source, key, value, f"expected a glob or a list of globs, got {value!r}")
            getattr(merged, key).extend(_glob(g, source, key) for g in globs)
        elif key in ("priority", "state"):
            if not isinstance(value, dict):
                raise _bad(source, key, value, f"expected a table of glob = value, got {value!r}")
            read = _priority if key == "priority" else _state
            for glob, item in value.items():
                rule_source = f"{source}.{_toml_key(glob)}"
                pattern = _glob(glob, rule_source, key, rule=True)
                getattr(merged, key).append((pattern, read(item, rule_source)))
        else:
            merged.scalars[key] = (_scalar(key, value, source), source)


def _merge_flags(merged: _Merged, args: argparse.Namespace) -> None:
    """Check and add the settings given on the command line."""
    for key in ("budget", "encoding", "focus"):
        value = getattr(args, key, None)
        if value is not None:
            merged.scalars[key] = (value, f"--{key}")
    for key in ("include", "exclude"):
        for glob in getattr(args, key, None) or ():
            getattr(merged, key).append(_glob(glob, f"--{key} {glob!r}", key))
    rules: tuple[tuple[str, Callable[[Any, str], Any]], ...] = (
        ("priority", _priority),
        ("state", _state),
    )
    for key, read in rules:
        for given in getattr(args, key, None) or ():
            source = f"--{key} {given!r}"
            glob, equals, value = given.rpartition("=")
            if not equals or not glob:
                example = "'tests/**=10'" if key == "priority" else "'docs/**=summary'"
                shape = "GLOB=N" if key == "priority" else "GLOB=STATE"
                raise _bad(source, key, given, f"expected {shape}, e.g. {example}")
            pattern = _glob(glob, source, key, rule=True)
            getattr(merged, key).append((pattern, read(value, source)))


def _glob(text: str, source: str, key: str, *, rule: bool = False) -> Pattern:
    """A user's glob compiled as a ``.gitignore`` line (a rule's may not be negated)."""
    pattern = compile_line(text)
    if pattern is None:
        raise _bad(source, key, text, f"{text!r} is not a glob that can match a path")
    if rule and pattern.negated:
        raise _bad(source, key, text, f"a {key} rule's glob cannot be negated ({text!r})")
    return pattern


def _priority(value: object, source: str) -> int:
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    elif is_int(value):
        return value
    raise _bad(source, "priority", value, f"priority must be an integer, got {value!r}")


def _state(value: object, source: str) -> NodeState:
    if isinstance(value, str) and value.strip().upper() in NodeState.__members__:
        return NodeState[value.strip().upper()]
    raise _bad(source, "state", value, f"unknown state {value!r}; expected one of {_STATES}")


def _scalar(key: str, value: object, source: str) -> object:
    if key == "budget":
        if not is_int(value) or value <= 0:
            raise _bad(source, key, value, f"budget must be a positive integer, got {value!r}")
    elif not isinstance(value, str) or (key == "encoding" and not value):
        raise _bad(source, key, value, f"{key} must be a string, got {value!r}")
    return value


def _toml_key(key: str) -> str:
    """``key`` as TOML writes it in a dotted key (quoted unless bare)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else '"' + key.replace('"', '\\"') + '"'


def _bad(source: str, key: str, value: object, problem: str) -> SettingsError:
    return SettingsError(f"{source}: {problem}", source=source, name=key, value=value)
