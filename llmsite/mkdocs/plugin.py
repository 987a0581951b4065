"""The ``llmsite`` MkDocs plugin: every event of the build wired in one place.

The parts are created once per build in ``on_config`` / ``on_files`` and kept on the plugin
(no module globals); each event calls them in the order written here, so nothing depends on
the order of a ``hooks:`` list. The work itself is in the MkDocs-independent package
(``llmsite.content``, ``llmsite.figures``, ``llmsite.labs``): these methods only translate.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority

from llmsite import csp, minify, offline, paths, presettle, stylesheets
from llmsite.cache import deps
from llmsite.content import feed
from llmsite.content.articles import Site, body_with_snippets
from llmsite.content.dates import RevisionDates
from llmsite.content.memo import MEMO_DIR, ArticleMemo
from llmsite.extension import Adapter, Features, SiteExtension
from llmsite.features.exercises import Exercises
from llmsite.features.figures import Figures
from llmsite.features.labs import Labs
from llmsite.features.listings import Listings
from llmsite.features.playground import Playground
from llmsite.mkdocs import content, formulas, search_index
from llmsite.mkdocs import files as generated_files
from llmsite.mkdocs.banner import Banner, is_warning
from llmsite.mkdocs.config import SiteConfig
from llmsite.mkdocs.vendor import check_katex
from llmsite.problems import BuildStop

log = logging.getLogger("mkdocs.plugins.llmsite")
SEARCH_MEMO = paths.CACHE / "search"  # the rewritten search index, by the digest of Material's (search_index)
CSP_HASHES = paths.CACHE / "csp" / "hashes.json"  # the inline scripts the previous build found (llmsite.csp)


class SitePlugin(BasePlugin[SiteConfig]):
    supports_multiple_instances = False

    def __init__(self) -> None:
        self.serving = False
        self.site: Site | None = None
        # The articles' parse and checks, remembered while their inputs are unchanged (llmsite.content.memo):
        # from the previous build through the cache, and under serve across rebuilds (MkDocs keeps plugins
        # that have on_startup).
        self.memo: ArticleMemo | None = None
        self.dates: RevisionDates | None = None
        self.listings: Listings | None = None
        self.figures = Figures(serving=False)
        self.exercises = Exercises(self.figures, serving=False)
        self.labs = Labs(serving=False)
        self.playground = Playground(serving=False)  # trained models that run in the browser
        self.banner = Banner()
        self.csp: csp.Policy | None = None  # this build's Content-Security-Policy (not under serve)
        self.early = ""  # the last script in <head> (llmsite.presettle), for this build's palette
        self.stylesheets: stylesheets.Bundle | None = None  # one stylesheet per page (not under serve)
        # Under ``python -m llmsite serve`` the server adds the banner to the HTML it sends (the written pages
        # stay identical to a clean build); under ``mkdocs serve`` it is written into every page.
        self.banner_in_pages = True
        self.rendering: Any = None  # the page MkDocs is rendering (between on_page_markdown and on_page_content)
        self.rendering_with: tuple[Any, bool] = (None, False)  # its build's files; whether it has 「提问」 slots

    # ------------------------------------------------------------------ set-up

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.serving = command == "serve"
        self.memo = None  # restored from the build cache by the first on_files

    def on_config(self, config: Any) -> Any:
        root = Path(config.config_file_path).resolve().parent
        if root != paths.ROOT:
            raise PluginError(
                f"llmsite 从 {paths.ROOT} 导入，但正在构建 {root}。请在站点的目录里用 `python -m mkdocs ...` 运行"
                "（当前目录在导入路径的最前面，导入的就是这个站点自己的 llmsite）。"
            )
        docs = Path(config["docs_dir"])
        check_katex(docs)
        content.nav_sections(config, root)
        self.dates = RevisionDates(docs)
        self.figures = Figures(serving=self.serving, enabled=self.config.figures)
        self.exercises = Exercises(self.figures, serving=self.serving)  # answers come from the figure step
        self.labs = Labs(serving=self.serving)
        self.playground = Playground(serving=self.serving)
        # not under serve: its live-reload script is injected after the build and would be blocked
        on = self.config.content_security_policy and not self.serving
        self.csp = csp.Policy(config, CSP_HASHES) if on else None
        self.early = presettle.early_script(config["theme"].get("palette"))
        # a preview keeps the stylesheets as separate files, as it keeps them unminified
        base = urlsplit(config.get("site_url") or "").path or "/"
        self.stylesheets = None if self.serving else stylesheets.Bundle(base)
        # the pages' markers, lab bodies and settled markup (llmsite.extension, shared with the other builders)
        config["markdown_extensions"] = [e for e in config["markdown_extensions"] if not isinstance(e, SiteExtension)]
        config["markdown_extensions"].append(SiteExtension(_Adapter(self)))
        return config

    @event_priority(100)  # before other plugins read the files (the tags plugin, search)
    def on_files(self, files: Any, *, config: Any) -> Any:
        if self.memo is None:
            self.memo = ArticleMemo.restore(MEMO_DIR)
        self.site = content.load(paths.ROOT, self.serving, memo=self.memo)
        if self.memo.misses:  # something was checked afresh: the next build (or process) starts from here
            self.memo.store(MEMO_DIR)
        self.listings = Listings(self.site, self.config.articles_per_page, self.config.latest_on_home,
                                 self.config.pdf)
        try:
            generated = self.listings.plan()
            with deps.build_snapshot():  # code/ listed and digested once for every key of this build
                generated += self.figures.plan()
                generated += self.labs.plan()
                generated += self.playground.plan()  # after the figures: the models they trained are cached
        except BuildStop as exc:
            raise PluginError(str(exc)) from exc
        generated_files.add(files, config, generated)
        self.banner = Banner()  # this build's problems only (the incremental preview runs on_files on every save)
        self.banner.add(self.site.problems + self.figures.problems() + self.labs.problems())
        for problem in self.site.problems:  # figures and labs log their own failures
            (log.warning if is_warning(problem) else log.error)("%s", problem)
        return files

    def on_nav(self, nav: Any, *, config: Any, files: Any) -> Any:
        content.link_neighbours(self._site(), nav)
        return nav

    # ------------------------------------------------------------------ pages

    def on_page_markdown(self, markdown: str, *, page: Any, config: Any, files: Any) -> str:
        site = self._site()
        content.page_values(site, page)
        if self.dates is not None:
            self.dates.apply(page, site.by_uri(page.file.src_uri))
        # MkDocs renders the page next: llmsite.extension expands its markers then, and settles its HTML
        self.rendering = page
        self.rendering_with = (files, bool(config.get("repo_url")))
        return markdown

    def on_page_content(self, html: str, *, page: Any, config: Any, files: Any) -> str:
        self.rendering = None
        return html

    @event_priority(-50)  # after Material's search plugin has indexed the page's text (formulas as TeX)
    def on_page_context(self, context: Any, *, page: Any, config: Any, nav: Any) -> Any:
        edit_url = self.labs.edit_url(page.file.src_uri, config.get("repo_url"), config.get("edit_uri"))
        if edit_url is not None:
            page.edit_url = edit_url
        page.content = formulas.page_content(page.content, page, serving=self.serving)  # KaTeX's HTML
        return context

    @event_priority(-100)  # last: the policy lists the inline scripts of the page as it is written
    def on_post_page(self, output: str, *, page: Any, config: Any) -> str:
        output = self._one_stylesheet(output, page.url, page.file.src_uri)
        output = presettle.inject(output, self.early)  # after every stylesheet
        if self.banner_in_pages:  # problems exist only under serve: a build stopped on them
            output = self.banner.inject(output)
        return self._csp_meta(output)

    @event_priority(-100)
    def on_post_template(self, output_content: str, *, template_name: str, config: Any) -> str:
        if not template_name.endswith(".html"):
            return output_content
        output_content = self._one_stylesheet(output_content, template_name, template_name)
        output_content = presettle.inject(output_content, self.early)
        if self.banner_in_pages:
            output_content = self.banner.inject(output_content)
        return self._csp_meta(output_content)

    # ------------------------------------------------------------------ after the build

    @event_priority(-100)  # after Material's search plugin has written the index, after every page is written
    def on_post_build(self, *, config: Any) -> None:
        site_dir = Path(config["site_dir"])
        feed.write(self._site(), config)
        if not self.serving:  # a published index is compacted and kept within its budget; the preview's need not be
            search_index.rewrite(site_dir, self.config.search_index_budget_kb, SEARCH_MEMO)
        if self.csp is not None:
            rewritten = self.csp.finish(site_dir)
            log.debug("content security policy: %d pages rewritten (none when the guess was right)", rewritten)
        if not self.serving:  # readers get the site's own scripts and styles without comments (a preview keeps them)
            minify.minify_site(site_dir, Path(config["docs_dir"]))
        if self.stylesheets is not None:  # after minify: the bundle holds the sheets as readers get them
            size = self.stylesheets.write(site_dir)
            log.debug("stylesheets: %s, %d bytes", stylesheets.BUNDLE, size)
        if not self.serving:  # a preview must stay fresh: no service worker, no offline list (llmsite/offline.py)
            kept = offline.write(site_dir)
            log.debug("offline reading: %d files, %d bytes", len(kept["files"]), kept["bytes"])

    def _one_stylesheet(self, html: str, url: str, where: str) -> str:
        if self.stylesheets is None:
            return html
        try:
            return self.stylesheets.link(html, url, where)
        except stylesheets.StylesheetError as exc:
            raise PluginError(str(exc)) from exc

    def on_serve(self, server: Any, *, config: Any, builder: Any) -> Any:
        self.labs.watch(server)
        return server

    # ------------------------------------------------------------------ the incremental preview

    def page_inputs(self, file: Any) -> str:
        """A digest of everything a page is built from, as far as this plugin knows: its source, its article's
        model (values, route position, neighbours), the code it includes, what its listing markers, figure
        markers and exercises (with their computed answers) expand to and its lab's cached body.
        ``llmsite.mkdocs.incremental`` re-renders a page when this changes."""
        site = self._site()
        source = file.content_string
        article = site.by_uri(file.src_uri)
        parts = [file.src_uri, source, repr(article)]
        if article is not None:  # the end of the article names the route's next article (template_values)
            following = site.articles.get(article.next or "")
            parts.append(following.title if following is not None else "")
        if self.listings is not None and "<!--" in source:
            parts.append(self.listings.expand(source, file.src_uri))
        if "8<" in source:  # the code it includes from code/ (pymdownx.snippets)
            parts.append(body_with_snippets(source, 1, file.src_uri, paths.ROOT)[0])
        if "figure:" in source and file.page is not None:
            parts.append(self.figures.expand(source, file.page))
        if "playground" in source and file.page is not None:  # the model's size and address in its placeholder
            parts.append(self.playground.expand(source, file.page))
        if "```exercise" in source:  # the exercises with their computed answers
            parts.append(self.exercises.expand(source, file.src_uri, source, quiet=True))
        parts.append(self.labs.page_inputs(file.src_uri))
        if self.dates is not None:
            parts.append(self.dates.of(file.src_uri) or "")
        return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()

    # ------------------------------------------------------------------ helpers

    def _site(self) -> Site:
        if self.site is None:
            raise PluginError("llmsite: 文章模型还没有读入（on_files 没有运行）")
        return self.site

    def _csp_meta(self, output: str) -> str:
        return self.csp.add(output) if self.csp is not None else output


class _Adapter(Adapter):
    """The page MkDocs is rendering and this build's feature objects, for ``llmsite.extension``."""

    def __init__(self, plugin: SitePlugin) -> None:
        self.plugin = plugin

    def rendering(self, md: Any) -> Any:
        return self.plugin.rendering

    def features(self) -> Features:
        p = self.plugin
        return Features(site=p._site(), listings=p.listings, exercises=p.exercises, playground=p.playground,
                        figures=p.figures, labs=p.labs, ask=p.rendering_with[1])

    def target_url(self, uri: str) -> str | None:
        found = self.plugin.rendering_with[0].get_file_from_path(uri)
        return None if found is None else found.url

    def stopped(self, exc: BuildStop) -> None:
        raise PluginError(str(exc)) from exc
