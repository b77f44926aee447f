"""What a fresh ``faildiag diagnose`` pays before it reads a log (issue 14): the snapshot lock without the
``filelock`` import, the entry-point scan answered from a cache, and the modules only some runs need left
unimported. Each test runs the real CLI or real processes holding real locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pytest_faildiag import store

ROOT = Path(__file__).resolve().parents[1]

HOLD_LOCK = """
import sys, time
from filelock import FileLock
with FileLock(sys.argv[1], timeout=5):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""

PLUGIN = """
def pytest_faildiag_rule_packs():
    return [("acme.toml", '''
[[rule]]
id = "acme.gizmo.melted"
title = "the ACME gizmo melted"
keywords = ["GIZMO-MELT"]
priority = 90
[[rule.causes]]
category = "environment"
confidence = 0.9
summary = "the ACME gizmo melted"
''')]
"""

PROBE = """
import json, sys
from pytest_faildiag.cli import main
rc = main(sys.argv[2:])
heavy = ("filelock", "importlib.metadata", "xml.etree.ElementTree", "pickle")
with open(sys.argv[1], "w") as f:
    json.dump({"rc": rc, "imported": [m for m in heavy if m in sys.modules]}, f)
"""


def _env(cache: Path, *path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        XDG_CACHE_HOME=str(cache),
        PYTHONPATH=os.pathsep.join([*map(str, path), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )


def _diagnose(log: Path, out: Path, env: dict[str, str]) -> dict:
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(log), "--format", "json", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out.parent,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_folder_lock_waits_for_a_filelock_holder_and_gives_up_after_the_timeout(tmp_path: Path) -> None:
    lock = tmp_path / ".faildiag.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock), "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        t = time.monotonic()
        with store.folder_lock(lock, timeout=0.3) as held:
            assert held is False  # the other writer's flock excludes ours: the caller writes without it
        assert 0.25 <= time.monotonic() - t < 1.4
        with store.folder_lock(lock, timeout=10) as held:  # waits until the holder lets go
            assert held is True
            assert time.monotonic() - t >= 1.2  # only once the holder's 1.5 s were over
    finally:
        holder.kill()
        holder.wait()


def test_folder_lock_is_released_when_the_block_ends_and_never_follows_a_symlink(tmp_path: Path) -> None:
    lock = tmp_path / ".faildiag.lock"
    for _ in range(2):  # released after the first block, also when it raised
        try:
            with store.folder_lock(lock, timeout=0) as held:
                assert held is True
                raise ValueError("the write failed")
        except ValueError:
            pass
    probe = "from filelock import FileLock; import sys; FileLock(sys.argv[1], timeout=0).acquire(); print('ok')"
    p = subprocess.run([sys.executable, "-c", probe, str(lock)], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "ok", p.stderr  # filelock takes it: nothing of ours still holds it
    target = tmp_path / "bashrc"
    target.write_text("keep me\n")
    link = tmp_path / "linked.lock"
    link.symlink_to(target)
    try:
        with store.folder_lock(link, timeout=0):
            raise AssertionError("a symlinked lock file was opened")
    except OSError:
        pass
    assert target.read_text() == "keep me\n"


def test_a_plugin_installed_after_a_cached_scan_is_still_loaded(tmp_path: Path) -> None:
    """The entry-point answer is cached; installing a distribution into a folder already on the path (as
    pip does) must be seen by the next run."""
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    log = tmp_path / "train.log"
    log.write_text("step 1\nGIZMO-MELT on bench 4\nRuntimeError: stopped\n")
    env = _env(cache, site)
    for i in range(2):  # no plugin: the second run answers from the cache
        report = _diagnose(log, tmp_path / f"out{i}", env)
        assert all(c["id"] != "acme.gizmo.melted" for c in report["root_causes"])
    assert len(list((cache / "faildiag").glob("entry-points-*.json"))) == 1
    dist = site / "acme_gizmo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-gizmo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[faildiag]\nacme = acme_gizmo\n")
    (site / "acme_gizmo.py").write_text(PLUGIN)
    report = _diagnose(log, tmp_path / "out2", env)
    assert report["root_causes"][0]["id"] == "acme.gizmo.melted", report["root_causes"][:1]
    (dist / "entry_points.txt").write_text("[other_group]\nacme = acme_gizmo\n")  # its entry point removed
    os.utime(dist / "entry_points.txt", ns=(1, 1))  # whatever the clock says, the time differs
    report = _diagnose(log, tmp_path / "out3", env)
    assert all(c["id"] != "acme.gizmo.melted" for c in report["root_causes"])


def test_a_warm_diagnose_of_a_small_log_imports_no_lock_library_metadata_reader_or_artifact_parser(
    tmp_path: Path,
) -> None:
    log = tmp_path / "train.log"
    log.write_text("Traceback (most recent call last):\nValueError: boom\n")
    env = _env(tmp_path / "cache")
    seen = []
    for i in range(2):  # the first run fills the caches (rule packs, entry points)
        result = tmp_path / f"probe{i}.json"
        argv = ["diagnose", str(log), "--format", "text", "--out", str(tmp_path / f"out{i}")]
        p = subprocess.run(
            [sys.executable, "-c", PROBE, str(result), *argv], capture_output=True, text=True, env=env, timeout=120
        )
        assert p.returncode == 0, p.stderr
        seen.append(json.loads(result.read_text()))
        assert (tmp_path / f"out{i}" / "report.json").is_file()
        assert (tmp_path / f"out{i}" / ".faildiag.lock").is_file()  # the snapshot was written under its lock
    assert seen[1] == {"rc": 0, "imported": []}, seen


def test_a_built_in_pack_rewritten_with_its_old_size_and_time_is_read_again(tmp_path: Path) -> None:
    """The built-in packs' cache is found by their files' stamps, not their bytes: a pack rewritten with the
    same size and its old modification time (``cp -p``, a build that fixes file times) must still be read."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(ROOT / "pytest_faildiag", copy / "pytest_faildiag", ignore=shutil.ignore_patterns("__pycache__"))
    pack = copy / "pytest_faildiag" / "rules" / "05-reasoning.toml"
    log = tmp_path / "train.log"
    log.write_text("Traceback (most recent call last):\nValueError: boom\n")
    env = _env(tmp_path / "cache")
    env["PYTHONPATH"] = str(copy)

    def summaries(i: int) -> str:
        return json.dumps(_diagnose(log, tmp_path / f"out{i}", env)["root_causes"])

    first, second = summaries(0), summaries(1)  # the second from the cache
    assert first == second and "(shapes, options" in first
    st = pack.stat()
    text = pack.read_text(encoding="utf-8")
    assert text.count("rejects (shapes, options") == 1
    pack.write_text(text.replace("rejects (shapes, options", "rejects (SHAPES, options"), encoding="utf-8")
    os.utime(pack, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert pack.stat().st_size == st.st_size and pack.stat().st_mtime_ns == st.st_mtime_ns
    assert "(SHAPES, options" in summaries(2)


def test_prose_that_says_passes_runs_no_redaction_pattern_and_pass_names_are_still_masked() -> None:
    """A rule summary in many reports says "the program passes values ...": the word must not set off the
    whole redaction pass (compiling ~40 patterns), while every secret name spelt with "pass" still does."""
    probe = """
import json
from pytest_faildiag import redact
prose = redact.redact_text("ValueError: boom - the program passes values the API rejects; 3 passed, 1 passing")
compiled = [n for n, v in vars(redact).items() if isinstance(v, redact._lazy) and "search" in vars(v)]
secrets = [redact.redact_text(t) for t in ("PASS=hunter2x", "db_password: s3cr3tval", "Passphrase=abcdefgh",
           "sshpass -p hunter2 ssh host", "MYSQL_PASSWD=abc123", "pass_word=zzz")]
print(json.dumps({"prose": prose, "compiled": compiled, "secrets": secrets}))
"""
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=_env(ROOT), timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["prose"].endswith("3 passed, 1 passing") and out["compiled"] == []
    for text in out["secrets"]:
        assert "***REDACTED***" in text and not any(s in text for s in ("hunter2", "s3cr3t", "abcdefgh", "abc123"))
