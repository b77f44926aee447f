"""The CI/runner/scheduler pack (38-ci-harness-catalogue.toml): it loads cleanly, and its rules place real
failures where their cause lives — a train log of the thread corpus (pre-commit on an old git), git run
for real against a local HTTP server that refuses it (401, 404, a 500 in the middle of a fetch) and against
a host name that cannot resolve, curl's resolver error, output captured on a root container (a read-only
mount, a checkout owned by another user, a docker CLI without a daemon), and real signals and timeouts.

Runner and scheduler messages that cannot be produced here (GitHub Actions, GitLab, Slurm, Kubernetes,
tox/nox, root-refusing programs) are checked against the texts their own documentation and sources print:
that proves the patterns read the documented wording and place each family in its home, not that a log
seen in the wild is diagnosed."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, build_ruleset
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

PACK = "38-ci-harness-catalogue.toml"
ROOT = Path(__file__).resolve().parents[2]
THREADS = ROOT / "tests/data/corpus/threads"
CAPTURED = ROOT / "tests/data/ci_harness"
SPLIT = json.loads((THREADS / "split.json").read_text())["split"]
SHA = "1" * 40


def _assert(diag, rule: str, type_: str, category: str, first: bool = False) -> None:
    rules = [c.rule for c in diag.root_causes]
    assert fired(diag, rule), (rule, rules)
    assert diag.profile.type == type_, (diag.profile.type, rules)
    cats = top3(diag)
    assert category in (cats[:1] if first else cats), (category, cats, rules)


def _run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None):
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    return diagnose(texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode), p


# --------------------------------------------------------------------------------------------- the pack


def test_it_loads_the_pack_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 35
    for rule in mine:
        assert rule.causes, rule.id
        assert all(c.fix_hints for c in rule.causes), rule.id


def test_no_rule_of_the_pack_replaces_a_rule_of_another_pack():
    others = {r.id for name, text in _builtin_packs() if name != PACK for r in build_ruleset([(name, text)]).rules}
    assert not others & {r.id for r in pack_rules(PACK)}


# ------------------------------------------------------------------------------- a train log of the corpus


def test_pre_commit_on_an_old_git_is_the_machine_s_git_at_hook_install():
    """pre-commit's 'An unexpected error' comes from preparing hooks (startup), and git's old 'result=22,
    HTTP code = 404' wording marks a git from before the message was rewritten."""
    diag = diagnose([str(train_log_path("environment/env_precommit_git_fetch_404_old_git_centos7_ci_node"))])
    _assert(diag, "git.rpc_failed_old_wording", "runtime_error", "environment", first=True)
    assert fired(diag, "precommit.unexpected_error")
    assert diag.profile.stage == "startup"


def test_a_dataloader_bus_error_in_a_hub_container_offers_the_container_s_shm_default():
    """PyTorch's README: in a container the default /dev/shm is not enough for multiprocessing loaders."""
    diag = diagnose([str(train_log_path("pytorch/pt_dataloader_worker_bus_error_hub_container_small_dev_shm"))])
    _assert(diag, "container.small_dev_shm", "crash", "harness")
    assert diag.profile.stage == "data"


# ------------------------------------------------------------------------------------- git, for real


class _GitServer(http.server.BaseHTTPRequestHandler):
    """A git smart-HTTP server that refuses: 401 under /auth/, a ref advertisement then a 500 on the fetch
    under /broken/, 404 elsewhere."""

    def log_message(self, *args) -> None:  # keep the test output clean
        pass

    def _reply(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.startswith("/auth/"):
            self._reply(401, headers={"WWW-Authenticate": 'Basic realm="ci"'})
        elif self.path.startswith("/broken/"):
            refs = _pkt("# service=git-upload-pack\n") + b"0000"
            refs += _pkt(f"{SHA} HEAD\0side-band-64k\n") + _pkt(f"{SHA} refs/heads/main\n") + b"0000"
            self._reply(200, refs, {"Content-Type": "application/x-git-upload-pack-advertisement"})
        else:
            self._reply(404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._reply(500)


def _pkt(line: str) -> bytes:
    data = line.encode()
    return b"%04x" % (len(data) + 4) + data


@pytest.fixture
def git_server() -> Iterator[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GitServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "GIT_CONFIG_NOSYSTEM": "1"}


def test_git_without_credentials_for_a_private_remote_is_the_ci_s_credentials(git_server, tmp_path):
    diag, p = _run(["git", "ls-remote", f"{git_server}/auth/private.git"], GIT_ENV, tmp_path)
    assert "terminal prompts disabled" in p.stderr
    _assert(diag, "git.no_credentials", "runtime_error", "config", first=True)
    assert "harness" in top3(diag)


def test_git_repository_not_found_is_the_configured_url(git_server, tmp_path):
    diag, p = _run(["git", "ls-remote", f"{git_server}/missing/renamed.git"], GIT_ENV, tmp_path)
    assert "not found" in p.stderr
    _assert(diag, "git.repository_not_found", "runtime_error", "config", first=True)


def test_git_fetch_broken_by_the_server_is_the_transfer(git_server, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    diag, p = _run(["git", "-C", str(tmp_path), "fetch", f"{git_server}/broken/repo.git", "main"], GIT_ENV)
    assert "RPC failed; HTTP 500" in p.stderr
    _assert(diag, "git.rpc_failed", "runtime_error", "harness", first=True)
    assert "config" in top3(diag)


def test_git_that_cannot_resolve_its_host_is_the_runner_s_network(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    # .invalid never resolves (RFC 2606), on any machine, with or without network
    diag, p = _run(["git", "ls-remote", "https://ci-mirror.invalid/org/repo.git"], GIT_ENV, tmp_path)
    assert "Could not resolve host" in p.stderr
    _assert(diag, "dns.could_not_resolve_host", "runtime_error", "harness", first=True)
    assert fired(diag, "git.unable_to_access")


def test_curl_that_cannot_resolve_its_host_is_the_runner_s_network(tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    diag, p = _run(["curl", "-sS", "https://artifacts.invalid/model.bin"], cwd=tmp_path)
    assert "Could not resolve host" in p.stderr
    _assert(diag, "dns.could_not_resolve_host", "runtime_error", "harness", first=True)


# ------------------------------------------------------------------------ output captured on a root container


def test_writing_into_a_read_only_mount_names_the_mount_and_the_write_location():
    diag = diagnose([str(CAPTURED / "read_only_mount.txt")])
    _assert(diag, "errno.read_only_fs", "runtime_error", "harness")
    assert "config" in top3(diag)


def test_a_checkout_owned_by_another_user_is_the_job_s_user():
    diag = diagnose([str(CAPTURED / "git_dubious_ownership.txt")])
    _assert(diag, "git.dubious_ownership", "runtime_error", "harness", first=True)
    assert diag.profile.stage == "startup"


def test_a_docker_cli_without_a_daemon_is_the_runner():
    diag = diagnose([str(CAPTURED / "docker_no_daemon.txt")])
    _assert(diag, "docker.daemon_unreachable", "runtime_error", "harness", first=True)


def test_tox_without_the_env_s_python_is_the_runner_image():
    diag = diagnose([str(CAPTURED / "tox_missing_interpreter.txt")])
    _assert(diag, "tox.interpreter_not_found", "runtime_error", "environment", first=True)
    assert "config" in top3(diag)
    assert diag.profile.stage == "startup"


def test_nox_without_the_session_s_python_is_the_runner_image():
    diag = diagnose([str(CAPTURED / "nox_missing_interpreter.txt")])
    _assert(diag, "tox.interpreter_not_found", "runtime_error", "environment", first=True)
    assert diag.profile.stage == "startup"


def test_tox_s_failed_commands_are_a_run_not_an_evaluation_loop():
    """tox 4 closes with 'evaluation failed :(' (its own run's evaluation): the commands ran, stage runtime."""
    diag = diagnose([str(CAPTURED / "tox_commands_failed.txt")])
    assert fired(diag, "tox.commands_failed")
    assert diag.profile.stage == "runtime"


def test_pre_commit_whose_hook_repository_is_gone_is_the_configured_url():
    diag = diagnose([str(CAPTURED / "precommit_hook_repo_404.txt")])
    _assert(diag, "git.repository_not_found", "runtime_error", "config")
    assert fired(diag, "precommit.unexpected_error")
    assert diag.profile.stage == "startup"


@pytest.mark.parametrize("capture", ["postgres_initdb_as_root.txt", "postgres_server_as_root.txt"])
def test_a_database_that_refuses_root_is_the_container_s_user(capture):
    diag = diagnose([str(CAPTURED / capture)])
    _assert(diag, "root.refused_as_root", "runtime_error", "harness", first=True)
    assert "config" in top3(diag)


# ------------------------------------------------------------- neighbouring real failures: signals, timeouts


def test_a_real_sigkill_offers_the_memory_budget_and_the_runner(tmp_path):
    """What 'exit code 137' in a runner's log stands for, produced for real: a process killed by SIGKILL."""
    diag, p = _run(["bash", "-c", "echo training; kill -9 $$"], cwd=tmp_path)
    assert p.returncode in (137, -9)
    cats = top3(diag)
    assert "resource" in cats and "harness" in cats, cats


@pytest.mark.parametrize("shell_reports", [True, False], ids=["shell-143", "python-minus-15"])
def test_a_real_sigterm_is_the_runner_stopping_the_job(tmp_path, shell_reports):
    """A job ended by SIGTERM (a cancel, a preemption, a time limit's first signal): the shell reports it as
    exit status 143 (128 + 15), Python's subprocess as -15; either alone names the runner and the time budget."""
    job = "echo epoch 1; kill -TERM $$"
    cmd = ["bash", "-c", f"bash -c '{job}'; exit $?"] if shell_reports else ["bash", "-c", job]
    diag, p = _run(cmd, cwd=tmp_path)
    assert p.returncode == (143 if shell_reports else -15)
    _assert(diag, "ci.exit_code_143", "crash", "harness", first=True)
    assert "resource" in top3(diag)


def test_a_real_timeout_offers_the_runner_s_time_limit(tmp_path):
    """What a runner's time limit does to a job, produced for real: coreutils timeout stops a sleeping step."""
    diag, p = _run(["timeout", "1", sys.executable, "-c", "import time; print('step', flush=True); time.sleep(30)"])
    assert p.returncode == 124
    assert diag.profile.type == "hang"
    assert "harness" in top3(diag)


# ------------------------------------------------------- the runners' and schedulers' own documented texts

DOCUMENTED = [
    # (rule, documented text, type, home that must lead)
    (
        "gha.runner_shutdown_signal",
        "##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped, "
        "or a manually started runner is canceled.",
        "crash",
        "harness",
    ),
    (
        "gha.runner_lost_communication",
        "The hosted runner: GitHub Actions 3 lost communication with the server. Anything in your workflow that "
        "terminates the runner process, starves it for CPU/Memory, or blocks its network access can cause this "
        "error.",
        "crash",
        "resource",
    ),
    (
        "ci.job_time_limit",
        "The job running on runner GitHub Actions 2 has exceeded the maximum execution time of 360 minutes.",
        "hang",
        "resource",
    ),
    ("ci.job_time_limit", "ERROR: Job failed: execution took longer than 1h0m0s seconds", "hang", "resource"),
    (
        "gha.runner_low_disk",
        "You are running out of disk space. The runner will stop working when the machine runs out of disk "
        "space. Free space left: 41 MB",
        "runtime_error",
        "resource",
    ),
    ("ci.exit_code_137", "##[error]Process completed with exit code 137.", "crash", "resource"),
    ("ci.exit_code_137", "ERROR: Job failed: exit code 137", "crash", "resource"),
    ("ci.exit_code_143", "##[error]Process completed with exit code 143.", "crash", "harness"),
    (
        "gha.setup_python_version_missing",
        "Error: The version '3.6' with architecture 'x64' was not found for Ubuntu 22.04.",
        "runtime_error",
        "config",
    ),
    (
        "gha.git_process_failed",
        "Error: The process '/usr/bin/git' failed with exit code 128",
        "runtime_error",
        "config",
    ),
    (
        "gitlab.system_failure",
        "ERROR: Job failed (system failure): Error response from daemon: container create failed",
        "runtime_error",
        "harness",
    ),
    (
        "slurm.time_limit",
        "slurmstepd: error: *** JOB 123456 ON gpu-node-17 CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME LIMIT ***",
        "hang",
        "resource",
    ),
    (
        "slurm.preempted",
        "slurmstepd: error: *** JOB 99 ON node1 CANCELLED AT 2024-03-01T10:00:00 DUE TO PREEMPTION ***",
        "crash",
        "harness",
    ),
    (
        "slurm.node_failure",
        "slurmstepd: error: *** JOB 99 ON node1 CANCELLED AT 2024-03-01T10:00:00 DUE TO NODE FAILURE ***",
        "crash",
        "hardware",
    ),
    (
        "slurm.cancelled",
        "slurmstepd: error: *** STEP 99.0 ON node1 CANCELLED AT 2024-03-01T10:00:00 ***",
        "crash",
        "harness",
    ),
    ("slurm.task_oom", "srun: error: node1: task 0: Out Of Memory", "oom", "resource"),
    ("slurm.task_killed", "srun: error: node1: task 3: Killed", "crash", "resource"),
    (
        "slurm.allocation_refused",
        "srun: error: Unable to allocate resources: Requested node configuration is not available",
        "runtime_error",
        "config",
    ),
    (
        "docker.pull_rate_limit",
        "Error response from daemon: toomanyrequests: You have reached your pull rate limit. You may increase the "
        "limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit",
        "runtime_error",
        "harness",
    ),
    (
        "k8s.image_pull_failed",
        'Warning  Failed  kubelet  Error: ImagePullBackOff  Back-off pulling image "registry.example/ci:tag"',
        "runtime_error",
        "config",
    ),
    (
        "k8s.evicted",
        "Message: The node was low on resource: memory. Container runner was using 9Gi, which exceeds its "
        "request of 2Gi.",
        "crash",
        "resource",
    ),
    (
        "docker.wrong_platform",
        "exec /usr/local/bin/python: exec format error",
        "runtime_error",
        "environment",
    ),
    (
        "tox.interpreter_not_found",
        "py38: skipped because could not find python interpreter with spec(s): py38",
        "runtime_error",
        "environment",
    ),
    ("tox.interpreter_not_found", "ERROR: InterpreterNotFound: python3.6", "runtime_error", "environment"),
    (
        "ci.agent_lost",
        "Agent went offline during the build",
        "crash",
        "harness",
    ),
    (
        "root.refused_as_root",
        "Running as root without --no-sandbox is not supported. See https://crbug.com/638180.",
        "runtime_error",
        "harness",
    ),
    (
        "ci.no_output_timeout",
        "No output has been received in the last 10m0s, this potentially indicates a stalled build or "
        "something wrong with the build itself.",
        "hang",
        "model",
    ),
]


@pytest.mark.parametrize(
    ("rule", "text", "type_", "home"), DOCUMENTED, ids=[f"{r}-{i}" for i, (r, *_) in enumerate(DOCUMENTED)]
)
def test_the_documented_message_is_placed_in_its_home(rule, text, type_, home):
    diag = diagnose(texts={"job.log": text + "\n"})
    _assert(diag, rule, type_, home, first=True)
