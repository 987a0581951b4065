"""The artifact cache's lock (llmsite/artifacts.py ``ensure``) is taken only to compute something.

A build training the models holds the lock for minutes. A caller that needs no stale artifact (figures or exercise
answers that use no trained model, or whose models are cached) must not queue behind it: under load, waiting there
made ``llmsite figures`` of three plain answers outlast tests/exercises/test_pipeline.py's 300 s timeout."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
from filelock import FileLock

from llmsite import artifacts


def test_a_caller_that_needs_nothing_stale_does_not_wait_for_a_training_build(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_ARTIFACT_CACHE", str(tmp_path))
    for artifact in artifacts.discover().values():
        monkeypatch.delenv(artifact.env, raising=False)
    other_build = FileLock(str(tmp_path / ".lock"))
    other_build.acquire()  # another process is training
    result: dict[str, object] = {}
    try:
        caller = threading.Thread(target=lambda: result.update(paths=artifacts.ensure([], out=io.StringIO())),
                                  daemon=True)
        caller.start()
        caller.join(120)
        returned_while_locked = not caller.is_alive()
    finally:
        other_build.release()
    caller.join(120)
    assert returned_while_locked, "ensure([]) waited for the lock another build holds"
    assert result["paths"] == {}  # an empty cache: nothing to point at, and nothing was trained
