"""The capability context contract: the base class, the registry of classes by type, and
the untyped stand-in for data whose class is unknown.

Owns :class:`CapabilityContext` (the pydantic base of every capability result, checked
at class creation), :class:`ContextRegistry` with the default :data:`context_registry`,
:class:`RawContext` (and :class:`DictNamespace`, its nested dot access), the errors of
:mod:`dagctx.capability`, and the reserved :data:`META_KEY` field of a stored entry. Not
here: reading and writing the three-level dict (:mod:`dagctx.capability.manager`).
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from dagctx.capability.summary import access_path, summarize
from dagctx.errors import CapabilityError, CapabilityTypeError

#: Reserved field of a stored entry holding dagctx metadata (the task objective).
#: Pydantic field names cannot start with an underscore, so it never collides with data.
META_KEY = "_meta"


class CapabilityContext(BaseModel, ABC):
    """Base of every typed capability result.

    A concrete subclass sets two class constants and implements ``get_access_details``::

        class PVAddresses(CapabilityContext):
            CONTEXT_TYPE: ClassVar[str] = "PV_ADDRESSES"
            CONTEXT_CATEGORY: ClassVar[str] = "METADATA"
            pvs: list[str]

            def get_access_details(self, key: str) -> dict[str, Any]:
                return {"pvs": f"context.PV_ADDRESSES.{key}.pvs", "count": len(self.pvs)}

    Creating such a class registers it in :data:`context_registry` under its
    ``CONTEXT_TYPE``; ``class PVAddresses(CapabilityContext, register=False)`` leaves it
    out (to register it in a :class:`ContextRegistry` of your own). A concrete subclass
    that does not set both constants to non-empty strings, or that claims a type another
    class holds, fails at class creation with :class:`CapabilityTypeError`. Abstract
    intermediate bases are not checked.
    """

    CONTEXT_TYPE: ClassVar[str]
    CONTEXT_CATEGORY: ClassVar[str]

    def __init_subclass__(cls, *, register: bool = True, **kwargs: Any) -> None:
        # ``register`` is read by __pydantic_init_subclass__, once the model is complete.
        super().__init_subclass__(**kwargs)

    @classmethod
    def __pydantic_init_subclass__(cls, *, register: bool = True, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # A parametrized generic (Model[int]) is a subclass of an already checked origin.
        if inspect.isabstract(cls) or cls.__pydantic_generic_metadata__["origin"] is not None:
            return
        for name in ("CONTEXT_TYPE", "CONTEXT_CATEGORY"):
            _check_class_constant(cls, name)
        if register:
            context_registry.register(cls)

    @property
    def context_type(self) -> str:
        """The class's ``CONTEXT_TYPE``."""
        return self.CONTEXT_TYPE

    @abstractmethod
    def get_access_details(self, key: str) -> dict[str, Any]:
        """Return how a model or generated code can use this context stored under ``key``
        (paths, counts, field meanings), as a JSON-serialisable dict."""

    def get_summary(self) -> dict[str, Any]:
        """Return a short JSON-serialisable overview: ``{"type": ..., "fields": {...}}``
        with long strings cut and long collections shortened. Override it for a better one;
        keep it small, since it is what the model sees when the budget is tight."""
        data = self.model_dump(mode="json", by_alias=True)
        return summarize(self.CONTEXT_TYPE, without_meta(data))


_C = TypeVar("_C", bound=CapabilityContext)


class ContextRegistry:
    """Context classes by ``CONTEXT_TYPE``.

    :data:`context_registry` is the default one; every concrete :class:`CapabilityContext`
    subclass registers there when it is created. A separate registry gives a
    :class:`ContextManager` an isolated view (``ContextManager(state, registry=r)``).
    """

    def __init__(self) -> None:
        self._classes: dict[str, type[CapabilityContext]] = {}
        self._lock = threading.Lock()

    def register(self, cls: type[_C], *, replace: bool = False) -> type[_C]:
        """Register ``cls`` under its ``CONTEXT_TYPE`` and return it (usable as a decorator).

        A class with the same module and qualified name as the registered one replaces it
        (a reloaded module, a re-run notebook cell). Raises :class:`CapabilityTypeError`
        when ``cls`` is not a concrete CapabilityContext subclass, or when a different
        class holds the type and ``replace`` is false.
        """
        if not (isinstance(cls, type) and issubclass(cls, CapabilityContext)):
            raise CapabilityTypeError(f"{cls!r} is not a CapabilityContext subclass", value=cls)
        if inspect.isabstract(cls):
            raise CapabilityTypeError(
                f"{qualified_name(cls)} is abstract (it does not implement "
                f"{', '.join(sorted(getattr(cls, '__abstractmethods__', ())))}) "
                "and cannot be registered",
                value=cls,
            )
        context_type = cls.CONTEXT_TYPE
        with self._lock:
            current = self._classes.get(context_type)
            if (
                current is not None
                and not replace
                and qualified_name(current) != qualified_name(cls)
            ):
                raise CapabilityTypeError(
                    f"{qualified_name(cls)} declares CONTEXT_TYPE {context_type!r}, which "
                    f"{qualified_name(current)} already holds; give {cls.__name__} its own "
                    f"CONTEXT_TYPE or unregister {context_type!r} first",
                    value=cls,
                )
            self._classes[context_type] = cls
        return cls

    def unregister(self, context_type: str) -> type[CapabilityContext]:
        """Remove and return the class registered for ``context_type``.

        Raises :class:`CapabilityError` when no class is registered for it.
        """
        with self._lock:
            try:
                return self._classes.pop(context_type)
            except KeyError:
                raise CapabilityError(
                    f"no context class is registered for {context_type!r}", value=context_type
                ) from None

    def get(self, context_type: str) -> type[CapabilityContext] | None:
        """Return the class registered for ``context_type``, or None."""
        return self._classes.get(context_type)

    def __contains__(self, context_type: object) -> bool:
        return context_type in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._classes))

    def __len__(self) -> int:
        return len(self._classes)


context_registry = ContextRegistry()


class DictNamespace(Mapping[str, Any]):
    """Read-only dot and item access to a mapping of plain data (osprey's name).

    ``ns.outer.inner``: attribute access wraps a mapping value in a DictNamespace (also
    inside lists, which come back as new lists), so dots chain through nested data.
    ``ns["outer"]`` returns the stored value itself; use it for names such as ``keys``
    that the mapping methods take. Equal to any mapping with the same items.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _namespaced(self._data[name])
        except KeyError:
            raise AttributeError(self._no_field(name)) from None

    def _no_field(self, name: str) -> str:
        return f"no field {name!r}; fields: {', '.join(map(str, self._data)) or 'none'}"

    def __getitem__(self, name: str) -> Any:
        return self._data[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __dir__(self) -> list[str]:
        return [name for name in self._data if isinstance(name, str) and name.isidentifier()]

    def __repr__(self) -> str:
        return f"DictNamespace({self._data!r})"

    def to_dict(self) -> dict[str, Any]:
        """Return a deep copy of the data."""
        return copy.deepcopy(self._data)


def _namespaced(value: Any) -> Any:
    if isinstance(value, Mapping):
        return DictNamespace(value)
    if isinstance(value, list):
        return [_namespaced(item) for item in value]
    return value


class RawContext(DictNamespace):
    """A stored entry whose type has no registered class: read-only field access by
    attribute (``ctx.pvs``, nested ``ctx.outer.inner`` as in osprey) or item
    (``ctx["pvs"]``), see :class:`DictNamespace`. Holds its own copy of the data."""

    __slots__ = ("_context_type",)

    def __init__(self, context_type: str, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self._context_type = context_type

    @property
    def context_type(self) -> str:
        """The type this entry is stored under."""
        return self._context_type

    def _no_field(self, name: str) -> str:
        return f"{self._context_type} context has {super()._no_field(name)}"

    def __repr__(self) -> str:
        return f"RawContext({self._context_type!r}, {self._data!r})"

    def get_summary(self) -> dict[str, Any]:
        """Return the same shortened overview as :meth:`CapabilityContext.get_summary`."""
        return summarize(self._context_type, without_meta(self._data))

    def get_access_details(self, key: str) -> dict[str, Any]:
        """Return the access path and the field names (no class describes this data)."""
        return {"access": access_path(self._context_type, key), "fields": list(self._data)}


StoredContext = CapabilityContext | RawContext


def qualified_name(cls: type) -> str:
    """Return ``module.QualName`` of ``cls`` (how errors and the registry name classes)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _check_class_constant(cls: type[CapabilityContext], name: str) -> None:
    if name in cls.model_fields:
        raise CapabilityTypeError(
            f"{qualified_name(cls)} declares {name} as a pydantic field; make it a class "
            f'constant: `{name}: ClassVar[str] = "..."`',
            value=cls,
        )
    value = getattr(cls, name, None)
    if not isinstance(value, str) or not value.strip():
        raise CapabilityTypeError(
            f"{qualified_name(cls)} must set {name} to a non-empty string (got {value!r}); "
            f'add `{name}: ClassVar[str] = "..."` to the class',
            value=cls,
        )


def check_name(what: str, value: object) -> None:
    """Raise :class:`CapabilityError` naming ``what`` unless ``value`` is a non-empty str."""
    if not isinstance(value, str) or not value:
        raise CapabilityError(f"{what} must be a non-empty string, got {value!r}", value=value)


def without_meta(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the fields of a stored entry without the reserved :data:`META_KEY`."""
    return {name: value for name, value in data.items() if name != META_KEY}


def dump_context(value: StoredContext, where: str) -> dict[str, Any]:
    """Return the fields of ``value`` as plain JSON data (what a manager stores and what
    :meth:`ContextManager.get_context` rebuilds the object from).

    Raises :class:`CapabilityTypeError` naming ``where`` when the fields cannot be dumped
    to JSON.
    """
    if isinstance(value, RawContext):
        data = value.to_dict()
        try:
            json.dumps(data)
        except (TypeError, ValueError) as error:
            raise CapabilityTypeError(
                f"untyped {value.context_type} context stored as {where} is not "
                f"JSON-serialisable: {error}",
                value=value,
            ) from error
        return data
    try:
        return value.model_dump(mode="json", by_alias=True, round_trip=True)
    except PydanticSerializationError as error:
        raise CapabilityTypeError(
            f"{type(value).__name__} stored as {where} cannot be dumped to JSON: {error}",
            value=value,
        ) from error
