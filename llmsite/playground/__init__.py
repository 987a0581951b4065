"""Trained models that an article marks as playable, run in the reader's browser.

- ``registry``: the one marker (``<!-- playground: NAME -->``) and where it is used (file:line on a mistake).
- ``export``: the cache key of an exported model (cheap: hashes, no torch) and the export itself (torch, in a
  subprocess: ``python -m llmsite.playground``): a little-endian float16 weights file and a JSON header with the
  configuration, the vocabulary, the weights file's SHA-256 and, when the artifact saved one, a validated task
  (the acrostic model's: ``playground.js`` then asks for the heads instead of a free prompt).

The build side is ``llmsite/features/playground.py``; the browser side ``docs/assets/javascripts/playground.js``
(loaded on the reader's first press by ``playground-start.js``).
"""
