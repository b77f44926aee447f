"""The per-node half of a multi-node job: ``faildiag run --job-dir DIR [--node NAME] -- CMD``.

Each node's ``faildiag run`` claims ``DIR/nodes/<NAME>/`` (its usual ``--out`` snapshot goes there) and, when
its command ends, adds ``node.json``: a compact record the merge reads instead of the node's logs — who
the node is and which job it belongs to, how many nodes the launcher said the job has, when the run
started and ended on this host's clock, each rank's first failures with their times, the collective-
timeout anchors (for clock-skew correction), the hardware evidence, and a digest of the environment lock.

Many nodes share one folder: a claim is made under a ``filelock`` on ``DIR/nodes/.claims.lock``, every file
is written atomically (temp file + rename), and two writers that claim one name are both kept — the
second gets ``<NAME>~2`` and both records carry ``"name": NAME``, so the merge flags the duplicate.

The expected node set is what the launcher told this node (see ``launcher_facts``): Slurm's
``SLURM_JOB_NODELIST``/``SLURM_NNODES``, Open MPI's ``OMPI_COMM_WORLD_SIZE``/``LOCAL_SIZE``, torchrun's
``--nnodes`` (or ``PET_NNODES``), msrun's ``--worker_num``/``--local_worker_num``, ``WORLD_SIZE``/
``LOCAL_WORLD_SIZE``, or ``FAILDIAG_JOB_NODES`` (a count or a comma list) set by the user. Each node records
its own view; the merge takes the largest count and the union of names, so a node that never wrote is
still known to be missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..fsio import atomic_write
from . import hardware

NODE_SCHEMA = "faildiag.node/1"
NODE_FILE = "node.json"
CLAIM_FILE = ".claim.json"
_NAME_OK = re.compile(r"[^A-Za-z0-9._-]+")


# --------------------------------------------------------------------------------------------------
# who this node is, which job, how many nodes
# --------------------------------------------------------------------------------------------------


def expand_hostlist(spec: str) -> list[str]:
    """Slurm's compressed host list: ``gpu[01-03,07],login1`` → gpu01 gpu02 gpu03 gpu07 login1."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", spec):
        if not part:
            continue
        m = re.match(r"^(?P<pre>[^\[]*)\[(?P<body>[^\]]*)\](?P<rest>.*)$", part)
        if not m:
            out.append(part)
            continue
        for item in m["body"].split(","):
            lo, _, hi = item.partition("-")
            if hi and lo.isdigit() and hi.isdigit():
                width = len(lo)
                names = [f"{i:0{width}d}" for i in range(int(lo), int(hi) + 1)][:100000]
            else:
                names = [lo]
            for n in names:
                out.extend(expand_hostlist(m["pre"] + n + m["rest"]))
    return out


def _arg(command: list[str], *names: str) -> str | None:
    """The value of a launcher option (``--nnodes 2``, ``--nnodes=2``) before the script's own arguments."""
    for i, a in enumerate(command):
        if a.endswith(".py") and i > 0:
            break
        for n in names:
            if a == n and i + 1 < len(command):
                return command[i + 1]
            if a.startswith(n + "="):
                return a[len(n) + 1 :]
    return None


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


@dataclass
class LauncherFacts:
    job_id: str | None = None
    job_id_source: str | None = None
    nodes: int | None = None
    names: list[str] | None = None
    nodes_source: str | None = None
    node_rank: int | None = None
    writers_per_node: int = 1
    local_index: int | None = None
    launcher: str = "other"


def launcher_facts(command: list[str], env: dict[str, str] | None = None) -> LauncherFacts:
    """What the launcher told this node about the job (see the module docstring for the sources)."""
    env = dict(os.environ if env is None else env)
    f = LauncherFacts()
    exe = " ".join(command[:3])
    if "torchrun" in exe or "torch.distributed.run" in exe or "torch.distributed.launch" in exe:
        f.launcher = "torchrun"
    elif "msrun" in exe:
        f.launcher = "msrun"
    elif "deepspeed" in exe:
        f.launcher = "deepspeed"
    elif "mpirun" in exe or "mpiexec" in exe:
        f.launcher = "mpirun"
    # job id: the user's, Slurm's, MPI's, the rendezvous id
    for key in ("FAILDIAG_JOB_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PET_RDZV_ID"):
        if env.get(key):
            f.job_id, f.job_id_source = env[key], key
            break
    if f.job_id is None:
        rdzv = _arg(command, "--rdzv_id", "--rdzv-id")
        if rdzv:
            f.job_id, f.job_id_source = rdzv, "--rdzv_id"
    # writers per node: a launcher that starts one faildiag per rank instead of one per node
    per_node = _int(env.get("OMPI_COMM_WORLD_LOCAL_SIZE")) or _int(env.get("MPI_LOCALNRANKS"))
    if per_node is None and env.get("SLURM_NTASKS") and env.get("SLURM_NNODES"):
        ntasks, nn = _int(env["SLURM_NTASKS"]), _int(env["SLURM_NNODES"])
        per_node = ntasks // nn if ntasks and nn and ntasks % nn == 0 else None
    if per_node and per_node > 1:
        f.writers_per_node = per_node
        f.local_index = _int(
            env.get("SLURM_LOCALID") or env.get("OMPI_COMM_WORLD_LOCAL_RANK") or env.get("MPI_LOCALRANKID")
        )
    # the node count and names
    if env.get("FAILDIAG_JOB_NODES"):
        v = env["FAILDIAG_JOB_NODES"]
        if v.isdigit():
            f.nodes = int(v)
        else:
            f.names = [n.strip() for n in v.split(",") if n.strip()]
            f.nodes = len(f.names)
        f.nodes_source = "FAILDIAG_JOB_NODES"
    elif env.get("SLURM_JOB_NODELIST") or env.get("SLURM_STEP_NODELIST") or env.get("SLURM_NNODES"):
        key = "SLURM_STEP_NODELIST" if env.get("SLURM_STEP_NODELIST") else "SLURM_JOB_NODELIST"
        f.names = expand_hostlist(env.get(key, "")) or None
        f.nodes = _int(env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES")) or (
            len(f.names) if f.names else None
        )
        f.nodes_source = key if f.names else "SLURM_NNODES"
        f.node_rank = _int(env.get("SLURM_NODEID"))
    elif env.get("OMPI_COMM_WORLD_SIZE"):
        size, local = _int(env["OMPI_COMM_WORLD_SIZE"]), _int(env.get("OMPI_COMM_WORLD_LOCAL_SIZE")) or 1
        f.nodes = size // local if size else None
        f.nodes_source = "OMPI_COMM_WORLD_SIZE/OMPI_COMM_WORLD_LOCAL_SIZE"
        f.node_rank = _int(env.get("OMPI_COMM_WORLD_NODE_RANK"))
    if f.nodes is None:
        nn = _arg(command, "--nnodes") or env.get("PET_NNODES")
        if nn:
            f.nodes = _int(nn.split(":")[-1])
            f.nodes_source = "torchrun --nnodes" if _arg(command, "--nnodes") else "PET_NNODES"
        elif _arg(command, "--worker_num") and _arg(command, "--local_worker_num"):
            total, local = _int(_arg(command, "--worker_num")), _int(_arg(command, "--local_worker_num"))
            f.nodes = total // local if total and local else None
            f.nodes_source = "msrun --worker_num/--local_worker_num"
        elif _arg(command, "--num_nodes"):
            f.nodes, f.nodes_source = _int(_arg(command, "--num_nodes")), "deepspeed --num_nodes"
        elif env.get("WORLD_SIZE") and env.get("LOCAL_WORLD_SIZE"):
            ws, lws = _int(env["WORLD_SIZE"]), _int(env["LOCAL_WORLD_SIZE"])
            f.nodes = ws // lws if ws and lws else None
            f.nodes_source = "WORLD_SIZE/LOCAL_WORLD_SIZE"
    if f.node_rank is None:
        f.node_rank = _int(
            _arg(command, "--node_rank", "--node-rank") or env.get("PET_NODE_RANK") or env.get("GROUP_RANK")
        )
    return f


def default_name(facts: LauncherFacts) -> str:
    """The host name; with several writers per node (one faildiag per rank), ``<host>-<local index>``."""
    host = socket.gethostname() or "node"
    if facts.writers_per_node > 1 and facts.local_index is not None:
        return f"{host}-{facts.local_index}"
    return host


def safe_name(name: str) -> str:
    """A node name usable as one folder name (never a path: no separators, no '..')."""
    cleaned = _NAME_OK.sub("_", name).strip("._") or "node"
    return cleaned[:120]


# --------------------------------------------------------------------------------------------------
# claiming a folder, recording the run
# --------------------------------------------------------------------------------------------------


@dataclass
class NodeRecorder:
    """Records one node's run into ``DIR/nodes/<folder>/``: ``begin`` before the command starts,
    ``after_run`` as soon as it ended (kernel lines, fed to the node's own diagnosis), ``write`` last."""

    job_dir: Path
    name: str
    command: list[str]
    facts: LauncherFacts
    folder: Path = Path()
    start_time: float = 0.0
    links_before: dict[str, dict[str, Any]] = field(default_factory=dict)
    kernel: list[dict[str, Any]] = field(default_factory=list)
    kernel_source: str = ""
    probes: dict[str, Any] = field(default_factory=dict)
    spent_s: float = 0.0  # time the node record added after the command ended (kernel log, rank scan, probes)
    _threads: list[threading.Thread] = field(default_factory=list)

    @classmethod
    def begin(cls, job_dir: Path, name: str | None, command: list[str]) -> NodeRecorder:
        """Claim the node's folder. Raises OSError when the job folder is not writable."""
        facts = launcher_facts(command)
        rec = cls(Path(job_dir), name or default_name(facts), command, facts)
        rec.start_time = time.time()
        rec.folder = rec._claim()
        rec.links_before = hardware.link_state()
        return rec

    @property
    def writer(self) -> str:
        return f"{socket.gethostname()}:{os.getpid()}:{self.start_time:.3f}"

    def _claim(self) -> Path:
        nodes = self.job_dir / "nodes"
        nodes.mkdir(parents=True, exist_ok=True)
        base = safe_name(self.name)
        try:
            with FileLock(str(nodes / ".claims.lock"), timeout=60):
                return self._claim_locked(nodes, base)
        except Timeout:  # a stuck lock holder on a shared file system: claim anyway, renames stay atomic
            return self._claim_locked(nodes, base)

    def _claim_locked(self, nodes: Path, base: str) -> Path:
        for i in range(1, 1000):
            folder = nodes / (base if i == 1 else f"{base}~{i}")
            claim = _read_json(folder / CLAIM_FILE)
            if claim is not None and self._is_duplicate(claim, folder):
                continue
            folder.mkdir(parents=True, exist_ok=True)
            try:
                (folder / NODE_FILE).unlink()  # a previous job's record must not outlive this claim
            except OSError:
                pass
            atomic_write(
                folder / CLAIM_FILE,
                json.dumps(
                    {
                        "name": self.name,
                        "writer": self.writer,
                        "job_id": self.facts.job_id,
                        "start_time": self.start_time,
                        "host": socket.gethostname(),
                        "expected": self._expected_json(),
                    }
                )
                + "\n",
            )
            return folder
        raise OSError(f"more than 999 writers claim the node name {self.name!r}")

    def _expected_json(self) -> dict[str, Any]:
        return {
            "nodes": self.facts.nodes,
            "names": self.facts.names,
            "source": self.facts.nodes_source,
            "writers_per_node": self.facts.writers_per_node,
        }

    def _is_duplicate(self, claim: dict[str, Any], folder: Path) -> bool:
        """Another writer of THIS job holds the name (same job id), or one whose run has not finished yet."""
        if claim.get("writer") == self.writer:
            return False
        if self.facts.job_id is not None and claim.get("job_id") == self.facts.job_id:
            return True
        record = _read_json(folder / NODE_FILE)
        finished = record is not None and record.get("end_time") is not None
        return not finished and claim.get("job_id") in (None, self.facts.job_id)

    def after_run(self, result: Any) -> list[str]:
        """Right after the command ended: the kernel log's hardware lines (written to ``hardware/kernel.log``
        and returned as a path for the node's own diagnosis) and, in the background, the GPU/NPU counters."""
        end = time.time()
        t0 = time.perf_counter()
        if result.failed:
            for name, fn in (("gpu", hardware.gpu_counters), ("npu", hardware.npu_health)):
                t = threading.Thread(target=lambda n=name, f=fn: self.probes.__setitem__(n, f()), daemon=True)
                t.start()
                self._threads.append(t)
        self.kernel, self.kernel_source = hardware.kernel_events(self.start_time, end)
        paths: list[str] = []
        if self.kernel:
            path = self.folder / "hardware" / "kernel.log"
            atomic_write(path, "".join(k["line"] + "\n" for k in self.kernel))
            paths.append(str(path))
        self.spent_s += time.perf_counter() - t0
        return paths

    def write(self, result: Any, diag: Any, lock: dict[str, Any] | None) -> Path:
        """Write ``node.json`` (atomically). The rank scan runs only after a failure."""
        from .ranks import read_rank_events

        end = time.time()
        t0 = time.perf_counter()
        events, anchors = [], []
        if result.failed:
            files = _node_logs(self.folder)
            events, anchors = read_rank_events(files, end)
        for k in self.kernel:
            from .ranks import RankEvent, is_symptom

            events.append(
                RankEvent(
                    None,
                    k["time"],
                    "kernel log",
                    "hardware/kernel.log",
                    None,
                    k["line"],
                    is_symptom(k["line"]),
                    category="hardware" if k["kind"] != "oom_kill" else "resource",
                )
            )
        for t in self._threads:
            t.join(timeout=3.5)
        links_after = hardware.link_state()
        link_notes = hardware.link_changes(self.links_before, links_after)
        record = {
            "schema": NODE_SCHEMA,
            "name": self.name,
            "folder": self.folder.name,
            "host": socket.gethostname(),
            "writer": self.writer,
            "job": {"id": self.facts.job_id, "id_source": self.facts.job_id_source, "launcher": self.facts.launcher},
            "expected": self._expected_json(),
            "node_rank": self.facts.node_rank,
            "start_time": round(self.start_time, 6),
            "end_time": round(end, 6),
            "utc_offset_s": time.localtime(self.start_time).tm_gmtoff,
            "status": "failed" if result.failed else "ok",
            "exit_status": result.exit_status,
            "signal": result.signal,
            "hung": result.hung,
            "summary": getattr(diag, "summary", "") if diag is not None else "",
            "events": [e.to_json() for e in events],
            "anchors": [a.to_json() for a in anchors],
            "hardware": {
                "kernel_source": self.kernel_source,
                "gpu": self.probes.get("gpu"),
                "npu": self.probes.get("npu"),
                "links": link_notes,
                "host_oom": result.oom,
            },
            "env": env_digest(lock, self.name),
        }
        record["record_s"] = round(self.spent_s + time.perf_counter() - t0, 3)
        from ..redact import redact_obj

        atomic_write(self.folder / NODE_FILE, json.dumps(redact_obj(record), ensure_ascii=False, default=str) + "\n")
        return self.folder / NODE_FILE


def _node_logs(folder: Path) -> list[tuple[str, Path]]:
    files = [(f"logs/{n}", folder / "logs" / n) for n in ("stderr.log", "stdout.log")]
    ranks = folder / "ranks"
    if ranks.is_dir():
        files += [(f"ranks/{p.name}", p) for p in sorted(ranks.glob("*.log"))]
    return [(n, p) for n, p in files if p.is_file() and p.stat().st_size > 0]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --------------------------------------------------------------------------------------------------
# the environment lock, reduced to what must agree across nodes
# --------------------------------------------------------------------------------------------------

_ENV_KEEP = re.compile(
    r"^(?:NCCL_|CUDA_|CUDNN_|TORCH_|PYTORCH_|HCCL_|ASCEND_|GLOO_|OMP_NUM_THREADS$|LD_LIBRARY_PATH$|LD_PRELOAD$|MS_|NVIDIA_|UCX_|FI_)"
)
_ENV_PER_NODE = re.compile(r"RANK|NODE|HOST|LOCAL|VISIBLE_DEVICES|_FILE$|TEMP_FILE|_DIR$|PORT|ADDR|SOCKET|TASK|PID")
_KEY_PACKAGES = (
    "torch",
    "torch-npu",
    "torch_npu",
    "deepspeed",
    "mindspore",
    "jax",
    "jaxlib",
    "transformers",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu11",
    "nvidia-cudnn-cu12",
    "triton",
    "apex",
    "megatron-core",
)


def env_digest(lock: dict[str, Any] | None, node_name: str) -> dict[str, Any]:
    """The facts of the environment lock that must agree across the nodes of a job: driver, CUDA, NCCL,
    torch, CANN versions, key packages, the runtime knobs' environment variables, and a digest of all
    installed packages. Per-node values (ranks, host names, device lists, paths into the node's folder)
    are left out: they differ by design."""
    if not isinstance(lock, dict):
        return {"facts": {}, "digest": None, "reason": "no environment lock"}
    facts: dict[str, str] = {}
    py = lock.get("python") or {}
    if isinstance(py, dict) and py.get("version"):
        facts["python"] = str(py["version"])
    gpu = lock.get("gpu") or {}
    if isinstance(gpu, dict):
        for k in ("driver_version", "cuda_version"):
            if gpu.get(k):
                facts[f"gpu.{k}"] = str(gpu[k])
    asc = lock.get("ascend") or {}
    if isinstance(asc, dict) and isinstance(asc.get("cann"), dict) and asc["cann"].get("version"):
        facts["cann"] = str(asc["cann"]["version"])
    if isinstance(asc, dict) and isinstance(asc.get("npu_smi"), dict) and asc["npu_smi"].get("version"):
        facts["npu_driver"] = str(asc["npu_smi"]["version"])
    pkgs = lock.get("packages") or {}
    if isinstance(pkgs, dict):
        for p in _KEY_PACKAGES:
            if p in pkgs:
                facts[f"package.{p}"] = str(pkgs[p])
    ml = lock.get("ml") or {}
    if isinstance(ml, dict):
        for mod, info in ml.items():
            if isinstance(info, dict):
                for k in ("version", "cuda", "nccl", "cann"):
                    if info.get(k):
                        facts[f"ml.{mod}.{k}"] = str(info[k])
    env = lock.get("env") or {}
    if isinstance(env, dict):
        for k, v in env.items():
            if _ENV_KEEP.match(k) and not _ENV_PER_NODE.search(k) and node_name not in str(v):
                facts[f"env.{k}"] = str(v)[:300]
    digest = hashlib.sha256(
        json.dumps(sorted(pkgs.items()) if isinstance(pkgs, dict) else [], default=str).encode()
    ).hexdigest()[:16]
    facts["packages.digest"] = digest
    return {"facts": facts, "digest": hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]}
