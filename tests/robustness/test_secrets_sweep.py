"""The secrets sweep: realistic credentials planted in environment variables, command lines, URLs and logs,
then every output path run for real (``faildiag lock``, ``faildiag diagnose``, ``faildiag report`` in each
format, a ``pytest --faildiag`` session with JUnit XML, HTML and GitHub annotations, ``faildiag run`` and the
retort capture). Every file written and every line of faildiag's own output is searched for each secret value.

What the user's own program prints (pytest's traceback display, the output ``faildiag run`` passes through)
is the user's; the sweep checks what faildiag adds: the files it writes and the lines it prints.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Built from pieces so the test file itself does not trip secret scanners; each value is unique and long
# enough that finding it in an output is a leak, not a coincidence.
SECRETS: dict[str, str] = {
    "github_classic": "ghp_" + "Zq8xR2mN4vB6cD1eF3gH5jK7lP9sT0uW2yA4",
    "github_fine": "github_pat_"
    + "11ABCDEFG0"
    + "abcdefghijklmn_"
    + "OPQRSTUVWXyz0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "gitlab": "glpat-" + "x7Yk2Pq9Lm4Nz8Rb3Vc1",
    "openai": "sk-proj-" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz0Bc1Df3Gh5",
    "anthropic": "sk-ant-api03-" + "Qw9Er8Ty7Ui6Op5As4Df3Gh2Jk1Lz0Xc",
    "huggingface": "hf_" + "PqRsTuVwXyZaBcDeFgHiJkLmNoPqRsTuVw",
    "aws_key_id": "AKIA" + "Q3EGRT7V2WX5YZ6B",
    "aws_secret": "wJalrXUtnFEMI" + "/K7MDENG/bPxRfiCY3EXAMPLEKY",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "jwt": "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJmYWlsZGlhZy10ZXN0In0" + ".dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "url_password": "Pg-" + "s3cretPassw0rd-77",
    "flag_password": "Hunt3r2" + "-flag-pa55word",
    "wandb": "f0e1d2c3b4a5" + "968778695a4b3c2d1e0f9a8b",
    "key_body": "MIIEvQIBADANBgkqhkiG9w0B" + "AQEFAASCBKcwggSjAgEAAoIBAQC7planted",
}

PRIVATE_KEY = (
    "-----BEGIN PRIVATE KEY-----\n" + SECRETS["key_body"] + "\nAbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/abc\n"
    "-----END PRIVATE KEY-----\n"
)
DB_URL = f"postgresql://trainer:{SECRETS['url_password']}@db.internal:5432/runs"
GIT_URL = f"https://gitlab-ci-token:{SECRETS['gitlab']}@gitlab.example.com/ml/train.git"

# Names the environment lock keeps (ML/CI prefixes) and names that merely say "secret".
ENV = {
    "GITHUB_TOKEN": SECRETS["github_classic"],
    "GH_ENTERPRISE_TOKEN": SECRETS["github_fine"],
    "CI_REPOSITORY_URL": GIT_URL,
    "CI_JOB_TOKEN": SECRETS["gitlab"],
    "OPENAI_API_KEY": SECRETS["openai"],
    "ANTHROPIC_API_KEY": SECRETS["anthropic"],
    "HF_TOKEN": SECRETS["huggingface"],
    "HF_ENDPOINT": f"https://user:{SECRETS['url_password']}@hf-mirror.internal",
    "AWS_ACCESS_KEY_ID": SECRETS["aws_key_id"],
    "AWS_SECRET_ACCESS_KEY": SECRETS["aws_secret"],
    "SLACK_BOT_TOKEN": SECRETS["slack"],
    "TORCH_HUB_JWT": SECRETS["jwt"],
    "DATABASE_URL": DB_URL,
    "WANDB_API_KEY": SECRETS["wandb"],
    "MASTER_ADDR": "127.0.0.1",
}

COMMAND_ARGS = ["--password", SECRETS["flag_password"], f"--db={DB_URL}", f"--hf-token={SECRETS['huggingface']}"]

# A log as a training job writes it: the secrets in the shapes they really take.
LOG = (
    textwrap.dedent(f"""\
    [rank0]: launching with args: {" ".join(COMMAND_ARGS)}
    [rank0]: env GITHUB_TOKEN={SECRETS["github_classic"]} HF_TOKEN={SECRETS["huggingface"]}
    [rank0]: git clone {GIT_URL}
    [rank0]: using key {SECRETS["openai"]} and {SECRETS["anthropic"]}
    [rank0]: aws_access_key_id = {SECRETS["aws_key_id"]}
    [rank0]: aws_secret_access_key = {SECRETS["aws_secret"]}
    [rank0]: Authorization: Bearer {SECRETS["jwt"]}
    [rank0]: slack token {SECRETS["slack"]} / fine-grained {SECRETS["github_fine"]}
    [rank0]: wandb: WANDB_API_KEY={SECRETS["wandb"]}
    [rank0]: connecting to {DB_URL}
    """)
    + PRIVATE_KEY
    + textwrap.dedent(f"""\
    Traceback (most recent call last):
      File "/w/train.py", line 41, in <module>
        main(token="{SECRETS["github_classic"]}")
    RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB while connecting to {DB_URL} with {SECRETS["huggingface"]}
    """)
)


def leaks(text: str | bytes) -> list[str]:
    """Names of the planted secrets found in ``text``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [name for name, value in SECRETS.items() if value in text]


def sweep_files(root: Path) -> dict[str, list[str]]:
    """Every file under ``root`` (hidden ones too) → the secrets it holds; only files with a leak."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            hit = leaks(path.read_bytes())
            if hit:
                found[str(path.relative_to(root))] = hit
    return found


def env_with_secrets(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_", "CI"))}
    env.update(ENV)
    env.update(extra)
    return env


def cli(*args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )


def test_the_planted_values_would_be_found_if_they_leaked(tmp_path: Path) -> None:
    # the sweep itself must be able to fail: raw input holds every secret
    assert set(leaks(LOG + json.dumps(ENV))) == set(SECRETS)
    (tmp_path / "raw.txt").write_text(LOG)
    assert set(sweep_files(tmp_path)["raw.txt"]) >= {"github_classic", "jwt", "key_body", "url_password"}


def test_faildiag_lock_writes_no_secret(tmp_path: Path) -> None:
    env = env_with_secrets()
    p = cli("lock", "--out", str(tmp_path / "env.lock.json"), env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lock = json.loads((tmp_path / "env.lock.json").read_text())
    assert "HF_TOKEN" in json.dumps(lock) or "HF_ENDPOINT" in json.dumps(lock)  # the planted names were kept
    printed = cli("lock", "--out", "-", env=env, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert sweep_files(tmp_path) == {}
    assert leaks(p.stdout + p.stderr + printed.stdout + printed.stderr) == []


def test_diagnose_and_every_report_format_write_no_secret(tmp_path: Path) -> None:
    env = env_with_secrets(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text(LOG)
    (logs / "error.json").write_text(
        json.dumps(
            {
                "message": {
                    "message": f"RuntimeError: token {SECRETS['openai']}",
                    "extraInfo": {"py_callstack": LOG, "timestamp": "1"},
                }
            }
        )
    )
    out = tmp_path / "out"
    command = "python train.py " + " ".join(COMMAND_ARGS)
    outputs = []
    for fmt in ("text", "json", "md"):
        p = cli(
            "diagnose",
            str(logs),
            "--exit-code",
            "1",
            "--command",
            command,
            "--out",
            str(out),
            "--format",
            fmt,
            env=env,
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stderr
        outputs.append(p.stdout + p.stderr)
    report = json.loads((out / "report.json").read_text())
    assert report["profile"]["type"] == "oom"  # the secrets did not stop the diagnosis
    for name in ("report.md", "meta/failure-profile.json", "meta/root-causes.json", "artifacts/failure.lock.json"):
        assert (out / name).is_file(), name
    for fmt in ("html", "github", "gitlab", "md", "text", "json"):
        p = cli("report", str(out), "--format", fmt, env=env, cwd=tmp_path)
        assert p.returncode == 0, (fmt, p.stderr)
        outputs.append(p.stdout + p.stderr)
        f = cli(
            "report", str(out), "--format", fmt, "--output", str(tmp_path / f"rendered.{fmt}"), env=env, cwd=tmp_path
        )
        assert f.returncode == 0, (fmt, f.stderr)
    fix = cli("fix", str(out), "--format", "json", env=env, cwd=tmp_path)  # a proposal quotes the evidence
    assert fix.returncode in (0, 2), fix.stderr
    outputs.append(fix.stdout + fix.stderr)
    written = {k: v for k, v in sweep_files(tmp_path).items() if not k.startswith("logs/")}
    assert written == {}
    assert [(i, leaks(o)) for i, o in enumerate(outputs) if leaks(o)] == []


PYTEST_TESTS = f"""
import os, sys

SECRETS = {SECRETS!r}
LOG = {LOG!r}


def test_prints_and_fails(tmp_path):
    (tmp_path / "train.log").write_text(LOG)
    print(LOG)
    print(os.environ["GITHUB_TOKEN"], os.environ["DATABASE_URL"], file=sys.stderr)
    raise RuntimeError("CUDA out of memory while talking to " + os.environ["DATABASE_URL"] + " as "
                       + SECRETS["openai"] + " / " + SECRETS["jwt"])


def test_runs_a_command(faildiag_run):
    r = faildiag_run([sys.executable, "-c", "import sys; print(sys.argv[1:]); raise SystemExit('denied: ' + sys.argv[2])",
                      "--password", SECRETS["flag_password"], "--token=" + SECRETS["slack"]])
    assert r.returncode == 0, r.describe()


def test_assert_with_secret_in_locals():
    token = SECRETS["huggingface"]
    key = SECRETS["aws_secret"]
    assert token == key, SECRETS["github_fine"] + " " + {PRIVATE_KEY!r}
"""


# the suite's own command-line options carry secrets too (pytest --password ... --db=... --hf-token=...)
PYTEST_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--password")
    parser.addoption("--db")
    parser.addoption("--hf-token")
"""


def _faildiag_regions(stdout: str) -> str:
    """What faildiag printed in a pytest terminal: its report sections, its summary and the GitHub lines."""
    lines = stdout.splitlines()
    keep: list[str] = []
    inside = False
    header = re.compile(r"^[_=-]{3,} .* [_=-]{3,}$|^_{5,}")
    stop_token = None
    # the session-wide guard (printed before pytest's header) holds pytest's own output too: not ours
    guard = next((ln for ln in lines[:3] if ln.startswith("::stop-commands::")), None)
    guard_lines = {guard, f"::{guard.split('::', 3)[2]}::"} if guard else set()
    for ln in lines:
        if ln in guard_lines:
            keep.append(ln)
            continue
        if header.match(ln):
            inside = " faildiag " in ln
            continue
        if stop_token is None and ln.startswith("::stop-commands::"):
            stop_token = ln.split("::", 3)[2]
            keep.append(ln)
            continue
        if stop_token is not None:
            keep.append(ln)
            if ln == f"::{stop_token}::":
                stop_token = None
            continue
        if inside or ln.startswith("::"):
            keep.append(ln)
    return "\n".join(keep)


def test_a_pytest_faildiag_session_writes_no_secret(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith(("GITHUB_", "PYTEST_ADDOPTS"))]:
        monkeypatch.delenv(k)
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    pytester.makepyfile(test_leaky=PYTEST_TESTS)
    pytester.makeconftest(PYTEST_CONFTEST)
    result = pytester.runpytest_subprocess(
        "--faildiag", "--junitxml=junit.xml", "--faildiag-html=report.html", *COMMAND_ARGS, timeout=240
    )
    result.assert_outcomes(failed=3)
    stdout = result.stdout.str()
    assert "- faildiag -" in stdout and "::error " in stdout, stdout[-3000:]
    mine = _faildiag_regions(stdout)
    assert mine.count("::error ") >= 3
    out = pytester.path / "faildiag-out"
    index = json.loads((out / "session.json").read_text())
    assert len(index["tests"]) == 3
    assert summary.is_file() and (pytester.path / "report.html").is_file()
    props = [p.get("value", "") for p in ET.parse(pytester.path / "junit.xml").iter("property")]
    assert any(p for p in props)
    problems = {
        "files under faildiag-out": {k: v for k, v in sweep_files(out).items() if k != "journal.jsonl"},
        "step summary": leaks(summary.read_text()),
        "html": leaks((pytester.path / "report.html").read_text()),
        "junit properties": leaks("\n".join(props)),
        "terminal (faildiag's lines)": leaks(mine),
        "stderr": leaks(result.stderr.str()),
    }
    assert {k: v for k, v in problems.items() if v} == {}


def test_the_session_journal_holds_no_secret_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    pytester.makeconftest(PYTEST_CONFTEST)
    result = pytester.runpytest("--faildiag", *COMMAND_ARGS)
    result.assert_outcomes(passed=1)
    journal = pytester.path / "faildiag-out" / "journal.jsonl"
    assert journal.is_file()
    assert leaks(journal.read_text()) == []


RUN_SCRIPT = f"""
import os, sys
print({LOG!r})
print("env:", os.environ["HF_TOKEN"], os.environ["CI_REPOSITORY_URL"], file=sys.stderr)
print("argv:", sys.argv[1:], flush=True)
raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB; db " + os.environ["DATABASE_URL"]
                   + " key " + os.environ["AWS_SECRET_ACCESS_KEY"])
"""


@pytest.fixture(scope="module")
def faildiag_run_outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One real ``faildiag run`` of a script that prints the secrets and fails: (out folder, faildiag's own
    stdout/stderr with the command's pass-through removed)."""
    tmp = tmp_path_factory.mktemp("run")
    script = tmp / "train.py"
    script.write_text(RUN_SCRIPT)
    env = env_with_secrets()
    work = tmp / "work"
    work.mkdir()
    bare = subprocess.run(
        [sys.executable, str(script), *COMMAND_ARGS], capture_output=True, text=True, env=env, cwd=work, timeout=60
    )
    assert bare.returncode == 1
    out = tmp / "out"
    p = cli(
        "run",
        "--out",
        str(out),
        "--interval",
        "0.2",
        "--",
        sys.executable,
        str(script),
        *COMMAND_ARGS,
        env=env,
        cwd=work,
        timeout=180,
    )
    assert p.returncode == 1, p.stderr[-2000:]
    assert (out / "report.json").is_file(), sorted(str(x) for x in out.rglob("*"))
    # what the command printed passes through unchanged (it is the user's own output); the rest is faildiag's
    own = {"stdout": p.stdout.replace(bare.stdout, "", 1), "stderr": p.stderr.replace(bare.stderr, "", 1)}
    assert own["stdout"] != p.stdout and own["stderr"] != p.stderr
    return out, own


def test_faildiag_run_snapshot_timeline_and_messages_hold_no_secret(faildiag_run_outputs) -> None:
    out, own = faildiag_run_outputs
    assert (out / "run.json").is_file() and (out / "timeline.jsonl").is_file()
    files = {k: v for k, v in sweep_files(out).items() if not k.startswith("logs/")}
    problems = {"files": files, "faildiag stdout": leaks(own["stdout"]), "faildiag stderr": leaks(own["stderr"])}
    assert {k: v for k, v in problems.items() if v} == {}


def test_faildiag_run_logs_hold_no_secret(faildiag_run_outputs) -> None:
    out, _ = faildiag_run_outputs
    assert sweep_files(out / "logs") == {}


def test_the_retort_capture_writes_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_faildiag.integrations import retort_plugin

    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    workspace = tmp_path / "rep1"
    workspace.mkdir()
    (workspace / "app.py").write_text("print('hi')\n")

    class Artifacts:
        output_dir = workspace
        stdout = LOG + "\n" + "x" * 30_000 + " " + SECRETS["github_classic"]  # one over-long line, secret at its end
        stderr = LOG + f"\ncurl -H 'Authorization: token {SECRETS['github_fine']}' {GIT_URL}\n"
        exit_code = 1
        duration_seconds = 12.5
        token_count = 10
        metadata = {
            "kill_reason": "none",
            "api_key": SECRETS["anthropic"],
            "note": f"pushed to {GIT_URL}",
            "OPENAI_API_KEY": SECRETS["openai"],
        }

    class Stack:
        language = "python"
        agent = "claude-code"
        framework = "stdlib"
        extra = {"HF_TOKEN": SECRETS["huggingface"], "endpoint": ENV["HF_ENDPOINT"]}

    scorer = retort_plugin.retort_register_scorers()[0]
    assert scorer.score(Artifacts(), Stack()) is None
    assert (workspace / ".faildiag" / ".capture.json").is_file()
    assert sweep_files(workspace) == {}


def test_retort_diagnose_writes_no_secret(tmp_path: Path) -> None:
    from tests.retort.retort_helpers import Experiment

    exp = Experiment(tmp_path / "exp")
    config = {"language": "python", "agent": "claude-code", "model": "opus"}
    exp.add_run(
        config,
        rep=1,
        error=f"agent failed: 401 Unauthorized for {SECRETS['anthropic']} via {GIT_URL}",
        files={
            "agent.log": LOG,
            "app.py": f"TOKEN = '{SECRETS['github_classic']}'\n",
            "tests/test_app.py": "def test_x():\n    assert False\n",
        },
    )
    out = tmp_path / "report"
    env = env_with_secrets()
    outputs = []
    for fmt in ("json", "text"):
        p = cli(
            "retort",
            "diagnose",
            "--experiment-dir",
            str(exp.root),
            "--format",
            fmt,
            "--out",
            str(out),
            "--no-run-tests",
            env=env,
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        outputs.append(p.stdout + p.stderr)
    assert json.loads(outputs[0])["runs"], outputs[0][:500]
    problems = {"files": sweep_files(out), "stdout/stderr": [leaks(o) for o in outputs if leaks(o)]}
    assert {k: v for k, v in problems.items() if v} == {}
