"""The parts of a :class:`~dagctx.session.Session` that hold state, one class per module.

:class:`~dagctx.session.core.SessionCore` creates them in ``__init__`` in this order, and
``Session.close()`` closes them in the reverse order (each part may use the ones created
before it, never the ones after it):

1. :class:`~.runner.BackgroundRunner`: the event loop on its own thread (anyio's
   blocking portal) that runs commands, lock waits and MCP sessions;
2. :class:`~.intake.Intake`: results queued by that background work, and changed file
   paths, until the next tick applies them;
3. :class:`~.jobs.Jobs`: shell commands and locks (run on 1, report into 2);
4. :class:`~.mcp.MCPClients`: MCP servers by name and their live connections (on 1,
   reporting into 2);
5. :class:`~.work.Coordination`: the session's work board (agent + coordination store;
   the store is opened on first use, not by creating the part);
6. :class:`~.files.FileWatch`: the running file nodes and the OS watches (inotify) that
   tell the tick which of their files changed (the instance is opened at the first tick).

A part knows nothing of ``Session``: it gets the parts it uses as constructor arguments
and is driven by the verbs (:mod:`dagctx.session.jobs`, ...). Must not import
:mod:`dagctx.session.core` or any verb module.
"""
