"""A clean build of the site as ``mkdocs serve`` makes it, in a fresh process (the reference the incremental
preview is compared with): ``python tests/site/serve_reference.py SITE_DIR SERVE_URL`` from the repository.

Plugins are started with ``command="serve"`` and the site URL is the server's, as ``mkdocs serve`` does; the
problems banner is left out of the files, as under ``python -m llmsite serve`` (its server adds it).
"""

from __future__ import annotations

import logging
import sys

from mkdocs.commands.build import build
from mkdocs.config import load_config


def main() -> int:
    logging.basicConfig(level=logging.ERROR)
    site_dir, url = sys.argv[1], sys.argv[2]
    config = load_config(site_dir=site_dir)
    config.plugins.on_startup(command="serve", dirty=False)
    config.plugins["llmsite"].banner_in_pages = False
    config.site_url = url
    build(config, serve_url=url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
