"""The security tests reuse the content checks' scratch repository."""

from tests.checks.conftest import repo  # noqa: F401  (fixture)
