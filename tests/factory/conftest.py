"""A real factory folder on disk and helpers to prove it is never touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

QUOTA_CARD = """+++
id = "slurm-qos-gres"
title = "cluster QOS quota of the account is exhausted"
signatures = ['QOSMaxGRESPerUser limit reached for account \\S+']
category = "harness"
type = "runtime_error"
fix_hints = ["submit to the preemptible partition or ask the admins to raise the account's GPU quota"]
links = ["https://wiki.example/quota"]
+++

The scheduler refuses more GPUs for the account; nothing is wrong with the job.
"""

# a team card that blames the data for what the logs show is a plain CUDA OOM
WRONG_OOM_CARD = """+++
id = "oom-is-bad-shard"
title = "OOM on rank 3 means the bad shard again"
signatures = ['CUDA out of memory\\. Tried to allocate']
category = "dataset"
+++
"""

QUOTA_LOG = """step 1 | loss 2.31
step 2 | loss 2.29
Traceback (most recent call last):
  File "/work/train.py", line 10, in <module>
    allocate()
RuntimeError: srun: error: QOSMaxGRESPerUser limit reached for account ml-vision-17 (job 4412)
"""

OOM_LOG = """step 1 | loss 2.31
Traceback (most recent call last):
  File "/workspace/train.py", line 188, in main
    loss = model(batch).loss
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Of the allocated memory 74.30 GiB is allocated by PyTorch.
"""


def write_factory(root: Path, cards: dict[str, str]) -> Path:
    for rel, text in cards.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def snapshot_of(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file and folder under ``root``: bytes, modification time and mode."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        st = os.stat(dirpath)
        out[dirpath] = (b"", st.st_mtime_ns, st.st_mode)
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            st = os.stat(p)
            out[p] = (Path(p).read_bytes(), st.st_mtime_ns, st.st_mode)
    return out


def make_read_only(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root, topdown=False):
        for fn in filenames:
            os.chmod(os.path.join(dirpath, fn), 0o444)
        os.chmod(dirpath, 0o555)


def make_writable(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for fn in filenames:
            os.chmod(os.path.join(dirpath, fn), 0o644)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The factory index goes to a throw-away cache folder (inherited by the CLI and inner sessions), never
    to the real home; each test starts without one."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture
def factory(tmp_path: Path):
    """A read-only factory with the quota card in a subfolder; made writable again for clean-up."""
    root = write_factory(tmp_path / "factory", {"infra/slurm-qos.md": QUOTA_CARD})
    make_read_only(root)
    yield root
    make_writable(root)


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner sessions must not see the outer one's CI variables, options or factory."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS", "FAILDIAG_FACTORY_ROOT"):
        monkeypatch.delenv(name, raising=False)
