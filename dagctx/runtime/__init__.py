"""What runs beside a session in the operating system: processes and the coordination store.

:mod:`.processes` runs one command in its own process group (capped output, timeout,
kill of the whole group); :mod:`.coordination` keeps the work claims that agents sharing a
tree all see (in SQLite), :mod:`.coordination_pg` those of agents on several machines (in
PostgreSQL). None of them knows about nodes, graphs or sessions.
"""
