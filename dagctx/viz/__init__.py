"""``dagctx viz``: see where a projection's tokens went.

- `treemap`: the squarified layout (pure geometry);
- `page`: the page as one self-contained HTML document (`Projection.to_html`);
- `server`: the live page of a session, pushed after each tick (``dagctx viz``,
  ``dagctx watch --viz``); it alone imports the web server libraries (Starlette,
  uvicorn), and only the commands that serve the page import it.

Nothing here changes how a projection is built: the package reads `Projection` and, for
the live page, calls the graph tools' verbs on the session.
"""
