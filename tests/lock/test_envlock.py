"""build_lock / save_lock / load_lock against the real interpreter, venv, tools and git."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path

import pytest

from pytest_faildiag.capture import envlock
from pytest_faildiag.capture.envlock import LockError, build_lock, load_lock, probe_cann, save_lock
from pytest_faildiag.redact import MASK


def test_it_describes_the_real_interpreter_and_installed_packages():
    lock = build_lock()
    assert lock["schema"] == envlock.SCHEMA
    assert lock["python"]["version"] == platform.python_version()
    assert lock["python"]["executable"] == sys.executable
    assert lock["packages"]["pytest"] == metadata.version("pytest")
    assert lock["packages"]["psutil"] == metadata.version("psutil")
    try:
        assert lock["packages"]["pytest-faildiag"] == metadata.version("pytest-faildiag")
    except metadata.PackageNotFoundError:
        assert "pytest-faildiag" not in lock["packages"]
    assert lock["resources"]["cpu_count"] == os.cpu_count()
    assert lock["resources"]["disk"]["free"] > 0
    assert set(lock["probes"]) >= {
        "python",
        "packages",
        "ml",
        "env",
        "resources",
        "git",
        "nvidia_smi",
        "npu_smi",
        "cann",
    }
    json.dumps(lock)  # JSON all the way down


def test_it_reports_dev_shm_on_linux():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    shm = build_lock()["resources"]["shm"]
    assert shm["total"] == os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize


def test_it_lists_torch_from_metadata_without_importing_it():
    if "torch" not in {d.metadata["Name"] for d in metadata.distributions()}:
        pytest.skip("torch is not installed")
    code = (
        "import sys, json; from pytest_faildiag.capture.envlock import build_lock; l = build_lock(); "
        "print(json.dumps([l['ml']['torch'], 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    torch_info, imported = json.loads(out)
    assert imported is False
    assert torch_info["source"] == "metadata" and torch_info["version"] == metadata.version("torch")


@pytest.mark.torch
def test_include_torch_imports_it_and_records_build_facts():
    torch = pytest.importorskip("torch")
    info = build_lock(include=["torch"])["ml"]["torch"]
    assert info["source"] == "import"
    assert info["imported_version"] == torch.__version__
    assert info["cuda"] == torch.version.cuda
    assert info["cuda_available"] == torch.cuda.is_available()


def test_wheel_tag_gives_torch_cuda_build_without_import(site):
    site("torch", "2.5.1+cu121")
    info = build_lock()["ml"]["torch"]
    assert info["version"] == "2.5.1+cu121"
    assert info["cuda_from_wheel"] == "12.1"


def test_default_pypi_torch_wheel_takes_its_cuda_from_the_runtime_wheel(site):
    site("torch", "2.6.0")
    site("nvidia-cuda-runtime-cu12", "12.4.127")
    assert build_lock()["ml"]["torch"]["cuda_from_wheel"] == "12.4"


def test_missing_tools_are_recorded_not_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git, no nvidia-smi, no npu-smi
    lock = build_lock(cwd=tmp_path)
    assert lock["gpu"] == {"status": "missing", "tool": "nvidia-smi"}
    assert lock["ascend"]["npu_smi"]["status"] == "missing"
    assert lock["git"]["status"] == "missing"
    assert lock["packages"]  # the rest of the lock is still there


def test_nvidia_smi_output_is_parsed(fake_nvidia):
    gpu = build_lock()["gpu"]
    assert gpu["status"] == "ok"
    assert gpu["driver_version"] == "535.104.05" and gpu["cuda_version"] == "12.2"
    assert gpu["device_count"] == 2
    assert gpu["devices"][0] == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "driver_version": "535.104.05",
        "memory_total_mib": 81559,
        "memory_used_mib": 1024,
        "pci_bus_id": "00000000:18:00.0",
    }


def test_a_hanging_tool_is_bounded_by_the_timeout(tool):
    tool("nvidia-smi", "sleep 10 & sleep 10\n")  # a grandchild keeps the pipe open after the kill
    tool("npu-smi", "sleep 10\n")
    start = time.monotonic()
    lock = build_lock(timeout=0.3)
    assert time.monotonic() - start < 3
    assert lock["gpu"]["status"] == "timeout"
    assert lock["ascend"]["npu_smi"]["status"] == "timeout"
    assert lock["probes"]["nvidia_smi"]["status"] == "timeout"


def test_a_failing_tool_is_recorded_with_its_error(tool):
    tool(
        "nvidia-smi",
        "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2; exit 9\n",
    )
    gpu = build_lock()["gpu"]
    assert gpu["status"] == "error" and gpu["returncode"] == 9
    assert "could not communicate" in gpu["error"]


def test_npu_smi_output_is_parsed(tool):
    out = """+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.6                   Version: 23.0.6                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.4        37                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3396 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | Warning       | 90.1        36                0    / 0             |
"""
    tool("npu-smi", f"cat <<'EOF'\n{out}EOF\n")
    npu = build_lock()["ascend"]["npu_smi"]
    assert npu["status"] == "ok" and npu["version"] == "23.0.6"
    assert npu["devices"] == [
        {"index": 0, "name": "910B3", "health": "OK"},
        {"index": 1, "name": "910B3", "health": "Warning"},
    ]


def test_cann_version_is_read_from_the_toolkit_install_info(tmp_path, monkeypatch):
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    info = tmp_path / "Ascend" / "ascend-toolkit" / "latest" / "x86_64-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.0.RC2\ninnerversion=V100R001C18B800TP005\narch=x86_64\n"
    )
    cann = probe_cann([str(tmp_path / "Ascend")])
    assert cann == {"status": "ok", "version": "8.0.RC2", "source": str(info)}
    assert probe_cann([str(tmp_path / "nowhere")]) == {"status": "missing"}


def test_git_revision_and_dirty_state_of_a_real_repo(git_repo):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_repo, capture_output=True, text=True).stdout.strip()
    clean = build_lock(cwd=git_repo)["git"]
    assert clean == {
        "status": "ok",
        "revision": head,
        "branch": "main",
        "dirty": False,
        "changed_files": 0,
        "changed_sample": [],
    }
    (git_repo / "train.py").write_text("print('changed')\n")
    (git_repo / "new.py").write_text("")
    dirty = build_lock(cwd=git_repo)["git"]
    assert dirty["dirty"] is True and dirty["changed_files"] == 2
    assert sorted(dirty["changed_sample"]) == ["new.py", "train.py"]


def test_outside_a_repo_git_says_so(tmp_path):
    assert build_lock(cwd=tmp_path)["git"]["status"] in ("not_a_repo", "error")


def test_relevant_env_vars_are_kept_and_secrets_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyzABCDEF")
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567")
    monkeypatch.setenv("HF_ENDPOINT", "https://mirror-user:Sup3rS3cret@hf-mirror.example.com")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789")
    monkeypatch.setenv("SOME_UNRELATED_THING", "x")
    lock = build_lock()
    env = lock["env"]
    assert env["NCCL_DEBUG"] == "INFO" and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["HF_TOKEN"] == MASK and env["WANDB_API_KEY"] == MASK and env["GITHUB_TOKEN"] == MASK
    assert env["HF_ENDPOINT"] == f"https://mirror-user:{MASK}@hf-mirror.example.com"
    assert "SOME_UNRELATED_THING" not in env
    path = save_lock(lock, tmp_path / "env.lock.json")
    text = path.read_text()
    for secret in ("hf_abcdefghijklmnop", "0123456789abcdef0123", "Sup3rS3cret", "ghp_aBcDeF"):
        assert secret not in text


def test_package_names_that_look_secret_keep_their_versions(site):
    site("google-auth", "2.29.0")
    site("keyring", "25.0.0")
    lock = build_lock()
    assert lock["packages"]["google-auth"] == "2.29.0" and lock["packages"]["keyring"] == "25.0.0"


def test_save_and_load_round_trip_atomically(tmp_path):
    lock = build_lock()
    path = save_lock(lock, tmp_path / "sub" / "env.lock.json")
    assert load_lock(path)["packages"] == lock["packages"]
    assert [p.name for p in path.parent.iterdir()] == ["env.lock.json"]  # no temp file left behind


def test_concurrent_writers_leave_a_whole_file(tmp_path):
    lock = build_lock()
    path = tmp_path / "env.lock.json"
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for _ in range(10):
                save_lock({**lock, "writer": i}, path)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert load_lock(path)["writer"] in range(6)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"schema": "faildiag.report/1"}', "not an environment lock"),
        ('{"hello": 1}', "not an environment lock"),
    ],
)
def test_load_lock_rejects_bad_files_with_a_clear_error(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(LockError, match=message):
        load_lock(bad)


def test_load_lock_of_a_missing_file_is_a_lock_error(tmp_path):
    with pytest.raises(LockError, match="no such file"):
        load_lock(tmp_path / "absent.json")
    assert issubclass(LockError, ValueError)


def test_a_broken_probe_is_recorded_and_the_lock_still_built(monkeypatch):
    def boom() -> dict:
        raise RuntimeError("probe exploded")

    monkeypatch.setattr(envlock, "probe_platform", boom)
    lock = build_lock()
    assert lock["probes"]["platform"]["status"] == "error"
    assert "probe exploded" in lock["probes"]["platform"]["error"]
    assert lock["packages"]


def test_a_missing_cwd_and_a_zero_timeout_still_give_a_lock(tmp_path):
    lock = build_lock(cwd=tmp_path / "does-not-exist", timeout=0)
    assert lock["git"]["status"] in ("error", "timeout", "missing")
    assert lock["resources"]["disk"]["status"] == "error"
    assert lock["packages"]


@pytest.mark.parametrize(
    "metadata_text",
    [
        "Metadata-Version: 2.1\nName: plain-pkg\nVersion: 1.2.3\n\nName: not-this\nVersion: 9\n",
        "Metadata-Version: 2.1\r\nName: crlf_pkg\r\nVersion: 0.1\r\n\r\nbody\r\n",
        "Metadata-Version: 2.1\nName: folded\n  continued\nVersion: 2.0\n\n",
        "Metadata-Version: 2.1\nname: lower-case-keys\nVERSION: 3.0  \n\n",
        "Metadata-Version: 2.1\nnot a header line\nName: after-a-stray-line\nVersion: 1\n\n",
        "Metadata-Version: 2.1\nName: no-blank-line\nVersion: 4.5",
        "Metadata-Version: 2.1\nName: spaces-line\n   \nVersion: 5\n\n",
        "Metadata-Version: 2.1\nName: form\x0cfeed\nVersion: 6\n\n",
        "Metadata-Version: 2.1\nVersion: 7\n\n",
        "",
    ],
)
def test_package_names_and_versions_read_as_the_email_parser_reads_them(tmp_path: Path, metadata_text: str) -> None:
    """The lock reads Name and Version from a distribution's METADATA header lines itself (parsing the whole
    file with ``email`` twice per package was most of a cold ``faildiag run``'s lock): on real files of
    every odd shape it must answer what ``dist.metadata["Name"]`` and ``dist.version`` answer."""
    from pytest_faildiag.capture.envlock import _name_and_version

    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(metadata_text.encode())
    dist = metadata.PathDistribution(info)
    assert _name_and_version(dist) == (dist.metadata["Name"], dist.version)
