"""A lab's plots as image files beside its page, instead of base64 inside its HTML (issue 29).

nbconvert writes each plot of an executed notebook as ``<img src="data:image/png;base64,...">``: the attention
lab's page was 549 kB (316 kB gzip, PNG hardly compresses), all of it needed before the first paint on a phone.
Here every such image becomes a file named by its content's digest (``<sha256[:16]>.png``); the page refers to
it by a relative URL and lets the browser load it when it comes near the screen (``loading="lazy"``; the
converter's ``width`` and ``height`` stay, so nothing moves when it arrives). Same notebook, same files and the
same page, byte for byte. Pure functions: the MkDocs adapter adds the files to the site.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

_DATA_IMG = re.compile(
    r'<img(?P<before>[^>]*?) src="data:image/(?P<type>png|jpeg|gif|webp);base64,(?P<data>[A-Za-z0-9+/=\s]+)"'
    r"(?P<after>[^>]*?)(?P<end>/?>)"
)
_SUFFIX = {"png": ".png", "jpeg": ".jpg", "gif": ".gif", "webp": ".webp"}


class ImageError(ValueError):
    pass


@dataclass(frozen=True)
class Extracted:
    body: str  # the page body, each data URI replaced by a placeholder URL (see ``link``)
    files: dict[str, bytes]  # file name -> bytes, in the order the page shows them


def extract(body: str, where: str) -> Extracted:
    """Take the base64 images out of ``body``; ``where`` names the lab in error messages."""
    files: dict[str, bytes] = {}

    def replace(match: re.Match[str]) -> str:
        try:
            data = base64.b64decode("".join(match.group("data").split()), validate=True)
        except binascii.Error as exc:
            raise ImageError(f"{where}：第 {len(files) + 1} 张图的 base64 数据读不出来（{exc}）") from exc
        name = hashlib.sha256(data).hexdigest()[:16] + _SUFFIX[match.group("type")]
        files[name] = data
        attrs = match.group("before") + match.group("after")
        lazy = "" if " loading=" in attrs else ' loading="lazy"'
        decoding = "" if " decoding=" in attrs else ' decoding="async"'
        return f'<img{match.group("before")} src="{name}"{match.group("after")}{lazy}{decoding}{match.group("end")}'

    return Extracted(_DATA_IMG.sub(replace, body), files)


def link(body: str, files: dict[str, bytes], url_of: Callable[[str], str]) -> str:
    """Point each extracted image at its URL relative to the page (``url_of(file name)``, already escaped)."""
    for name in files:
        body = body.replace(f' src="{name}"', f' src="{url_of(name)}"')
    return body
