"""Typed capability contexts: the results agent capabilities hand to each other.

The public names of the package, one module per concern:

- :mod:`dagctx.capability.context` — :class:`CapabilityContext` (the pydantic base of
  every capability result), the registry of context classes by ``CONTEXT_TYPE``,
  :class:`RawContext` for data without a registered class (nested dot access through
  :class:`DictNamespace`), the errors;
- :mod:`dagctx.capability.manager` — :class:`ContextManager` over the three-level dict
  ``{context_type: {context_key: {field: value}}}`` an agent state carries,
  :class:`ContextNamespace` (``cm.PV_ADDRESSES.step_1``), :func:`load_context`;
- :mod:`dagctx.capability.steps` — plan-step inputs and constraints;
- :mod:`dagctx.capability.summary` — bounded summaries and access paths.

Plain data with pydantic: must not import the graph, the nodes or the session
(:class:`dagctx.nodes.capability.CapabilityNode` brings these contexts into the DAG).

``get_summary()`` is small whatever the size of the data, and summaries and access
details are JSON-serialisable, so :class:`dagctx.nodes.capability.CapabilityNode` can
render and budget them in the context DAG. Merging state updates is
:mod:`dagctx.state`'s job.
"""

from dagctx.capability.context import (
    META_KEY,
    CapabilityContext,
    ContextRegistry,
    DictNamespace,
    RawContext,
    StoredContext,
    context_registry,
)
from dagctx.capability.manager import (
    DEFAULT_CONTEXT_FILENAME,
    ContextData,
    ContextManager,
    ContextNamespace,
    load_context,
)
from dagctx.capability.steps import Constraint, ConstraintMode
from dagctx.errors import CapabilityError, CapabilityTypeError

__all__ = [
    "DEFAULT_CONTEXT_FILENAME",
    "META_KEY",
    "CapabilityContext",
    "CapabilityError",
    "CapabilityTypeError",
    "Constraint",
    "ConstraintMode",
    "ContextData",
    "ContextManager",
    "ContextNamespace",
    "ContextRegistry",
    "DictNamespace",
    "RawContext",
    "StoredContext",
    "context_registry",
    "load_context",
]
