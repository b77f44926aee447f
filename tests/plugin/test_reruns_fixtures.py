"""A fixture error points at the user's fixture line (session.json, GitHub annotation, evidence), not at the
raise site inside the code the fixture called. Real pytest sessions through ``pytester``."""

from __future__ import annotations

import pytest

from .conftest import entry_for, session_index

pytestmark = pytest.mark.usefixtures("isolated")

POOL = """class PoolError(RuntimeError):
    pass


def connect(url):
    if not url.startswith("postgres://"):
        raise PoolError(f"unsupported database url: {url}")
    return url


def close(conn):
    raise PoolError(f"connection {conn} already closed")
"""
CONFTEST = """import pytest
from db.pool import close, connect


@pytest.fixture
def database():
    conn = connect("mysql://localhost/test")
    yield conn


@pytest.fixture
def session_conn():
    conn = connect("postgres://localhost/test")
    yield conn
    close(conn)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkpydir("db")
    (pytester.path / "db" / "pool.py").write_text(POOL)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_orders="""
        def test_setup_error(database):
            assert database

        def test_teardown_error(session_conn):
            assert session_conn

        def test_call_failure():
            from db.pool import connect
            connect("sqlite://")
    """
    )
    return pytester


def test_a_fixture_error_points_at_the_fixture_line_not_the_raise_site(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = project.runpytest("--faildiag", "--faildiag-rerun", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, errors=2)  # outcomes are pytest's
    index = session_index(project.path)
    setup = entry_for(index, "test_setup_error")
    assert (setup["when"], setup["file"], setup["line"]) == ("setup", "conftest.py", 7)
    teardown = entry_for(index, "test_teardown_error")
    assert (teardown["when"], teardown["file"], teardown["line"]) == ("teardown", "conftest.py", 15)
    call = entry_for(index, "test_call_failure")  # not a fixture error: the innermost user frame as before
    assert (call["file"], call["line"]) == ("db/pool.py", 7)
    evidence = project.path / "faildiag-out" / setup["slug"] / "evidence" / "fixture.txt"
    assert (
        evidence.read_text()
        == "error in fixture 'database' at conftest.py:7 (setup of test_orders.py::test_setup_error)\n"
    )
    result.stdout.fnmatch_lines(["::error file=conftest.py,line=7,title=faildiag*PoolError*"])
