"""The Zensical adapter's own pieces, without a build: the links of raw HTML blocks, the staged mkdocs.yml."""

from __future__ import annotations

import posixpath
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from llmsite.content.render import _href, url_for
from llmsite.mkdocs.config import SiteConfig
from llmsite.zensical import build, config, stage
from llmsite.zensical.extension import rebase

ROOT = Path(__file__).resolve().parents[2]

# (source of the page, a page it links to): the listing pages and the other pages the route and cards link from
PAIRS = [
    ("route.md", "articles/grpo.md"), ("route.md", "labs/grpo_lab.ipynb"), ("index.md", "articles/decoding.md"),
    ("index.md", "tags.md"), ("articles/index.md", "articles/llama-block.md"), ("articles/index.md", "tags.md"),
    ("articles/page/2.md", "articles/bpe-tokenizer.md"), ("articles/page/2.md", "articles/index.md"),
    ("articles/page/2.md", "tags.md"), ("articles/grpo.md", "articles/decoding.md"), ("about.md", "route.md"),
    ("route.md", "route.md"),
]


def _zensical_resolves(href: str, source_uri: str) -> str:
    """Where Zensical takes a relative link it finds in a page: relative to the folder of the page's source."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(source_uri), href))


@pytest.mark.parametrize(("uri", "target"), PAIRS)
def test_a_rebased_link_leads_where_the_mkdocs_link_leads(uri, target):
    page_url, target_url = url_for(uri), url_for(target)
    mkdocs_href = _href(uri, target_url)  # what render.py writes into raw HTML for MkDocs
    assert posixpath.normpath(posixpath.join(page_url, mkdocs_href)) == posixpath.normpath(target_url or ".")
    html = f'<p><a href="{mkdocs_href}" class="x">t</a><img alt="" src="{mkdocs_href}"></p>'
    out = rebase(html, page_url, uri)
    hrefs = [part.split('"')[0] for part in out.split('href="')[1:] + out.split('src="')[1:]]
    assert len(hrefs) == 2
    for href in hrefs:
        assert _zensical_resolves(href, uri) == posixpath.normpath(target_url or "."), (uri, target, href)
        assert href.endswith("/") == mkdocs_href.endswith("/")


@pytest.mark.parametrize("href", ["https://example.org/a/", "//cdn.example/x.js", "/abs/", "#frag", "mailto:a@b.c",
                                  "", "?q=1", "data:image/png;base64,AAAA"])
def test_what_is_not_a_relative_link_is_left_alone(href):
    html = f'<a href="{href}">x</a>'
    assert rebase(html, "route/", "route.md") == html


def test_a_link_keeps_its_query_and_fragment():
    out = rebase('<a href="../tags/#tag:对齐">x</a>', "articles/", "articles/index.md")
    assert out == '<a href="../tags/#tag:对齐">x</a>'  # the folder of articles/index.md is its URL's folder
    out = rebase('<a href="../articles/x/?h=a#b">x</a>', "route/", "route.md")
    assert out == '<a href="articles/x/?h=a#b">x</a>'


def test_blocks_keep_every_byte_of_the_file():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    parts = config.blocks(text)
    assert "".join(block for _, block in parts) == text
    keys = [key for key, _ in parts if key]
    assert {"site_name", "theme", "nav", "plugins", "markdown_extensions", "extra_css"} <= set(keys)
    assert len(keys) == len(set(keys))


def test_the_staged_config_is_the_sites_with_the_adapters_changes(tmp_path):
    staging = tmp_path / "stage"
    text = config.staged(ROOT, staging, staging / "docs", staging / "site", stage.page_uri, stage.STYLESHEET)
    values = yaml.load(text, Loader=config._Loader)  # noqa: S506 - a SafeLoader subclass
    mine = config.read(ROOT / "mkdocs.yml")
    assert values["docs_dir"] == "docs" and values["site_dir"] == "site"
    assert values["theme"]["custom_dir"] == "overrides" and values["theme"]["variant"] == "classic"
    assert values["site_name"] == mine["site_name"] and values["theme"]["palette"] == mine["theme"]["palette"]
    assert [p if isinstance(p, str) else next(iter(p)) for p in values["plugins"]] == ["search", "tags"]
    assert values["markdown_extensions"][-1] == "llmsite.zensical.extension"
    snippets = {"pymdownx.snippets": {"base_path": [str(ROOT)], "check_paths": True}}  # absolute: any working folder
    assert values["markdown_extensions"][:-1] == [
        snippets if isinstance(e, dict) and "pymdownx.snippets" in e else e for e in mine["markdown_extensions"]]
    assert values["extra_css"] == [*mine["extra_css"], stage.STYLESHEET]
    assert values["extra_javascript"] == mine["extra_javascript"]
    notes = next(item for item in values["nav"] if isinstance(item, dict) and "大模型学习笔记" in item)
    stages = [next(iter(s)) for s in notes["大模型学习笔记"] if isinstance(s, dict) and "阶段" in next(iter(s))]
    assert len(stages) == 4
    pages = [p for s in notes["大模型学习笔记"] if isinstance(s, dict) for v in s.values() if isinstance(v, list)
             for p in v]
    assert "articles/grpo.md" in pages and "labs/grpo_lab.md" in pages  # a lab is a Markdown page there


def test_a_config_without_what_the_adapter_changes_is_refused(tmp_path):
    root = tmp_path / "site"
    (root / "data").mkdir(parents=True)
    (root / "data" / "route.yml").write_bytes((ROOT / "data" / "route.yml").read_bytes())
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    (root / "mkdocs.yml").write_text(text.replace("  custom_dir: overrides\n", ""), encoding="utf-8")
    with pytest.raises(config.ConfigError, match="custom_dir"):
        config.staged(root, tmp_path / "s", tmp_path / "s" / "docs", tmp_path / "s" / "site", stage.page_uri, "x.css")


def test_the_plugin_options_are_read_as_the_mkdocs_plugin_reads_them():
    values = config.read(ROOT / "mkdocs.yml")
    options = config.plugin_options(values)
    written = next(item["llmsite"] for item in values["plugins"] if isinstance(item, dict) and "llmsite" in item)
    assert written, "mkdocs.yml sets some options: the loop below checks them"
    for key, value in written.items():
        assert getattr(options, key) == value
    mkdocs = SiteConfig(config_file_path="mkdocs.yml")
    mkdocs.load_dict(dict(written))
    assert mkdocs.validate() == ([], [])
    assert dict(mkdocs) == asdict(options), "the MkDocs plugin sees the same options, defaults included"
    # an option mkdocs.yml leaves out gets the one default both adapters read (llmsite.options)
    assert config.plugin_options({"plugins": ["search", {"llmsite": None}]}).articles_per_page == 20


@pytest.mark.parametrize(("options", "named"), [
    ({"articles_per_page": "many"}, "articles_per_page"),
    ({"latest_on_hom": 3}, "latest_on_hom"),
    ({"pdf": "yes please"}, "pdf"),
    ({"pdf": 1}, "pdf"),
    ({"articles_per_page": True}, "articles_per_page"),
])
def test_a_wrong_plugin_option_stops_both_builds_naming_it(options, named):
    with pytest.raises(config.ConfigError, match=f"mkdocs.yml.*{named}"):
        config.plugin_options({"plugins": [{"llmsite": options}]})
    mkdocs = SiteConfig(config_file_path="mkdocs.yml")
    mkdocs.load_dict(options)
    errors, warnings = mkdocs.validate()  # mkdocs build --strict stops on either
    assert [key for key, _ in errors + warnings] == [named]


def test_a_plugin_block_that_is_not_a_mapping_stops_the_build():
    with pytest.raises(config.ConfigError, match="映射"):
        config.plugin_options({"plugins": [{"llmsite": ["pdf"]}]})


@pytest.mark.parametrize(("reported", "shown"), [
    ("Python error: BuildStop: docs/articles/x.md: 引用了没有声明的图 y\nTraceback (most recent call last):\n  ...",
     "docs/articles/x.md: 引用了没有声明的图 y"),
    ("Python error: KeyError: 'html'\nTraceback ...", "KeyError: 'html'"),
    ("could not render include: error in \"partials/x.html\"", "could not render include: error in \"partials/x.html\""),
    ("", "Zensical 没有说明原因"),
])
def test_a_failed_callback_is_reported_in_one_line(reported, shown):
    assert build._callback_error(reported) == shown


def test_without_zensical_installed_the_build_says_what_to_do(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "zensical", None)  # import zensical raises ImportError
    assert build.main([]) == 1
    err = capsys.readouterr().err
    assert "没有装 Zensical" in err and "make setup" in err and "Traceback" not in err


def test_a_feature_that_stops_before_zensical_runs_ends_the_build_in_one_message(monkeypatch, capsys):
    """A figure, lab or model that fails while the build prepares (``plan()``, before Zensical starts) raises
    ``BuildStop``, as it does under MkDocs: the command says why and exits 1, without a traceback."""
    from llmsite.problems import BuildStop

    def stop(*args, **kwargs):
        raise BuildStop("生成文章插图失败：\ncode/figures/x.py:12: ZeroDivisionError")

    monkeypatch.setattr(build, "build", stop)
    assert build.main([]) == 1
    err = capsys.readouterr().err
    assert "Zensical 构建停止" in err and "code/figures/x.py:12: ZeroDivisionError" in err and "Traceback" not in err


def test_the_suite_builds_the_zensical_site_with_mkdocs_unimportable():
    """``zensical_site`` (tests/conftest.py) runs the build under this blocker: it must refuse what it says it does."""
    from tests import without_mkdocs

    blocker = without_mkdocs.Blocker()
    for name in ("mkdocs", "mkdocs.config.config_options", "material", "material.plugins.search", "properdocs"):
        with pytest.raises(ModuleNotFoundError, match="must not need it"):
            blocker.find_spec(name)
    for name in ("markdown", "pymdownx.superfences", "zensical", "mkdocs_jupyter.nbconvert2", "llmsite.zensical"):
        assert blocker.find_spec(name) is None
