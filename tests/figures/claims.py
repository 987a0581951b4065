"""Shared machinery of the claims tests: a stated number is found in an article or a figure caption and
recomputed. Each ``test_*_claims.py`` keeps its own recomputations and table of claims."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from llmsite.content import frontmatter, snippets
from llmsite.content.checks import text as markdown
from llmsite.figures import answers, registry

Check = Callable[[list[Decimal]], "str | None"]

# A number the page computes (``{{ value:name }}``, ``registry.VALUE_MARKER``): a claim's group may match it where
# a number is written, and the claim then checks the value this machine computes for it (``Sources.value``).
VALUE = r"\{\{ ?value:[a-z0-9]+(?:-[a-z0-9]+)* ?\}\}"
NUM = rf"(\d[\d,]*(?:\.\d+)?|{VALUE})"  # a number as written, or computed into the page
PCT = rf"(\d+(?:\.\d+)?|{VALUE})%"  # a percentage, the sign written in the article
DEC = rf"(\d+\.\d+|{VALUE})"  # a decimal


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
    or exactly equal. A recomputed ``int`` is a count, and a count is compared exactly either way."""

    def check(stated: list[Decimal]) -> str | None:
        actual = [f() for f in values]
        for s, a in zip(stated, actual, strict=True):
            counted = isinstance(a, int) and not isinstance(a, bool)
            tol = 0.0 if exact or counted else tolerance(s) + 1e-12
            if abs(float(s) - a) > tol:
                return f"states {s}, recomputed {a:.6g}"
        return None

    return check


def rounded(*values: Callable[[], float]) -> Check:
    """Each stated number is the recomputed one rounded as written (half a unit in the last digit, ``half_unit``),
    with no allowance for the CPU: for arithmetic on the sentence's own inputs, which no machine changes."""

    def check(stated: list[Decimal]) -> str | None:
        for s, a in zip(stated, [f() for f in values], strict=True):
            if abs(float(s) - a) > half_unit(s) + 1e-12:
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
    """The article and the figure module whose sentences and captions the claims are about (an article without
    figures has none)."""

    root: Path
    article: Path
    figures: Path | None = None

    def article_lines(self) -> list[Place]:
        rel = self.article.relative_to(self.root)
        text = self.article.read_text(encoding="utf-8")
        return [Place(f"{rel}:{i}", line) for i, line in enumerate(text.splitlines(), 1)]

    def figure_texts(self) -> dict[str, Place]:
        if self.figures is None:
            return {}
        rel = self.figures.relative_to(self.root)
        return {s.name: Place(f"{rel}:{s.line} (figure {s.name})", f"{s.title}\n{s.caption}")
                for s in registry.parse_module(self.figures)}

    def prose(self, inline_code: bool = False) -> list[tuple[Place, str]]:
        """Each line of the article and of its figures' titles and captions, as (the line, its prose): what is not
        prose blanked (``prose_lines``), columns kept."""
        article = self.article_lines()
        masked = prose_lines(self.article.read_text(encoding="utf-8"), inline_code)
        out = [(place, prose) for place, prose in zip(article, masked, strict=True)]
        for figure in self.figure_texts().values():
            for line in figure.text.splitlines():
                prose = line if inline_code else markdown.mask_code(line)
                out.append((Place(figure.where, line), prose))
        return out

    def places_of(self, claim: Claim) -> list[tuple[Place, re.Match[str]]]:
        if claim.where == "article":
            candidates = self.article_lines()
        else:
            figures = self.figure_texts()
            assert claim.where in figures, (
                f"figure {claim.where!r} is no longer declared in "
                f"{self.figures.relative_to(self.root) if self.figures else 'a figure module (the article has none)'}"
            )
            candidates = [figures[claim.where]]
        return [(place, m) for place in candidates for line in place.text.splitlines()
                if (m := re.search(claim.pattern, line))]

    def value(self, marker: str) -> Decimal:
        """The number a ``{{ value:name }}`` of this article stands for: what the article's @article_values function
        returns on this machine: the build's cached value, or called as the build calls it (``answers.value_of``)."""
        name = registry.VALUE_MARKER.fullmatch(marker)
        assert name is not None, f"{marker!r} is not a value marker"
        values = _stated(self.figures)
        text = values.get(name.group("name"))
        assert text is not None, f"{marker}: {self.figures} returns no such value (it has {sorted(values)})"
        return number(text)

    def stated(self, group: str) -> Decimal:
        """A stated number as a Decimal: thousands separators dropped, the minus sign U+2212 read as one."""
        return self.value(group) if group.startswith("{{") else number(group)

    def resolved(self, line: str) -> str:
        """A line with each value marker replaced by its value, as the page shows it."""
        if "{{" not in line:
            return line
        return registry.VALUE_MARKER.sub(lambda m: _stated(self.figures)[m.group("name")], line)

    def assert_holds(self, claim: Claim) -> None:
        found = self.places_of(claim)
        where = (self.article.relative_to(self.root) if claim.where == "article"
                 else f"the caption of figure {claim.where}")
        assert found, (
            f"the claim {claim.name!r} is no longer in {where} (pattern {claim.pattern!r}): "
            "if the sentence was reworded, update the pattern here; if the claim was dropped, drop the entry"
        )
        for place, m in found:
            stated = [self.stated(g) for g in m.groups() if g is not None]
            problem = claim.check(stated)
            assert problem is None, f"{place.where}: 「{self.resolved(m.group(0))}」 {problem}"


def number(text: str) -> Decimal:
    return Decimal(text.replace(",", "").replace("−", "-"))


_VALUES: dict[Path, dict[str, str]] = {}


def _stated(module: Path | None) -> dict[str, str]:
    """The values an article's figure module computes (its @article_values function), once per test process."""
    assert module is not None, "a value marker in an article without a figure module"
    if module not in _VALUES:
        spec = registry.parse_values(module)
        assert spec is not None, f"{module} has no @article_values function"
        _VALUES[module] = answers.value_of(spec)  # type: ignore[assignment]
    return _VALUES[module]


# --------------------------------------------------------------------------- which numbers need a claim

# A decimal, a percentage or a number with thousands separators: what a sentence states about a computation. A
# section sign, or a digit and a point, just before it mark a section of a cited paper (「§3.5」) or the tail of a
# version number (the 「.1」 of 2.0.1), not a number of its own.
NUMBER = re.compile(r"(?<![§\d.])\d+\.\d+|\d+(?:\.\d+)?\s*%|\d{1,3}(?:,\d{3})+")
# A whole number counted or measured, told by the measure word after it: 「28 首」「342 组」「差 89 倍」
# 「160 行」「出现 3 次」「4 条候选」. An ordinal (「第 25 步」), an exponent or index in a formula (「10^{5}」「x_3」)
# and the digits of a decimal or of a name (「GPT-2」「Qwen2」) are not counted. Group ``n`` is the number; the
# match, with its measure word, is how NOT_COMPUTED names it, so the exempt list reads
# 「"连乘 32 次": "the thought experiment's depth"」. Settings written with other measure words (「64 维」「4 个头」)
# are not scanned: they would bury the results.
COUNTED = re.compile(r"(?<![A-Za-z0-9_.,§^{}$/+\-])(?<!第 )(?<!第)(?P<n>\d+)\s?(?:首|组|倍|行|次|条)")
# What the site-wide check (test_claims_coverage.py) and each article's own check count as a number in the prose.
PROSE_NUMBERS = (NUMBER, COUNTED)
# An HTML tag (``<span class="x">``, ``</span>``): a letter right after ``<``, so ``$T<1$ ... $T>1$`` is not one.
HTML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")


def prose_lines(text: str, inline_code: bool = False) -> list[str]:
    """The lines of an article (element i is line i + 1 of the file) with everything that is not prose blanked:
    front matter, fenced code blocks, snippet lines, inline code (unless ``inline_code``), HTML comments (figure
    markers), link targets and HTML tags. The masks are the content checks' (``llmsite.content.checks.text``) and
    keep every column, so a match in the prose is at the same place in the file's line."""
    lines = text.splitlines()
    first = frontmatter.split(text).body_line  # 1 when there is no front matter
    body = "\n".join(lines[first - 1 :])
    masked = markdown.mask_fences(body) if inline_code else markdown.mask_code(body)
    masked = markdown.mask_urls(markdown.mask_comments(masked))
    masked = HTML_TAG.sub(lambda m: markdown.blank(m.group(0)), masked)
    out = [markdown.blank(line) for line in lines[: first - 1]] + masked.split("\n")
    for include in snippets.find(body, first):
        out[include.line - 1] = markdown.blank(out[include.line - 1])
    return out


@dataclass(frozen=True)
class Number:
    """A number in the prose, and whether a claim asserts it, NOT_COMPUTED exempts it, or neither."""

    where: str  # file:line
    line: str  # the line as written
    text: str  # the number as written (a counted one with its measure word: 「28 首」)
    status: str  # "asserted", "exempt" or "uncovered"

    def __str__(self) -> str:
        return f"{self.where}: {self.text} in 「{self.line.strip()[:80]}」"


@dataclass(frozen=True)
class Coverage:
    numbers: list[Number]
    unused_exemptions: list[str]  # NOT_COMPUTED keys that exempt no number of the prose

    def count(self, status: str) -> int:
        return sum(1 for n in self.numbers if n.status == status)

    @property
    def uncovered(self) -> list[Number]:
        return [n for n in self.numbers if n.status == "uncovered"]


def find_numbers(prose: str, numbers: Sequence[re.Pattern[str]] = PROSE_NUMBERS) -> list[tuple[int, int, str]]:
    """(start, end, text) of each number in a line of prose, in the order of ``numbers`` (a later pattern's match
    that overlaps an earlier one is the same number): [start, end) holds the digits (group ``n`` when the pattern
    has one), text is the whole match (a counted number with its measure word)."""
    out: list[tuple[int, int, str]] = []
    for pattern in numbers:
        for m in pattern.finditer(prose):
            start, end = m.span("n") if "n" in pattern.groupindex else m.span()
            if not any(a < m.end() and m.start() < b for a, b, _ in out):
                out.append((start, end, m.group(0)))
    return out


def _exempting(line: str, start: int, end: int, not_computed: dict[str, str]) -> str | None:
    """The NOT_COMPUTED key written around the number at [start, end) of ``line``: the number itself (「0.05」) or a
    phrase holding it (「Qwen2-1.5B」「连乘 32 次」), so one entry exempts that phrase and not every equal number."""
    for key in not_computed:
        at = line.find(key)
        while at != -1:
            if at <= start and end <= at + len(key):
                return key
            at = line.find(key, at + 1)
    return None


def coverage(sources: Sources, claims: Sequence[Claim], not_computed: dict[str, str],
             numbers: Sequence[re.Pattern[str]] = PROSE_NUMBERS, inline_code: bool = False) -> Coverage:
    """Every number in the article's prose and in its figures' titles and captions, with what covers it: a claim
    whose match spans it, or a NOT_COMPUTED entry (a setting, a cited fact, a name), or nothing."""
    covered: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for claim in claims:
        for place, m in sources.places_of(claim):
            covered.setdefault((place.where, m.string), []).append(m.span())
    found: list[Number] = []
    used: set[str] = set()
    for place, prose in sources.prose(inline_code):
        spans = covered.get((place.where, place.text), [])
        for start, end, text in find_numbers(prose, numbers):
            if any(a <= start and end <= b for a, b in spans):
                status = "asserted"
            elif (key := _exempting(place.text, start, end, not_computed)) is not None:
                status = "exempt"
                used.add(key)
            else:
                status = "uncovered"
            found.append(Number(place.where, place.text, text, status))
    return Coverage(found, [key for key in not_computed if key not in used])


def unchecked_numbers(sources: Sources, claims: Sequence[Claim], not_computed: dict[str, str],
                      number: re.Pattern[str] = NUMBER, skip_inline_code: bool = True) -> list[str]:
    """Numbers (``number``: decimals, percentages, thousands) in the article's prose and in its figures' titles and
    captions that no claim locates and checks and ``not_computed`` does not list (each entry with a reason).
    Inline code is not prose (``dropout=0.0`` is an argument, not a result) unless ``skip_inline_code`` is off."""
    found = coverage(sources, claims, not_computed, (number,), inline_code=not skip_inline_code)
    return [str(n) for n in found.uncovered]


def exemption_problems(not_computed: dict[str, str]) -> list[str]:
    """NOT_COMPUTED entries that do not say why the number needs no claim: every key a non-empty string, every
    reason non-empty and more than the key again."""
    problems = []
    for key, reason in not_computed.items():
        if not isinstance(key, str) or not key.strip():
            problems.append(f"{key!r}: the key must be the number or a phrase holding it, as the article writes it")
        if not isinstance(reason, str) or not reason.strip() or reason.strip() == key:
            problems.append(f"{key!r}: give a reason why this number needs no claim (a setting, a cited fact, ...)")
    return problems


def assert_numbers_checked(sources: Sources, claims: Sequence[Claim], not_computed: dict[str, str],
                           claims_file: str) -> Coverage:
    """The check every article passes (test_claims_coverage.py runs it on each; a claims module may call it too):
    every number in the prose is asserted by a claim or exempt with a reason, and every exemption is still used."""
    problems = [f"{claims_file}: NOT_COMPUTED {p}" for p in exemption_problems(not_computed)]
    found = coverage(sources, claims, not_computed)
    problems += [f"{n} — add a claim in {claims_file} or list it in NOT_COMPUTED with a reason"
                 for n in found.uncovered]
    problems += [f"{claims_file}: NOT_COMPUTED lists {key!r}, which no longer exempts a number of "
                 f"{sources.article.relative_to(sources.root)}: drop the entry" for key in found.unused_exemptions]
    assert not problems, "\n".join(problems)
    return found


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
