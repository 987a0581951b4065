"""bench/sampler.py on a tiny batch: both samplers run the same number of times and the ratio is theirs; no timing
asserted."""

from __future__ import annotations

from bench import sampler


def test_both_samplers_run_each_repeat_and_the_ratio_is_of_their_medians(capsys) -> None:
    r = sampler.measure(batch=6, repeats=3, tokens=4, vocab=50)
    assert [len(r["seconds"][name]) for name in ("generate", "sample_tokens")] == [3, 3]
    assert r["ratio"] == r["median"]["generate"] / r["median"]["sample_tokens"]
    assert sampler.main(["--batch", "4", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "4 rows x 24 tokens, vocabulary 3009" in out and "generate / sample_tokens:" in out
