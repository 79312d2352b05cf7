"""Session verbs, one mixin class per concern; :class:`~dagctx.session.Session` inherits them.

Each module owns the verbs of one family of nodes and the per-session state they need;
:mod:`.host` declares (for type checkers only) the parts of ``Session`` they use.
"""
