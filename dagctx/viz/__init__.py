"""``dagctx viz``: see where a projection's tokens went.

- `treemap`: the squarified layout (pure geometry);
- `page`: the page as one self-contained HTML document (`Projection.to_html`).

Nothing here changes how a projection is built: the package reads `Projection`.
"""
