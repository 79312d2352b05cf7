"""ContextGraph: typed nodes in an ordered, multi-parent DAG, with the change cascade.

Edges run parent → child and are stored in
:class:`~dagctx.graph._adjacency.Adjacency` (ordered rows of children and parents; a
networkx ``DiGraph`` of them on demand). The graph keeps
these invariants after every public call, and a call that would break one raises a
:class:`~dagctx.errors.GraphError` subclass before changing anything:

1. **Acyclic**: a link that would close a cycle (including a self-link) is refused
   (:class:`~dagctx.errors.CycleError`).
2. **Ordered children**: ``children(p)`` is the order of linking, or the position chosen
   with ``after=`` / ``index=``; an existing edge is never duplicated.
3. **Ordered roots**: a root is a node without parents; ``roots()`` lists them in the
   order they became roots (restore puts a checkpoint's order back exactly).
4. **Monotonic versions**: a node's version only grows, by one per recorded change.
5. **Glitch-free notification**: for each change (or, inside :meth:`batch`, for each batch
   of changes) every ancestor of a changed node gets ``on_child_changed`` exactly once,
   children before parents, however many paths (diamonds) lead to it.
6. **Unique ids**: ids are unique; unknown ids raise
   :class:`~dagctx.errors.NodeNotFoundError`.

Structure checkpoints (:mod:`dagctx.graph.checkpoints`) save edges with child order, root
order and node states; content is not saved (nodes are live objects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from dagctx._validate import is_int
from dagctx.errors import CheckpointError, CycleError, GraphError, NodeNotFoundError
from dagctx.graph._adjacency import Adjacency
from dagctx.graph.checkpoints import StructureCheckpoint, restore_structure
from dagctx.graph.snapshot import GraphData, dump_graph, load_graph
from dagctx.graph.traces import TraceLog
from dagctx.nodes.base import Node, Trace

NodeRef = Node | str


class ContextGraph:
    """The DAG of context nodes. See the module docstring for its invariants."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._adj = Adjacency(self._nodes)
        self._roots: dict[str, None] = {}
        self._roots_dropped = 0  # roots removed since _roots was last compacted
        self._id_counters: dict[str, int] = {}  # type name → last number new_id gave
        self._checkpoints: dict[str, StructureCheckpoint] = {}
        self._watching: list[StructureCheckpoint] = []  # live checkpoints (copy on write)
        self._batch_depth = 0
        self._batch_origins: dict[str, Node] = {}
        self._batch_descriptions: list[str] = []
        self._notifying = False
        #: Every recorded change, by absolute position, with bounded retention.
        self.traces = TraceLog()
        self._kept_traces = self.traces._items  # the log's own list (record_change)
        #: Running nodes with a tick frequency that a tick recomputes when due.
        self.scheduled: dict[str, Node] = {}
        #: Set by a session: running nodes with a :meth:`~Node.watch_path` go to it, as
        #: ``watcher(node, running)``, instead of into :attr:`scheduled` (and
        #: ``watcher(node, False)`` when they stop running or leave the graph).
        self.watcher: Callable[[Node, bool], None] | None = None
        self.clock = 0
        #: Bumped by every change of nodes, edges, child order or root order (caches of
        #: the walk compare it).
        self.structure_version = 0

    # -- nodes ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, ref: object) -> bool:
        if isinstance(ref, Node):
            return self._nodes.get(ref.id) is ref
        return isinstance(ref, str) and ref in self._nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes.values())

    def get(self, node_id: NodeRef) -> Node:
        """Return the node with ``node_id`` (a node of this graph is returned as is).

        Raises:
            NodeNotFoundError: no such node in this graph.
        """
        if isinstance(node_id, Node):
            if self._nodes.get(node_id.id) is not node_id:
                raise NodeNotFoundError(f"node {node_id!r} is not in this graph", node_id=node_id)
            return node_id
        node = self._nodes.get(node_id) if isinstance(node_id, str) else None
        if node is None:
            raise NodeNotFoundError(f"unknown node id {node_id!r}", node_id=node_id)
        return node

    def new_id(self, type_name: str) -> str:
        """Return the next free readable id for a node type (``text_1``, ``text_2``, ...)."""
        number = self._id_counters.get(type_name, 0)
        while True:
            number += 1
            candidate = f"{type_name}_{number}"
            if candidate not in self._nodes:
                self._id_counters[type_name] = number
                return candidate

    def add(self, node: Node) -> Node:
        """Add ``node`` as a new root, giving it an id if it has none; return it.

        Raises:
            GraphError: the node belongs to a graph already, or its id is taken.
        """
        if not isinstance(node, Node):
            raise GraphError(
                f"only Node instances can be added, got {type(node).__name__}", value=node
            )
        if node.graph is not None:
            raise GraphError(f"node {node.id!r} already belongs to a graph", value=node.id)
        if node.id and node.id in self._nodes:
            raise GraphError(f"duplicate node id {node.id!r}", value=node.id)
        if not node.id:
            node.id = self.new_id(node.type_name)
        node.graph = self
        self._nodes[node.id] = node  # with no parents (Node._parent_ids)
        self._roots[node.id] = None
        self.structure_version += 1
        for saved in self._watching:
            if node.id not in saved.nodes:
                saved._added[node.id] = None
        self.clock += 1
        node.seq = self.clock
        if node.mode == "running" and node.frequency.kind != "never":
            self.schedule_changed(node)  # one that does not run is in no table to leave
        return node

    def add_many(self, nodes: Sequence[Node]) -> None:
        """Add ``nodes``, each with its id, as new roots in order: what :meth:`add` does
        for each, checked for all first (nothing is added when one cannot be) and done
        in bulk (the structure version moves once), as a loaded session adds its nodes.

        Raises:
            GraphError: a node has no id, belongs to a graph already, or its id is taken
                (by the graph or by another of ``nodes``).
        """
        taken = self._nodes
        ids: dict[str, None] = {}
        for node in nodes:
            if not isinstance(node, Node):
                raise GraphError(
                    f"only Node instances can be added, got {type(node).__name__}", value=node
                )
            nid = node.id
            if not nid:
                raise GraphError("a node added with others needs its id", value=node)
            if node.graph is not None:
                raise GraphError(f"node {nid!r} already belongs to a graph", value=nid)
            if nid in taken or nid in ids:
                raise GraphError(f"duplicate node id {nid!r}", value=nid)
            ids[nid] = None
        clock = self.clock
        for node in nodes:
            node.graph = self
            clock += 1
            node.seq = clock
            taken[node.id] = node
            if node.mode == "running" and node.frequency.kind != "never":
                self.schedule_changed(node)
        self.clock = clock
        self._roots.update(ids)
        self.structure_version += 1
        for saved in self._watching:
            saved._added.update((nid, None) for nid in ids if nid not in saved.nodes)

    def remove(self, ref: NodeRef) -> Node:
        """Remove a node and its edges; children left without parents become roots. Each
        parent records the change (``removed child text_3 (src/a.py)``: the label too,
        which the changes section cannot look up once the node is gone).

        Raises:
            NodeNotFoundError: no such node.
        """
        node = self.get(ref)
        parents = self.parents(node)
        orphans = [c for c in self.children(node) if len(c._parent_ids) == 1]
        for parent in parents:
            self._children_changing(parent.id)
        self._children_changing(node.id)
        for saved in self._watching:
            if saved._added.pop(node.id, 0) is not None and node.id in saved.nodes:
                saved._removed.add(node.id)
        self._adj.remove_node(node.id)
        self.structure_version += 1
        del self._nodes[node.id]
        self._drop_root(node.id)
        self.scheduled.pop(node.id, None)
        if self.watcher is not None and node.watch_path() is not None:
            self.watcher(node, False)
        self._batch_origins.pop(node.id, None)
        node.graph = None
        for child in orphans:
            self._roots[child.id] = None
        if parents:
            label = node.label()
            named = f"{node.id} ({label})" if label != node.id else node.id
            for parent in parents:
                parent.mark_changed(f"removed child {named}")
        return node

    # -- structure --------------------------------------------------------------------

    def _drop_root(self, node_id: str) -> None:
        """Remove ``node_id`` from the roots if it is one. A dict keeps its table when
        entries are deleted (every node of a scan is a root until it is linked, so a tree
        of 10,000 files would keep a 10,000-slot table for its one root): once more roots
        were removed than are left (and 32), the dict is copied into one of its size
        (amortized O(1) per removal)."""
        if self._roots.pop(node_id, 0) is not None:
            return
        self._roots_dropped += 1
        if self._roots_dropped > len(self._roots) + 32:
            self._roots = dict(self._roots)
            self._roots_dropped = 0

    def roots(self) -> list[Node]:
        """Nodes without parents, in root order."""
        return [self._nodes[i] for i in self._roots]

    # The accessors below read the adjacency rows directly (see :mod:`._adjacency`): these
    # are hot paths.

    def parents(self, ref: NodeRef) -> list[Node]:
        """The node's parents, in the order they were linked."""
        nodes = self._nodes
        return [nodes[i] for i in self.get(ref)._parent_ids]

    def children(self, ref: NodeRef) -> list[Node]:
        """The node's children, in order."""
        nodes = self._nodes
        return [nodes[i] for i in self._adj.succ[self.get(ref).id]]

    def child_count(self, ref: NodeRef) -> int:
        """How many children the node has."""
        return len(self._adj.succ[self.get(ref).id])

    def child_ids(self, node_id: str) -> list[str]:
        """Ids of a node's children in order (no existence check: hot path)."""
        return list(self._adj.succ[node_id])

    def child_nodes(self, node_id: str) -> list[Node]:
        """A node's children in order, by id (no existence check: hot path)."""
        nodes = self._nodes
        return [nodes[i] for i in self._adj.succ[node_id]]

    def has_parents(self, node_id: str) -> bool:
        return bool(self._nodes[node_id]._parent_ids)

    def take_moved(self) -> set[str]:
        """Ids of the nodes whose section depends on their parents
        (:attr:`~dagctx.nodes.base.Node.placed`) and whose parents changed since the last
        call, which the graph's projection makes when it lays the graph out again: their
        sections may read otherwise at the same version, so it forgets their counts."""
        adj = self._adj
        moved, adj.moved = adj.moved, set()
        return moved

    def ancestors(self, ref: NodeRef) -> list[Node]:
        """All ancestors of a node, children before parents (topological order)."""
        order, _ = self._upward_order([self.get(ref).id])
        return [self._nodes[i] for i in order]

    def descendants(self, ref: NodeRef) -> list[Node]:
        """All descendants of a node, in depth-first preorder of the child order."""
        start = self.get(ref).id
        seen: set[str] = set()
        out: list[Node] = []
        succ = self._adj.succ
        stack = list(reversed(list(succ[start])))
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            out.append(self._nodes[nid])
            stack.extend(reversed(list(succ[nid])))
        return out

    def link(
        self,
        parent: NodeRef,
        child: NodeRef,
        *,
        after: NodeRef | None = None,
        index: int | None = None,
    ) -> None:
        """Make ``child`` a child of ``parent`` (appended, or after ``after`` / at ``index``).

        Linking an existing edge is a no-op.

        Raises:
            NodeNotFoundError: an id is unknown.
            CycleError: the link would close a cycle (a self-link included).
            GraphError: both ``after`` and ``index`` given, ``after`` is not a child of
                ``parent``, or ``index`` is not an int.
        """
        p, c = self.get(parent), self.get(child)
        if after is not None and index is not None:
            raise GraphError("give either after= or index=, not both", value=(after, index))
        if p is c:
            raise CycleError(f"cannot link node {p.id!r} to itself", parent=p.id, child=c.id)
        adj = self._adj
        if adj.has_edge(p.id, c.id):
            return
        # A child without children cannot reach the parent: skip the path search.
        if adj.succ[c.id] and adj.has_path(c.id, p.id):
            raise CycleError(
                f"linking {p.id!r} → {c.id!r} would close a cycle", parent=p.id, child=c.id
            )
        if after is None and index is None:
            self._children_changing(p.id)
            adj.add_edge(p.id, c.id)  # appended: no need to rebuild the sibling order
        else:
            position = self._position(p, list(adj.succ[p.id]), after, index)
            self._children_changing(p.id)
            adj.insert_child(p.id, c.id, position)
        self.structure_version += 1
        self._drop_root(c.id)
        p.mark_changed(f"linked child {c.id}")

    def _position(
        self, parent: Node, siblings: list[str], after: NodeRef | None, index: int | None
    ) -> int:
        if after is not None:
            after_id = self.get(after).id
            if after_id not in siblings:
                raise GraphError(f"{after_id!r} is not a child of {parent.id!r}", value=after_id)
            return siblings.index(after_id) + 1
        if index is None:
            return len(siblings)
        if not is_int(index):
            raise GraphError(f"index must be an int, got {index!r}", value=index)
        return max(0, min(len(siblings), index if index >= 0 else len(siblings) + index + 1))

    def extend(self, parent: NodeRef, children: Sequence[NodeRef]) -> None:
        """Append ``children`` to ``parent``'s children, in order, as one change of the
        parent (one version step and one trace, not one per child). Children already
        linked to ``parent`` are skipped.

        Raises:
            NodeNotFoundError: an id is unknown.
            CycleError: a child is ``parent`` or one of its ancestors (nothing is linked).
        """
        p = self.get(parent)
        adj = self._adj
        kids: list[Node] = []
        seen: set[str] = set()
        for ref in children:
            c = self.get(ref)
            if c.id in seen or adj.has_edge(p.id, c.id):
                continue
            if p is c:
                raise CycleError(f"cannot link node {p.id!r} to itself", parent=p.id, child=c.id)
            if adj.succ[c.id] and adj.has_path(c.id, p.id):
                raise CycleError(
                    f"linking {p.id!r} → {c.id!r} would close a cycle", parent=p.id, child=c.id
                )
            seen.add(c.id)
            kids.append(c)
        if not kids:
            return
        self._children_changing(p.id)
        for c in kids:
            adj.add_edge(p.id, c.id)
            self._drop_root(c.id)
        self.structure_version += 1
        what = f"child {kids[0].id}" if len(kids) == 1 else f"{len(kids)} children"
        p.mark_changed(f"linked {what}")

    def unlink(self, parent: NodeRef, child: NodeRef) -> None:
        """Remove the edge ``parent → child``; a child left without parents becomes a root.

        Raises:
            NodeNotFoundError: an id is unknown.
            GraphError: there is no such edge.
        """
        p, c = self.get(parent), self.get(child)
        if not self._adj.has_edge(p.id, c.id):
            raise GraphError(f"{c.id!r} is not a child of {p.id!r}", value=c.id)
        self._children_changing(p.id)
        self._adj.remove_edge(p.id, c.id)
        self.structure_version += 1
        if not c._parent_ids:
            self._roots[c.id] = None
        p.mark_changed(f"unlinked child {c.id}")

    # -- change cascade ---------------------------------------------------------------

    def record_change(self, node: Node, trace: Trace) -> None:
        """Record a node's change and notify its ancestors (deferred inside a batch)."""
        self.clock += 1
        node.seq = self.clock
        # TraceLog.append inlined: a call per change and ancestor cost ~4 % of a cascade.
        # Retention is checked once per direct change, not per ancestor's derived one.
        self._kept_traces.append(trace)
        if self._notifying:
            return  # an ancestor reacting to a notification: its ancestors come next anyway
        if len(self._kept_traces) >= self.traces._next_trim:
            self.traces.trim()
        if self._batch_depth:
            self._batch_origins.setdefault(node.id, node)
            self._batch_descriptions.append(trace.description)
        else:
            self._notify([node.id], trace.description)

    def notify_ancestors(self, node: Node, description: str) -> None:
        """Notify the ancestors of ``node`` of a change without recording one."""
        if self._batch_depth:
            self._batch_origins.setdefault(node.id, node)
            self._batch_descriptions.append(description)
        else:
            self._notify([node.id], description)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Defer notifications; on exit notify each affected ancestor exactly once."""
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if not self._batch_depth:
                self.flush()

    def flush(self) -> list[Node]:
        """Notify the ancestors of the changes collected in a batch; return them in order."""
        origins = [i for i in self._batch_origins if i in self._nodes]
        descriptions = self._batch_descriptions
        self._batch_origins, self._batch_descriptions = {}, []
        if not origins:
            return []
        summary = descriptions[0] if len(descriptions) == 1 else f"{len(descriptions)} changes"
        return self._notify(origins, summary)

    def _notify(self, origins: Sequence[str], description: str) -> list[Node]:
        order, via = self._upward_order(origins)
        notified: list[Node] = []
        self._notifying = True
        try:
            for nid in order:
                node = self._nodes[nid]
                node.on_child_changed(self._nodes[via[nid]], description)
                notified.append(node)
        finally:
            self._notifying = False
        return notified

    def _upward_order(self, origins: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """Ancestors of ``origins`` (excluding them), each once, children before parents.

        Also returns, per ancestor, the first child through which a change reached it.
        Costs O(edges among the ancestors), whatever the fan-out of the nodes involved.
        """
        nodes = self._nodes  # a node's parents are in the node (see ._adjacency)
        # An origin that is an ancestor of another origin is notified too (it is reached
        # as a parent below); only origins that are no one's ancestor stay out.
        seen: set[str] = set()
        found: list[str] = []
        frontier = list(origins)
        while frontier:
            upper: list[str] = []
            for nid in frontier:
                for parent in nodes[nid]._parent_ids:
                    if parent not in seen:
                        seen.add(parent)
                        upper.append(parent)
            found += upper
            frontier = upper
        via: dict[str, str] = {}
        if not found:
            return found, via
        # Kahn's algorithm over the ancestors: a node is ready once every affected child of
        # it has been processed (origins that are no one's ancestor count as processed).
        pending = dict.fromkeys(found, 0)
        for nid in found:
            for parent in nodes[nid]._parent_ids:
                pending[parent] += 1
        for origin in origins:
            for parent in nodes[origin]._parent_ids:
                if parent not in via:
                    via[parent] = origin
        order = [nid for nid in found if not pending[nid]]
        i = 0
        while i < len(order):  # ``order`` is also the queue of ready nodes
            nid = order[i]
            i += 1
            for parent in nodes[nid]._parent_ids:
                if parent not in via:
                    via[parent] = nid
                left = pending[parent] - 1
                pending[parent] = left
                if not left:
                    order.append(parent)
        return order, via

    # -- scheduling -------------------------------------------------------------------

    def schedule_changed(self, node: Node) -> None:
        """Keep :attr:`scheduled` (running nodes with a tick frequency) up to date, or
        tell :attr:`watcher` whether a node with a watch path runs."""
        running = node.mode == "running" and node.frequency.kind != "never"
        if self.watcher is not None and node.watch_path() is not None:
            self.watcher(node, running)
        elif running:
            self.scheduled[node.id] = node
        else:
            self.scheduled.pop(node.id, None)

    # -- structure checkpoints --------------------------------------------------------

    def checkpoint(self, name: str) -> StructureCheckpoint:
        """Save the structure (ordered edges, root order, node states) under ``name``.

        The checkpoint is copy on write (see :class:`StructureCheckpoint`): this costs a
        copy of the node table and one byte per node, not a copy of every edge.

        Raises:
            CheckpointError: ``name`` is not a non-empty string.
        """
        if not isinstance(name, str) or not name:
            raise CheckpointError(
                f"checkpoint name must be a non-empty string, got {name!r}", value=name
            )
        saved = StructureCheckpoint._live(name, self)
        self._forget(name)
        self._checkpoints[name] = saved
        self._watching.append(saved)
        return saved

    def _forget(self, name: str) -> None:
        old = self._checkpoints.pop(name, None)
        if old is not None and old._graph is self:
            self._retire(old)

    def _retire(self, saved: StructureCheckpoint) -> None:
        """Stop reporting changes to a live checkpoint (and keeping traces for it)."""
        self._watching.remove(saved)
        if saved._cursor is not None:
            self.traces.release(saved._cursor)
        saved._graph = saved._cursor = None

    def _children_changing(self, parent_id: str) -> None:
        """Hand the children of ``parent_id`` to the live checkpoints before they change."""
        if self._watching:
            kids = self._adj.succ[parent_id]
            for saved in self._watching:
                saved._changing(parent_id, kids)

    def checkpoints(self) -> list[str]:
        """Names of the saved structure checkpoints, oldest first."""
        return list(self._checkpoints)

    def get_checkpoint(self, name: str) -> StructureCheckpoint:
        """Return a saved checkpoint. Raises CheckpointError for unknown names."""
        try:
            return self._checkpoints[name]
        except (KeyError, TypeError):
            known = ", ".join(map(repr, self._checkpoints)) or "none"
            raise CheckpointError(
                f"unknown checkpoint {name!r}; saved: {known}", value=name
            ) from None

    # -- persistence ------------------------------------------------------------------

    def dump(self) -> GraphData:
        """The graph's whole state as :class:`~dagctx.graph.GraphData`: nodes, edges with
        both orders, root order, structure checkpoints, clock, id counters and the kept
        traces. Node objects are shared, not copied."""
        return dump_graph(self)

    def load(self, data: GraphData) -> None:
        """Give this new graph the state ``data`` holds (what :meth:`dump` returned).

        The graph must be new: no edges, no checkpoints, and no nodes but some of
        ``data.nodes`` (a session adds them first, to index them); the others are added.
        No version is bumped and no trace recorded; the trace log takes ``data.traces``
        (from position ``data.trace_start``) under a new identity.

        Raises:
            GraphLoadError: the data breaks an invariant (an unknown or repeated id, a
                repeated edge, a cycle, roots that are not the parentless nodes, a clock
                or counter out of range) or the graph is not new; nothing changed then.
        """
        load_graph(self, data)

    def put_checkpoint(self, checkpoint: StructureCheckpoint) -> None:
        """Store a checkpoint built elsewhere (used when loading a saved session)."""
        self._forget(checkpoint.name)
        self._checkpoints[checkpoint.name] = checkpoint

    def restore(self, name: str) -> list[str]:
        """Put back the structure saved under ``name``; return ids of nodes created since.

        Nodes created after the checkpoint survive as roots (after the saved roots, those
        that were roots first, in root order, then the others in the graph's node order,
        where a node an earlier restore brought back counts from its return);
        nodes removed since come back. Parents whose children differ and nodes whose
        state differs get a version bump, so caches stay valid. A live checkpoint only
        revisits the parents whose children changed since.

        Raises:
            CheckpointError: no checkpoint has that name (nothing changes).
        """
        return restore_structure(self, self.get_checkpoint(name))
