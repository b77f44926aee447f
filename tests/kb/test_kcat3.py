"""The stdlib catalogue (32-stdlib-catalogue.toml): each family is shown on output produced here by the real
interpreter or library, failing for the reason its message documents (sqlite3, importlib.metadata, io,
pickle, codecs, errno EISDIR/ENOTDIR, the interpreter's iteration and signal checks, zlib, json,
concurrent.futures, pydantic 2, jsonschema, click, uvicorn, argparse)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, run_failing, top3, train_log_path

PACK = "32-stdlib-catalogue.toml"


def _check(diag, rule: str, category: str) -> None:
    rules = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, rule), rules
    assert diag.profile.type == "runtime_error", (diag.profile.type, rules)
    top = diag.root_causes[0]
    assert (top.rule, top.category) == (rule, category), rules
    assert top.fix_hints


def test_the_pack_loads_without_a_warning():
    ids = {r.id for r in pack_rules(PACK)}
    assert len(ids) >= 18


CASES = {
    "sqlite.database_locked": (
        """
        import sqlite3
        a = sqlite3.connect("d.db", timeout=0.1)
        a.execute("create table if not exists t(x)")
        a.execute("begin exclusive")
        b = sqlite3.connect("d.db", timeout=0.1)
        b.execute("insert into t values (1)")
        """,
        "model",
    ),
    "sqlite.no_such_table": ("import sqlite3; sqlite3.connect(':memory:').execute('select * from runs')", "model"),
    "sqlite.unable_to_open": ("import sqlite3; sqlite3.connect('no/such/folder/x.db')", "config"),
    "sqlite.thread_affinity": (
        """
        import sqlite3, threading
        made = []
        t = threading.Thread(target=lambda: made.append(sqlite3.connect(":memory:")))
        t.start()
        t.join()
        made[0].execute("select 1")
        """,
        "model",
    ),
    "sqlite.constraint_failed": (
        """
        import sqlite3
        c = sqlite3.connect(":memory:")
        c.execute("create table runs(name text unique)")
        c.execute("insert into runs values ('baseline')")
        c.execute("insert into runs values ('baseline')")
        """,
        "model",
    ),
    "py.stdin_eof": ("import os, sys; sys.stdin = open(os.devnull); input('Overwrite outputs? [y/N] ')", "model"),
    "toml.decode_error": (
        "import tomllib; tomllib.loads('[train]\\nlr = 0.1\\nepochs = ten\\n')",
        "config",
    ),
    "importlib.package_metadata_missing": (
        "import importlib.metadata as m; m.version('no-such-distribution-kcat3')",
        "environment",
    ),
    "io.closed_file": ("f = open('out.txt', 'w'); f.close(); f.write('x')", "model"),
    "pickle.unsupported_protocol": ("import pickle; pickle.loads(bytes([0x80, 9]) + b'.')", "environment"),
    "codecs.unknown_encoding": ("open('x.txt', 'w', encoding='utf9')", "config"),
    "errno.is_a_directory": ("import os; os.mkdir('ckpt'); open('ckpt', 'rb')", "config"),
    "errno.not_a_directory": ("open('f.txt', 'w').close(); open('f.txt/part-0.json')", "config"),
    "py.collection_mutated_during_iteration": (
        """
        d = {"a": 1, "b": 2}
        for k in d:
            d[k + "_x"] = 0
        """,
        "model",
    ),
    "zlib.decompress_error": ("import zlib; zlib.decompress(b'not compressed at all')", "dataset"),
    "json.not_serializable": ("import json, decimal; json.dumps({'lr': decimal.Decimal('0.1')})", "model"),
    "futures.schedule_after_shutdown": (
        """
        import concurrent.futures as cf
        ex = cf.ThreadPoolExecutor(1)
        ex.shutdown()
        ex.submit(print, 1)
        """,
        "model",
    ),
    "pydantic.v1_code_on_v2": ("from pydantic import BaseSettings", "environment"),
    "compress.not_this_format": ("import lzma; lzma.decompress(b'plain text, not xz')", "dataset"),
    "jsonschema.validation_failed": (
        """
        import jsonschema
        schema = {"type": "object", "properties": {"epochs": {"type": "integer"}}, "required": ["epochs"]}
        jsonschema.validate({"epochs": "ten"}, schema)
        """,
        "config",
    ),
    "click.usage_error": (
        """
        import click
        @click.command()
        @click.option("--epochs", type=int)
        def main(epochs):
            pass
        main(["--epoch", "3"])
        """,
        "config",
    ),
    "uvicorn.app_import": ("import uvicorn; uvicorn.run('no_such_module_kcat3:app')", "config"),
    "py.argparse_usage_error": (
        """
        import argparse
        parser = argparse.ArgumentParser(prog="train.py")
        parser.add_argument("--model-name", required=True)
        parser.parse_args([])
        """,
        "config",
    ),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_a_real_failure_is_read_by_its_family(tmp_path: Path, rule: str):
    body, category = CASES[rule]
    diag, stderr = run_failing(tmp_path, body)
    _check(diag, rule, category)


def test_setuptools_refuses_a_flat_layout_with_two_packages(tmp_path: Path):
    for pkg in ("trainer", "data"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0.1"\n')
    diag, stderr = run_failing(tmp_path, "import setuptools.build_meta as b; b.build_wheel('dist')")
    assert "flat-layout" in stderr
    rules = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, "setuptools.flat_layout_discovery"), rules
    assert diag.root_causes[0].category == "config", rules


def test_a_null_column_is_read_as_a_constraint(tmp_path: Path):
    diag, stderr = run_failing(
        tmp_path,
        "import sqlite3; c = sqlite3.connect(':memory:'); c.execute('create table t(x not null)');"
        " c.execute('insert into t values (null)')",
    )
    assert "NOT NULL constraint failed" in stderr
    _check(diag, "sqlite.constraint_failed", "model")


def test_a_train_log_of_parallel_instances_locking_one_database():
    diag = diagnose(
        [str(train_log_path("pytest_python/py_g8_grizzly_status_db_sqlite_locked_parallel_instances_create_table"))]
    )
    assert fired(diag, "sqlite.database_locked")
    assert diag.root_causes[0].category == "model"


@pytest.mark.parametrize(
    "body",
    [
        "from pydantic import BaseModel\nclass Cfg(BaseModel):\n    lr = 0.1\n",
        "from pydantic import BaseModel, Field\nclass Cfg(BaseModel):\n    name: str = Field(regex='^[a-z]+$')\n",
    ],
)
def test_pydantic_2_refuses_pydantic_1_definitions(tmp_path: Path, body: str):
    diag, stderr = run_failing(tmp_path, body)
    assert "PydanticUserError" in stderr
    rules = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, "pydantic.v1_code_on_v2"), rules
    assert "environment" in top3(diag), rules


def test_bz2_reads_data_of_another_format(tmp_path: Path):
    diag, stderr = run_failing(tmp_path, "import bz2; bz2.decompress(b'plain text, not bzip2')")
    assert "Invalid data stream" in stderr
    _check(diag, "compress.not_this_format", "dataset")


def test_pip_refuses_a_user_install_inside_a_virtualenv(tmp_path: Path):
    import os
    import subprocess

    if sys.prefix == sys.base_prefix:
        pytest.skip("needs a virtual environment")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1"}
    cmd = [sys.executable, "-m", "pip", "install", "--user", "no-such-dist-kcat3"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert p.returncode != 0
    diag = diagnose(texts={"stdout": p.stdout, "stderr": p.stderr}, exit_code=p.returncode)
    _check(diag, "pip.user_install_in_venv", "environment")


def test_a_signal_handler_installed_from_a_thread(tmp_path: Path):
    # signal.signal raises in a thread; the thread's traceback is printed by threading's excepthook
    diag, _ = run_failing(
        tmp_path,
        """
        import signal, sys, threading
        def worker():
            signal.signal(signal.SIGTERM, lambda *a: None)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        sys.exit(1)
        """,
    )
    assert fired(diag, "py.signal_outside_main_thread"), [c.rule for c in diag.root_causes]
    assert set(top3(diag)) >= {"model", "library"}


def test_click_reports_a_missing_argument_as_the_command_line(tmp_path: Path):
    diag, stderr = run_failing(
        tmp_path,
        """
        import click
        @click.command()
        @click.argument("data_dir")
        def main(data_dir):
            pass
        main([])
        """,
    )
    assert "Missing argument" in stderr
    _check(diag, "click.usage_error", "config")


def test_uvicorn_names_an_attribute_the_module_lacks(tmp_path: Path):
    (tmp_path / "service.py").write_text("application = None\n")
    diag, stderr = run_failing(
        tmp_path, "import sys; sys.path.insert(0, '.'); import uvicorn; uvicorn.run('service:app')"
    )
    assert 'Attribute "app" not found' in stderr
    _check(diag, "uvicorn.app_import", "config")


def test_an_unrelated_line_does_not_fire_the_families():
    # prose that names the families' words without their messages: no rule of the pack fires
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    raise ValueError('bad value for the lock file')\n"
        "ValueError: bad value for the lock file\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert not [c.rule for c in diag.root_causes if c.rule.split(".")[0] in {"sqlite", "click", "uvicorn"}]


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's errno texts")
def test_the_errno_families_read_the_os_error_line():
    text = "IsADirectoryError: [Errno 21] Is a directory: 'outputs/checkpoints'\n"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "errno.is_a_directory")
    assert diag.root_causes[0].category == "config"


# ------------------------------------------------------------------------------------------ HTTP clients

_SERVER = """
import http.server, socket, sys, threading, urllib.request

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_error(int(self.path.strip("/")))
    def log_message(self, *args):
        pass

def serve():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_port
"""


@pytest.mark.parametrize(
    ("status", "rule", "category"),
    [
        (404, "http.not_found", "config"),
        (410, "http.not_found", "config"),
        (403, "http.unauthorized", "environment"),
        (401, "http.unauthorized", "environment"),
        (503, "http.server_error", "environment"),
        (500, "http.server_error", "environment"),
    ],
)
def test_urllib_reads_an_http_status_as_its_family(tmp_path: Path, status: int, rule: str, category: str):
    diag, stderr = run_failing(
        tmp_path, _SERVER + f"urllib.request.urlopen(f'http://127.0.0.1:{{serve()}}/{status}')\n"
    )
    assert f"HTTP Error {status}" in stderr
    _check(diag, rule, category)


def test_a_server_that_closes_without_answering(tmp_path: Path):
    diag, stderr = run_failing(
        tmp_path,
        _SERVER
        + """
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
def accept_and_close():
    c, _ = s.accept(); c.recv(1024); c.close()
threading.Thread(target=accept_and_close, daemon=True).start()
urllib.request.urlopen(f"http://127.0.0.1:{s.getsockname()[1]}/")
""",
    )
    assert "RemoteDisconnected" in stderr
    _check(diag, "http.remote_disconnected", "environment")


def test_a_download_cut_before_its_length(tmp_path: Path):
    diag, stderr = run_failing(
        tmp_path,
        _SERVER
        + """
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
def short_body():
    c, _ = s.accept(); c.recv(1024)
    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 1000\\r\\n\\r\\n" + b"x" * 10); c.close()
threading.Thread(target=short_body, daemon=True).start()
urllib.request.urlopen(f"http://127.0.0.1:{s.getsockname()[1]}/weights.bin").read()
""",
    )
    assert "IncompleteRead" in stderr
    _check(diag, "http.incomplete_read", "environment")


def test_urlopen_against_a_port_nobody_listens_on(tmp_path: Path):
    diag, stderr = run_failing(
        tmp_path,
        _SERVER
        + """
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
urllib.request.urlopen(f"http://127.0.0.1:{port}/")
""",
    )
    assert "Connection refused" in stderr
    _check(diag, "http.urlopen_refused", "environment")


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # requests' Response.raise_for_status and httpx's word the same statuses (their sources' formats)
        (
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://example.org/a.bin",
            "http.not_found",
        ),
        (
            "httpx.HTTPStatusError: Client error '403 Forbidden' for url 'https://example.org/a.bin'",
            "http.unauthorized",
        ),
        (
            "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: https://example.org/",
            "http.server_error",
        ),
    ],
)
def test_the_http_families_read_requests_and_httpx_wording(line: str, rule: str):
    text = (
        f'Traceback (most recent call last):\n  File "get.py", line 9, in <module>\n    r.raise_for_status()\n{line}\n'
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, rule), [c.rule for c in diag.root_causes]
