"""Ground truth: inventory the code a run produced and run its own tests in a clean temporary copy.

Missing toolchains or dependencies are reported as such (``toolchain_missing``/``deps_unavailable``), never as
failing tests. The tests were written by an AI agent, so every command runs through
:func:`pytest_faildiag.sandbox.run_untrusted`: an allow-listed environment (no operator secrets), a throw-away
HOME, no network unless ``--install-deps`` asked for an install step, CPU/memory/file-size/process limits, a
timeout and the whole process group killed. Which of these held is recorded on the :class:`TestRun`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pytest_faildiag.fsio import atomic_write, read_capped
from pytest_faildiag.integrations.retort.model import _NOISE_DIRS, Inventory, Options, RunRecord, TestRun
from pytest_faildiag.integrations.retort.signals import _read_json
from pytest_faildiag.redact import redact_text
from pytest_faildiag.sandbox import DEFAULT_FILE_SIZE, NET, PROTECTIONS, run_untrusted

# Files retort itself writes into a run folder: never "code the agent produced".
_HARNESS_FILES = {
    "TASK.md",
    "stack.json",
    "REQUIREMENTS.json",
    "_meta.json",
    "scores.json",
    "evaluation.md",
    "assessment.json",
    "findings.jsonl",
    "FEEDBACK.md",
    "_agent_stdout.log",
    "_agent_stderr.log",
    "README.md",
    "prompts.txt",
    "_hermes_session.jsonl",
    "attempt.patch",
}
_HARNESS_DIRS = {"summary", ".faildiag"}


_SOURCE_EXT = {
    ".py": "python",
    ".go": "go",
    ".rs": "rust",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".js": "javascript",
    ".mjs": "javascript",
    ".java": "java",
    ".kt": "kotlin",
    ".cs": "csharp",
    ".clj": "clojure",
    ".cljc": "clojure",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".swift": "swift",
    ".rb": "ruby",
    ".c": "c",
    ".cpp": "cpp",
    ".zig": "zig",
    ".hs": "haskell",
    ".scala": "scala",
    ".php": "php",
    ".dart": "dart",
    ".m": "objc",
    ".mm": "objc",
    ".h": "c",
    ".hpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".fs": "fsharp",
    ".ml": "ocaml",
    ".nim": "nim",
    ".lua": "lua",
    ".jl": "julia",
    ".groovy": "groovy",
    ".vue": "javascript",
    ".svelte": "javascript",
}
_TEST_NAME = re.compile(
    r"(^test_.*\.py$|^tests?\.py$|_tests\.py$|_test\.py$|_test\.go$|\.test\.[cm]?[jt]sx?$|\.spec\.[cm]?[jt]sx?$|Tests?\.(java|kt|cs|swift)$"
    r"|_test\.exs$|_tests?\.erl$|_SUITE\.erl$|_test\.clj$|_spec\.rb$)"
)
_TEST_DIRS = {"tests", "test", "__tests__", "spec", "features"}


def inventory(rep_dir: Path) -> Inventory:
    """Source and test files the agent produced, anywhere below the run folder (subfolders count)."""
    inv = Inventory()
    roots: Counter = Counter()
    for dirpath, dirnames, filenames in os.walk(rep_dir):
        dirnames[:] = [d for d in dirnames if d not in _NOISE_DIRS and d not in _HARNESS_DIRS and not d.startswith(".")]
        rel_dir = Path(dirpath).relative_to(rep_dir)
        if rel_dir.parts[:1] == ("data",):
            continue
        if "CMakeCache.txt" in filenames:  # a CMake build tree (any name): generated, not the agent's code
            dirnames[:] = []
            continue
        for fn in filenames:
            if fn in _HARNESS_FILES or fn.startswith("."):
                continue
            lang = _SOURCE_EXT.get(Path(fn).suffix.lower())
            if not lang:
                continue
            relp = (rel_dir / fn).as_posix()
            inv.sources.append(relp)
            inv.languages[lang] += 1
            if (
                _TEST_NAME.search(fn)
                or any(p in _TEST_DIRS for p in rel_dir.parts)
                or _has_inline_tests(Path(dirpath) / fn)
            ):
                inv.tests.append(relp)
            roots[rel_dir.parts[0] if rel_dir.parts else "."] += 1
    inv.roots = [r for r, _ in roots.most_common()]
    return inv


_BUILD_FILES = ("Makefile", "makefile", "GNUmakefile", "CMakeLists.txt", "Package.swift", "meson.build")
_NAMED_SOURCE = re.compile(r"(?<![\w$(])([\w./-]+\.(?:c|cc|cpp|cxx|m|mm|swift|rs|go|java|cs|zig))\b")


def missing_named_sources(rep_dir: Path) -> tuple[str, list[str]] | None:
    """A build file that names source files none of which are in the folder: ``(build file, names)``.

    Why: some archives keep a project's build file but not its sources; "no code" would then blame the model for
    what the archive dropped.
    """
    for name in _BUILD_FILES:
        for bf in (rep_dir / name, *rep_dir.glob(f"*/{name}")):
            try:
                text = read_capped(bf, 100_000).decode("utf-8", "replace")
            except OSError:
                continue
            names = sorted({m.group(1) for m in _NAMED_SOURCE.finditer(text) if "$" not in m.group(1)})
            if names and not any((bf.parent / n).exists() or list(rep_dir.rglob(Path(n).name))[:1] for n in names):
                return bf.relative_to(rep_dir).as_posix(), names[:8]
    return None


def archive_drops_language(rep_dir: Path, language: str) -> str | None:
    """The archive's own ``.gitignore`` rule that keeps none of ``language``'s source files under ``runs/``.

    retort's public archive ignores everything under ``runs/`` and re-includes an allow-list of extensions; a
    language missing from it (C, Objective-C, Swift, C#) can never have code in a committed archive, so an empty
    folder there says nothing about the model. Reads the nearest ``.gitignore`` files above the run folder.
    """
    exts = {e for e, lang in _SOURCE_EXT.items() if lang == language}
    if not exts:
        return None
    for up, parent in enumerate(list(rep_dir.parents)[:12], start=1):
        try:
            text = read_capped(parent / ".gitignore", 200_000).decode("utf-8", "replace")
        except OSError:
            continue
        lines = [ln.strip() for ln in text.splitlines()]
        allow_list = [ln for ln in lines if re.search(r"(^|/)runs/\*\*/\*$", ln) and not ln.startswith("!")]
        if not allow_list:
            continue
        kept = {
            m.group(1).lower()
            for ln in lines
            if ln.startswith("!") and "runs/" in ln
            for m in [re.search(r"\*(\.[\w+]+)$", ln)]
            if m
        }
        if not exts & kept:
            return (
                f"the .gitignore {up} folder(s) above the run ignores {allow_list[0]} and re-includes no "
                f"{'/'.join(sorted(exts))} file"
            )
        return None
    return None


_INLINE_TEST = re.compile(
    r"#\[(tokio::)?test\]|@Test\b|\bdeftest\b|ExUnit\.Case|-include_lib\(\"eunit|\bXCTestCase\b|@Suite\b|"
    r"\[(Fact|Test|TestMethod)\]|^\s*(describe|it|test)\(['\"`]",
    re.M,
)


def _has_inline_tests(path: Path) -> bool:
    """Tests that live inside source files (Rust ``#[test]``, JUnit ``@Test`` in odd places, xUnit attributes)."""
    try:
        if path.stat().st_size > 400_000:
            return False
        return bool(_INLINE_TEST.search(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False


_MANIFESTS = {
    "python": ("pyproject.toml", "setup.py", "requirements.txt", "setup.cfg"),
    "go": ("go.mod",),
    "rust": ("Cargo.toml",),
    "typescript": ("package.json",),
    "javascript": ("package.json",),
    "java": ("pom.xml", "build.gradle", "build.gradle.kts"),
    "csharp": ("*.csproj", "*.sln"),
    "clojure": ("deps.edn", "project.clj"),
    "elixir": ("mix.exs",),
    "erlang": ("rebar.config",),
    "swift": ("Package.swift",),
}


def project_root(rep_dir: Path, language: str) -> Path:
    """Where the project lives: the run folder, or the shallowest subfolder holding its manifest."""
    patterns = _MANIFESTS.get(language, ())
    if not patterns or any(list(rep_dir.glob(p)) for p in patterns):
        return rep_dir
    best: Path | None = None
    for pat in patterns:
        for hit in rep_dir.glob(f"*/{pat}"):
            if hit.parent.name not in _NOISE_DIRS and (best is None or len(hit.parts) < len(best.parts)):
                best = hit.parent
    return best or rep_dir


def _copy_clean(src: Path, dest: Path) -> None:
    def ignore(_d: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _NOISE_DIRS or n in {".coverage", "erl_crash.dump"}}

    shutil.copytree(src, dest, ignore=ignore, ignore_dangling_symlinks=True, symlinks=True)


# Names kept from our environment for native toolchains: where a toolchain lives, never a credential. Download
# caches and credential files (~/.cargo, ~/.m2, ~/.npmrc, GOPATH) stay behind with the real HOME.
_TOOLCHAIN_ENV = ("JAVA_HOME", "GOROOT", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN")
# Dependency installs write wheels and packages far larger than a test writes, and reach the index through the
# operator's proxy, CA bundle and index settings (an install step only; the tests themselves never see them).
_INSTALL_FILE_BYTES = 8 << 30
_INSTALL_ENV = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
)


@dataclass
class _Sandboxed:
    """Runs one test run's commands through :func:`run_untrusted` and remembers which protections held in all
    of them (a protection counts as held for the test run only if every command had it).

    The working copy is ground_truth's own throw-away copy (one copy, not two); HOME and TMPDIR are fresh per
    command, under the same temporary folder.
    """

    work: Path
    keep_env: tuple[str, ...] = ()
    held: dict[str, bool] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def run(
        self, cmd: list[str], cwd: Path, timeout: float, env: dict[str, str | None], *, install: bool = False
    ) -> tuple[int | None, str, float]:
        """``(returncode, output, seconds)``; returncode None on timeout (the whole group was killed)."""
        keep = (*self.keep_env, *_INSTALL_ENV) if install else self.keep_env
        res = run_untrusted(
            cmd,
            cwd=cwd,
            timeout_s=timeout,
            env=env,
            keep_env=keep,
            network=install,
            cwd_is_copy=True,
            scratch_dir=self.work,
            file_bytes=_INSTALL_FILE_BYTES if install else DEFAULT_FILE_SIZE,
        )
        for name, ok in res.held.items():
            self.held[name] = self.held.get(name, True) and ok
            if ok:
                continue
            if install and name == NET:
                self.notes.setdefault(name, f"network allowed for the dependency install ({_cmd_name(cmd)}) only")
            elif not install or name not in self.notes:
                self.notes[name] = res.notes.get(name, "not applied")  # the test command's reason comes first
        return (None if res.timed_out else res.returncode), res.output, res.duration_s

    def record(self, result: TestRun) -> None:
        result.sandbox_held = [n for n in PROTECTIONS if self.held.get(n)]
        result.sandbox_not_held = [
            f"{n}: {self.notes.get(n, 'not applied')}" for n in PROTECTIONS if n in self.held and not self.held[n]
        ]


def _cmd_name(cmd: list[str]) -> str:
    """``pip install``, ``npm install``: how a note names the command that needed the network."""
    words = [Path(cmd[0]).name, *cmd[1:]]
    if words[1:3] == ["-m", "pip"]:
        return "pip install"
    return " ".join(words[:2])


def _test_env(extra: dict[str, str] | None = None, ab: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """What we set for the run's tests on top of the sandbox's allow-list: quiet bytecode, CI mode, ``extra``,
    then the A/B variable (applied last so nothing above can undo it; None unsets it)."""
    env: dict[str, str | None] = {"PYTHONDONTWRITEBYTECODE": "1", "CI": "1"}
    env.update(extra or {})
    env.update(ab or {})
    return env


def _declared_python_deps(root: Path) -> str:
    text = ""
    for name in (
        "requirements.txt",
        "requirements-dev.txt",
        "requirements_dev.txt",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "Pipfile",
    ):
        for p in (root / name, *root.glob(f"*/{name}")):
            try:
                text += p.read_text(encoding="utf-8", errors="replace").lower() + "\n"
            except OSError:
                continue
    return text


# import name → distribution name, for the few common ones that differ
_DIST_ALIASES = {
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "pil": "pillow",
    "dateutil": "python-dateutil",
    "jwt": "pyjwt",
    "dotenv": "python-dotenv",
    "bs4": "beautifulsoup4",
}


def _is_declared(module: str, declared: str) -> bool:
    m = module.lower()
    names = {m, m.replace("_", "-"), _DIST_ALIASES.get(m, m)}
    return any(re.search(rf"(^|[\s\"'\[,]){re.escape(n)}\b", declared) for n in names)


def _local_module(root: Path, module: str) -> bool:
    return any((root / p).exists() for p in (module, f"{module}.py")) or any(root.glob(f"*/{module}"))


def _python_tests(
    root: Path, timeout: float, install_deps: bool, work: Path, box: _Sandboxed, ab: dict[str, str | None] | None = None
) -> TestRun:
    py = sys.executable
    env = _test_env(ab=ab)
    if install_deps and (root / "requirements.txt").is_file():
        # Install into a private folder on PYTHONPATH: our interpreter keeps its pytest + coverage, the run's
        # declared dependencies come first, and nothing is installed anywhere else.
        site = work / "site"
        rc, out, _ = box.run(
            [
                py,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "--target",
                str(site),
                "-r",
                "requirements.txt",
            ],
            root,
            300,
            env,
            install=True,
        )
        if rc != 0:
            return TestRun("deps_unavailable", "pip install -r requirements.txt", excerpt=_tail(out))
        env["PYTHONPATH"] = str(site)
    cov_file = work / ".coverage"
    env["COVERAGE_FILE"] = str(cov_file)
    if "PYTHONPATH" not in env:
        # Without the run's own dependencies installed, the pytest plugins around are OURS (not the run's):
        # autoloading them costs seconds per run and can change how the run's tests behave.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    cmd = [
        py,
        "-m",
        "coverage",
        "run",
        "--source=.",
        "-m",
        "pytest",
        "-q",
        "--tb=short",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:faildiag",
        "-o",
        "addopts=",
    ]
    rc, out, dur = box.run(cmd, root, timeout, env)
    shown = "python -m coverage run --source=. -m pytest -q"
    extra = _unittest_files(root) if rc == 5 else []
    if extra:
        # pytest's default file patterns skip tests.py / *_tests.py, but it runs unittest suites in files it is
        # given by name: a working unittest suite there is not "no tests"
        rc, out, d2 = box.run([*cmd, *extra], root, timeout, env)
        dur += d2
        shown += " " + " ".join(extra)
    if rc is None:
        return TestRun("timeout", shown, excerpt=_tail(out), duration_s=dur)
    passed, failed = _pytest_counts(out)
    missing = re.search(r"No module named '([\w\.]+)'", out)
    cov = None
    if cov_file.exists():
        crc, cout, _ = box.run([py, "-m", "coverage", "report", "--format=total"], root, 60, env)
        try:
            cov = float(cout.strip().splitlines()[-1]) / 100.0 if crc == 0 else None
        except (ValueError, IndexError):
            cov = None
    result = TestRun("passed", shown, passed=passed, failed=failed, coverage=cov, excerpt=_tail(out), duration_s=dur)
    if "No module named 'pytest'" in out or "No module named coverage" in out:
        result.status = "toolchain_missing"
    elif rc == 0 and passed > 0:
        result.status = "passed"
    elif rc == 5 or (rc == 0 and passed == 0):
        result.status = "no_tests"
    elif missing and not _local_module(root, missing.group(1).split(".")[0]):
        top = missing.group(1).split(".")[0]
        result.missing_module = top
        declared = _declared_python_deps(root)
        result.status = "deps_unavailable" if _is_declared(top, declared) else "undeclared_deps"
    elif re.search(r"\b(SyntaxError|IndentationError)\b", out):
        result.status = "compile_error"
    elif passed == 0 and failed == 0 and rc in (2, 3, 4):
        result.status = "error"
    else:
        result.status = "failed"
    return result


_UNITTEST_FILE = re.compile(r"^(tests?|.*_tests|tests?_?[a-z0-9]+)\.py$", re.I)
_PYTEST_DEFAULT = re.compile(r"^(test_.*|.*_test)\.py$")


def _unittest_files(root: Path) -> list[str]:
    """Test-looking Python files pytest's default patterns do not collect (``tests.py``, ``app_tests.py``)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _NOISE_DIRS and not d.startswith(".")]
        for fn in sorted(filenames):
            if _UNITTEST_FILE.match(fn) and not _PYTEST_DEFAULT.match(fn):
                out.append((Path(dirpath) / fn).relative_to(root).as_posix())
        if len(out) > 20:
            break
    return out[:20]


def _pytest_counts(out: str) -> tuple[int, int]:
    """(passed, failed+errors) from pytest's final summary line only.

    Why only that line: "Interrupted: 1 error during collection" above it names the same error, so counting
    every "N error" in the output counted one collection error twice.
    """
    summary = [
        ln
        for ln in out.splitlines()
        if re.search(r"\b\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b.* in [\d.]+s", ln)
        or re.search(r"\bno tests ran in [\d.]+s", ln)
    ]
    line = summary[-1] if summary else ""
    return _count(r"(\d+) passed", line), _count(r"(\d+) (?:failed|errors?)\b", line)


def _count(pattern: str, text: str) -> int:
    return sum(int(m) for m in re.findall(pattern, text))


def _tail(text: str, lines: int = 25) -> str:
    """The last lines of a command's output, capped before redaction (the redactor is slow on huge lines)."""
    return "\n".join(redact_text(line[-1000:]) for line in text.strip().splitlines()[-lines:])[-3000:]


_NATIVE = {
    "go": (["go", "test", "-cover", "./..."], "go"),
    "rust": (["cargo", "test", "--offline"], "cargo"),
    "java": (["mvn", "-q", "-o", "test"], "mvn"),
    "csharp": (["dotnet", "test", "--nologo"], "dotnet"),
    "elixir": (["mix", "test"], "mix"),
    "erlang": (["rebar3", "eunit"], "rebar3"),
    "swift": (["swift", "test"], "swift"),
    "clojure": (["clojure", "-M:test"], "clojure"),
}
# npm install failing in a native addon's build (node-gyp), as opposed to the registry being unreachable
_NATIVE_BUILD_FAIL = re.compile(
    r"gyp ERR! \$npm_package_name (?P<pkg>[\w@/.-]+)|gyp ERR! (build|configure) error"
    r"|prebuild-install.{0,40}(err|warn)|Could not locate the bindings file"
)
# The dependency fetch of each native tool (run with the network, before the tests, with --install-deps).
_FETCH = {"cargo": ["cargo", "fetch"], "go": ["go", "mod", "download"]}
# A native addon's build that stopped because THIS machine could not download something (the Node headers
# node-gyp needs, after prebuild-install could not fetch a binary): says nothing about whether the project builds
# where it ran.
_BUILD_FETCH_FAILED = re.compile(
    r"gyp ERR! .{0,40}(related to network connectivity|getaddrinfo|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT"
    r"|ECONNRESET|ENETUNREACH)",
    re.I,
)
_DEPS_OFFLINE = re.compile(
    r"no matching package|failed to (download|get|load source)|attempting to make an http request, but --offline"
    r"|could not resolve (dependencies|host)|cannot access central .{0,40}offline|dependency .{0,80} not found"
    r"|cannot find module '(?!\.)|sh: \d*:? ?[\w.@/-]+: not found|command not found|missing script|not installed"
    r"|in offline mode|non-resolvable parent pom|could not resolve (plugin|artifact)",
    re.I,
)
_TOOL_TOO_OLD = re.compile(
    r"bad option: --|unknown file extension \"?\.ts|requires (go|node|python) ?>= ?[\d.]+|"
    r"unsupported engine|error: package `[^`]+` cannot be built because it requires rustc",
    re.I,
)
_DATA_REF = re.compile(r"""["'`](\./)?data/[\w./-]+""")
_DATA_ERR = re.compile(r"(FileNotFoundError|No such file or directory|ENOENT|dataset not found)[^\n]{0,200}", re.I)
_COMPILE = re.compile(
    r"error\[E\d+\]|could not compile|cannot find symbol|COMPILATION ERROR|error TS\d+|"
    r"\bundefined: \w+|syntax error|build failed",
    re.I,
)


def _native_tests(
    root: Path,
    language: str,
    timeout: float,
    install_deps: bool,
    work: Path,
    box: _Sandboxed,
    ab: dict[str, str | None] | None = None,
) -> TestRun:
    if language in {"typescript", "javascript"}:
        pkg, _ = _read_json(root / "package.json")
        if not isinstance(pkg, dict):
            return TestRun("no_tests", "npm test", excerpt="no readable package.json")
        script = str((pkg.get("scripts") or {}).get("test") or "")
        deps = {**(pkg.get("dependencies") or {}), **(pkg.get("devDependencies") or {})}
        if script and "no test specified" not in script:
            cmd = ["npm", "test", "--silent"]
        elif "vitest" in deps:
            cmd = ["npx", "--no-install", "vitest", "run"]
        elif "jest" in deps:
            cmd = ["npx", "--no-install", "jest", "--ci"]
        else:
            return TestRun("no_tests", "npm test", excerpt="package.json has no test script and no test runner")
        tool = "npm"
    elif language == "java" and not (root / "pom.xml").exists():
        cmd, tool = (["gradle", "test", "--offline", "-q"], "gradle")
    else:
        if language not in _NATIVE:
            return TestRun("toolchain_missing", excerpt=f"no test runner known for language {language!r}")
        cmd, tool = _NATIVE[language]
    if shutil.which(tool) is None:
        return TestRun("toolchain_missing", " ".join(cmd), excerpt=f"{tool} is not installed on this machine")
    env = _test_env(
        {
            "CARGO_TARGET_DIR": str(work / "target"),
            "GOFLAGS": "-mod=mod",
            "GOCACHE": str(work / "go-build"),
            "npm_config_cache": str(work / "npm-cache"),
            **_rustup_home(),
        },
        ab=ab,
    )
    if install_deps:
        # Allowed to fetch: drop the offline switches, and keep every download cache inside the temporary work
        # folder so nothing is written outside it (npm, cargo, go and maven default to the home directory).
        if tool not in _FETCH:  # cargo/go fetch in their own install step; their tests stay offline
            cmd = [c for c in cmd if c not in ("--offline", "-o")]
        env.update(
            {
                "CARGO_HOME": str(work / "cargo-home"),
                "GOPATH": str(work / "gopath"),
                "GOMODCACHE": str(work / "gopath" / "mod"),
            }
        )
        if tool == "mvn":
            cmd = [*cmd, f"-Dmaven.repo.local={work / 'm2'}"]
    if tool == "npm" and install_deps and not (root / "node_modules").exists():
        rc, out, _ = box.run(["npm", "install", "--no-audit", "--no-fund"], root, 300, env, install=True)
        if rc != 0:
            return npm_install_failure(out)
    fetch = _FETCH.get(tool) if install_deps else None
    if fetch:
        # The test command itself never gets the network, so dependencies are fetched first, in the install step
        # (into the work folder's caches set above), and the tests then build from those caches.
        rc, out, _ = box.run(fetch, root, 300, env, install=True)
        if rc != 0:
            return TestRun("deps_unavailable", " ".join(fetch), excerpt=_tail(out))
    rc, out, dur = box.run(cmd, root, timeout, env)
    shown = " ".join(cmd)
    if rc is None:
        return TestRun("timeout", shown, excerpt=_tail(out), duration_s=dur)
    passed = (
        _count(r"(\d+) passed", out)
        + len(re.findall(r"^(ok|PASS)\s", out, re.M))
        + _count(r"Tests run: (\d+), Failures: 0, Errors: 0", out)
    )
    failed = _count(r"(\d+) failed", out) + len(re.findall(r"^(FAIL|--- FAIL)", out, re.M))
    cov = None
    m = re.findall(r"coverage: (\d+(?:\.\d+)?)% of statements", out)
    if m:
        cov = sum(float(x) for x in m) / len(m) / 100.0
    res = TestRun("failed", shown, passed=passed, failed=failed, coverage=cov, excerpt=_tail(out), duration_s=dur)
    if rc == 0:
        res.status = "passed" if passed or "no test files" not in out else "no_tests"
        if passed == 0 and re.search(r"no test files|0 tests|running 0 tests", out) and not m:
            res.status = "no_tests"
    elif _DEPS_OFFLINE.search(out) and not _COMPILE.search(out):
        res.status = "deps_unavailable"
    elif _COMPILE.search(out):
        res.status = "compile_error"
    return res


def npm_install_failure(out: str) -> TestRun:
    """What a failed ``npm install`` says about the project: ``compile_error`` only when the registry answered
    and a native addon it depends on failed to BUILD; ``deps_unavailable`` when anything had to be fetched and
    could not (the registry, a prebuilt binary, the Node headers node-gyp downloads), because that failure is
    this machine's, not the project's."""
    native = _NATIVE_BUILD_FAIL.search(out)
    if native and not _DEPS_OFFLINE.search(out) and not _BUILD_FETCH_FAILED.search(out):
        # npm install is all-or-nothing, so no test can run either
        return TestRun(
            "compile_error",
            "npm install",
            excerpt=_tail(out),
            missing_module=native.group("pkg") if native.groupdict().get("pkg") else None,
        )
    res = TestRun("deps_unavailable", "npm install", excerpt=_tail(out))
    if native and _BUILD_FETCH_FAILED.search(out):
        res.excerpt = (
            "a native addon's build could not download what it needs (node-gyp headers / prebuilt binary); "
            "whether it builds where the run ran is not settled here:\n" + res.excerpt
        )
    return res


def _rustup_home() -> dict[str, str]:
    """rustup's ``cargo`` proxy finds its toolchains under ``~/.rustup``; the child's HOME is a fresh folder, so
    name the real one (toolchains only: registry tokens live in ``~/.cargo``, which stays behind)."""
    if os.environ.get("RUSTUP_HOME"):
        return {}
    real = Path.home() / ".rustup"
    return {"RUSTUP_HOME": str(real)} if real.is_dir() else {}


def _missing_support_data(root: Path, output: str) -> bool:
    """Do the tests depend on a ``data/`` folder the archive does not hold (support files are not archived)?"""
    if (root / "data").is_dir():
        return False
    if _DATA_ERR.search(output) and "data/" in output:
        return True
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _NOISE_DIRS]
        for fn in filenames:
            if Path(fn).suffix.lower() in _SOURCE_EXT:
                try:
                    if _DATA_REF.search((Path(dirpath) / fn).read_text(encoding="utf-8", errors="replace")):
                        return True
                except OSError:
                    continue
    return False


def _cache_key(rep_dir: Path, language: str, opts: Options) -> str | None:
    """Digest of everything a rerun depends on: the folder's files (names and contents) and the options.

    Content, not mtimes: a fresh checkout of the same archive must hit the cache. None when the folder cannot be
    read (then nothing is cached).
    """
    h = hashlib.sha256(
        json.dumps(
            [_CACHE_VERSION, language, opts.install_deps, opts.test_timeout, sorted((opts.extra_env or {}).items())],
            default=str,
        ).encode()
    )
    try:
        for dirpath, dirnames, filenames in os.walk(rep_dir):
            dirnames[:] = sorted(d for d in dirnames if d not in _NOISE_DIRS)
            for fn in sorted(filenames):
                f = Path(dirpath) / fn
                h.update(f.relative_to(rep_dir).as_posix().encode() + b"\0")
                st = f.lstat()
                if stat.S_ISLNK(st.st_mode):  # a link is hashed by where it points, never followed
                    h.update(b"->" + os.readlink(f).encode("utf-8", "replace"))
                elif not stat.S_ISREG(st.st_mode) or st.st_size > _CACHE_HASH_BYTES:  # FIFOs, devices: never read
                    h.update(f"{stat.S_IFMT(st.st_mode)}:{st.st_size}".encode())
                else:
                    h.update(read_capped(f, _CACHE_HASH_BYTES))
    except OSError:
        return None
    return h.hexdigest()[:32]


_CACHE_VERSION = 3  # bump when the rerun logic changes what a folder yields
_CACHE_HASH_BYTES = 4 << 20


def _cache_load(path: Path) -> TestRun | None:
    try:
        data = json.loads(read_capped(path, 1_000_000))
        return TestRun(**{k: v for k, v in data.items() if k in TestRun.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


def _cache_store(path: Path, res: TestRun) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(asdict(res)) + "\n")
    except OSError:
        pass


def ground_truth(rec: RunRecord, inv: Inventory, opts: Options) -> TestRun:
    """Run the run's own tests in a clean temporary copy, sandboxed, bounded by ``opts.test_timeout``.

    With ``opts.cache_dir`` a result is kept per folder content and options, so a second pass over the same
    archive reruns nothing (the whole-archive pass is minutes; the cache makes the next one seconds).
    """
    if not opts.run_tests:
        return TestRun("not_run", excerpt="--no-run-tests given")
    if rec.rep_dir is None:
        return TestRun("not_run", excerpt="no archived run folder")
    language = rec.language or (inv.languages.most_common(1)[0][0] if inv.languages else "")
    if language == "typescript" and not inv.languages.get("typescript") and inv.languages.get("javascript"):
        language = "javascript"
    key = _cache_key(rec.rep_dir, language, opts) if opts.cache_dir is not None else None
    cached = _cache_load(opts.cache_dir / f"{key}.json") if key and opts.cache_dir is not None else None
    if cached is not None:
        cached.cached = True
        return cached
    res = _ground_truth_uncached(rec, language, opts)
    if key and opts.cache_dir is not None and res.status not in {"error"}:
        _cache_store(opts.cache_dir / f"{key}.json", res)
    return res


def _ground_truth_uncached(rec: RunRecord, language: str, opts: Options) -> TestRun:
    assert rec.rep_dir is not None
    base = opts.work_dir
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="faildiag-retort-", dir=base) as tmp:
        work = Path(tmp)
        copy = work / "run"
        try:
            _copy_clean(rec.rep_dir, copy)
        except (OSError, shutil.Error) as exc:
            return TestRun("error", excerpt=f"could not copy the run folder: {exc}")
        root = project_root(copy, language)
        rel_root = root.relative_to(copy).as_posix()
        box = _Sandboxed(work, keep_env=() if language == "python" else _TOOLCHAIN_ENV)
        try:
            if language == "python":
                res = _python_tests(root, opts.test_timeout, opts.install_deps, work, box, opts.extra_env)
            else:
                res = _native_tests(root, language, opts.test_timeout, opts.install_deps, work, box, opts.extra_env)
        except Exception as exc:  # a broken project must never crash the whole diagnosis
            res = TestRun("error", excerpt=f"{type(exc).__name__}: {exc}")
        box.record(res)
        if res.status in {"failed", "error", "compile_error"} and _TOOL_TOO_OLD.search(res.excerpt):
            res.status = "toolchain_missing"
            res.excerpt = "the local toolchain is too old for this project: " + res.excerpt[-600:]
        elif res.status in {"failed", "error"} and _missing_support_data(root, res.excerpt):
            res.status = "data_missing"
        res.root = rel_root
        res.timeout_s = opts.test_timeout
        res.excerpt = res.excerpt.replace(str(copy), "<run>").replace(str(work), "<work>")
        return res
