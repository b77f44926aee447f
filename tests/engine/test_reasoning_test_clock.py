"""A test's check that compares dates, datetimes or time-zone names (issue 13, pytk3).

What such code returns depends on the machine's clock and TZ (``datetime.now``, ``date.today`` and
``time.localtime`` read them): a test that assumes a time of day or a zone fails where and when that does not
hold, and the fix is the test's (``cue:test_clock``). The runs here are real unittest processes; the train
logs are from the thread corpus's train split.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import train_log

# a test that expects "midnight tonight" computed from the local clock to be a fixed zone's midnight: it
# passes only when the machine's TZ is that zone
_TEST = """
    import datetime
    import time
    import unittest


    def next_midnight(now):
        return (now + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


    class ClockTests(unittest.TestCase):
        def test_midnight(self):
            now = datetime.datetime.fromtimestamp(86400 * 20000 + 3600 * 23)
            self.assertEqual(next_midnight(now), datetime.datetime(2024, 10, 4, 0, 0))

        def test_count(self):
            self.assertEqual(len([1, 2]), 3)


    if __name__ == "__main__":
        unittest.main()
"""


def _run(tmp_path: Path, name: str) -> tuple[str, int]:
    (tmp_path / "test_clock.py").write_text(textwrap.dedent(_TEST))
    env = {**os.environ, "TZ": "Asia/Tokyo"}
    cmd = [sys.executable, "-m", "unittest", "-v", f"test_clock.ClockTests.{name}"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


def _checks(diag) -> set[str]:
    return {v.name for c in diag.root_causes for v in c.validation_checks}


def test_a_date_check_that_depends_on_the_zone_leads_with_the_test(tmp_path):
    """The check compares two datetimes that differ by the zone's offset: the test's assumption leads."""
    err, rc = _run(tmp_path, "test_midnight")
    assert "AssertionError: datetime.datetime(" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:cue:test_clock" in _checks(diag)
    assert diag.root_causes[0].category == "test_code"


def test_a_check_of_other_values_is_not_a_clock_assumption(tmp_path):
    """A count that differs is the code's result against the expectation: the cue does not hold."""
    err, rc = _run(tmp_path, "test_count")
    assert "AssertionError: 2 != 3" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:cue:test_clock" not in _checks(diag)


@pytest.mark.parametrize(
    "name",
    [
        "pytest_python/py_unittest_midnight_assert_off_by_one_day_test_timezone_assumption",
        "pytest_python/py_unittest_tzlocal_tests_fail_when_tz_env_set",
    ],
)
def test_train_logs_tests_that_assume_the_machines_zone(name):
    """Both fixes changed only the test (it assumed an unset TZ / a zone where 8 pm is still the same day)."""
    diag, label = train_log(name)
    assert label["category"] == "test_code"
    assert "context:cue:test_clock" in _checks(diag)
    assert diag.root_causes[0].category == "test_code"
