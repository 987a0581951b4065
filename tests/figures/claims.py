"""Shared machinery of the claims tests: a stated number is found in an article or a figure caption and
recomputed. Each ``test_*_claims.py`` keeps its own recomputations and table of claims."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from llmsite.figures import registry

Check = Callable[[list[Decimal]], "str | None"]


def half_unit(stated: Decimal) -> float:
    """Half a unit in the last stated digit: '0.79' may stand for anything in [0.785, 0.795]."""
    return 0.5 * 10.0 ** stated.as_tuple().exponent


def tolerance(stated: Decimal) -> float:
    """How far a recomputed value may be from a stated, rounded one: half a unit in the last digit (the rounding),
    plus one unit for the CPU. Training and evaluating on another x86 CPU, with the same pinned kernels
    (llmsite/numerics.py), moves results in the fifth significant digit: on 2026-12-04 a Xeon with AVX-512 and AMX
    recomputed 5.82272 where the article, written from another machine's build, states 5.8226, and 0.074429 for a
    stated 0.075. A claim off by more than that is wrong on every machine. A whole number keeps half a unit: counts
    do not move with the CPU, and '28 首' must not pass for 27."""
    return 3 * half_unit(stated) if stated.as_tuple().exponent < 0 else half_unit(stated)


def approx(*values: Callable[[], float], exact: bool = False) -> Check:
    """Each stated number is the recomputed one, rounded as written give or take one in the last digit (``tolerance``),
    or exactly equal."""

    def check(stated: list[Decimal]) -> str | None:
        actual = [f() for f in values]
        for s, a in zip(stated, actual, strict=True):
            tol = 0.0 if exact else tolerance(s) + 1e-12
            if abs(float(s) - a) > tol:
                return f"states {s}, recomputed {a:.6g}"
        return None

    return check


def span(values: Callable[[], Sequence[float]]) -> Check:
    """'between a and b': every value within the range, and the range as tight as written (within ``tolerance``)."""

    def check(stated: list[Decimal]) -> str | None:
        lo, hi = stated
        vals = list(values())
        if abs(min(vals) - float(lo)) > tolerance(lo) or abs(max(vals) - float(hi)) > tolerance(hi):
            return f"states {lo} to {hi}, recomputed {min(vals):.6g} to {max(vals):.6g}"
        return None

    return check


def below_power_of_ten(value: Callable[[], float]) -> Check:
    """'smaller than 10^n', with n the stated exponent."""

    def check(stated: list[Decimal]) -> str | None:
        bound = 10.0 ** int(stated[0])
        actual = value()
        return None if actual < bound else f"states below {bound:g}, recomputed {actual:.6g}"

    return check


def holds(fact: Callable[[], bool]) -> Check:
    def check(stated: list[Decimal]) -> str | None:
        return None if fact() else f"does not hold: {fact.__name__}"

    return check


@dataclass(frozen=True)
class Claim:
    name: str
    where: str  # "article" or the name of a figure (its title and caption)
    pattern: str  # must match; its groups are the stated numbers, in order (thousands separators allowed)
    check: Check


@dataclass(frozen=True)
class Place:
    where: str  # file:line, for the failure message
    text: str


@dataclass(frozen=True)
class Sources:
    """The article and the figure module whose sentences and captions the claims are about."""

    root: Path
    article: Path
    figures: Path

    def article_lines(self) -> list[Place]:
        rel = self.article.relative_to(self.root)
        text = self.article.read_text(encoding="utf-8")
        return [Place(f"{rel}:{i}", line) for i, line in enumerate(text.splitlines(), 1)]

    def figure_texts(self) -> dict[str, Place]:
        rel = self.figures.relative_to(self.root)
        return {s.name: Place(f"{rel}:{s.line} (figure {s.name})", f"{s.title}\n{s.caption}")
                for s in registry.parse_module(self.figures)}

    def places_of(self, claim: Claim) -> list[tuple[Place, re.Match[str]]]:
        if claim.where == "article":
            candidates = self.article_lines()
        else:
            figures = self.figure_texts()
            assert claim.where in figures, (
                f"figure {claim.where!r} is no longer declared in {self.figures.relative_to(self.root)}"
            )
            candidates = [figures[claim.where]]
        return [(place, m) for place in candidates for line in place.text.splitlines()
                if (m := re.search(claim.pattern, line))]

    def assert_holds(self, claim: Claim) -> None:
        found = self.places_of(claim)
        where = (self.article.relative_to(self.root) if claim.where == "article"
                 else f"the caption of figure {claim.where}")
        assert found, (
            f"the claim {claim.name!r} is no longer in {where} (pattern {claim.pattern!r}): "
            "if the sentence was reworded, update the pattern here; if the claim was dropped, drop the entry"
        )
        for place, m in found:
            stated = [Decimal(g.replace(",", "")) for g in m.groups() if g is not None]
            problem = claim.check(stated)
            assert problem is None, f"{place.where}: 「{m.group(0)}」 {problem}"


# A decimal, a percentage or a number with thousands separators: what a sentence states about a computation.
NUMBER = re.compile(r"\d+\.\d+|\d+(?:\.\d+)?\s*%|\d{1,3}(?:,\d{3})+")


def unchecked_numbers(sources: Sources, claims: Sequence[Claim], not_computed: dict[str, str],
                      number: re.Pattern[str] = NUMBER, skip_inline_code: bool = True) -> list[str]:
    """Numbers in the article's prose and in its figures' titles and captions that no claim locates and checks.

    Code blocks and snippet lines are skipped; so is inline code (``dropout=0.0`` is an argument, not a result)
    unless ``skip_inline_code`` is off. ``not_computed`` lists numbers that are settings, each with a reason."""
    covered: dict[str, list[tuple[int, int]]] = {}
    for claim in claims:
        for place, m in sources.places_of(claim):
            covered.setdefault(place.where + "|" + m.string, []).append(m.span())
    unchecked = []
    for places in [sources.article_lines(), *([p] for p in sources.figure_texts().values())]:
        in_code = False
        for place in places:
            for line in place.text.splitlines():
                if line.startswith("```"):
                    in_code = not in_code
                if in_code or line.startswith("--8<--"):
                    continue
                spans = covered.get(place.where + "|" + line, [])
                prose = re.sub(r"`[^`]*`", lambda c: " " * len(c.group(0)), line) if skip_inline_code else line
                for m in number.finditer(prose):
                    if any(a <= m.start() and m.end() <= b for a, b in spans) or m.group(0) in not_computed:
                        continue
                    unchecked.append(f"{place.where}: {m.group(0)} in 「{line.strip()[:80]}」")
    return unchecked


def rotate_pairs(x, pos: int):
    """RoPE written out with 2 x 2 rotations (pairs 2i, 2i+1, base 10000), independent of code/: the Llama article's
    claims and its exercise answers both recompute with it."""
    d = x.numel()
    out = x.clone()
    for i in range(d // 2):
        a = pos * 10000.0 ** (-2 * i / d)
        out[2 * i] = math.cos(a) * x[2 * i] - math.sin(a) * x[2 * i + 1]
        out[2 * i + 1] = math.sin(a) * x[2 * i] + math.cos(a) * x[2 * i + 1]
    return out
