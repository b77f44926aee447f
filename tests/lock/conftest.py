"""Helpers for the lock tests: real distributions on sys.path, real tools on PATH, real git repos."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest


def make_dist(root: Path, name: str, version: str) -> Path:
    """Create a real ``.dist-info`` folder that ``importlib.metadata`` will find when ``root`` is on sys.path."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    return info


def make_tool(bindir: Path, name: str, script: str) -> Path:
    """Create an executable shell script ``name`` in ``bindir`` (a stand-in for nvidia-smi / npu-smi)."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return path


NVIDIA_SMI = r"""
for a in "$@"; do
  case "$a" in
    --query-gpu=*) printf '0, NVIDIA H100 80GB HBM3, 535.104.05, 81559, 1024, 00000000:18:00.0\n1, NVIDIA H100 80GB HBM3, 535.104.05, 81559, 0, 00000000:2A:00.0\n'; exit 0;;
  esac
done
cat <<'BANNER'
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
BANNER
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Returns ``install(name, version, layer="a")``: puts a real distribution in a folder ``layer`` that is
    prepended to sys.path on first use. A later layer shadows an earlier one, as a newer install would."""
    roots: dict[str, Path] = {}

    def install(name: str, version: str, layer: str = "a") -> Path:
        if layer not in roots:
            roots[layer] = tmp_path / f"site-{layer}"
            roots[layer].mkdir()
            monkeypatch.syspath_prepend(str(roots[layer]))
        return make_dist(roots[layer], name, version)

    return install


@pytest.fixture
def fake_nvidia(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An nvidia-smi on PATH reporting driver 535.104.05 (CUDA 12.2) and two H100s."""
    bindir = tmp_path / "bin"
    make_tool(bindir, "nvidia-smi", NVIDIA_SMI)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bindir


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"]):
        subprocess.run(argv, cwd=repo, check=True, env=env)
    (repo / "train.py").write_text("print('hi')\n")
    subprocess.run(["git", "add", "train.py"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=repo, check=True, env=env)
    return repo


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Returns a function that puts an executable script named ``name`` first on PATH."""
    bindir = tmp_path / "toolbin"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")

    def put(name: str, script: str) -> Path:
        return make_tool(bindir, name, script)

    return put
