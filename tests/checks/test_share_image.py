"""``image:`` in front matter: the article's own share image, a PNG/JPEG/WebP file under docs/."""

from __future__ import annotations

import pytest

from .conftest import ARTICLE, META, Repo


def test_an_existing_image_under_docs_is_accepted(repo: Repo) -> None:
    (repo.root / "docs" / "assets" / "images").mkdir(parents=True, exist_ok=True)
    (repo.root / "docs" / "assets" / "images" / "sample.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    repo.article(meta=META + "image: assets/images/sample.png\n")
    assert repo.check().code == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("assets/images/missing.png", "image 指向的文件不存在"),
        ("https://example.org/x.png", "image 只能指向 docs/ 下的文件"),
        ("../../etc/x.png", "image 只能指向 docs/ 下的文件"),
        ("/etc/x.png", "image 只能指向 docs/ 下的文件"),
        ("assets/images/x.svg", "不是 PNG、JPEG 或 WebP 图片的路径"),
        ('x.png" onerror="alert(1)', "不是 PNG、JPEG 或 WebP 图片的路径"),
        ("[1, 2]", "image 应是图片路径"),
    ],
)
def test_bad_images_are_reported_at_their_line(repo: Repo, value: str, message: str) -> None:
    line = META.count("\n") + 2
    rendered = value if value.startswith("[") else f"'{value}'"
    repo.article(meta=META + f"image: {rendered}\n")
    result = repo.check()
    assert result.code == 1
    assert any(row.startswith(f"{ARTICLE}:{line}: ") and message in row for row in result.out.splitlines()), result.out
