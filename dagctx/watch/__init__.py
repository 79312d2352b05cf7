"""A directory tree as part of a session: the scan, the ignore rules and live watching.

:mod:`.ignore` decides which paths a tree takes in (git's rules and tracked files, one
:class:`~dagctx.watch.ignore.TreeFilter` for the scan and the watcher; patterns compiled by
:mod:`.patterns`); :mod:`.steering` holds the user's include / exclude globs and priority /
state rules; :mod:`.scan` turns a tree into directory groups and text nodes;
:mod:`.tracker` maps file-system events to node changes; :mod:`.loop` gives
``Session.watch()`` (watchfiles, batching, one tick per batch). This package changes the
graph only through the session's public verbs; rendering and writing files belongs to
:mod:`dagctx.cli.watch`.
"""
