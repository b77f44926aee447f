"""Writes never go through a symlink, and never into a folder someone else controls.

Each test plants what an attacker (or a hostile checkout) would leave in the output folder before the run,
then drives the real `faildiag run` command line or a real pytest session with ``--faildiag``, and checks
that the planted targets are untouched and the evidence landed in fresh files of the output folder.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.capture.subproc import run_captured
from pytest_faildiag.integrations.pytest_journal import slugify

NOBODY = 65534


def faildiag(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_", "FAILDIAG"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def victim_file(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"{name}: precious content\n")
    return path


def untouched(path: Path) -> bool:
    return path.read_text() == f"{path.name}: precious content\n"


def plain_file(path: Path) -> bool:
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


# -------------------------------------------------------------------------------------- faildiag run


def test_run_replaces_planted_file_links_instead_of_writing_through_them(tmp_path: Path) -> None:
    victims = tmp_path / "victims"
    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    planted = {
        "logs/stdout.log": victim_file(victims, "bashrc"),
        "logs/stderr.log": victim_file(victims, "profile"),
        "logs/stdout.log.tail0": victim_file(victims, "tail0"),
        "logs/.stdout.log.redacting": victim_file(victims, "redacting"),
        "timeline.jsonl": victim_file(victims, "timeline-target"),
        "run.json": victim_file(victims, "run-target"),
    }
    for rel, target in planted.items():
        (out / rel).symlink_to(target)
    # torch writes its error file by name: the planted link there must not be what it opens
    (out / "elastic").mkdir()
    (out / "elastic" / "error.json").symlink_to(victim_file(victims, "authorized_keys"))
    child = (
        "import os, sys; print('hello from the child'); print('to stderr', file=sys.stderr); "
        "open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w').write('{}')"
    )
    cp = faildiag("run", "--out", str(out), "--quiet", "--", sys.executable, "-c", child, cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    for target in [*planted.values(), victims / "authorized_keys"]:
        assert untouched(target), target
    for rel in ("logs/stdout.log", "logs/stderr.log", "timeline.jsonl", "run.json", "elastic/error.json"):
        assert plain_file(out / rel), rel
    assert "hello from the child" in (out / "logs" / "stdout.log").read_text()
    assert "to stderr" in (out / "logs" / "stderr.log").read_text()
    assert json.loads((out / "run.json").read_text())["exit_status"] == 0
    assert stat.S_IMODE(os.stat(out / "logs" / "stdout.log").st_mode) == 0o600


def test_run_replaces_planted_folder_links_with_fresh_private_folders(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    for name in ("logs", "stacks", "elastic", "nccl", ".faildiag"):
        (out / name).symlink_to(elsewhere, target_is_directory=True)
    cp = faildiag(
        "run",
        "--out",
        str(out),
        "--quiet",
        "--hang-timeout",
        "60",
        "--nccl-debug",
        "--",
        sys.executable,
        "-c",
        "print('fine')",
        cwd=tmp_path,
    )
    assert cp.returncode == 0, cp.stderr
    assert list(elsewhere.iterdir()) == []  # nothing was written through any of the links
    assert "fine" in (out / "logs" / "stdout.log").read_text()
    logs = os.lstat(out / "logs")
    assert stat.S_ISDIR(logs.st_mode) and stat.S_IMODE(logs.st_mode) == 0o700


def test_injected_sitecustomize_lives_in_a_fresh_temp_folder_and_planted_modules_are_not_imported(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    inject = out / ".faildiag" / "inject"  # where earlier versions put the generated sitecustomize.py
    inject.mkdir(parents=True)
    marker = tmp_path / "PWNED"
    (inject / "json.py").write_text(f"open({str(marker)!r}, 'w').write('planted json imported')\n")
    (inject / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('planted sitecustomize ran')\n")
    child = (
        "import json, os, sys, faulthandler; first = os.environ['PYTHONPATH'].split(os.pathsep)[0]; "
        "print(json.dumps({'first': first, 'json': json.__file__, 'files': sorted(os.listdir(first)), "
        "'mode': oct(os.stat(first).st_mode & 0o777), 'sitecustomize': sys.modules['sitecustomize'].__file__}))"
    )
    cp = faildiag(
        "run", "--out", str(out), "--quiet", "--hang-timeout", "60", "--", sys.executable, "-c", child, cwd=tmp_path
    )
    assert cp.returncode == 0, cp.stderr
    assert not marker.exists(), marker.read_text()
    seen = json.loads(cp.stdout.strip().splitlines()[-1])
    first = Path(seen["first"])
    assert out.resolve() not in first.resolve().parents  # not a predictable path in the output tree
    assert seen["files"] == ["sitecustomize.py"] and seen["mode"] == "0o700"
    assert Path(seen["sitecustomize"]).parent == first  # our handler was installed
    assert Path(seen["json"]).parent != first  # the standard library's json
    assert not first.exists()  # removed after the run


def test_a_symlinked_artifacts_folder_does_not_redirect_the_snapshot(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "artifacts").symlink_to(elsewhere, target_is_directory=True)
    (out / "meta").symlink_to(elsewhere, target_is_directory=True)
    lock_target = victim_file(tmp_path / "victims", "lock-target")
    (out / ".faildiag.lock").symlink_to(lock_target)
    child = "raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')"
    cp = faildiag("run", "--out", str(out), "--", sys.executable, "-c", child, cwd=tmp_path)
    assert cp.returncode == 1, cp.stderr
    assert list(elsewhere.iterdir()) == []
    assert untouched(lock_target)
    assert plain_file(out / "artifacts" / "failure.lock.json") and plain_file(out / "meta" / "root-causes.json")
    assert json.loads((out / "report.json").read_text())["profile"]["type"]  # the snapshot is whole


def test_diagnose_snapshot_folder_links_are_replaced_too(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = tmp_path / "train.log"
    log.write_text(
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    out = tmp_path / "snap"
    out.mkdir()
    (out / "artifacts").symlink_to(elsewhere, target_is_directory=True)
    cp = faildiag("diagnose", str(log), "--out", str(out), cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert list(elsewhere.iterdir()) == []
    assert plain_file(out / "artifacts" / "failure.lock.json")


@pytest.mark.parametrize("how", ["world-writable", "group-writable", "other-owner", "symlink"])
def test_run_refuses_an_output_folder_someone_else_controls(tmp_path: Path, how: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if how == "world-writable":
        out.chmod(0o777)
        expected = "writable by other users (mode 0777)"
    elif how == "group-writable":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another group needs root")
        os.chown(out, -1, NOBODY)
        out.chmod(0o770)
        expected = "writable by other users (mode 0770)"
    elif how == "other-owner":
        if os.geteuid() == 0:
            os.chown(out, NOBODY, NOBODY)
        else:
            out = Path("/")  # owned by root: another user's folder for anyone else
        expected = "owned by another user"
    else:
        real = out
        out = tmp_path / "link"
        out.symlink_to(real, target_is_directory=True)
        expected = "is a symbolic link"
    marker = tmp_path / "command-ran"
    cp = faildiag("run", "--out", str(out), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')", cwd=tmp_path)
    assert cp.returncode == 2
    assert expected in cp.stderr and "Traceback" not in cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    assert not marker.exists()  # refused before the command started
    assert list((tmp_path / "out").iterdir()) == []


def test_a_sticky_shared_folder_of_ours_is_accepted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o1777)  # like /tmp: others may add names but not remove or replace ours
    cp = faildiag("run", "--out", str(out), "--quiet", "--", sys.executable, "-c", "print('ok')", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert "ok" in (out / "logs" / "stdout.log").read_text()


def test_a_folder_group_writable_by_our_private_group_is_accepted(tmp_path: Path) -> None:
    import grp
    import pwd

    user = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid())
    if group.gr_name != user or not set(group.gr_mem) <= {user}:
        pytest.skip("this account has no user-private group (umask 002 setups have one)")
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o775)  # what mkdir makes under umask 002
    cp = faildiag("run", "--out", str(out), "--quiet", "--", sys.executable, "-c", "print('ok')", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr


def test_a_subfolder_owned_by_someone_else_is_refused_not_written(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    os.chown(out / "logs", NOBODY, NOBODY)
    cp = faildiag("run", "--out", str(out), "--", sys.executable, "-c", "print('x')", cwd=tmp_path)
    assert cp.returncode != 0
    assert "owned by another user" in cp.stderr and "Traceback" not in cp.stderr
    assert list((out / "logs").iterdir()) == []


# -------------------------------------------------------------------------------------- the plugin

SUITE = """
import time

def test_passes():
    pass

def test_fails():
    assert 1 == 2
"""


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:timeout", *args, timeout=120)


@pytest.mark.parametrize("how", ["world-writable", "symlink"])
def test_plugin_warns_and_writes_nothing_into_a_folder_others_control(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    real = pytester.path / "shared"
    real.mkdir()
    if how == "world-writable":
        real.chmod(0o777)
        out, expected = "shared", "is writable by other users (mode 0777)"
    else:
        (pytester.path / "faildiag-out").symlink_to(real, target_is_directory=True)
        out, expected = "faildiag-out", "is a symbolic link"
    result = run_pytest(pytester, "--faildiag", f"--faildiag-out={out}")
    result.assert_outcomes(passed=1, failed=1)  # outcomes as without faildiag
    assert result.ret == 1
    assert (
        f"faildiag disabled: OutputFolderRefused: output folder {pytester.path / out} {expected}" in result.stderr.str()
    )
    assert list(real.iterdir()) == []


def test_plugin_does_not_write_a_snapshot_through_a_planted_folder_link(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    out = pytester.path / "faildiag-out"
    out.mkdir()
    (out / slugify("test_suite.py::test_fails")).symlink_to(elsewhere, target_is_directory=True)
    result = run_pytest(pytester, "--faildiag")
    result.assert_outcomes(passed=1, failed=1)
    assert list(elsewhere.iterdir()) == []
    assert "is a symbolic link" in result.stdout.str()  # the warning says why no snapshot was written


def test_hang_watchdog_does_not_truncate_a_planted_stack_file_link(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    victim = victim_file(pytester.path / "victims", "id_rsa")
    # the session's pid is known only inside it: its conftest plants the link before the first test is armed
    pytester.makeconftest(f"""
        import os

        def pytest_configure(config):
            out = os.path.join(str(config.invocation_params.dir), "faildiag-out")
            os.makedirs(out, mode=0o700, exist_ok=True)
            os.symlink({str(victim)!r}, os.path.join(out, ".stacks-%d.txt" % os.getpid()))
    """)
    pytester.makepyfile(
        test_hang="""
        import time

        def test_quick():
            pass

        def test_sleeps():
            time.sleep(30)
    """
    )
    result = run_pytest(pytester, "--faildiag", "--faildiag-timeout", "1.5")
    result.assert_outcomes(passed=1, failed=1)
    assert untouched(victim)
    assert "faildiag: hang detected" in result.stdout.str()
    index = json.loads((pytester.path / "faildiag-out" / "session.json").read_text())
    entry = next(t for t in index["tests"] if t["nodeid"].endswith("test_sleeps"))
    stacks = (pytester.path / "faildiag-out" / entry["slug"] / "evidence" / "hang-stacks.txt").read_text()
    assert "test_sleeps" in stacks  # the dump went into our own fresh file
    assert not list((pytester.path / "faildiag-out").glob(".stacks-*"))


# -------------------------------------------------------------------------------------- the faildiag_run fixture


def test_captured_run_replaces_planted_output_links(tmp_path: Path) -> None:
    victim = victim_file(tmp_path / "victims", "credentials")
    out = tmp_path / "faildiag-run"
    out.mkdir()
    (out / "run1.stdout").symlink_to(victim)
    (out / "run1.stderr").symlink_to(victim)
    run = run_captured([sys.executable, "-c", "print('captured')"], out, name="run1", timeout=60)
    assert run.ok and "captured" in run.stdout
    assert untouched(victim) and plain_file(out / "run1.stdout")


# -------------------------------------------------------------------------------------- the helpers themselves


def test_append_never_writes_into_a_link_a_hard_link_or_a_fifo(tmp_path: Path) -> None:
    from pytest_faildiag.fsio import open_output_file

    victim = victim_file(tmp_path / "victims", "hosts")
    out = tmp_path / "out"
    out.mkdir()
    (out / "soft.jsonl").symlink_to(victim)
    os.link(victim, out / "hard.jsonl")
    os.mkfifo(out / "fifo.jsonl")  # opening a FIFO for writing with no reader would block forever
    for name in ("soft.jsonl", "hard.jsonl", "fifo.jsonl"):
        with open_output_file(out / name, "a", encoding="utf-8") as f:
            f.write("event\n")
        assert plain_file(out / name) and (out / name).read_text() == "event\n"
    with open_output_file(out / "hard.jsonl", "a", encoding="utf-8") as f:  # our own file: appended to
        f.write("second\n")
    assert (out / "hard.jsonl").read_text() == "event\nsecond\n"
    assert untouched(victim)
