"""The rerun machinery behind ``pytest_rerun.RerunPlugin``: child processes, verdicts, bisection, outputs.

Imported only when a session ended with failures to rerun (``RerunPlugin.finish``) or in a rerun's child
process (``child_main``): a passing session never loads it (``bench/bench_plugin_overhead.py``; under pytest
every module of ours is loaded through the assertion-rewriting import hook, whose cost grows with the
module's size). The design of reruns is described in ``pytest_rerun``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

STARTUP_LIMIT = 120.0  # a child gets this long to import and collect before its test starts
KILL_GRACE = 2.0
POLL = 0.05
CHILD = (
    "import sys\n"
    "sys.path.append({root!r})\n"
    "from pytest_faildiag.integrations.pytest_rerun_child import child_main\n"
    "sys.exit(child_main(sys.argv[1:]))\n"
)
# options of the session's command line that change how a test behaves: passed on to every rerun
PASS_ON = {
    "-p": True,
    "-o": True,
    "--override-ini": True,
    "-W": True,
    "--pythonwarnings": True,
    "--import-mode": True,
    "--confcutdir": True,
    "--noconftest": False,
    "--timeout": True,
    "--timeout-method": True,
    "--strict-markers": False,
    "-s": False,
    "--capture": True,
}


# ---------------------------------------------------------------------------------------------- child


def child_main(argv: list[str]) -> int:
    """Entry of a rerun process: pytest on the given node ids, faildiag off, each test's start and reports
    journaled to ``events`` (the parent's watchdog and verdict read it), optionally under coverage with
    one context per test (``test:<nodeid>``; lines run at import time stay in ``import``)."""
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    cov = None
    if spec.get("coverage"):
        import coverage

        cov = coverage.Coverage(
            data_file=spec["coverage"], branch=False, include=spec.get("include") or None, config_file=False
        )
        cov.start()
        cov.switch_context("import")
    events = open(spec["events"], "a", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        return int(pytest.main(spec["args"], plugins=[_ChildRecorder(events, cov)]))
    finally:
        if cov is not None:
            cov.stop()
            cov.save()
        events.close()


class _ChildRecorder:
    def __init__(self, events: Any, cov: Any) -> None:
        self.events, self.cov = events, cov

    def _write(self, **event: Any) -> None:
        self.events.write(json.dumps(event) + "\n")
        self.events.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        if hasattr(config.option, "faildiag"):
            config.option.faildiag = False  # no diagnosis of the diagnosis (beats ini `faildiag = true`)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._write(event="start", nodeid=nodeid)
        if self.cov is not None:
            self.cov.switch_context(f"test:{nodeid}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._write(
            event="report",
            nodeid=report.nodeid,
            when=report.when,
            outcome=report.outcome,
            message=report.longreprtext[-1500:] if report.failed else "",
        )

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.cov is not None:
            self.cov.switch_context("import")


# ---------------------------------------------------------------------------------------------- one run


# how a child killed for making no progress says so (RunResult.detail starts with it)
HUNG = "hung:"


@dataclass
class RunResult:
    """One child run: per node id ``passed``/``failed``/``skipped``; ``target`` is the rerun test's."""

    target: str  # passed | failed | not_run
    seconds: float
    detail: str = ""
    folder: Path | None = None
    coverage: Path | None = None


def run_child(
    config: pytest.Config,
    nodeids: list[str],
    target: str,
    folder: Path,
    *,
    test_limit: float,
    deadline: float,
    coverage_of: list[str] | None = None,
) -> RunResult:
    """Run pytest on ``nodeids`` (the target last) in a fresh process group under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    events = folder / "events.jsonl"
    events.unlink(missing_ok=True)
    spec: dict[str, Any] = {"args": child_args(config, folder, nodeids), "events": str(events)}
    if coverage_of:
        spec["coverage"] = str(folder / "coverage.data")
        spec["include"] = coverage_of
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    if sys.version_info >= (3, 12) and coverage_of:
        env.setdefault("COVERAGE_CORE", "sysmon")  # the cheapest tracer where the interpreter has it
    root = str(Path(__file__).resolve().parents[2])
    start = time.monotonic()
    with open(folder / "output.txt", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD.format(root=root), str(folder / "spec.json")],
            cwd=str(config.rootpath),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        killed = _watch(proc, events, test_limit, deadline)
    seconds = time.monotonic() - start
    outcomes, messages, started = _read_events(events)
    status = outcomes.get(target)
    if killed.startswith("stopped"):  # the budget ended it, not the test: no outcome to count
        return RunResult("not_run", seconds, killed, folder)
    if killed:
        status, detail = "failed", f"{killed} (the process group was killed)"
    elif status is None and target in started:
        status, detail = "failed", f"the rerun process died while running the test (exit status {proc.returncode})"
    elif status in (None, "skipped"):
        tail = _tail(folder / "output.txt")
        return RunResult("not_run", seconds, f"the test did not run in the rerun process: {tail}", folder)
    else:
        detail = messages.get(target, "")
    cov = folder / "coverage.data" if coverage_of and (folder / "coverage.data").exists() else None
    return RunResult(status, seconds, detail, folder, cov)


def _watch(proc: subprocess.Popen[bytes], events: Path, test_limit: float, deadline: float) -> str:
    """Wait for the child; kill its process group when the running test exceeds ``test_limit`` (the clock
    restarts at each test's start) or the whole step its ``deadline``. Returns why it was killed, or ''."""
    clock, size = time.monotonic(), -1
    limit = STARTUP_LIMIT
    try:
        while proc.poll() is None:
            now = time.monotonic()
            try:
                current = events.stat().st_size
            except OSError:
                current = -1
            if current != size:
                size, clock, limit = current, now, test_limit
            if now - clock > limit:
                _kill_group(proc)
                return f"{HUNG} no progress for {limit:g}s"
            if now > deadline:
                _kill_group(proc)
                return "stopped: the rerun time budget ran out"
            time.sleep(POLL)
    except KeyboardInterrupt:  # a CI cancel: the child goes with us, the session still ends normally
        _kill_group(proc)
        raise
    return ""


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the rerun's process group, SIGKILL it after ``KILL_GRACE`` s (``proc.stop_group``)."""
    from ..capture.proc import stop_group

    stop_group(proc, KILL_GRACE)


def _read_events(path: Path) -> tuple[dict[str, str], dict[str, str], set[str]]:
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    started: set[str] = set()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        nodeid = e.get("nodeid", "")
        if e.get("event") == "start":
            started.add(nodeid)
        elif e.get("event") == "report":
            if e.get("outcome") == "failed":
                outcomes[nodeid] = "failed"
                messages.setdefault(nodeid, e.get("message", ""))
            elif e.get("when") == "call" and outcomes.get(nodeid) != "failed":
                outcomes[nodeid] = e.get("outcome", "")
            elif e.get("outcome") == "skipped" and nodeid not in outcomes:
                outcomes[nodeid] = "skipped"
    return outcomes, messages, started


def _tail(path: Path, n: int = 300) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "no output"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (" | ".join(lines[-3:]))[-n:] or "no output"


def child_args(config: pytest.Config, folder: Path, nodeids: list[str]) -> list[str]:
    """The child's pytest arguments: the session's behaviour-changing options, then everything that keeps
    its writes inside ``folder`` and its order as given (later options win over the ini's addopts)."""
    pm = config.pluginmanager
    args = _passed_on(list(config.invocation_params.args))
    args += [
        "--rootdir",
        str(config.rootpath),
        "-q",
        "--tb=short",
        "-p",
        "no:faildiag-session",
        "--basetemp",
        str(folder / "tmp"),
        "--junitxml",
        str(folder / "junit.xml"),
        "--maxfail=0",
    ]
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    if pm.hasplugin("cacheprovider"):
        args += ["-o", f"cache_dir={folder / 'cache'}"]
    if pm.hasplugin("xdist") or pm.hasplugin("xdist.plugin"):
        args += ["-n", "0"]
    if pm.hasplugin("randomly"):
        args += ["-p", "no:randomly"]
    if pm.hasplugin("_cov") or pm.hasplugin("pytest_cov"):
        args += ["--no-cov"]
    if pm.hasplugin("rerunfailures"):
        args += ["--reruns", "0"]
    return [*args, *nodeids]


def _passed_on(argv: list[str]) -> list[str]:
    """The options of ``PASS_ON`` from the session's command line, each with its value; none of faildiag's."""
    groups: list[list[str]] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, _ = arg.partition("=")
        if name in PASS_ON:
            takes_value = PASS_ON[name] and not eq
            groups.append(argv[i : i + 2] if takes_value else [arg])
            i += 2 if takes_value else 1
            continue
        if (arg.startswith("-p") or arg.startswith("-W")) and len(arg) > 2 and not arg.startswith("--"):
            groups.append([arg])
        i += 1
    return [a for g in groups if not any("faildiag" in x for x in g) for a in g]


# ---------------------------------------------------------------------------------------------- verdict


@dataclass
class Verdict:
    verdict: str  # deterministic | intermittent | order_dependent | not_run
    runs: int = 0
    passed: int = 0
    polluter: str | None = None
    detail: str = ""
    seconds: float = 0.0
    coverage: Path | None = None
    failure: str = ""
    replays: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "runs": self.runs,
            "passed": self.passed,
            "polluter": self.polluter,
            "detail": self.detail,
            "seconds": round(self.seconds, 2),
        }


def decide(nodeid: str, predecessors: list[str], n: int, run: Callable[[list[str], str, bool], RunResult]) -> Verdict:
    """N runs alone (fewer once one hangs and none passed), then (when all passed) one replay after its
    predecessors and halving to the polluter.
    ``run(nodeids, label, with_coverage)`` runs one child."""
    v = Verdict("not_run")
    hung = False
    for i in range(n):
        r = run([nodeid], f"alone-{i + 1}", i == 0)
        v.seconds += r.seconds
        if r.target == "not_run":
            v.detail = r.detail
            if v.runs == 0:
                return v
            break
        v.runs += 1
        v.passed += r.target == "passed"
        if r.target == "failed":
            v.failure = v.failure or r.detail
            v.coverage = v.coverage or r.coverage
        hung = r.detail.startswith(HUNG) and v.passed == 0
        if hung:
            break  # it hung alone: each further rerun would cost the whole time limit again
    if v.runs == 0:
        return v
    if v.passed == 0:
        again = " (it hung alone: not rerun further)" if hung and v.runs < n else ""
        v.verdict, v.detail = "deterministic", f"failed {v.runs} of {v.runs} reruns alone{again}"
        return v
    if v.passed < v.runs:
        v.verdict, v.detail = "intermittent", f"passed {v.passed} of {v.runs} reruns alone"
        return v
    return _order_check(nodeid, predecessors, v, run)


def _order_check(
    nodeid: str, predecessors: list[str], v: Verdict, run: Callable[[list[str], str, bool], RunResult]
) -> Verdict:
    v.verdict = "intermittent"
    v.detail = f"passed {v.passed} of {v.runs} reruns alone; failed only in the session"
    same_file = [p for p in predecessors if p.split("::")[0] == nodeid.split("::")[0]]
    tiers = [t for t in (same_file, predecessors) if t]
    if len(tiers) == 2 and tiers[0] == tiers[1]:
        tiers = tiers[:1]
    for k, tier in enumerate(tiers):
        r = run([*tier, nodeid], f"after-{k + 1}", False)
        v.seconds += r.seconds
        v.replays.append(f"after {len(tier)} test(s): {r.target}")
        if r.target == "failed":
            polluter, note = _bisect(nodeid, tier, v, run)
            v.verdict, v.polluter = "order_dependent", polluter
            who = f"after {polluter}" if polluter else f"after the {len(tier)} tests that ran before it ({note})"
            v.detail = f"passed {v.passed} of {v.runs} reruns alone, failed when run {who}"
            return v
        if r.target == "not_run":
            break
    if v.replays:
        v.detail += f"; passed again after the tests that ran before it ({v.replays[-1]})"
    return v


def _bisect(
    nodeid: str, tier: list[str], v: Verdict, run: Callable[[list[str], str, bool], RunResult]
) -> tuple[str | None, str]:
    candidates = list(tier)
    step = 0
    while len(candidates) > 1:
        half = len(candidates) // 2
        for part in (candidates[:half], candidates[half:]):
            step += 1
            r = run([*part, nodeid], f"bisect-{step}", False)
            v.seconds += r.seconds
            v.replays.append(f"after {len(part)} of them: {r.target}")  # counted in the summary's run total
            if r.target == "failed":
                candidates = part
                break
            if r.target == "not_run":
                return None, "halving stopped: " + r.detail[:120]
        else:
            return None, "no single test among them makes it fail"
    return candidates[0], ""


SPECTRUM_SHOWN = 5


def spectrum_lines(ranked: list[dict[str, Any]], totals: tuple[int, int]) -> list[str]:
    from ..engine.changes import describe_spectrum

    lines = [f"faildiag suspicious lines (Ochiai over {totals[0]} failing and {totals[1]} passing tests):"]
    lines += [f"  {describe_spectrum(line, *totals)}" for line in ranked[:SPECTRUM_SHOWN]]
    return lines


def _lines_run_by(executed: dict[str, dict[int, set[str]]], nodeid: str, root: Path) -> set[tuple[str, int]]:
    from ..engine.changes import TEST_CONTEXT_PREFIX, _rel

    ctx = f"{TEST_CONTEXT_PREFIX}{nodeid}"
    return {(_rel(path, root), n) for path, lines in executed.items() for n, c in lines.items() if ctx in c}


def apply_spectrum(out: Path, entry: dict[str, Any], ranked: list[dict[str, Any]], totals: tuple[int, int]) -> None:
    """The ranked lines this failed test ran: ``"spectrum"`` in its session entry and ``report.json``, and
    the best one as hypothesis evidence of its top cause (a statistical hint, not a proof)."""
    from ..engine.changes import describe_spectrum

    entry["spectrum"] = ranked
    slug = entry.get("snapshot")
    path = out / slug / "report.json" if slug else None
    if path is None or not path.is_file():
        return
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return
    report["spectrum"] = ranked
    causes = report.get("root_causes") or []
    if causes:
        causes[0].setdefault("evidence", []).append(
            {
                "kind": "hypothesis",
                "source": f"Ochiai over {totals[0]} failing and {totals[1]} passing tests (--faildiag-cov)",
                "excerpt": describe_spectrum(ranked[0], *totals),
            }
        )
    from ..engine.snapshot import dump_json
    from ..fsio import atomic_write
    from ..redact import redact_obj

    report = redact_obj(report)
    atomic_write(out / slug / "meta" / "root-causes.json", dump_json(report.get("root_causes", [])))
    atomic_write(path, dump_json(report))


def summary_lines(
    results: list[tuple[dict[str, Any], Verdict, list[dict[str, Any]]]], cost: float, changes_note: str
) -> list[str]:
    from ..engine.changes import describe

    runs = sum(v.runs + len(v.replays) for _, v, _ in results)
    lines = [f"faildiag reruns ({runs} run(s), {cost:.1f}s):"]
    for entry, v, suspects in results:
        who = f", polluted by {v.polluter}" if v.polluter else ""
        lines.append(f"  {v.verdict}: {entry['nodeid']} ({v.detail}{who})")
        for s in suspects[:3]:
            lines.append(f"      {describe(s)}")
    if changes_note:
        lines.append(f"  changed lines not checked: {changes_note}")
    return lines


# ---------------------------------------------------------------------------------------------- outputs


def apply_verdict(out: Path, entry: dict[str, Any], v: Verdict, suspects: list[dict[str, Any]], changes: Any) -> None:
    """The verdict into the session entry (session.json, terminal groups) and the test's ``report.json``."""
    from ..engine.changes import describe

    entry["rerun"] = v.to_json()
    entry["suspects"] = suspects
    slug = entry.get("snapshot")
    path = out / slug / "report.json" if slug else None
    report: dict[str, Any] | None = None
    if path is not None and path.is_file():
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            report = None
    if report is None:
        return
    report["rerun"] = v.to_json()
    report["suspects"] = suspects
    if changes.skipped:
        report.setdefault("notes", []).append(f"changed lines since the last green run not checked: {changes.skipped}")
    causes = report.setdefault("root_causes", [])
    rerun_ev = {
        "kind": "direct",
        "source": "faildiag rerun",
        "excerpt": f"{v.verdict}: {v.detail}" + (f"; last failure: {v.failure[-300:]}" if v.failure else ""),
    }
    new: dict[str, Any] | None = None
    top_conf = float(causes[0]["confidence"]) if causes else 0.0
    if v.verdict == "deterministic" and suspects:
        first = suspects[0]
        new = {
            "id": "model.changed_since_green",
            "category": "model",
            "confidence": round(max(0.85, min(0.95, top_conf + 0.05)), 3),
            "summary": describe(first),
            "evidence": [
                {
                    "kind": "direct",
                    "source": f"git diff {str(first['changed_since'])[:12]} + coverage of the rerun",
                    "excerpt": describe(s),
                }
                for s in suspects[:4]
            ]
            + [rerun_ev],
            "validation_checks": [
                {"name": "rerun-alone", "status": "passed", "detail": v.detail},
                {
                    "name": "changed-since-green",
                    "status": "passed",
                    "detail": f"{len(suspects)} changed line(s) executed by the failing rerun",
                },
            ],
            "fix_hints": [
                f"read the change to {first['file']}:{first['line']} "
                f"(git diff {str(first['changed_since'])[:12]} -- {first['file']})"
            ],
        }
    elif v.verdict == "order_dependent":
        who = v.polluter or "the tests that ran before it"
        new = {
            "id": "pytest.order_dependent",
            "category": "test_code",
            "confidence": 0.9,
            "summary": f"passes alone, fails after {who}: state leaks from one test into the other",
            "evidence": [rerun_ev],
            "validation_checks": [{"name": "rerun-order", "status": "passed", "detail": v.detail}],
            "fix_hints": [
                f"make {who} clean up what it changes (globals, environment, files, caches), "
                "or give this test its own fixture"
            ],
        }
    if new is not None:
        causes.insert(0, new)
        report["summary"] = new["summary"]
        domains = report.get("profile", {}).get("domains")
        if isinstance(domains, list) and new["category"] not in domains:
            domains.insert(0, new["category"])
        entry.update(category=new["category"], summary=new["summary"], cause_id=new["id"], confidence=new["confidence"])
    elif causes:
        causes[0].setdefault("evidence", []).append(rerun_ev)
        status = "passed" if v.verdict == "deterministic" else "skipped" if v.verdict == "not_run" else "failed"
        causes[0].setdefault("validation_checks", []).append({"name": "rerun", "status": status, "detail": v.detail})
    if v.verdict == "intermittent":
        report.setdefault("next_actions", []).insert(
            0,
            f"intermittent ({v.detail}): look for timing, randomness, "
            "threads or shared resources before changing the code",
        )
        # the summary is what a CI annotation, JUnit's faildiag.summary and the terminal show of a test: a reader
        # of it alone would fix the cause as if it failed every time
        flaky = f"intermittent ({v.detail}): {report.get('summary') or entry.get('summary') or ''}".rstrip(": ")
        report["summary"] = flaky
        entry["summary"] = flaky
    _write_report(out / slug, report)


def _write_report(folder: Path, report: dict[str, Any]) -> None:
    from ..engine.snapshot import dump_json
    from ..fsio import atomic_write
    from ..redact import redact_obj

    report = redact_obj(report)
    atomic_write(folder / "meta" / "root-causes.json", dump_json(report.get("root_causes", [])))
    atomic_write(folder / "meta" / "failure-profile.json", dump_json(report.get("profile", {})))
    md = folder / "report.md"
    try:
        text = md.read_text(encoding="utf-8")
        lines = ["", "## Rerun", "", f"- verdict: **{report['rerun']['verdict']}** ({report['rerun']['detail']})"]
        lines += [
            f"- suspect: `{s['file']}:{s['line']}` changed since `{str(s['changed_since'])[:12]}` (score {s['score']})"
            for s in report.get("suspects", [])
        ]
        atomic_write(md, text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    except OSError:
        pass
    atomic_write(folder / "report.json", dump_json(report))


def rerun_properties(entry: dict[str, Any]) -> list[tuple[str, str]]:
    props = [("faildiag.category", str(entry.get("category"))), ("faildiag.summary", str(entry.get("summary")))]
    if entry.get("rerun"):
        props.append(("faildiag.rerun", str(entry["rerun"]["verdict"])))
    if entry.get("suspects"):
        s = entry["suspects"][0]
        props.append(("faildiag.suspect", f"{s['file']}:{s['line']}"))
    return props


def amend_junit(config: pytest.Config, results: list[tuple[dict[str, Any], Verdict, list[dict[str, Any]]]]) -> None:
    """Add ``faildiag.rerun`` / ``faildiag.suspect`` (and the moved category and summary) to the testcases
    pytest's JUnit writer already finalised; it writes the file after this, at its own session end."""
    if not results:
        return
    try:
        from _pytest.junitxml import mangle_test_address, xml_key
    except ImportError:
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    by_name: dict[tuple[str, str], dict[str, Any]] = {}
    for entry, _v, _s in results:
        names = mangle_test_address(entry["nodeid"])
        classnames = names[:-1]
        if xml.prefix:
            classnames.insert(0, xml.prefix)
        by_name[(".".join(classnames), names[-1])] = entry
    import xml.etree.ElementTree as ET

    for reporter in xml.node_reporters_ordered:
        try:
            case = reporter.to_xml()
        except Exception:
            continue
        entry = by_name.get((case.get("classname", ""), case.get("name", "")))
        if entry is None or case.find("failure") is None and case.find("error") is None:
            continue
        props = case.find("properties")
        if props is None:
            props = ET.Element("properties")
            case.insert(0, props)
        for name, value in rerun_properties(entry):
            for old in [p for p in props.findall("property") if p.get("name") == name]:
                props.remove(old)
            props.append(ET.Element("property", name=name, value=value))
