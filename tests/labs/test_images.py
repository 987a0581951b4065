"""llmsite/labs/images.py: base64 plots out of a lab's page, into files named by their content."""

from __future__ import annotations

import base64
import hashlib

import pytest

from llmsite.labs import images

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20  # any bytes: the page only carries them
OTHER = b"\x89PNG\r\n\x1a\n" + b"\x01" * 20


def tag(data: bytes, kind: str = "png") -> str:
    encoded = base64.b64encode(data).decode()
    return f'<img alt="图" class="" height="351" src="data:image/{kind};base64,{encoded}" width="811"/>'


def test_each_image_becomes_a_file_named_by_its_digest() -> None:
    body = f"<p>前</p>{tag(PNG)}<p>中</p>{tag(OTHER, 'jpeg')}{tag(PNG)}"
    out = images.extract(body, "动手实验 x")
    png = hashlib.sha256(PNG).hexdigest()[:16] + ".png"
    jpg = hashlib.sha256(OTHER).hexdigest()[:16] + ".jpg"
    assert out.files == {png: PNG, jpg: OTHER}  # the repeated plot is one file
    assert "data:" not in out.body and out.body.count(f'src="{png}"') == 2
    assert (f'<img alt="图" class="" height="351" src="{png}" width="811" loading="lazy" decoding="async"/>'
            in out.body)
    assert out.body.startswith("<p>前</p>") and "<p>中</p>" in out.body
    linked = images.link(out.body, out.files, lambda name: f"../x/{name}")
    assert linked.count(f'src="../x/{png}"') == 2 and f'src="../x/{jpg}"' in linked


def test_the_same_page_gives_the_same_files_and_body() -> None:
    body = tag(PNG) + tag(OTHER)
    assert images.extract(body, "x") == images.extract(body, "x")


def test_a_page_without_inline_images_is_left_alone() -> None:
    body = '<img alt="标志" src="../../assets/images/logo.svg"><p>没有图</p>'
    out = images.extract(body, "x")
    assert out.body == body and out.files == {}


def test_an_existing_loading_attribute_is_kept() -> None:
    body = tag(PNG).replace(' width="811"', ' width="811" loading="eager"')
    out = images.extract(body, "x")
    assert 'loading="eager"' in out.body and 'loading="lazy"' not in out.body


def test_broken_base64_names_the_lab_and_the_image() -> None:
    body = tag(PNG) + '<img alt="坏" src="data:image/png;base64,abc" width="1" height="1">'
    with pytest.raises(images.ImageError, match=r"动手实验 attention_lab：第 2 张图"):
        images.extract(body, "动手实验 attention_lab")
