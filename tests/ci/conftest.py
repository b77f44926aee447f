"""Fixtures of the CI reporter tests; the builders live in ``ci_helpers`` so tests can import them."""

from tests.ci.ci_helpers import hang_snapshot, oom_snapshot, session_out, workspace  # noqa: F401
