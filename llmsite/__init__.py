"""Build-time library of the site: content model, validation and rendering helpers.

Everything here is plain Python with no MkDocs import at module level, so the
content checks, the scaffold and the hooks share one implementation.
"""

from llmsite import numerics

numerics.pin()  # before anything imports torch: the same kernels, hence the same bits, on every x86-64 machine
