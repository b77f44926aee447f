"""Stage 1: the failure analyzer. Scan results + exit status → FailureProfile and the findings that count.

"First real failure point" is decided here: downstream symptoms (``NCCL WARN``, ``Connection closed by
peer``, launcher re-raises) give way to any non-downstream finding; among the rest the earliest by
timestamp (or by order in the logs) wins, so the rank that failed first names the failure.
"""

from __future__ import annotations

import builtins
import re
import signal as _signal
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..model import FailurePoint, FailureProfile
from ..parse.scan import Finding, ScanResult, Traceback, settle_handled
from ..rules import RuleSet

_STACK_MARKERS = [  # (substring in the logs/command, stack); first listed wins on ties of evidence
    ("torch_npu", "pta"),
    ("mindspore", "mindspore"),
    ("jaxlib", "jax"),
    ("jax.", "jax"),
    ("/jax/", "jax"),
    # jaxlib built XLA from TensorFlow's tree as Bazel's external repository ``org_tensorflow`` (until XLA moved to
    # openxla/xla, then ``external/xla/``), so its glog lines name "external/org_tensorflow/tensorflow/...":
    # TensorFlow's own binaries print their paths from their own workspace ("tensorflow/..."). On a tie with the
    # "tensorflow" in that same path, jax comes first.
    ("external/org_tensorflow/", "jax"),
    ("tensorflow", "tensorflow"),
    ("torch", "pytorch"),
    ("TORCH_", "pytorch"),  # PyTorch's own environment variables (TORCH_NCCL_*, TORCH_DISTRIBUTED_DEBUG, …)
    ("ProcessGroupNCCL", "pytorch"),  # PyTorch's c10d classes, printed by its C++ logging
    ("c10d", "pytorch"),
    ("cupy", "other"),
]
# ties of evidence: first listed wins (a framework's failure printed in pytest's format is that framework's)
_STACK_ORDER = ["pta", "mindspore", "jax", "tensorflow", "pytorch", "pytest", "python", "other"]
# an installed package (``site-packages/flax/…``) or a source checkout run from its root (``vllm/vllm/…``,
# ``src/transformers/…``)
_FRAME_PACKAGE = re.compile(
    r"(?:site|dist)-packages[/\\](?P<pkg>[A-Za-z_]\w*)"
    r"|(?:^|[/\\])(?P<dir>[A-Za-z_]\w*)[/\\](?P=dir)[/\\]|[/\\]src[/\\](?P<src>[A-Za-z_]\w*)[/\\]"
)
# weights of the evidence for a stack: a rule that knows the failing message names its framework (the rule
# was written for that framework's own words); a frame, or a line only that framework prints (a rule kept
# for its hints, ``noise = true``), shows that it ran; a name printed anywhere, that it was around
RULE_WEIGHT, DOWNSTREAM_RULE_WEIGHT, FRAME_WEIGHT, MARKER_WEIGHT = 3, 1, 2, 1
MAX_STACK_TB = 6  # tracebacks read from each end for their frames' packages
_BACKEND_MARKERS = [
    (re.compile(r"\bAscend|\bnpu\b|\bNPU\b|torch_npu|CANN"), "npu"),
    (re.compile(r"\bHCCL"), "hccl"),
    (re.compile(r"\bNCCL"), "nccl"),
    (re.compile(r"\bgloo\b|Gloo"), "gloo"),
    (re.compile(r"\bcuda\b|\bCUDA\b|cuda:\d|\bcu(?:DNN|BLAS)"), "cuda"),
    (re.compile(r"\bXLA\b"), "xla"),
    (re.compile(r"\bTPU\b"), "tpu"),
]


# JAX's words for a traceback it filtered: the exception passed through a JAX transformation's API boundary
_JAX_FILTERED = re.compile(r"JAX has removed its internal frames|excludes JAX-internal frames")
# Python's classes for a wrong program, which JAX raises (or lets through from the user's code) while it traces
# a transformed function: shape, dtype and pytree mismatches, a traced value used as a concrete one, a bad
# argument. Compiled code fails otherwise (XlaRuntimeError/JaxRuntimeError; FloatingPointError from
# jax_debug_nans; RuntimeError for a deleted or donated buffer at dispatch).
_TRACE_TIME = (TypeError, ValueError, IndexError, NameError, AttributeError, KeyError, AssertionError)
_ERROR_REPORT = re.compile(
    r"(?i)\b(?:error|fatal|exception)\b(?!\s*[=:]\s*0(?:\.0*)?\b)"
)  # not "error_rate", "errors: 0"
_PYTEST_RAISE = re.compile(r"\s*(?:[\w.]*(?:Error|Exception)|Failed|assert)\b")  # an ``E   `` line naming what failed
# the signals whose delivery kills a process (their default action is to terminate it, most with a core dump):
# the contract's crash. SIGINT (a person's Ctrl-C), SIGPIPE (a reader went away) and SIGHUP are left out.
FATAL_SIGNALS = frozenset(
    {"SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGTERM", "SIGTRAP", "SIGQUIT", "SIGSYS"}
)
# the signals a process's own fault raises (a bad instruction or address, an arithmetic trap, abort(), a trap,
# a refused system call), not ones sent from outside to stop it
FAULT_SIGNALS = frozenset({"SIGILL", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGABRT", "SIGTRAP", "SIGSYS"})
# an exit status or a signal reported in a log line: shells and CI runners print 128+N ("exit code 137",
# make's "[target] Error 139"), Python's subprocess "returned non-zero exit status 134", launchers a negative status
# ("exitcode: -11", "exit status -9"), others name the signal ("killed by signal 9", "terminated by SIGSEGV")
_SIGNAL_STATUS = re.compile(
    r"(?i)(?:exit(?:ed)?(?: with)?[ _]?(?:code|status)|exitcode|return(?:ed)? (?:non-zero )?(?:exit )?(?:code|status)"
    r"|\] Error)\s*[:=]?\s*(?:(?P<code>1[3-5]\d)\b|-(?P<neg>\d{1,2})\b)"
    r"|\b(?:killed|terminated|died|exited|stopped) (?:with|by|on|due to) (?:the )?"
    r"(?:signal:?\s*(?:Some\()?(?P<num>\d{1,2})\b|(?:signal\s*|<Signals\.)?SIG(?P<sig>[A-Z]{3,4})\b)"
)  # Rust's ExitStatus prints "signal: 4 (SIGILL)", its Option's Debug "signal: Some(4)" (uv); Python's
# CalledProcessError "died with <Signals.SIGILL: 4>."
_PYTEST_CMD = re.compile(r"(?:^|[\s/])(?:py\.test|pytest)(?:\s|$)")  # the program, not a /tmp/pytest-of-… path


@dataclass
class Analysis:
    profile: FailureProfile
    findings: list[Finding]  # findings that count, best first
    failed: bool
    stage_by_rule: bool = False  # a rule named the stage (else it is a default the frames may refine)
    type_by_rule: bool = False


def signal_name(exit_code: int | None) -> str | None:
    """137 → SIGKILL, -11 → SIGSEGV; None when the status is not a signal."""
    if exit_code is None:
        return None
    num = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else None
    if not num:
        return None
    try:
        return _signal.Signals(num).name
    except ValueError:
        return None


def _suppressed(finding: Finding, found: set[str]) -> bool:
    """A rule yields to any rule of its ``suppressed_by`` that matched the run (one that says more about it)."""
    return any(s in found for s in finding.rule.suppressed_by)


def _effective(scan: ScanResult, found: set[str], failed: bool) -> list[Finding]:
    out = []
    for f in scan.findings:
        r = f.rule
        if r.noise:
            continue
        if r.requires_failure and not failed:
            continue
        if _suppressed(f, found):
            continue
        out.append(f)
    return out


def exit_findings(ruleset: RuleSet, exit_code: int | None) -> list[Finding]:
    if exit_code is None:
        return []
    return [
        Finding(
            r,
            "exit status",
            0,
            f"exit status {exit_code}" + (f" ({signal_name(exit_code)})" if signal_name(exit_code) else ""),
            {},
        )
        for r in ruleset.exit_rules
        if exit_code in r.exit_codes
    ]


def order_key(f: Finding) -> tuple[bool, int, str, int]:
    """Best first: non-downstream, higher priority, then earliest (timestamp, then discovery order)."""
    return (f.rule.downstream, -f.rule.priority, f.ts or "~", f.seq)


def analyze(
    scan: ScanResult, ruleset: RuleSet, *, exit_code: int | None, command: str | None, hint_stack: str | None = None
) -> Analysis:
    settle_handled(scan, exit_code)  # a traceback the program handled is evidence only when nothing else is
    # a rule that only explains a failure (requires_failure: a warning, a coverage report) counts when the run
    # failed, or when its exit status is unknown: a log handed over without one is handed over as a failure, and
    # such a line is then the best-supported reading (a skipped async test, a coverage that measured nothing),
    # better than taking the quiet log for a hang. A run known to have exited 0 keeps them out.
    failed = bool(exit_code) or exit_code is None or bool(scan.tracebacks) or bool(scan.pytest_errors)
    found = scan.rule_ids()
    findings = _effective(scan, found, failed or _has_error_finding(scan))
    ids = {f.rule.id for f in findings}
    # an exit status's reading yields to the rules that name why the process ended (suppressed_by, as for lines)
    for f in exit_findings(ruleset, exit_code) + reported_exit_findings(ruleset, scan):
        if f.rule.id not in ids and not _suppressed(f, found):
            findings.append(f)
            ids.add(f.rule.id)
    findings.sort(key=order_key)
    profile = FailureProfile(command=command, exit_code=exit_code, signal=signal_name(exit_code))
    profile.stack = hint_stack or detect_stack(scan, command, findings, ruleset.reasoning.package_stacks)
    profile.backend = _first_attr(findings, "backend") or detect_backend(scan)
    primary = [f for f in findings if not f.rule.downstream]
    ruled_type = None
    if not primary and primary_tracebacks(scan):  # only symptoms matched: the exception names the failure
        profile.type = _fallback_type(scan, exit_code)
    else:
        ruled_type = _first_attr(findings, "type")
        profile.type = ruled_type or _fallback_type(scan, exit_code)
    if profile.type in _ABORTABLE and _died_of_abort(scan, findings, exit_code):
        profile.type = "crash"  # the contract's crash: the process died of the abort, whatever the message said
    profile.stage, staged = _stage(scan, findings, exit_code)
    domains: list[str] = []
    for f in findings[:6]:
        for d in f.rule.domains:
            if d not in domains:
                domains.append(d)
    profile.domains = domains
    ranks = rank_summary(scan)
    if ranks:
        profile.ranks = ranks
    return Analysis(
        profile, findings, failed or bool(findings), stage_by_rule=staged, type_by_rule=ruled_type is not None
    )


# the symptoms whose message a native library prints before it aborts (an uncaught C++ exception: std::terminate
# calls abort(); a Rust panic built to abort; a CHECK failure): the process still died of the signal, the
# contract's crash. An OOM or a hang keeps its own type: the abort is how that symptom ended the run.
_ABORTABLE = frozenset({"runtime_error", "unsupported_op", "backend"})


def _died_of_abort(scan: ScanResult, findings: list[Finding], exit_code: int | None) -> bool:
    """The native error itself ended the process with an abort: the C++ runtime's ``terminate called after
    throwing …`` (an uncaught exception; std::terminate's default handler calls abort()), or, when no Python
    exception ended the run first, SIGABRT's exit status, a line saying a process died of it, or a line a rule
    marks as the abort's own report (its ``aborted`` group: a shell's job report, faulthandler's line). A Python
    exception that ended a rank stays its symptom even when the interpreter then aborted at exit (a thread
    still joinable: ``terminate called without an active exception``), as the contract reads it."""
    if any(f.rule.id == "proc.sigabrt" and f.groups.get("what") for f in findings):
        return True
    if _python_exception_ended(scan):
        return False
    if signal_name(exit_code) == "SIGABRT" or reported_signal_death(scan) == "SIGABRT":
        return True
    return any("aborted" in f.groups for f in findings)


def _python_exception_ended(scan: ScanResult) -> bool:
    """A Python exception's traceback is in the evidence: that exception ended the run (the contract's
    runtime_error, whatever signal the process died of afterwards)."""
    return any(tb.exc_type for tb in scan.tracebacks)


def _has_error_finding(scan: ScanResult) -> bool:
    return any(not f.rule.noise and not f.rule.requires_failure and f.rule.causes for f in scan.findings)


def _first_attr(findings: list[Finding], attr: str) -> str | None:
    for f in findings:
        v = getattr(f.rule, attr)
        if v:
            return str(v)
    return None


def _stage(scan: ScanResult, findings: list[Finding], exit_code: int | None) -> tuple[str, bool]:
    """The stage, and whether a rule named it (else it is a default that the frames may refine)."""
    # stage-only rules (noise=True with a stage) may refine the stage of the top finding
    refiners = [f for f in scan.findings if f.rule.noise and f.rule.stage]
    staged = sorted([f for f in findings if f.rule.stage] + refiners, key=lambda f: -f.rule.priority)
    if staged:
        return staged[0].rule.stage or "runtime", True
    if _traced_by_jax(scan):
        return "compile", False  # a default: a frame that names a stage (data, evaluation) still refines it
    if findings or scan.tracebacks or exit_code or scan.pytest_errors or scan.error_lines:
        return "runtime", False
    return "unknown", False


def _traced_by_jax(scan: ScanResult) -> bool:
    """The failing exception was raised while JAX traced a transformed function. JAX runs the Python code of
    a jitted, vmapped or differentiated function only to trace it ("JIT compilation machinery … calls f in
    order to trace and translate it", jax/_src/traceback_util.py), and filters the traceback of an exception
    raised below the transformation's boundary and says so. Such an exception of one of Python's classes
    for a wrong program (not an execution error of the compiled code) was raised at trace time: the
    contract's ``compile``."""
    if not any(_JAX_FILTERED.search(f.text) for f in scan.findings if f.rule.noise):
        return False
    exc = _failing_class(scan)
    cls = getattr(builtins, (exc or "").rsplit(".", 1)[-1], None) if exc and "." not in exc else None
    return isinstance(cls, type) and issubclass(cls, _TRACE_TIME)


def _failing_class(scan: ScanResult) -> str | None:
    """The class of the exception the log ends with: the root of the last chain of Python's tracebacks, else
    pytest's last raise site."""
    prim = [tb for tb in primary_tracebacks(scan) if tb.exc_type]
    for tb in reversed(prim):
        if not tb.chained:
            return tb.exc_type
    if prim:
        return prim[-1].exc_type
    sites = [exc for _src, _ln, _site, exc in scan.pytest_locations if exc]
    return sites[-1] if sites else None


def reported_signal_death(scan: ScanResult) -> str | None:
    """A fatal signal that a line of the logs says a process died of, in the words a shell, a CI runner, a
    launcher or a build tool use for it: an exit status of 128+N (``exit code 139``, ``Error 134``,
    ``returned non-zero exit status 137``), a negative status (``exitcode: -11``), a named signal
    (``killed by signal 9``, ``terminated by signal SIGSEGV``). None when no line says so."""
    found = _signal_death_line(scan, FATAL_SIGNALS)
    return found[0] if found else None


def _signal_death_line(scan: ScanResult, signals: frozenset[str]) -> tuple[str, str, int, str] | None:
    """The first of ``signals`` a line reports a process died of: (signal name, source, line number, text)."""
    lines = list(scan.error_lines[:200])
    lines += [(src, 0, t) for src, info in scan.sources.items() for t in info.tail[-8:]]
    for src, lineno, text in lines:
        for m in _SIGNAL_STATUS.finditer(text):
            code = int(m["code"]) if m["code"] else -int(m["neg"]) if m["neg"] else None
            name = signal_name(code) if code is not None else None
            if m["num"]:
                name = signal_name(-int(m["num"]))
            elif m["sig"]:
                name = "SIG" + m["sig"].upper()
            if name in signals:
                return name, src, lineno, text
    return None


def reported_exit_findings(ruleset: RuleSet, scan: ScanResult) -> list[Finding]:
    """A line saying a process died of a fatal signal (``Command exited with signal: Some(4)``, ``returned
    non-zero exit status 132``) is the same evidence as that process's exit status: the rules that read that
    signal's status (SIGILL's, SIGSEGV's, ...) read it, citing the line. The run's own status may say less (a
    parent that exited 1 after its child died). Only the signals a process's own fault raises count: a line that a
    worker died of SIGTERM or SIGKILL most often reports the launcher stopping the others after the failure."""
    found = _signal_death_line(scan, FAULT_SIGNALS)
    if not found:
        return []
    name, src, lineno, text = found
    status = -int(_signal.Signals[name])
    return [Finding(r, src, lineno, text.strip(), {}) for r in ruleset.exit_rules if status in r.exit_codes]


def _fallback_type(scan: ScanResult, exit_code: int | None) -> str:
    if _python_exception_ended(scan):
        return "runtime_error"
    if scan.pytest_errors:
        return "runtime_error"
    if signal_name(exit_code) or (exit_code is not None and exit_code < 0):
        return "crash"  # a signal ended it: the contract's crash
    if reported_signal_death(scan):
        return "crash"  # a process it ran (a compiler, a test binary, a rank) died from a signal, says the log
    if exit_code:
        return "runtime_error"  # the program exited non-zero on its own: not a crash
    if any(_ERROR_REPORT.search(text) for _, _, text in scan.error_lines[:200]):
        return "runtime_error"  # a program reported an error and no signal is known: the generic failure
    return "unknown"


def detect_stack(
    scan: ScanResult,
    command: str | None,
    findings: list[Finding] | None = None,
    packages: dict[str, str] | None = None,
) -> str:
    """The framework the run used. A pytest session's own header or summary (or a pytest command) makes it
    ``pytest`` whatever the tests exercised (the contract's stack of a test run). Otherwise the evidence is
    weighed: the ``stack`` of each rule that matched (a rule knows its framework's own words, e.g. JAX's "JAX
    has removed its internal frames"), the packages of the tracebacks' frames (``site-packages/flax`` runs on
    JAX), the frameworks' names printed in the log's last lines, the exception classes or the command, and
    pytest's raise sites and ``E`` lines (an excerpt of a test run: below a framework's own evidence, as a
    framework's failure quoted from pytest's report is that framework's). ``packages``: the framework each
    package runs on (``[stack_packages]`` of the reasoning pack)."""
    texts = [command or ""]
    for info in scan.sources.values():
        texts.extend(info.tail[-20:])
    for tb in scan.tracebacks[:6]:
        texts.extend(fr.file for fr in tb.frames)
        texts.append(tb.exc_type or "")
    texts.extend(f.text for f in scan.findings[:40])
    blob = "\n".join(texts)
    if (
        "test session starts" in blob
        or "short test summary info" in blob
        or "+++++ Timeout +++++" in blob
        or (command and _PYTEST_CMD.search(command))
    ):
        return "pytest"
    evidence = _stack_evidence(scan, blob, scan.findings if findings is None else findings, packages or {})
    score = {s: v for s, v in evidence.items() if s in _STACK_ORDER}  # a team card may name any stack
    if score:
        best = max(score.values())
        if "pta" in score and "pytorch" in score and best in (score["pta"], score["pytorch"]):
            return "pta"  # PyTorch with torch_npu loaded is the contract's pta
        return next(s for s in _STACK_ORDER if score.get(s, 0) == best)
    if scan.tracebacks or (command and "python" in command):
        return "python"
    return "other"


def _stack_evidence(scan: ScanResult, blob: str, findings: list[Finding], packages: dict[str, str]) -> dict[str, int]:
    """Points for each stack: rules that matched (each rule once), frames' packages (each traceback once per
    stack), framework names printed (each once)."""
    score: dict[str, int] = {}
    seen: set[str] = set()
    hints = [f for f in scan.findings[:200] if f.rule.noise]  # lines kept for their stack/stage hints only
    for f in findings + hints:
        if f.rule.stack and f.rule.id not in seen:
            seen.add(f.rule.id)
            w = FRAME_WEIGHT if f.rule.noise else DOWNSTREAM_RULE_WEIGHT if f.rule.downstream else RULE_WEIGHT
            score[f.rule.stack] = score.get(f.rule.stack, 0) + w
    tbs = scan.tracebacks
    for tb in tbs if len(tbs) <= 2 * MAX_STACK_TB else tbs[:MAX_STACK_TB] + tbs[-MAX_STACK_TB:]:
        for st in {s for s in (_frame_stack(fr.file, packages) for fr in tb.frames) if s}:
            score[st] = score.get(st, 0) + FRAME_WEIGHT
    for st in {st for marker, st in _STACK_MARKERS if marker in blob}:
        score[st] = score.get(st, 0) + MARKER_WEIGHT
    if scan.pytest_locations or any(_PYTEST_RAISE.match(text) for _s, _l, text in scan.pytest_errors[:50]):
        # pytest's own report of a failure (``path.py:N: ExcType`` raise sites, ``E   ExcType: msg`` lines):
        # only pytest prints it, so the log is a test run's, whatever the tests exercised
        score["pytest"] = score.get("pytest", 0) + MARKER_WEIGHT
    return score


def _frame_stack(path: str, packages: dict[str, str]) -> str | None:
    """The framework a frame's package runs on (None when the frame is no known framework's)."""
    for m in _FRAME_PACKAGE.finditer(path):
        stack = packages.get(m["pkg"] or m["dir"] or m["src"])
        if stack:
            return stack
    return None


def detect_backend(scan: ScanResult) -> str | None:
    blob = "\n".join(f.text for f in scan.findings[:40])
    blob += "\n".join(t for info in scan.sources.values() for t in info.tail[-10:])
    for marker, backend in _BACKEND_MARKERS:
        if marker.search(blob):
            return backend
    return None


def primary_tracebacks(scan: ScanResult) -> list[Traceback]:
    """Tracebacks whose exception line is not itself a downstream symptom (a peer's "Connection closed by
    peer", a launcher's ChildFailedError): the exceptions that can be a first failure."""
    down = {(f.source, f.line) for f in scan.findings if f.rule.downstream}
    return [tb for tb in scan.tracebacks if tb.exc_type and (tb.source, tb.exc_line) not in down]


def several_processes(ranks: Collection[str]) -> bool:
    """Whether the ranks seen say the run had several processes: a rank's number (a launcher numbers the
    processes it starts), or two writers or more (hosts, pods, workers an envelope names). One writer named alone
    is where the lines came from, nothing more."""
    return len(ranks) > 1 or any(r.isdigit() for r in ranks)


def rank_summary(scan: ScanResult) -> dict[str, Any]:
    """Which rank failed first (by timestamp when the logs carry one, else by order in the logs)."""
    firsts = dict(scan.rank_first_error)
    for tb in primary_tracebacks(scan):  # an exception no rule knows still marks its rank as failed
        if tb.rank is not None and tb.rank not in firsts:
            firsts[tb.rank] = (
                tb.source,
                tb.exc_line or tb.line,
                tb.headline[:300],
                None,
            )
    if not several_processes(firsts):
        return {}
    ordered = sorted(firsts.items(), key=lambda kv: (kv[1][3] or "~", kv[1][1]))
    first_rank, (src, line, text, ts) = ordered[0]
    return {
        "first_failing": first_rank,
        "first_error": {"source": src, "line": line, "excerpt": text, "time": ts},
        "ranks_with_errors": [r for r, _ in ordered],
    }


def failure_point(scan: ScanResult, findings: list[Finding], *, ranked: bool = False) -> FailurePoint | None:
    """The first real failure point: the best non-downstream finding, else the last exception line. ``ranked``:
    the run had several processes (``rank_summary``), so the point names the rank or writer whose line it is."""
    point = _point(scan, findings)
    if point is not None and not ranked:
        point.rank = None
    return point


def _point(scan: ScanResult, findings: list[Finding]) -> FailurePoint | None:
    for f in findings:
        if not f.rule.downstream and f.rule.causes and f.source != "exit status":
            return FailurePoint(f.source, f.line, f.text, f.rank)
    # the last exception that is no symptom and not chained, else the last one not chained, else the last one
    for tbs, unchained in ((primary_tracebacks(scan), True), (scan.tracebacks, True), (scan.tracebacks, False)):
        for tb in reversed(tbs):
            if tb.exc_type and not (unchained and tb.chained):
                return FailurePoint(tb.source, tb.exc_line, tb.headline, tb.rank)
    if scan.pytest_errors:
        src, line, text = scan.pytest_errors[0]
        return FailurePoint(src, line, text)
    if scan.error_lines:
        src, line, text = scan.error_lines[-1]
        return FailurePoint(src, line, text)
    return None
