"""Reasoning that needs no signature, and the differential diagnosis.

A rule knows one message. Most failures nobody wrote a rule for still say a lot: which code raised the
exception (the program's own, a test, a library below the program's frames, or only libraries), in which
stage the frames were (a dataset's ``__getitem__``, ``load_state_dict``, dynamo, an evaluation loop), what
kind of exception it was (the Python hierarchy: a ``PermissionError`` is an ``OSError``), and which word
families the message uses. ``gather_facts`` reads these; ``05-reasoning.toml`` says what each fact means.

Every symptom family (an exception family, or the profile's type: oom, hang, crash, …) declares its
competing causes across categories. ``differential`` turns them into candidate causes weighted by the
facts, so the ranking offers distinct hypotheses rather than three variants of one; ``apply_context``
moves the causes the rules found by the same facts, and reports each move as a validation check, so a
person sees why a cause went up or down.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..model import Evidence, RootCause, ValidationCheck
from ..parse.scan import (
    JAX_WRAPPERS,
    Frame,
    ScanResult,
    Traceback,
    exception_line,
    native_frame,
    printed_frame,
    raised_line,
)
from ..rules import Reasoning, RuleSet
from .analyze import Analysis, primary_tracebacks, several_processes

_SITE = re.compile(r"(?:site|dist)-packages/(?P<pkg>[^/]+)")
# the standard library: ``…/lib/python3.X/`` (POSIX), ``…\Python3XX\Lib\`` (Windows installs)
_STDLIB = re.compile(
    r"/lib(?:64)?/python\d(?:\.\d+)?/(?!site-packages|dist-packages)|(?i:/python\d+/lib/)(?!site-packages)"
)
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test|conftest|tests?)\.py$|(?:^|/)tests?/")
# the tests' set-up code: a conftest (fixtures, hooks) or a fixture/set-up function of a test module
_TEST_SETUP_FILE = re.compile(r"(?:^|/)conftest\.py$")
_TEST_SETUP_FUNC = re.compile(r"^(?:setUp\w*|tearDown\w*|setup\w*|teardown\w*|fixture\w*|_?\w*_fixture)$")
_PATHS = re.compile(r"\S*[/\\]\S*")
# a path whose leading folders a paste replaced by a placeholder (``<path>/pkg/mod.py``, ``<redacted>/x.py``,
# ``<HOME>/.venv/…``) is a file path, not a pseudo-file such as ``<string>`` or ``<frozen importlib._bootstrap>``
_REDACTED = re.compile(r"^<[\w .-]+>(?=/)")
# code that a library downloaded from a model hub and imported at run time, not the program's: transformers'
# ``trust_remote_code`` modules (``…/huggingface/modules/transformers_modules/<model>/modeling_x.py``, diffusers'
# ``diffusers_modules``) and torch.hub's repositories (``…/torch/hub/<owner>_<repo>_<ref>/…``; its ``checkpoints``
# folder holds weights, not code). The model's publisher wrote it; its package is the folder that names it
_HUB_CODE = re.compile(
    r"/(?:transformers|diffusers)_modules/(?P<pkg>[^/]+)/|/torch/hub/(?!checkpoints/)(?P<pkg2>[^/]+)/"
)
# the folder an unpacked release archive of a package creates, holding the package's own folder: an sdist
# (``name-1.2.tar.gz`` unpacks to ``name-1.2/``) or a repository's archive from its host (GitHub's ``repo-1.2.zip``
# of tag ``v1.2``, ``repo-main.zip`` of a branch, unpack to ``repo-1.2/``, ``repo-main/``). ``graphcast-0.1/graphcast/``
# is that package's released code, read as a library as its install would be, not the program's own
_RELEASE_FOLDER = re.compile(r"[\w.]+-(?:v?\d+(?:\.\d+)*(?:[.-]?(?:a|b|rc|post|dev)\d*)?|main|master)")
_USER_PSEUDO = ("<string>", "<stdin>", "<ipython-input", "<cell", "<module>")
# a factor outside these bounds would let one weak word decide the ranking alone
MIN_FACTOR, MAX_FACTOR = 0.3, 4.0
REFUTES = 0.35  # a context factor this low contradicts a rule's cause outright
PRIMARY_SCALE = 0.7  # differential candidates when no rule explains the failure
SECONDARY_SCALE = 0.45  # alternatives beside causes that rules found
MAX_TB_SEEN = 20  # tracebacks looked at from each end for a test's frame (a 10 MB log can hold thousands)
EVIDENCE_POOL = "evidence_points"  # the [[symptom]] whose causes join a family when a fact lifts them
GENERIC_FAMILY = "runtime"  # the family of a failure that says nothing more specific: completes the others
# the [[symptom]] (not a family) whose homes hold a place among the first WIDTH hypotheses when no frame of the
# program or its tests is shown: evidence that never shows the program's code cannot rule out the libraries'
UNSHOWN_POOL = "program_unshown"
KEPT_PREFIX = "kept:"  # [[symptom]] entries ``kept:<fact>``: homes that hold a place when the fact holds (owner_kept)
WIDTH = 3  # distinct hypotheses the ranking always offers (diversify shows the best of each category first)
POINTED_LIFT = 1.3  # a net lift below this leaves a hypothesis a guess of its prior (pointed_at)
MIN_LIFT = 1.0  # a category joins when the facts lift it above this net factor
WEAK_SIGNAL = 40  # rules below this priority are weak signals (docs/rules.md: 20-39), typed by an exit status
LEAD_LINES = 2  # the first error lines read as part of the message (the rest of a cascade follows from them)
TAIL_READ = 8  # the last lines of each log read as its message when nothing in it was flagged as an error
API_CUE = "cue:api_change"  # the [[context]] whose words say that an API changed (removed, renamed, signature)
FAILED_CUE = "cue:failed"  # the [[context]] whose words say that something failed (not a hang)
LIBRARY_GAP = "raiser:library_gap"  # a library's own code raised NotImplementedError for a feature (_library_gap)
FILE_STAGES = frozenset({"data", "checkpoint"})  # the stages a file reader's rule and the frames trade (refine_profile)
LIBRARY_OP = "raiser:library_op"  # a compiled operation refused what a library's own line handed it (_library_op)
# the [[exception]] family of an exception that only reports another one (pytest's warnings for an exception
# raised where nothing could catch it): the reported exception is the failure, read in its place
REPORTER_FAMILY = "unraisable"
SYNTAX_FAMILY = "syntax"  # the [[exception]] family of SyntaxError and its subclasses
_COMPILED_STRING = re.compile(r"\(<string>, line \d+\)")  # a SyntaxError's location in code compiled from a string
# a log level below warning: chatter a hung run prints too ("NCCL INFO … Failed to open libibverbs.so"). A
# warning is read: it is how a library says that a part of it could not be set up ("xFormers can't load C++/CUDA
# extensions", bitsandbytes' "libcudart.so not found"), and NCCL's WARN level is how it reports its errors; a paste
# that ends on one states that failure (train: 2 of the 13 logs read as hangs from a log that just stops were
# such pastes, labelled runtime_error; none of the 6 real hangs among them ends on a warning's failure words)
_CHATTER = re.compile(r"\b(?:INFO|DEBUG|TRACE)\b")
_NEVER = re.compile(r"(?!)")  # what a named text matches in a rule set whose packs lack it: nothing


def _text(reasoning: Reasoning, name: str) -> re.Pattern[str]:
    """The named text ``name`` of the packs' ``[patterns]`` tables (``rules/05-reasoning.toml``): the words a library
    or a tool prints that a reasoning step looks for, kept as data (a team's pack may extend or replace one) and
    compiled once by the loader with the rest of the rule set. Parsing mechanics (path shapes, frame, report and
    prompt formats) stay regexes of this module."""
    pattern: re.Pattern[str] = reasoning.patterns.get(name, _NEVER)
    return pattern


@dataclass
class Facts:
    """What the evidence says without any rule: the failing exception and where it was raised."""

    exc_type: str | None = None
    message: str = ""
    family: str | None = None
    entry: dict[str, Any] = field(default_factory=dict)  # the [[exception]] entry of exc_type
    raiser: str | None = None  # user | test | library | stdlib
    library: str | None = None  # the package that raised, when it is a library
    library_only: bool = False
    raise_frame: Frame | None = None
    user_frame: Frame | None = None
    stage: str | None = None
    stage_frame: Frame | None = None
    source: str = ""
    line: int | None = None
    active: list[str] = field(default_factory=list)  # the structural facts that hold (raiser:, stage:, run:)
    contexts: list[tuple[str, str, dict[str, float]]] = field(default_factory=list)  # every [[context]] that holds
    cued: set[str] = field(default_factory=set)  # the facts that hold because the message's words match
    cut: bool = False  # the frames come from a traceback the log cut before its exception line
    distributed: bool = False  # the evidence shows several ranks or a collective backend
    lead: str = ""  # the first error lines of the log: the head of a cascade names its cause
    error_head: str = ""  # the log's first LOG_RESOURCE_LINES error lines, joined: read by several facts
    error_head_bare: str = ""  # the same with paths blanked (``_PATHS``): words in a path are no statement
    tests_seen: bool = False  # a test's frame or a test runner's report is in the evidence
    called_from_test: bool = False  # the program's code that raised was called by a test (the code under test)
    library_on_stack: bool = False  # a library's frame is on the failing stack (a caller or the code it called)
    native_tail: bool = False  # the run's last line came from a library's compiled code (_native_tail)
    compiled_string: bool = False  # the SyntaxError is in code compiled from a string by the frame that raised


def frame_owner(frame: Frame, libraries: frozenset[str]) -> tuple[str, str | None]:
    """("user" | "test" | "library" | "stdlib", package name). Source checkouts of well-known libraries
    (``vllm/vllm/…``, ``src/transformers/…``) count as the library, not as the user's code; so do an unpacked
    release of any package (``graphcast-0.1/graphcast/…``: ``_RELEASE_FOLDER``) and a model's code that a library
    downloaded from a hub (``_HUB_CODE``). A path a paste redacted (``<path>/app.py``) is read by the rest of it
    (``_REDACTED``), not as a pseudo-file."""
    f = _REDACTED.sub("", frame.file.replace("\\", "/"), count=1)
    if (cy := cython_owner(frame, libraries)) is not None:  # kpytest5
        return cy
    if f.startswith("<"):
        return ("user", None) if f.startswith(_USER_PSEUDO) else ("stdlib", None)
    m = _SITE.search(f)
    if m:
        # a library's own test suite run from its install (``numpy/core/tests/test_x.py``): the test's code
        return ("test", None) if _TEST_FILE.search(f[m.end() :]) else ("library", m["pkg"].split(".")[0].split("-")[0])
    if _STDLIB.search(f):
        return "stdlib", None
    if (inst := installed_outside_site(f)) is not None:  # kland2
        return "library", inst
    parts = [p for p in f.split("/") if p]
    for i in range(1, len(parts) - 1):
        name = parts[i]
        prev = parts[i - 1].lower()
        if name in libraries and (
            prev == name
            or prev == "src"
            or prev.startswith((name + "-", name + "_"))
            or f"{prev}/{name}" in libraries  # a checkout under its repository's name ([library] checkouts)
        ):
            return "library", name
        if _RELEASE_FOLDER.fullmatch(prev) and prev[: len(name) + 1].lower() == name.lower() + "-":
            return "library", name  # an unpacked release of that package (``graphcast-0.1/graphcast/``)
    if "/_pytest/" in f or "/pluggy/" in f:
        return "library", "pytest"
    if (rel := _relative_library(f, libraries)) is not None:  # kjax7
        return "library", rel
    hub = _HUB_CODE.search(f)
    if hub:
        return "library", hub["pkg"] or hub["pkg2"]  # a model's code a library downloaded and imported (_HUB_CODE)
    if parts and parts[-1].endswith(".py") and parts[-1] in libraries:  # [library] copied_scripts
        return "library", _script_owner(parts[-1], libraries)
    if _TEST_FILE.search(f):
        return "test", None
    return "user", None


def _script_owner(script: str, libraries: frozenset[str]) -> str | None:
    """The package that copies ``script`` into the program's folders (``[library] copied_scripts``)."""
    return next((e.partition("/")[0] for e in libraries if e.endswith("/" + script)), None)


# a path whose leading folders a paste elided (``.../flax/nnx/pytreelib.py``, ``…/pkg/x.py``): the rest is read
_ELIDED_PREFIX = re.compile(r"^(?:\.{3}|…)/")


def _relative_library(f: str, libraries: frozenset[str]) -> str | None:
    """The well-known library whose source tree a relative frame path lies in (kjax7). pytest prints a raise site
    (``equinox/internal/_primitive.py:271: TypeError``) and its frames relative to its rootdir when the file lies
    under it (``_pytest/_code/code.py``, ``bestrelpath``); a paste that elided the leading folders
    (``.../flax/nnx/pytreelib.py``) leaves the same relative rest. A module inside a subpackage of a well-known
    library's package (``pkg/sub/mod.py``: two folders at least, so that a project's own ``datasets/coco.py``
    stays the program's), not a test file, is that library's code: its repository is the rootdir (its own test
    suite), or the paste cut its installed path."""
    rel = _ELIDED_PREFIX.sub("", f, count=1)
    if not rel or rel[0] in "/~.<\\" or re.match(r"[A-Za-z]:", rel):
        return None
    parts = rel.split("/")
    if len(parts) < 3 or parts[0] not in libraries or _TEST_FILE.search(rel):
        return None
    return parts[0]


def _exception_entry(reasoning: Reasoning, exc_type: str) -> dict[str, Any] | None:
    table = reasoning.exceptions
    if exc_type in table:
        return table[exc_type]
    short = exc_type.rsplit(".", 1)[-1]
    if short in table:
        return table[short]
    cls = getattr(builtins, short, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        for base in cls.__mro__[1:]:
            if base.__name__ in table:
                return table[base.__name__]
    return table.get("Exception")


def _failing_traceback(scan: ScanResult, analysis: Analysis) -> Traceback | None:
    """The exception of the first real failure point when one holds it (a rank's own error, not the test
    or launcher that reported the rank's exit), else the last primary one that is not itself a chained
    re-raise, else the last with a type."""
    fp = analysis.profile.first_failure
    if fp is not None:
        for tb in scan.tracebacks:
            if tb.exc_type and tb.source == fp.source and tb.exc_line == fp.line:
                return tb
    prim = [tb for tb in primary_tracebacks(scan) if tb.exc_type]
    for tb in reversed(prim):
        if not tb.chained:
            return tb
    if prim:
        return prim[-1]
    typed = [tb for tb in scan.tracebacks if tb.exc_type]
    return typed[-1] if typed else None


def _jax_refiltered(scan: ScanResult, tb: Traceback) -> tuple[str | None, str, list[Frame]]:
    """The failing exception, its message and its frames, completed from JAX's filtered re-raise. An
    exception that crosses a JAX transformation's boundary (jit, grad, vmap, scan, …) is raised again
    with JAX's own frames filtered out, chained to the original as its direct cause
    (``jax._src.traceback_util``: ``UnfilteredStackTrace: TypeError: msg`` is the original, unmodified;
    the filtered traceback that follows is the same exception). When the original's frames were not kept
    (an excerpt cut them, a notebook collapsed them into "N frames"), the filtered traceback still shows
    the frames outside JAX: the program's or a library's code that made the failing call. The two are the
    same exception when the chained traceback right after the original carries its class and message. The
    wrapper is read as the exception it wraps either way (IPython prints the wrapper's class in its header
    and before the wrapped exception's line: ``UnfilteredStackTrace: TypeError: msg``)."""
    exc, msg, frames = tb.exc_type, tb.message, tb.frames
    if not exc:
        return exc, msg, frames
    wrapped = exc.rsplit(".", 1)[-1] in JAX_WRAPPERS
    while (short := exc.rsplit(".", 1)[-1]) in JAX_WRAPPERS:
        text = msg.strip()
        if text.startswith(short + ":"):  # IPython's header named the wrapper; its line repeats the name
            text = text[len(short) + 1 :].strip()
        parsed = exception_line(text)
        if parsed is None:
            break
        exc, msg = parsed
    if tb.chained or (frames and not wrapped):
        # an original with its frames is complete (a re-raise of the same class and message is another
        # raise site, not more of this one)
        return exc, msg, frames
    after = [t for t in scan.tracebacks if t.seq > tb.seq and t.source == tb.source and t.rank == tb.rank]
    nxt = min(after, key=lambda t: t.seq, default=None)
    if nxt is None or not nxt.chained or not nxt.frames or not nxt.exc_type:
        return exc, msg, frames
    if exc.rsplit(".", 1)[-1] != nxt.exc_type.rsplit(".", 1)[-1] or not _same_message(msg, nxt.message):
        return exc, msg, frames
    seen = {(fr.file, fr.line) for fr in frames}
    return nxt.exc_type, nxt.message, frames + [fr for fr in nxt.frames if (fr.file, fr.line) not in seen]


def _same_message(a: str, b: str) -> bool:
    """Whether two printings of one exception's message agree (a notebook cuts long lines differently)."""
    a, b = a.strip(), b.strip()
    n = min(len(a), len(b), 60)
    return n > 0 and a[:n] == b[:n]


def _cut_traceback_frames(scan: ScanResult, typed: Traceback | None) -> list[Frame]:
    """Frames of a traceback the log cut before its exception line (an excerpt pasted into a thread, a
    process killed while printing, an ``INTERNALERROR>`` block cut short). Who owns those frames still
    says where the failure happened, even though the exception is unknown. Used only when the exception
    that was read has no frames of its own, and only a cut traceback printed at or after it."""
    after = typed.seq if typed is not None else -1
    for tb in reversed(scan.tracebacks):
        if tb.frames and not tb.exc_type and tb.seq >= after:
            return tb.frames
    if typed is None and scan.pytest_locations:  # pytest's ``path.py:N: in func`` entries, cut before the E lines
        src = scan.pytest_locations[-1][0]
        return [site for (s2, _ln, site, _exc) in scan.pytest_locations if s2 == src][-12:]
    return []


_COLLECTIVE_BACKENDS = ("nccl", "hccl", "gloo", "mpi", "rccl", "xccl")


def _distributed(scan: ScanResult, analysis: Analysis) -> bool:
    """Whether the run had several processes talking to each other: rank markers, a collective backend,
    a communication finding. Without any of them a hang cannot be one rank waiting on another."""
    prof = analysis.profile
    if prof.ranks or "communication" in prof.domains:
        return True
    if (prof.backend or "").lower() in _COLLECTIVE_BACKENDS:
        return True
    ranks = {tb.rank for tb in scan.tracebacks if tb.rank is not None}
    return several_processes(ranks | {d.rank for d in scan.dumps if d.rank is not None})


# a test runner's own words: unittest's and pytest's reports, pytest's fixture errors, and the section headers
# pytest puts over each error it reports (``[patterns] pytest_collect_header``; "ERROR at setup/teardown of <test>"):
# ``[patterns] test_runner_words``


def _tests_seen(
    scan: ScanResult, analysis: Analysis, libraries: frozenset[str], reasoning: Reasoning, lead: str = ""
) -> bool:
    """Whether the failure happened while tests ran: a pytest run, a test's frame in any traceback, or
    unittest's report lines. Without any of them no test's code was on the way, so a cause in the tests
    is not a candidate (a bare ``AssertionError`` in a script is the script's or a library's)."""
    if analysis.profile.stack == "pytest" or scan.pytest_locations or scan.pytest_errors:
        return True
    if any(f.rule.stack == "pytest" for f in analysis.findings):  # a rule that knows a pytest-only message
        return True
    tbs = scan.tracebacks
    for tb in tbs[:MAX_TB_SEEN] + tbs[-MAX_TB_SEEN:] if len(tbs) > 2 * MAX_TB_SEEN else tbs:
        if not _run_as_script(tb.frames) and any(frame_owner(fr, libraries)[0] == "test" for fr in tb.frames):
            return True
    texts = [text for _src, _ln, text in scan.error_lines[:200]] + [f.text for f in analysis.findings[:8]] + [lead]
    words = _text(reasoning, "test_runner_words")
    return any(words.search(text) for text in texts)


def _pytest_facts(scan: ScanResult, reasoning: Reasoning) -> tuple[str | None, str, list[Frame], str, int | None]:
    """A pytest report instead of a Python traceback: the raise site ``path.py:N: ExcType`` and the
    ``E   `` lines before it. A chain (pytest prints "The above exception was the direct cause…" between
    the exceptions) is read at its root cause, as Python's format is: the root's frames and message decide.
    An exception that only reports another one (pytest's warning for an exception nothing could catch,
    family ``REPORTER_FAMILY``) is read as that exception: its chained cause's raise site, or the traceback
    its message carries."""
    sites = [(src, line, exc) for src, line, _site, exc in scan.pytest_locations if exc]
    if sites:
        src, line, exc = sites[-1]
        cause = _reported_cause(scan, reasoning, sites, exc)
        if cause is not None:
            return cause
        return exc, _e_message(scan, src, line, exc), _pytest_frames(scan, src, line), src, line
    # --tb=short and collection errors print ``E   ExcType: message`` right after the entries, without a
    # raise-site line: the last such E line names the exception (the root of its chain), the entries
    # before it are its frames
    raised = [(src, line, parsed) for src, line, text in scan.pytest_errors if (parsed := raised_line(text.strip()))]
    if raised:
        i = _chain_root(scan, raised)
        src, line, (exc, msg) = raised[i]
        before = max((ln for s2, ln, _p in raised[:i] if s2 == src), default=-1)
        return exc, msg, _pytest_frames(scan, src, line, before), src, line
    return None, "", [], "", None


def _chain_root(scan: ScanResult, points: list[tuple[str, int, Any]]) -> int:
    """The index of the root cause of the chain that ends at the last of ``points`` (raise sites or
    exception lines of pytest's report, in the log's order): step back while a chain's header
    ("The above exception was the direct cause…", "During handling…") lies between two of them. A header
    of a Python traceback printed in between (a test's captured output) is not pytest's: it does not
    join the test before to the test after."""
    i = len(points) - 1
    src = points[i][0]
    while i > 0 and points[i - 1][0] == src:
        lo, hi = points[i - 1][1], points[i][1]
        if not any(s2 == src and lo < ln < hi for s2, ln in scan.chain_lines) or any(
            tb.source == src and lo < tb.line < hi for tb in scan.tracebacks
        ):
            break
        i -= 1
    return i


def _e_message(scan: ScanResult, src: str, line: int, exc: str = "") -> str:
    """The message of the exception raised at ``line``: its ``E   ExcType: msg`` line (the E lines after it
    continue the message, or carry a note such as JAX's filtered-traceback banner), else the last E line."""
    lines = [t for (s2, ln, t) in scan.pytest_errors if s2 == src and ln < line]
    short = exc.rsplit(".", 1)[-1]
    for text in reversed(lines[-40:]):
        parsed = raised_line(text.strip()) if short else None
        if parsed and parsed[0].rsplit(".", 1)[-1] == short:
            return parsed[1]
    return lines[-1] if lines else ""


def _pytest_frames(scan: ScanResult, src: str, line: int, after: int = -1) -> list[Frame]:
    """pytest's entries up to the exception at ``line`` (after ``after``), then the frames its ``E   ``
    lines print below the last entry: a SyntaxError's ``File "x.py", line N`` names the file that does not
    parse, which is where the cause lives (not ``ast.py``, whose ``compile`` reported it)."""
    entries = [(ln, site) for (s2, ln, site, _) in scan.pytest_locations if s2 == src and after < ln <= line]
    frames = [site for _ln, site in entries][-12:]
    last = max((ln for ln, site in entries if ln < line), default=after)
    return frames + _e_frames(scan, src, last, line)[0]


def _e_frames(scan: ScanResult, src: str, start: int, end: int) -> tuple[list[Frame], tuple[str, str, int] | None]:
    """The frames pytest's ``E   `` lines print between ``start`` and ``end`` (a traceback Python formatted
    into a message, a SyntaxError's location), and the first exception line after such a frame: the
    exception that traceback ends with (exception class, message, line)."""
    frames: list[Frame] = []
    for s2, ln, text in scan.pytest_errors:
        if s2 != src or not start < ln < end:
            continue
        fr = printed_frame(text.strip())
        if fr is not None:
            frames.append(fr)
            continue
        parsed = exception_line(text.strip()) if frames else None
        if parsed:
            return frames, (parsed[0], parsed[1], ln)
    return frames, None


def _reported_cause(
    scan: ScanResult, reasoning: Reasoning, sites: list[tuple[str, int, str]], exc: str
) -> tuple[str, str, list[Frame], str, int] | None:
    """The exception that the last raise site stands for, when it is not itself the failure: the root
    cause of its chain (pytest prints the chain's header between the raise sites; pytest 8+ chains its
    reporting warning to the exception it reports the same way), or, for a reporting warning of pytest 7,
    the traceback formatted into the warning's message: ``E     File "conn.py", line 3, in __del__`` …
    ``E   ValueError: …``."""
    src, line, _exc = sites[-1]
    root = _chain_root(scan, sites)
    if root < len(sites) - 1:
        _s, cline, cexc = sites[root]
        before = max((ln for s2, ln, _e in sites[:root] if s2 == src), default=-1)
        return cexc, _e_message(scan, src, cline, cexc), _pytest_frames(scan, src, cline, before), src, cline
    if (_exception_entry(reasoning, exc) or {}).get("family") != REPORTER_FAMILY:
        return None
    start = max((ln for s2, ln, _site, _ in scan.pytest_locations if s2 == src and ln < line), default=-1)
    frames, raised = _e_frames(scan, src, start, line)
    if raised is None:
        return None
    return raised[0], raised[1], frames, src, raised[2]


def gather_facts(scan: ScanResult, analysis: Analysis, rs: RuleSet) -> Facts:
    reasoning = rs.reasoning
    facts = Facts()
    tb = _failing_traceback(scan, analysis)
    frames: list[Frame] = []
    if tb is not None:
        facts.exc_type, facts.message, frames = _jax_refiltered(scan, tb)
        facts.source, facts.line = tb.source, tb.exc_line
    else:
        exc, msg, frames, src, line = _pytest_facts(scan, reasoning)
        if exc:
            facts.exc_type, facts.message, facts.source, facts.line = exc, msg, src, line
    if not frames:
        frames = _cut_traceback_frames(scan, tb)
        facts.cut = bool(frames)
    facts.distributed = _distributed(scan, analysis)
    if not any(f.rule.causes and not f.rule.downstream for f in analysis.findings):
        # nothing a rule knows: the first error lines say what failed first (a cascade's head)
        facts.lead = "\n".join(text for _src, _ln, text in scan.error_lines[:LEAD_LINES])
        if not facts.lead and not facts.exc_type and not frames:
            facts.lead = _failure_tail(scan, reasoning)
    facts.error_head = "\n".join(text for _src, _ln, text in scan.error_lines[:LOG_RESOURCE_LINES])
    facts.error_head_bare = _PATHS.sub(" ", facts.error_head)
    facts.tests_seen = _tests_seen(scan, analysis, reasoning.libraries, reasoning, facts.lead)
    facts.native_tail = _native_tail(scan, reasoning.libraries)
    if facts.exc_type:
        facts.entry = _exception_entry(reasoning, facts.exc_type) or {}
        facts.family = facts.entry.get("family")
    _owners(facts, frames, reasoning, script=tb is not None and _run_as_script(frames))
    _trace_origin(facts, scan, reasoning)
    traced_branch_origin(facts, reasoning)  # kland2
    if tb is None and facts.exc_type and facts.raiser == "user":
        # pytest's report of a failed test: only a test runs the program's code here (its long format
        # does not always print the test's own entry as a frame)
        facts.called_from_test = True
    facts.stage, facts.stage_frame = stage_from_frames(frames, reasoning, progressed=scan.progress > 0)
    script_not_collected(facts, frames, tb is not None and _run_as_script(frames))  # kjax12
    installed_main_startup(facts, frames, reasoning, progressed=scan.progress > 0)  # kland2
    main_constructor_startup(facts, frames, reasoning, progressed=scan.progress > 0)  # kland4
    if facts.stage == "startup" and tb is None and not facts.cut and frames[0].func == "<module>":
        # pytest's report of an error whose outermost frame is a module's top level: pytest imported a test
        # module or conftest (its reports of a test start at the test's function): collection
        facts.stage = "collection"
    interactive_import_crash(facts, scan, analysis.profile.type == "crash" and not frames)  # kland3
    _activate(facts, analysis, frames, reasoning.libraries, reasoning)
    if tb is None and "raiser:unseen" in facts.active:
        # pytest's report of a failed test names the exception a test or the code under test raised: its
        # frames were left out of the paste, not absent (``_log_report`` reads these E lines the same way)
        facts.active.remove("raiser:unseen")
    _tests_ran_under_hypothesis(facts)
    _pytest_sections(facts, analysis, reasoning)
    pytest_import_mismatch(facts, analysis, scan, reasoning)  # kpytest5
    facts.contexts = context_factors(facts, analysis, reasoning)
    stage_words_in_log(facts, scan, reasoning)  # kstage3
    _resources_in_error_lines(facts, reasoning)
    coordination_rpc_in_log(facts, scan, reasoning)  # kjax12
    _npu_message_cues(facts, scan, reasoning)
    _npu_argument_refused(facts, scan, reasoning)  # kasc6
    _setup_header(facts, scan, reasoning)
    _build_version_in_log(facts, scan, reasoning)
    _conftest_reraise(facts)
    _void_premises(facts)
    _add_fact(facts, _api_user(facts, frames, reasoning), reasoning)
    _add_fact(facts, assertion_helper(facts, frames, reasoning), reasoning)
    _add_fact(facts, _library_raise(facts, frames, reasoning), reasoning)
    _add_fact(facts, installed_main_value(facts, frames, reasoning), reasoning)  # kland2
    _add_fact(facts, nnx_mutation_owner(facts, frames, reasoning), reasoning)  # kjax12
    _add_fact(facts, _library_gap(facts, frames, reasoning), reasoning)
    _add_fact(facts, _library_op(facts, frames, reasoning), reasoning)
    _add_fact(facts, framework_caller(facts, frames, reasoning), reasoning)  # kland5
    _add_fact(facts, library_own_error(facts, frames, reasoning), reasoning)  # klibbug
    library_home_facts(facts, analysis, frames, reasoning)  # klib3: whose name, whose words (section below)
    _add_fact(facts, _log_report(facts, analysis, scan), reasoning)
    _add_fact(facts, _checkpoint_key(facts), reasoning)
    _add_fact(facts, _spawn_missing(facts), reasoning)
    _add_fact(facts, keras_hdf5_str_attrs(facts, reasoning), reasoning)  # ktf2
    _add_fact(facts, weights_file_format(facts), reasoning)  # ktf2
    _add_fact(facts, UNTESTED_ASSERT if _untested_assert(facts) else None, reasoning)
    _add_fact(facts, _fixture_provider(facts, scan, reasoning), reasoning)
    _add_fact(facts, pytest_internal_error(facts, reasoning), reasoning)  # kpytest5
    _spawn_raiser(facts, frames, reasoning)
    _add_fact(facts, _collective_progress(facts, reasoning), reasoning)
    _add_fact(facts, _collective_in_work(facts, analysis, reasoning), reasoning)  # kdist6 round 6 (section below)
    _cue_in(facts, reasoning, (LOOPBACK_CUE,), _error_lines_and_tails(facts, scan))  # kdist6 (section below)
    _add_fact(facts, _installed_in_run(facts, scan), reasoning)  # kowner: the releases the log shows installed
    _add_fact(facts, ggml_backend_misuse(facts, scan, reasoning), reasoning)  # kland1 (section at the end)
    _add_fact(facts, near_tolerance(facts, scan, reasoning), reasoning)  # kland2
    _add_fact(facts, main_thread_loop_unset(facts, frames, reasoning), reasoning)  # kland4
    abi_checked_extension(facts, reasoning)  # kland2
    for fact in settings_and_data(facts, analysis, frames, reasoning):  # the user's settings, the data (section below)
        _add_fact(facts, fact, reasoning)
    # a setting the run was given, refused (kcfg2)
    for fact in refused_settings(facts, analysis, scan, frames, reasoning):
        if fact == SETTING_REFUSED and NPU_SETTING_CUE in facts.cued:
            continue  # CANN's own line already said it (kpta3): one verdict on the setting, counted once
        _add_fact(facts, fact, reasoning)
    return facts


# pytest's E-lines name the exception a test or the code under test raised, even when the report around them
# (the test's header, its frames) was not kept
_PYTEST_E_EXCEPTION = re.compile(r"E\s+(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Failure|Exit)\b")


def _log_report(facts: Facts, analysis: Analysis, scan: ScanResult) -> str | None:
    """``raiser:log_only``: a failure stated only in lines that a library or a tool prints for its errors (a
    signature a rule knows, a line the scanner flags as an error: an ERROR level, ``error:``, a C++ source
    location), with no exception and no frame: the code that reported it is a library's or a tool's (NCCL's
    WARN, glog's ``Check failed``, a build tool's ERROR), and nothing shows the program's code on the way. Not
    a run that just stopped (a hang reports nothing), not a crash (a signal handler prints where the process
    died, whoever's code drove it there), and not a program's own last words (``sys.exit("msg")`` prints its
    message bare: the log's tail, which no scanner flags)."""
    prof = analysis.profile
    if facts.exc_type or facts.raise_frame is not None or facts.cut or prof.type in ("hang", "crash"):
        return None
    if any(_PYTEST_E_EXCEPTION.match(text) for _src, _ln, text in scan.error_lines):
        return None  # pytest's report of a raised exception ("E   AssertionError: ..."), its frames left out
    reported = bool(scan.error_lines) or any(f.rule.causes and not f.rule.downstream for f in analysis.findings)
    return "raiser:log_only" if reported else None


# a structural fact that refutes the premise of a message's cue: the module that could not be imported is the
# project's own (or a file of the project shadows it), so "an installed module lacks a name" and "something an
# install provides is absent" (the words ``cannot import name``) do not read it
_VOIDS = {"import:own_module": ("cue:installed_api", "cue:absent"), "module:own_file": ("cue:installed_api",)}


def _void_premises(facts: Facts) -> None:
    voided = {cue for fact, cues in _VOIDS.items() if fact in facts.active for cue in cues}
    if voided:
        facts.contexts = [c for c in facts.contexts if c[0] not in voided]
        facts.cued -= voided


def _failure_tail(scan: ScanResult, reasoning: Reasoning) -> str:
    """The last lines of the logs, when they say that something failed (the ``cue:failed`` words:
    cannot, could not, not found, invalid, undefined symbol, …) and nothing else was flagged: an excerpt
    pasted from a thread ("/usr/bin/ld: cannot find -lcuda", "Invalid version: '2.2.3.2c7f2141'") states
    its failure without the words ``error`` or ``Exception`` that the scanner flags. Such a log did not
    stop making progress; its last lines are its message. Log chatter (INFO, DEBUG) is not read: a hung run
    prints it too; a warning is (``_CHATTER``)."""
    cue = next((c for c in reasoning.contexts if c.fact == FAILED_CUE and c.pattern is not None), None)
    if cue is None or cue.pattern is None:
        return ""
    lines = [
        t.strip()
        for info in scan.sources.values()
        for t in info.tail[-TAIL_READ:]
        if t.strip() and not _CHATTER.search(t)
    ]
    text = "\n".join(lines)
    return text if cue.pattern.search(text) else ""


def implied(facts: Facts, kind: str) -> str | None:
    """The stage or type (``kind``) a message cue implies: a ``[[context]]`` with a pattern whose fact is
    named ``stage:<stage>`` or ``type:<type>`` (the words of the message place the failure, e.g.
    "initialize" → startup, "while compiling" → compile, "is not supported" → unsupported_op)."""
    for fact, _why, _factors in facts.contexts:
        if fact.startswith(kind + ":") and fact in facts.cued:
            return fact.split(":", 1)[1]
    return None


def refine_profile(
    analysis: Analysis, facts: Facts, rs: RuleSet, progressed: bool = True, scan: ScanResult | None = None
) -> None:
    """Where no rule named them, the frames, the exception class and the words of the message decide the
    stage and the type. ``progressed``: the logs show training/test progress (so a failure is not at
    start-up); ``scan``: the logs, read for a native backtrace only where nothing else typed the failure."""
    prof = analysis.profile
    entry = facts.entry
    if analysis.stage_by_rule and prof.stage == "startup" and facts.stage == "collection":
        prof.stage = "collection"  # pytest importing a test module or conftest: start-up, as pytest names it
    if analysis.stage_by_rule and prof.stage == "runtime" and facts.stage == "compile" and prof.type == "backend":
        # a device runtime error raised in the compiler's frames (inductor's or triton's loading of a kernel it
        # built, a JIT's code generation): the compiled code failed to build or load, a compile-time failure
        prof.stage = "compile"
    if (
        prof.stage in ("runtime", "unknown")
        and facts.stage is None
        and not progressed
        and not facts.tests_seen
        and _text(rs.reasoning, "constructor_signature").search(facts.message or "")
    ):
        # a constructor's signature refused its call (``Trainer.__init__() got an unexpected keyword
        # argument``) in a program, not a test, before any progress: the run building its objects
        prof.stage = "startup"
    if analysis.stage_by_rule and prof.stage == "runtime" and facts.stage == "startup" and not progressed:
        # a rule's "runtime" is its message family's default (the error can happen in any step); frames that
        # show the run setting itself up (an import, the program's constructors, a set-up function) before
        # any progress place it before the first step. Other stages the frames show do not override a rule
        # (an evaluation script's or a test module's name is weaker than the rule's own message family)
        prof.stage = "startup"
    if analysis.stage_by_rule and prof.stage == "runtime" and facts.stage and COLLECTIVE_IN_WORK in facts.active:
        # a collective or barrier that timed out in an evaluation's or a checkpoint's frames: that work is the
        # stage (kdist6 round 6, _collective_in_work)
        prof.stage = facts.stage
    if analysis.stage_by_rule and facts.stage is not None and {prof.stage, facts.stage} == FILE_STAGES:
        # a file reader's rule names the stage of the files it usually reads (HDF5, a pickle, an archive: data;
        # torch.load: checkpoint); the frames say which file this one was: a weights loader's (load_weights,
        # load_state_dict) or a dataset's (__getitem__, a loader's worker)
        prof.stage = facts.stage
    if not analysis.stage_by_rule:
        stage = facts.stage or entry.get("stage") or implied(facts, "stage")
        if stage:
            prof.stage = stage
        elif prof.type in ("backend", "communication") and not progressed:
            # a device runtime or collective error before the run printed any progress: its start (NCCL and
            # HCCL create communicators at the first collective, so its errors are set-up errors)
            prof.stage = "startup"
    if prof.type == "unknown" and facts.cut:
        prof.type = "runtime_error"  # a traceback was printed, cut before its exception: the program raised
        if prof.stage == "unknown":
            prof.stage = "runtime"
    if prof.type == "unknown" and (FAILED_CUE in facts.cued or implied(facts, "type")):
        # its words say that something failed ("cannot find -lcuda", "Segmentation fault"), in words no rule
        # knows: a failure, whose type the message's type words refine below; not a hang
        prof.type = "runtime_error"
    if prof.type == "unknown" and prof.stage == "unknown" and prof.exit_code is None and not facts.exc_type:
        # no error, no exception, no exit status: a log handed over as a failure that just stops is a run
        # that stopped making progress (hung, or killed from outside without a word); but a native backtrace
        # stopped in code that computes, not waits, is a fault's (_native_stop)
        fault = scan is not None and _native_stop(scan, rs.reasoning) == "fault"
        prof.type, prof.stage = ("crash" if fault else "hang"), "runtime"
        return
    if entry.get("type") and analysis.type_by_rule and _typed_by_weak_signal(analysis):
        # a weak signal (an exit status, a bare "timed out after N") says less than the failing exception's
        # class: a c10d DistNetworkError that "timed out after 1000ms" connecting is communication, not a hang
        prof.type = entry["type"]
    elif not analysis.type_by_rule and prof.type in ("runtime_error", "unknown"):
        implied_type = entry.get("type") or (implied(facts, "type") if prof.type == "runtime_error" else None)
        if implied_type == "unsupported_op" and LIBRARY_GAP in facts.active:
            implied_type = None  # a feature the library's code lacks, not an operator without a kernel (_library_gap)
        if implied_type:
            prof.type = implied_type
    npu_type(analysis, facts)  # kasc6
    stage_from_log(analysis, facts, progressed)  # kstage3


def _typed_by_weak_signal(analysis: Analysis) -> bool:
    """Whether the rule that set the type is a weak signal (priority below ``WEAK_SIGNAL``: exit statuses,
    "Killed", a generic timeout wording), which the exception class's type outranks."""
    rule = next((f.rule for f in analysis.findings if f.rule.type), None)
    return rule is not None and rule.priority < WEAK_SIGNAL


def _owners(facts: Facts, frames: list[Frame], reasoning: Reasoning, script: bool = False) -> None:
    if not frames:
        return
    owners = [frame_owner(fr, reasoning.libraries) for fr in frames]
    if script:  # a file named like a test run as the main program (_run_as_script): the program's code
        owners = [("user", None) if k == "test" else (k, p) for k, p in owners]
    if len(frames) > 1 and _module_getattr(frames[-1]) and owners[-1][0] == "library":
        # a module's ``__getattr__`` (PEP 562) raises for the name its caller asked for: the caller is the raiser
        frames, owners = frames[:-1], owners[:-1]
    if facts.family == SYNTAX_FAMILY and len(frames) > 1 and _compiled_string_frame(frames[-1]):
        # code compiled from a string (exec, compile) is the code of the frame that compiled it
        frames, owners = frames[:-1], owners[:-1]
        facts.compiled_string = True
    if facts.family == TRACE_FAMILY and (facts.exc_type or "").rsplit(".", 1)[-1] not in _TRACER_LEAKS:
        # JAX raises a tracer error inside its own code (Tracer.__array__/__bool__/__index__, its indexing) for
        # the code that converted the traced value; NumPy's frames (np.asarray, np.stack …) only pass the value
        # on to __array__. The code that made the conversion is the innermost frame outside both: its owner is
        # the raiser. With none shown, the raiser is not shown either (not "only libraries").
        keep = len(owners)
        while keep and (owners[keep - 1][0] == "stdlib" or _package(owners[keep - 1][1] or "") in _TRACE_CONDUIT):
            keep -= 1
        if not keep:
            return
        frames, owners = frames[:keep], owners[:keep]
    facts.raise_frame = frames[-1]
    facts.library_on_stack = any(k == "library" for k, _ in owners)
    kind, pkg = owners[-1]
    own = [i for i, (k, _) in enumerate(owners) if k in ("user", "test")]
    if own:
        facts.user_frame = frames[own[-1]]
    if kind in ("library", "stdlib") and not own:
        facts.library_only = True
    if kind == "stdlib":
        # the standard library raises on behalf of the code that called it: the nearest frame that is not
        # the standard library's (a library loading its own DLL through ctypes is that library's failure;
        # the program opening a file through io is the program's)
        kind, pkg = next(((k, p) for k, p in reversed(owners) if k != "stdlib"), ("stdlib", None))
    facts.raiser = kind
    if kind == "library":
        facts.library = pkg
    if own and owners[own[-1]][0] == "user":
        # application code a test called: a test's frame sits above the program's frame that raised
        facts.called_from_test = any(k == "test" for k, _ in owners[: own[-1]])


TRACE_ORIGIN = "reason.jax_trace_origin"  # the hint rule that keeps JAX's "from line <file>:<line> (<fn>)" lines


def _trace_origin(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """Whose code made the traced value that JAX refused, when no frame outside JAX and NumPy shows it: the
    locations JAX prints under "This value became a tracer due to JAX operations on these lines" (each equation's
    source line, the innermost frame outside JAX that ``source_info_util`` recorded; ``05-reasoning.toml``,
    ``reason.jax_trace_origin``). When every such line is a library's code (outside JAX and NumPy), that library
    computed the value and used it: it is the raiser, read as ``_owners`` reads a shown frame
    (``raiser:trace_library``). Lines of the program's own code, or none, leave the raiser unseen. Frames of a
    traceback the log cut before its exception line (``facts.cut``: a notebook's chained traceback cut after its
    cell's frame) do not reach the raise either: JAX's lines are read over them."""
    if facts.family != TRACE_FAMILY or (facts.raiser is not None and not facts.cut):
        return
    if (facts.exc_type or "").rsplit(".", 1)[-1] in _TRACER_LEAKS:
        return
    origins = [
        Frame(f.groups["path"], int(f.groups.get("line") or 0), f.groups.get("fn") or "")
        for f in scan.findings
        if f.rule.id == TRACE_ORIGIN and f.groups.get("path")
    ]
    kept = [
        (fr, owner)
        for fr in origins
        if (owner := frame_owner(fr, reasoning.libraries))[0] != "stdlib"
        and _package(owner[1] or "") not in _TRACE_CONDUIT
    ]
    if not kept or any(kind != "library" or not pkg for _fr, (kind, pkg) in kept):
        return
    facts.raise_frame, (facts.raiser, facts.library) = kept[0][0], kept[0][1]


# JAX installs a module ``__getattr__`` made by ``jax._src.deprecations.deprecation_getattr``: a function named
# ``getattr`` in ``jax/_src/deprecations.py`` that warns for a deprecated name and raises AttributeError("module
# 'jax.x' has no attribute 'y'") for a removed one, on behalf of the code that asked for it
_DEPRECATION_GETATTR = re.compile(r"(?:^|/)jax/_src/deprecations\.py$")


def _module_getattr(fr: Frame) -> bool:
    """Whether a frame is a module's ``__getattr__`` (PEP 562), which looks a name up for its caller."""
    return fr.func == "__getattr__" or (
        fr.func == "getattr" and bool(_DEPRECATION_GETATTR.search(fr.file.replace("\\", "/")))
    )


def _test_raiser(facts: Facts) -> str:
    """Which part of a test raised: its module's top level (imported at collection), its set-up (a
    conftest, a fixture or setUp: the tests' own code), its check (an ``assert`` in the test comparing
    what the code under test returned: usually that code), or the test's body otherwise."""
    fr = facts.user_frame or facts.raise_frame
    path = fr.file.replace("\\", "/") if fr is not None else ""
    if fr is not None and fr.func == "<module>":
        return "raiser:test_import"  # a test module's or conftest's top level, run when pytest imports it
    if fr is not None and (_TEST_SETUP_FILE.search(path) or _TEST_SETUP_FUNC.search(fr.func or "")):
        return "raiser:test_setup"
    if facts.family == "assertion" and not _SITE.search(path) and not _CONSTANT_ASSERT.match(facts.message):
        return "raiser:test_check"
    return "raiser:test"


# an installed pytest plugin's module (``site-packages/pytest_sphinx.py``, ``site-packages/pytest_cov/``):
# pytest loads it through its entry point and runs its hooks and collectors on the project's files
_PYTEST_PLUGIN = re.compile(r"(?:site|dist)-packages/pytest_\w+(?:\.py$|/)")

# ``assert 0`` / ``assert False`` checks no value of the code under test: the test fails by itself
_CONSTANT_ASSERT = re.compile(r"\s*assert\s+(?:0|False|None|\(\)|\[\]|''|\"\")\s*$")


# the file Python loaded the module from, which its ImportError names last: ``cannot import name 'x' from
# 'app' (/src/app.py)``, ``… from partially initialized module 'app' (most likely due to a circular import)
# (/src/app.py)``; ``(unknown location)`` for a namespace package
_MODULE_FILE = re.compile(r"\((?P<path>[^()\n]+\.py[cw]?)\)\s*$", re.MULTILINE)


def _own_module(facts: Facts, frames: list[Frame], libraries: frozenset[str], reasoning: Reasoning) -> str | None:
    """The module that could not be imported belongs to the project itself. Then no install fixes it; the
    project's layout, its import path or its own code does. Three things say so: the file Python loaded
    it from (the ImportError names it) is not an installed package's; a folder of the program's or the
    tests' own frames is its top package (``tests.conftest`` imported from ``tests/unit/test_x.py``); or
    one of those frames is its file (a single-file module such as ``app.py`` beside the test)."""
    m = _text(reasoning, "missing_module").search(facts.message)
    if not m:
        return None
    module = m["a"] or m["b"]
    top = module.split(".")[0]
    loaded = _MODULE_FILE.search(facts.message) if m["b"] else None
    if loaded:
        path = loaded["path"].replace("\\", "/")
        if frame_owner(Frame(path, 0, ""), libraries)[0] not in ("user", "test"):
            return None  # loaded from an installed package (or the standard library)
        # a project file named like a well-known library shadows it (``datasets.py``); a package folder of
        # that name (``torch/__init__.py``) is the library's source checkout run from its root
        if top not in libraries or not path.endswith("/__init__.py"):
            return module
        return None
    if top in libraries:  # a well-known library missing is an install issue, even beside its source checkout
        return None
    for fr in frames:
        if frame_owner(fr, frozenset())[0] not in ("user", "test"):
            continue
        parts = fr.file.replace("\\", "/").split("/")
        if top in parts[:-1] or parts[-1] == top + ".py":
            return module
    return None


def own_file_shadows(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``module:own_file`` for ``module 'M' has no attribute 'x'`` where a frame of the program's or its tests'
    own code runs a file ``M.py`` (or a folder ``M/__init__.py``): that file is the module Python imported, found
    first on sys.path (the script's folder comes before site-packages), so it shadows the package of that name
    and lacks the package's names. Python 3.13 says so itself ("consider renaming '…/M.py' …"); older ones only
    show the frame. A module M that really is the program's own is the same finding: its own code lacks the name."""
    if facts.family != "attribute":
        return None
    m = _text(reasoning, "module_lacks_name").search(facts.message or "")
    if m is None or not m["a"]:
        return None
    top = m["a"].split(".")[0]
    for fr in frames:
        parts = fr.file.replace("\\", "/").split("/")
        own = parts[-1] == top + ".py" or parts[-2:] == [top, "__init__.py"]
        if own and frame_owner(fr, reasoning.libraries)[0] in ("user", "test"):
            return "module:own_file"
    return None


# an API the message names with its module: ``module 'M' has no attribute 'x'`` (Python's AttributeError on a
# module), ``cannot import name 'x' from 'M'`` (ImportError of ``from M import x``), ``No module named 'M.sub'``
# (Python names the first part of a dotted import that fails: M itself imported, so the installed M lacks
# ``sub``; a missing top-level package is "No module named 'M'", an install, not an API): ``[patterns]
# module_lacks_name``; the module a missing module or name belongs to: ``[patterns] missing_module``
# a file inside an installed package (``…/site-packages/torch/lib/fbgemm.dll``, ``…\Lib\site-packages\…``)
# (a code location ``…/site-packages/x/log.py:16`` or a frame line is where code ran, not a file it failed on)
_INSTALLED_PATH = re.compile(
    r"[/\\](?:site|dist)-packages[/\\]+\w[^\s'\"<>():]*(?P<loc>:\d+|\"?, line \d+)?", re.IGNORECASE
)
# an imported module's repr (``<module 'x' from '…/site-packages/x.py'>``) names a module that loaded: it says
# which one, not a file that failed
_MODULE_REPR = re.compile(r"<module '[\w.]+' from '[^']*'>")
# lines of a message that are not what it says: a traceback's frame line, a warning printed before it
_NOT_MESSAGE = re.compile(r'^\s*File "|(?i:warning)')


# A name that jax or jaxlib does not have (any more): ``module 'jax.random' has no attribute 'PRNGKeyArray'``,
# ``cannot import name 'partial' from 'jax'``. JAX's API compatibility policy (docs.jax.dev, "API compatibility")
# removes a deprecated public name after a deprecation period in which it warns, names the replacement in its
# changelog, and promises nothing for jax._src or jaxlib's modules, which change in any release. A JAX-based
# library whose release still asks for such a name (and whose requirements admit the jax that removed it) is
# what has to change: its next release is the fix, pinning the older jax the alternative. (The program's own
# code asking is the convention's mismatch, environment first.) A missing submodule (``No module named
# 'jax.numpy'``) is not a removed name but a broken or stale jax install (``[patterns] jax_name_missing``).
# jax._src.deprecations raises its own message for a name whose deprecation ended ("jax.interpreters.pxla.MapTracer
# was removed in JAX v0.10.0.", "jax.device_put_replicated is deprecated; use jax.device_put instead"): ``[patterns]
# jax_removed_note``
_JAX_PACKAGES = frozenset({"jax", "jaxlib"})
TRACE_FAMILY = "trace"  # the [[exception]] family of JAX's tracer errors (jax.errors)
# the packages a traced value passes through to the conversion that fails: JAX's own, and NumPy's functions
# that call __array__ on what they were handed
_TRACE_CONDUIT = frozenset({"jax", "jaxlib", "numpy"})
# a leaked tracer is detected where it is used after its transformation ended, not where the code stored it
# (jax.errors.UnexpectedTracerError): the frames do not show who leaked it
_TRACER_LEAKS = frozenset({"UnexpectedTracerError"})


def _package(name: str) -> str:
    """A top-level package as a comparable name: ``_pytest`` and ``pytest``, ``PIL`` and ``pil`` are one."""
    return name.split(".")[0].lstrip("_").lower()


def _api_user(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """Which code made the call that an installed package does not offer (any more), when a library's frame
    raised. The message names the module (``module 'M' has no attribute``, ``cannot import name … from
    'M'``, ``No module named 'M.sub'``): the library asked another package for the name
    (``api:cross_library``: it was written against another version of that package, so the two installed
    versions do not fit together) or its own package
    (``api:own_library``: a partial or mixed install, or a release whose own imports are broken). Or the
    message says an API changed (``cue:api_change``: removed, renamed, deprecated, a call signature that does
    not fit) and the code that called into the raising package is another library's: ``api:cross_library``.
    Either way the program's code did not make the call. Raised in the program's own frame, or called from
    it, this says nothing new (the code was written for another version, or it is wrong): the message's
    cues weigh it. A name of jax/jaxlib asked for by another library's frame is ``api:jax_removed_in_library``
    (``[patterns] jax_name_missing``): JAX removes names on a published schedule, so that library's release, which admits a
    jax it cannot run with, is what has to change."""
    jax_name = _text(reasoning, "jax_name_missing").search(facts.message or "") or (
        facts.family == "attribute" and _text(reasoning, "jax_removed_note").search(facts.message or "")
    )
    if jax_name and facts.raiser == "library" and _package(facts.library or "") not in _JAX_PACKAGES:
        return "api:jax_removed_in_library"
    if facts.raiser != "library" or not facts.library:
        return None
    m = _text(reasoning, "module_lacks_name").search(facts.message)
    if m:
        same = _package(m["a"] or m["b"] or m["c"]) == _package(facts.library)
        return "api:own_library" if same else "api:cross_library"
    if API_CUE not in facts.cued:
        return None
    caller = _calling_library(frames, facts.library, reasoning.libraries)
    return "api:cross_library" if caller else None


def _nearest_outside(
    frames: list[Frame], libraries: frozenset[str], packages: frozenset[str]
) -> tuple[str, str | None] | None:
    """The owner (``frame_owner``) of the innermost frame that is neither the standard library's nor a library
    among ``packages`` (``_package`` names): the code that called into those packages on the way to the failure."""
    for fr in reversed(frames):
        kind, pkg = frame_owner(fr, libraries)
        if kind == "stdlib" or (kind == "library" and _package(pkg or "") in packages):
            continue
        return kind, pkg
    return None


def _calling_library(frames: list[Frame], raiser: str, libraries: frozenset[str]) -> str | None:
    """The library whose code called into the package ``raiser`` on the way to the failure: the nearest
    frame outside that package (the standard library skipped) when it is another library's; None when it
    is the program's or a test's (or there is none)."""
    owner = _nearest_outside(frames, libraries, frozenset({_package(raiser)}))
    return owner[1] if owner is not None and owner[0] == "library" else None


# exception families that, raised inside a library's own code, state that an invariant of that code broke
# (Python raises them for an operation the code itself performs: an attribute or key it assumed, an index, a
# name, an ``assert`` of its own, an operation on a type it did not expect), not a check of an argument
_INTERNAL_FAMILIES = frozenset({"attribute", "lookup", "index", "code_bug", "assertion", "type_error"})
# the families a library's precondition checks raise at its public entry (``ValueError("expected …")``,
# ``TypeError("x must be …")``): a check of what the caller passed
_ENTRY_FAMILIES = frozenset({"value_error", "type_error"})
# ``'X' object has no attribute 'y'``: Python's AttributeError on an instance (a module's is ``module 'M'``,
# read by _api_user). On a builtin value type the code received a value of another type than it expects
# (a str where an object was expected: the caller's value); on NoneType or a class of its own, the code's
# own state or its contract with another library broke (``[patterns] object_has_no_attribute``)
_VALUE_TYPES = frozenset(
    {"str", "bytes", "bytearray", "int", "float", "complex", "bool", "list", "tuple", "dict", "set", "frozenset"}
)
# the standard library's os module (``<frozen os>`` since Python 3.11): a KeyError raised in it is
# ``os.environ[name]`` for a variable that is not set
_ENVIRON_FRAME = re.compile(r"(?:^|/)os\.py$|^<frozen os>$")
ENTRY_DEPTH = 2  # library frames at most between the caller's frame and the raise: a check at the entry
# Python's errors of a name the running code itself refers to (the language reference: a name not bound in its
# scope, or a local read before any assignment on the path taken): no value a caller hands over makes a name
# undefined in the callee's code, so raised in a library's frame they are that code's even at its entry
_NAME_ERRORS = frozenset({"NameError", "UnboundLocalError"})


def _library_run(frames: list[Frame], libraries: frozenset[str]) -> list[tuple[str, str | None]]:
    """The owners of the innermost frames that are not the program's or a test's: the code the failing call
    ran through after it left the caller (libraries, and the standard library they called)."""
    run: list[tuple[str, str | None]] = []
    for fr in reversed(frames):
        owner = frame_owner(fr, libraries)
        if owner[0] not in ("library", "stdlib"):
            break
        run.append(owner)
    return run


def _library_raise(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """What kind of raise a library's frame made. ``raiser:library_internal``: an invariant error (an
    AttributeError on an object, KeyError, IndexError, NameError, an assert, a TypeError that is not about
    the call's signature or values) raised after the library's code ran on by itself (two frames or more
    of library or standard-library code, or no caller frame at all): the library's own code did an
    operation that fails, the home of a bug (or of its contract with another library) fixed in its
    release (a NameError or UnboundLocalError: at the library's entry too, see ``_NAME_ERRORS``).
    ``raiser:library_entry``: a ValueError/TypeError raised by the library's function that the
    caller's frame called (at most ``ENTRY_DEPTH`` frames of one package below it): a check of the values
    the caller passed, so the caller's code, configuration or data is the home. The frame right below the
    raising code tells who handed over the value."""
    if (
        facts.raiser != "library"
        or not facts.library
        or _text(reasoning, "module_lacks_name").search(facts.message or "")
    ):
        return None
    if API_CUE in facts.cued:
        return None  # a call that does not fit a signature: who made it is _api_user's and the version cues'
    run = _library_run(frames, reasoning.libraries)
    if not run:
        return None
    family = facts.family or ""
    # an import runs the library's top level (no argument was handed over), and version words say the values
    # fit another release: neither is a check of the caller's values
    entry = not any(frames[-i].func == "<module>" for i in range(1, len(run) + 1)) and "cue:version" not in facts.cued
    if entry and family in _ENTRY_FAMILIES and not facts.library_only and len(run) <= ENTRY_DEPTH:
        packages = {_package(p) for k, p in run if k == "library" and p}
        if len(packages) == 1 and all(k == "library" for k, _ in run):
            return "raiser:library_entry"
    own_names = (facts.exc_type or "").rsplit(".", 1)[-1] in _NAME_ERRORS
    if family not in _INTERNAL_FAMILIES or (len(run) < 2 and not facts.library_only and not own_names):
        return None
    if family == "assertion" and (not _assertion_error(facts) or ASSERTION_HELPER in facts.active):
        # pytest's outcomes (``Failed`` from pytest.fail/raises): a verdict raised for the caller; an assertion
        # helper's error: its caller's check (assertion_helper)
        return None
    attr = _text(reasoning, "object_has_no_attribute").search(facts.message or "")
    if attr and attr["cls"] in _VALUE_TYPES:
        return None  # a value of a builtin type where the code expected an object: the caller's value
    if family == "type_error" and "cue:input_check" in facts.cued:
        return None
    if family == "lookup" and _ENVIRON_FRAME.search(frames[-1].file.replace("\\", "/")):
        return None  # ``os.environ[name]``: a variable the run was not given (its configuration), not a bug
    return "raiser:library_internal"


# what a NotImplementedError that names no feature of the library speaks of: a kernel, an operator or primitive, a
# dtype, a device, platform or backend (no kernel or lowering for this device/dtype: the operator's), or a method a
# subclass must override (an abstract base: the caller's class lacks it): ``[patterns] not_a_feature``


def _library_gap(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``raiser:library_gap``: a NotImplementedError raised by a library's own Python code (its innermost
    frame is the library's, not the standard library's) whose message names a feature or a combination of
    options, not a kernel, an operator, a dtype, a device or backend, nor a method a subclass must override.
    A ``raise NotImplementedError("… is not supported yet")`` in a library's module is that library
    saying it lacks the feature (its code, fixed by a later release or a workaround in it); a missing kernel
    is the dispatcher's ("Could not run 'aten::x' with arguments from the 'CUDA' backend", "not implemented
    for 'Half'": the operator's), and an abstract base's bare raise is the caller's class that did not
    override it (``Module … is missing the required "forward" function``: the program's)."""
    if facts.family != "not_implemented" or facts.raiser != "library" or not frames:
        return None
    if frame_owner(frames[-1], reasoning.libraries)[0] != "library":
        return None
    message = (facts.message or "").strip()
    if not message or _text(reasoning, "not_a_feature").search(_PATHS.sub(" ", message)):
        return None
    return LIBRARY_GAP


_RAISE_STATEMENT = re.compile(r"^\s*(?:raise|assert)\b")


def _library_op(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``raiser:library_op``: a RuntimeError whose innermost frame is a line of a library's own code (not a
    framework's, not the standard library's) that is not a ``raise`` or an ``assert``. Nothing in Python raised it
    below that line: a compiled operation it called (``torch.mv``, an in-place ``arange(out=…)``, a broadcasting
    product) refused its operands, and the operands are what that library's line computed: its shapes, dtypes,
    devices and in-place updates. The library's code (or its fit with the framework's release) is the home; the
    program handed the library its inputs, not these operands."""
    if facts.raiser != "library" or not facts.library or not frames:
        return None
    if (facts.exc_type or "").rsplit(".", 1)[-1] != "RuntimeError":
        return None
    kind, pkg = frame_owner(frames[-1], reasoning.libraries)
    if kind != "library" or not pkg or _package(pkg) in reasoning.op_frameworks:
        return None
    code = frames[-1].code.strip()
    if not code or _RAISE_STATEMENT.match(code):
        return None
    return LIBRARY_OP


# kland5: a framework's refusal whose own message puts the fix in its caller's call (``caller_decides`` in the packs'
# [patterns]: torch.load's weights_only default). The exception is raised in the framework's own frames, so the
# raiser facts name the framework; the code that has to change is the innermost frame outside the op frameworks
# and the standard library, the one that made the call: the program's (``caller:user``) or a library's
# (``caller:library``, its loader). Python's call-binding TypeErrors (the same pattern) are raised in the caller's
# own frame, so that frame (past wrappers that forward ``*args, **kwargs``) is the call that must change.
CALLER_USER, CALLER_LIBRARY = "caller:user", "caller:library"


def framework_caller(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``caller:user`` / ``caller:library``: whose code made the call that failed, when the message says the fix
    lies in that call (a framework's refusal of its arguments, or arguments that do not bind to a signature)."""
    if not frames or not _text(reasoning, "caller_decides").search(
        f"{facts.message}\n{facts.lead}\n{facts.error_head}"
    ):
        return None
    owner = _nearest_outside(_past_forwarders(frames), reasoning.libraries, reasoning.op_frameworks)
    if owner is None:
        return None
    kind, pkg = owner
    return CALLER_USER if kind in ("user", "test") else CALLER_LIBRARY if kind == "library" and pkg else None


# a call that passes on star-arguments (``self._fun(*args, **kwargs)``): what it passes is what its own caller gave.
# Python's call syntax, a parsing mechanic of this module (``_text``), not words a library prints
_FORWARDS = re.compile(r"\(\s*\*{1,2}[A-Za-z_]\w*\s*[,)]|,\s*\*{1,2}[A-Za-z_]\w*\s*[,)]")


def _past_forwarders(frames: list[Frame]) -> list[Frame]:
    """``frames`` without the innermost ones whose line forwards star-arguments (a wrapper's ``f(*args,
    **kwargs)``): such a call passes on its caller's arguments, so the call whose arguments (or whose use of
    the API) must change is further out. All of them when every frame forwards."""
    end = len(frames)
    while end > 1 and _FORWARDS.search(frames[end - 1].code or ""):
        end -= 1
    return frames[:end]


def _add_fact(facts: Facts, fact: str | None, reasoning: Reasoning) -> None:
    """A structural fact that needs the message's cues: it holds, and its ``[[context]]`` applies."""
    if not fact or fact in facts.active:
        return
    facts.active.append(fact)
    entry = next((c for c in reasoning.contexts if c.fact == fact and c.pattern is None), None)
    if entry is not None:
        facts.contexts.append((entry.fact, entry.why, entry.factors))


def _names_installed_file(facts: Facts, analysis: Analysis) -> bool:
    """The message names a file inside an installed package (a DLL or shared library shipped in a wheel, a
    module whose import failed, a data file of a package): a file the installation put there, not a path
    the program was configured with or its data. Frame lines and warnings are not the message."""
    fp = analysis.profile.first_failure
    text = "\n".join(t for t in (facts.message or facts.lead, fp.excerpt if fp is not None else "") if t)
    return any(
        not m["loc"] and not _NOT_MESSAGE.search(ln)
        for ln in text.splitlines()
        for m in _INSTALLED_PATH.finditer(_MODULE_REPR.sub("", ln))
    )


# a file name that is no file: ``<stdin>``, ``<string>``, ``<frozen …>``, ``<ipython-input-…>``; a real file
# under a redacted folder (``<path>/pkg/mod.py``) is still the program's file
_PSEUDO_FILE = re.compile(r"^<[^/\\]*>$")
# Python's message when a constructor's signature refuses its call (CPython's argument checks): ``[patterns]
# constructor_signature``


def _import_frame(frames: list[Frame], i: int, reasoning: Reasoning) -> bool:
    """``frames[i]`` runs a module's top level because something imported it: a ``<module>`` frame under
    a caller that is not what runs a program's main module (Python leaves importlib's own frames out of a
    traceback, so the importing line is the caller). The outermost frame is the program's main module."""
    if frames[i].func != "<module>" or i == 0:
        return False
    caller = frames[i - 1]
    cpath = caller.file.replace("\\", "/")
    runs_main = reasoning.main_runners is not None and reasoning.main_runners.match(caller.func or "")
    return not (runs_main or "runpy" in cpath)


def _constructor_frame(frames: list[Frame], i: int, path: str, reasoning: Reasoning) -> bool:
    """``frames[i]`` builds an object of the program's own code (``__init__``: its model, a layer, a trainer,
    a strategy, a session), and no frame above it runs a step of the run: the objects a run builds before
    its first step. A library's or the standard library's constructors are not that (``frame_owner``, as for
    every other ownership question): libraries build helper objects inside any call (pandas' merge, a tensor's
    wrapper)."""
    if frames[i].func != "__init__" or _PSEUDO_FILE.match(path):
        return False
    if frame_owner(frames[i], reasoning.libraries)[0] not in ("user", "test"):
        return False
    steps = reasoning.step_functions
    return steps is None or not any(steps.match(fr.func or "") for fr in frames[:i])


def stage_from_frames(
    frames: list[Frame], reasoning: Reasoning, progressed: bool = False
) -> tuple[str | None, Frame | None]:
    """The stage of the innermost frame a ``[[frame_stage]]`` entry matches. An entry that names functions
    only does not match the standard library's frames: its ``__getitem__`` (``os.environ``, a ``dict``
    subclass), ``map`` or ``fetch`` are Python's own lookups, not a dataset's or a loader's.

    Two structural facts need no entry: a module's top level that runs because it is imported
    (``_import_frame``) is start-up, and a constructor that runs outside any step of the run before the log
    shows progress (``_constructor_frame``) is start-up too. A start-up read from an import under pytest's
    collection of a test module or conftest is collection, as pytest names it."""
    found: tuple[str | None, Frame | None] = (None, None)
    at = -1
    for i in range(len(frames) - 1, -1, -1):
        fr = frames[i]
        path = fr.file.replace("\\", "/")
        stdlib = path.startswith("<frozen ") or bool(_STDLIB.search(path))
        for func_re, file_re, stage in reasoning.frame_stages:
            if func_re is not None and not func_re.search(fr.func or ""):
                continue
            if file_re is None and stdlib:
                continue
            if file_re is not None and not file_re.search(path):
                continue
            found, at = (stage, fr), i
            break
        else:
            if _import_frame(frames, i, reasoning) or (
                not progressed and _constructor_frame(frames, i, path, reasoning)
            ):
                found, at = ("startup", fr), i
        if found[0] is not None:
            break
    if found[0] == "startup" and at >= 0:
        outer = stage_from_frames(frames[:at], reasoning, progressed)
        if outer[0] == "collection":
            return outer
    return found


# --- kstage3 ---
# ``[[context]]`` entries whose fact is ``log:stage:<stage>`` name words that place a failure wherever the log prints
# them (a tool's own report lines, not the exception's message): pytest's report of a collection error, a build
# tool's or a compiler's error line. ``early:stage:<stage>`` entries name words that place it only when the log shows
# no progress (a collective library's error: its communicators are created at the first collective).
LOG_STAGE = "log:stage:"
EARLY_STAGE = "early:stage:"
LOG_STAGE_LINES = 60  # error lines read from each end of the log for LOG_STAGE words
INSTALL_CUE = "cue:install"  # the [[context]] whose words are a package installer's (pip/uv/conda cannot resolve)


def stage_words_in_log(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """Cue the ``log:stage:`` and ``early:stage:`` contexts whose words the failing message, the first error lines
    or any error line the log flagged (its first and last ``LOG_STAGE_LINES``) print. A tool reports where it
    was in its own lines: pytest's "ERROR collecting x.py" header and "N errors during collection", make's
    "*** [target] Error 1", CMake's "CMake Error at", a compiler's "fatal error:" and the linker's "cannot find -l"
    stand beside an exception (or none) whose message does not say it."""
    entries = [c for c in reasoning.contexts if c.pattern is not None and c.fact.startswith((LOG_STAGE, EARLY_STAGE))]
    if not entries:
        return
    lines = scan.error_lines
    picked = lines if len(lines) <= 2 * LOG_STAGE_LINES else lines[:LOG_STAGE_LINES] + lines[-LOG_STAGE_LINES:]
    text = "\n".join([facts.message or "", facts.lead or "", *(t for _src, _ln, t in picked)])
    for ctx in entries:
        if ctx.pattern is not None and ctx.pattern.search(text):
            facts.cued.add(ctx.fact)


def stage_from_log(analysis: Analysis, facts: Facts, progressed: bool) -> None:
    """The stage that a tool's own report lines, an installer's words or an early collective error name, where
    neither a rule nor the frames, the exception's class or the message's ``stage:`` words placed the failure
    elsewhere (the profile's stage is ``runtime`` or ``unknown``, the default of a failure that says nothing more):

    * pytest's report of a collection error (``log:stage:collection``) is collection, also over a start-up that an
      import or a rule read: pytest imports test modules and conftest files while it collects;
    * a build tool's or a compiler's error line (``log:stage:compile``) is compile: code was being built;
    * the data loader's or a dataset builder's own report of its workers (``log:stage:data``) is data;
    * a package installer that cannot resolve a requirement (``cue:install``, and no build failed) is start-up:
      an install, before any of the program's code ran;
    * before any progress, a device runtime or a collective library's error (the type ``backend`` or
      ``communication``, or the collective library's own error words, ``early:stage:startup``) is start-up, as
      ``refine_profile`` reads it when the type is known before the stage (here the message's type words set it
      after the stage was chosen)."""
    prof = analysis.profile
    cued = facts.cued
    if LOG_STAGE + "collection" in cued and prof.stage in ("runtime", "unknown", "startup"):
        if facts.stage in (None, "startup", "collection"):
            prof.stage = "collection"
            return
    if analysis.stage_by_rule or facts.stage is not None or prof.stage not in ("runtime", "unknown"):
        return
    if implied(facts, "stage") or facts.entry.get("stage"):
        return
    if LOG_STAGE + "compile" in cued:
        prof.stage = "compile"
    elif LOG_STAGE + "data" in cued:
        prof.stage = "data"
    elif INSTALL_CUE in cued:
        prof.stage = "startup"
    elif not progressed and (prof.type == "communication" or EARLY_STAGE + "startup" in cued):
        prof.stage = "startup"


_QUOTED = re.compile(r"""'([^'\s]{2,80})'|"([^"\s]{2,80})"|\bgot(?: the value)?\s*:?\s*([A-Za-z_][\w.\-]{1,79})""")


def _written_by_program(facts: Facts) -> bool:
    """Whether a value the library's check quotes in its message is a string literal on the program's own line
    that called it (``set_context(mode="fancy")`` refused with "... but got the value: fancy"): the program wrote
    the value the check refused, so the check did its job on the caller's value. Read for a rejected value (the
    ValueError family) only: a lookup that misses the caller's key (a KeyError) is the library's own table."""
    fr = facts.user_frame
    if fr is None or not fr.code or not facts.message:
        return False
    for m in _QUOTED.finditer(facts.message):
        value = next(g for g in m.groups() if g).rstrip(".")
        if f"'{value}'" in fr.code or f'"{value}"' in fr.code:
            return True
    return False


def _activate(
    facts: Facts, analysis: Analysis, frames: list[Frame], libraries: frozenset[str], reasoning: Reasoning
) -> None:
    act = facts.active
    if facts.raiser == "user":
        act.append("raiser:user")
        if facts.called_from_test:
            act.append("raiser:under_test")
    elif facts.raiser == "test":
        act.append(_test_raiser(facts))
    elif facts.raiser in ("library", "stdlib"):
        act.append("raiser:library_only" if facts.library_only else "raiser:library")
        if facts.library_only and any(_PYTEST_PLUGIN.search(fr.file.replace("\\", "/")) for fr in frames):
            act.append("raiser:pytest_plugin")  # pytest's machinery ran a plugin's code: no test's on the stack
    elif facts.exc_type:
        act.append("raiser:unseen")  # an exception line without any frame: nothing shows the program's code
    if facts.family == "value_error" and facts.raiser in ("library", "stdlib") and _written_by_program(facts):
        act.append("value:written_by_program")
    if facts.family == TRACE_FAMILY and facts.raiser == "library" and facts.library not in _TRACE_CONDUIT:
        act.append("raiser:trace_library")  # a library's code made the conversion JAX refused (_owners)
    if facts.stage:
        act.append(f"stage:{facts.stage}")
    if analysis.profile.stack == "pytest":
        act.append("run:pytest")
    elif facts.tests_seen:
        act.append("run:tests")  # a test runner's report or a test's frame outside a pytest run's own log
    syntax = _syntax_file(facts)
    if syntax:
        act.append(syntax)
    own = _own_module(facts, frames, libraries, reasoning) if facts.family == "import" else None
    if own:
        act.append("import:own_module")
        if _TEST_FILE.search(own.replace(".", "/") + ".py"):
            act.append("import:own_test_module")  # a test helper or conftest imported as a module
    shadow = own_file_shadows(facts, frames, reasoning)
    if shadow:
        act.append(shadow)
    if _names_installed_file(facts, analysis):
        act.append("path:installed")
    if not facts.distributed:
        act.append("run:single_process")
    elif facts.family in ("runtime", "value_error", "type_error", "timeout"):
        act.append("run:distributed")  # a generic error of a multi-process run: a peer is a suspect too
    if not facts.tests_seen:
        act.append("run:no_tests")


# a KeyError raised while the frames load a checkpoint (a ``[[frame_stage]]`` of stage checkpoint: load_state_dict,
# torch.load, a restore): the mapping looked up is the file's content (a state dict, an optimizer's state, the
# wrapper dict a training script saved), which another version, another model or another saving code wrote
CHECKPOINT_KEY = "lookup:checkpoint"
UNTESTED_ASSERT = "raiser:untested_assert"  # an ``assert`` outside any test, not the program's (_untested_assert)
ASSERTION_HELPER = "raiser:assertion_helper"  # the program called an assert… helper (assertion_helper)


# subprocess starts another program by its name or path: a FileNotFoundError raised in its own frame that executes
# the child (``_execute_child``, POSIX and Windows; ``[Errno 2] No such file or directory: 'ffmpeg'``, ``[WinError
# 2] The system cannot find the file specified``) is the program to run that was not found (Python's subprocess
# docs: an OSError "if the program to execute is not found"), not a file the code opened: a tool that is not
# installed or not on PATH, or a configured path to it that is wrong
_SPAWN_FRAME = re.compile(r"(?:^|/)subprocess\.py$")
SPAWN_MISSING = "spawn:missing_program"


def _spawn_missing(facts: Facts) -> str | None:
    """``spawn:missing_program``: the missing file is the program subprocess was asked to start (the raise frame
    is subprocess's ``_execute_child``; pytest's long report names no function at the raising location, and
    subprocess's own code opens no file of its caller's). A working directory (``cwd=``) that does not exist fails
    there too, named in the message as a folder: the rarer reading, left to the configuration's second place."""
    fr = facts.raise_frame
    if facts.family != "missing_file" or fr is None or fr.func not in ("_execute_child", ""):
        return None
    return SPAWN_MISSING if _SPAWN_FRAME.search(fr.file.replace("\\", "/")) else None


def _checkpoint_key(facts: Facts) -> str | None:
    """``lookup:checkpoint``: a KeyError while a checkpoint is loaded, as the frames show it (a ``[[frame_stage]]``
    of stage checkpoint) or the message's words say it (``stage:checkpoint``, checkpoint words). The mapping
    looked up is the file's content, not the program's own structure."""
    if facts.family != "lookup":
        return None
    stage = facts.stage == "checkpoint" or "stage:checkpoint" in facts.cued
    return CHECKPOINT_KEY if stage else None


def _assertion_error(facts: Facts) -> bool:
    """A failed ``assert`` or an ``AssertionError`` raised for one — not pytest's outcomes (``Failed``), which the
    assertion family also holds."""
    return facts.family == "assertion" and (facts.exc_type or "").rsplit(".", 1)[-1] == "AssertionError"


def _untested_assert(facts: Facts) -> bool:
    """An ``AssertionError`` where no test ran (``run:no_tests``), and no frame of the program's own code raised it
    (only the exception line, or a library's frame). The assertion family reads a failed assert as a test's check
    of the code under test; without a test, an ``assert`` is an invariant that the code stating it holds about its
    own state (a developer's internal check), and the code shown stating it is not the program's: a library's.
    An assert whose message states what values the call received (``cue:input_check``: "expects uniform dtype
    but got …") is the library checking its caller's values instead, read as such. pytest's outcomes
    (``Failed``) and unittest's ``self.assertX`` are tests' verdicts, and a test's frame makes ``run:tests``."""
    if not _assertion_error(facts):
        return False
    if "run:no_tests" not in facts.active or "cue:input_check" in facts.cued or ASSERTION_HELPER in facts.active:
        return False
    return facts.raiser in ("library", "stdlib") or (facts.raiser is None and facts.raise_frame is None)


def assertion_helper(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``raiser:assertion_helper``: the AssertionError came from an assertion helper the program's own frame
    called — a function named ``assert…`` (numpy.testing's ``assert_allclose``, torch.testing's ``assert_close``,
    pandas.testing's ``assert_frame_equal``, chex's ``assert_shape``, unittest's ``assertEqual``): such a helper
    exists to raise on the values its caller hands over, so its error is the caller's check failing, not an
    invariant of the helper's own code (``raiser:library_internal``, ``raiser:untested_assert`` do not apply).
    Read on the call: the caller's line or the first frame of the library's run (``[patterns] assertion_helper``)."""
    if not _assertion_error(facts):
        return None
    run = _library_run(frames, reasoning.libraries)
    if not run or len(run) >= len(frames):
        return None
    caller, entry = frames[-len(run) - 1], frames[-len(run)]
    return ASSERTION_HELPER if _text(reasoning, "assertion_helper").search(f"{caller.code}\n{entry.func}(") else None


def _compiled_string_frame(frame: Frame) -> bool:
    """A SyntaxError's function-less frame in ``<string>``: the location of code compiled from a string."""
    return not frame.func and frame.file == "<string>"


def _syntax_file(facts: Facts) -> str | None:
    """Whose file does not parse, when Python named it (a SyntaxError's function-less frame, the innermost):
    the program's own (``syntax:own_file``), a test's (``syntax:test_file``) or an installed library's
    (``syntax:library_file``: a release written for a newer Python, or broken). The file is where the cause
    lives, whichever code imported it. Code a library's frame compiled from a string (``exec``, ``compile``) is
    that library's generated code (``syntax:library_generated``)."""
    fr = facts.raise_frame
    if facts.family != SYNTAX_FAMILY or fr is None:
        return None
    if fr.func:
        # Python names code compiled from a string "<string>" (its function-less frame, or "(<string>, line N)" in
        # the message): text a library generated and ran (exec, compile) from its own frame is that library's
        # code, whatever the program imported
        generated = facts.compiled_string or bool(_COMPILED_STRING.search(facts.message))
        return "syntax:library_generated" if generated and facts.raiser == "library" else None
    return {"user": "syntax:own_file", "test": "syntax:test_file", "library": "syntax:library_file"}.get(
        facts.raiser or ""
    )


def _message_text(facts: Facts, analysis: Analysis) -> str:
    # without an exception the first error lines are the message (the failure point is often the last
    # line of a cascade); with one they would only add the words of unrelated earlier errors
    parts = [facts.message or facts.lead]
    fp = analysis.profile.first_failure
    if fp is not None:
        parts.append(fp.excerpt)
    for f in analysis.findings[:2]:
        parts.append(f.text)
    # words in file paths (``minddata/dataset/util/arena.cc``) are not what the message says
    return _PATHS.sub(" ", "\n".join(p for p in parts if p)[:4000])


def context_factors(facts: Facts, analysis: Analysis, reasoning: Reasoning) -> list[tuple[str, str, dict[str, float]]]:
    """The context entries that hold for this failure: (fact, why, factors)."""
    text = _message_text(facts, analysis)
    out = []
    seen: set[str] = set()
    for ctx in reasoning.contexts:
        if ctx.fact in seen:  # a stage shown by the frames and spelt by the message counts once
            continue
        if ctx.pattern is not None:
            if ctx.fact.startswith("stage:") and facts.stage:
                continue  # the frames placed the failure; the message's words do not move it elsewhere
            if ctx.pattern.search(text):
                out.append((ctx.fact, ctx.why, ctx.factors))
                facts.cued.add(ctx.fact)
                seen.add(ctx.fact)
        elif ctx.fact in facts.active:
            out.append((ctx.fact, ctx.why, ctx.factors))
            seen.add(ctx.fact)
    return out


def _factor(
    category: str, active: list[tuple[str, str, dict[str, float]]]
) -> tuple[float, list[tuple[str, str, float]]]:
    f = 1.0
    moved = []
    for fact, why, factors in active:
        w = factors.get(category)
        if w is not None and w != 1.0:
            f *= w
            moved.append((fact, why, w))
    return max(MIN_FACTOR, min(MAX_FACTOR, f)), moved


def _prod(values: list[float]) -> float:
    out = 1.0
    for v in values:
        out *= v
    return out


def _where(facts: Facts) -> str:
    fr = facts.raise_frame
    if fr is None:
        return ""
    who = {"user": "the program's own code", "test": "the test's code", "stdlib": "the standard library"}.get(
        facts.raiser or "", f"the library {facts.library}" if facts.library else "a library"
    )
    return f"{facts.exc_type or 'the error'} raised in {who} at {fr.file}:{fr.line}" + (
        f" in {fr.func}" if fr.func else ""
    )


def _checks_for(moved: list[tuple[str, str, float]], facts: Facts) -> list[ValidationCheck]:
    out = []
    for fact, why, w in moved:
        detail = why
        if fact.startswith(("raiser", "syntax")) and facts.raise_frame is not None:
            detail += f" ({_where(facts)})"
        elif fact.startswith("stage") and facts.stage_frame is not None:
            fr = facts.stage_frame
            detail += f" ({fr.func} at {fr.file}:{fr.line})"
        out.append(ValidationCheck(f"context:{fact}", "passed" if w > 1 else "failed", detail))
    return out


def apply_context(causes: list[RootCause], facts: Facts, analysis: Analysis, rs: RuleSet) -> None:
    """Move each cause by the facts that bear on its category; say so on the cause."""
    if not facts.contexts:
        return
    for c in causes:
        _f, moved = _factor(c.category, facts.contexts)
        if not moved:
            continue
        # rules saw the line: the context weighs less (the square root), except a fact that refutes the
        # line's usual reading (a factor of REFUTES or below), which counts in full
        strong = _prod([w for _, _, w in moved if w <= REFUTES])
        soft = max(MIN_FACTOR, min(MAX_FACTOR, _prod([w for _, _, w in moved if w > REFUTES])))
        c.confidence = min(0.97, c.confidence * strong * soft**0.5)
        c.validation_checks.extend(_checks_for(moved, facts))


def symptom_family(
    facts: Facts, analysis: Analysis, rs: RuleSet, rules_fired: bool, failed: bool = False
) -> str | None:
    """The family whose differential applies: the profile's type when a rule named a specific symptom,
    else the failing exception's family, else the type."""
    t = analysis.profile.type
    typed = t in rs.reasoning.symptoms and t not in ("runtime_error", "unknown")
    if typed and (rules_fired or not facts.family or t in ("oom", "hang", "crash") or facts.family == "runtime"):
        return t  # a bare RuntimeError says less than the type a rule, the exception or the message implied
    if facts.family and facts.family in rs.reasoning.symptoms:
        return facts.family
    if t in rs.reasoning.symptoms:
        return t
    if failed and "runtime" in rs.reasoning.symptoms:
        return "runtime"  # an error no exception names (a tool's own message, a build log): the generic family
    return None


def differential(
    facts: Facts, analysis: Analysis, rs: RuleSet, present: dict[str, float], primary: bool
) -> list[tuple[RootCause, list[str]]]:
    """Candidate causes for the symptom family, one per category not already present, weighted by the facts,
    each with the validation checks that tell it from the others. ``present`` maps the categories the rules
    already found to their best confidence."""
    # a printed traceback is a failure even when the log cut it before its exception line
    failed = analysis.failed or analysis.profile.first_failure is not None or facts.cut or FAILED_CUE in facts.cued
    family = symptom_family(facts, analysis, rs, rules_fired=not primary, failed=failed)
    if family is None:
        return []
    title, causes = rs.reasoning.symptoms[family]
    causes = _with_lifted(_with_owner(causes, facts, rs), facts, rs)
    causes = _completed(_with_kept(causes, facts, rs), present, rs)
    weighted = []
    for sc in causes:
        f, moved = _factor(sc.category, facts.contexts)
        weighted.append((sc, sc.prior * f, moved))
    total = sum(w for _, w, _ in weighted) or 1.0
    scale = PRIMARY_SCALE if primary else SECONDARY_SCALE
    point = _point(facts, analysis)
    out = []
    for sc, w, moved in sorted(weighted, key=lambda x: -x[1]):
        if sc.category in present:
            continue
        conf = scale * (w / total) ** 0.8
        ev = [point] if point else []
        ev.append(
            Evidence(
                "hypothesis",
                f"differential:{family}",
                f"{title}: one of its usual causes is {sc.category} — {sc.summary}",
            )
        )
        if facts.raise_frame is not None and facts.raiser:
            ev.append(Evidence("direct", facts.source or "traceback", _where(facts), facts.line))
        # the summary names what failed: a person (and an annotation) reads the error, then the hypothesis
        what = point.excerpt[:120] if point else title
        c = RootCause(
            f"{family}.{sc.category}",
            sc.category,
            conf,
            f"{what} — {sc.summary}",
            ev,
            fix_hints=list(sc.fix_hints),
            rule=f"differential:{family}",
            error=point.excerpt if point else None,
        )
        c.validation_checks.extend(_checks_for(moved, facts))
        out.append((c, list(sc.checks)))
    if primary and out:
        out[0][0].validation_checks.append(
            ValidationCheck(
                "rule-match", "failed", f"no rule of the knowledge base matched; these are the usual causes of: {title}"
            )
        )
    return out


def _with_owner(causes: list[Any], facts: Facts, rs: RuleSet) -> list[Any]:
    """The code that raised is always a hypothesis: when the tests' own code raised (a test's body or its
    set-up) and the family names no cause in the tests, the ``test_owned`` family's cause joins it."""
    if not any(a in facts.active for a in ("raiser:test", "raiser:test_setup", "raiser:test_import")):
        return causes
    if any(sc.category == "test_code" for sc in causes) or "test_owned" not in rs.reasoning.symptoms:
        return causes
    return list(causes) + list(rs.reasoning.symptoms["test_owned"][1])


def _with_lifted(causes: list[Any], facts: Facts, rs: RuleSet) -> list[Any]:
    """A fact that lifts a category names a place the cause can live, even when the family does not list
    it: a checkpoint-loading frame under a bare RuntimeError, a message about the data under a TypeError.
    Such a category joins with the ``evidence_points`` entry's prior (below a family's typical listed
    prior), so the facts that lifted it decide whether it ranks among the hypotheses."""
    pool = rs.reasoning.symptoms.get(EVIDENCE_POOL)
    if pool is None or not facts.contexts:
        return causes
    listed = {sc.category for sc in causes}
    extra = [sc for sc in pool[1] if sc.category not in listed and _factor(sc.category, facts.contexts)[0] > MIN_LIFT]
    return list(causes) + extra if extra else causes


def program_unshown(facts: Facts) -> bool:
    """Whether the evidence shows no frame of the program's or its tests' code although something failed:
    an exception line without frames, a failure stated only in a library's or tool's error lines, or a
    traceback of libraries' frames alone. Then nothing tells the program's code from the libraries' code."""
    if facts.user_frame is not None:
        return False
    if facts.native_tail and not facts.exc_type and facts.raise_frame is None and not facts.cut:
        return True  # a run whose last words are a library's compiled code (_native_tail)
    return bool(facts.exc_type or facts.raise_frame is not None or "raiser:log_only" in facts.active)


def kept_homes(facts: Facts, rs: RuleSet) -> list[str]:
    """The categories that hold a place among the first ``WIDTH`` hypotheses: the ``UNSHOWN_POOL`` entry's,
    when no frame of the program is shown (``program_unshown``), and those of a ``kept:<fact>`` entry whose
    fact holds (``owner_kept``). A kept home takes the place of a differential guess only (``diversify``): the
    homes a rule that knows the message lists keep theirs."""
    out: list[str] = []
    pool = rs.reasoning.symptoms.get(UNSHOWN_POOL)
    if pool is not None and program_unshown(facts):
        out.extend(sc.category for sc in pool[1])
    for _fact, causes in owner_kept(facts, rs):
        out.extend(sc.category for sc in causes if sc.category not in out)
    return out


def owner_kept(facts: Facts, rs: RuleSet) -> list[tuple[str, list[Any]]]:
    """The ``kept:<fact>`` entries (``[[symptom]]`` tables that are not families) whose fact holds: who raised
    decides which code the three hypotheses cover. The program's own frame raising keeps the program's code and
    the library it was calling (its objects, its results and its release reach the program's code), and a
    library's entry check raising (``raiser:library_entry``) keeps that library's own check: the code that
    raised, or the code it was handed by, is always a hypothesis. Who raised keeps nothing in a test run: there
    the tests' code is the other owner on the stack (a test called the code that raised), and it keeps its own
    place. With no library's frame on the failing stack the program's code alone is kept: a program that uses no
    library (its own list indexed out of range) has no library to offer. A fact about what failed
    (``spawn:missing_program``: the missing file is a program to start) keeps its home in a test run too."""
    out: list[tuple[str, list[Any]]] = []
    for fact in facts.active:
        if fact.startswith("raiser:") and facts.tests_seen:
            continue
        entry = rs.reasoning.symptoms.get(KEPT_PREFIX + fact)
        if entry is None:
            continue
        homes = list(entry[1])
        if fact == "raiser:user" and not facts.library_on_stack:
            homes = [sc for sc in homes if sc.category != "library"]
        if homes:
            out.append((fact, homes))
    return out


def _with_kept(causes: list[Any], facts: Facts, rs: RuleSet) -> list[Any]:
    """A kept home (``kept_homes``) that the family does not list joins it with its entry's prior (the
    ``UNSHOWN_POOL`` entry's, or the ``kept:<fact>`` entry's), weighed by the facts like any other, so that
    ``diversify`` can give it its place."""
    if not kept_homes(facts, rs):
        return causes
    listed = {sc.category for sc in causes}
    pools: list[Any] = []
    if program_unshown(facts) and UNSHOWN_POOL in rs.reasoning.symptoms:
        pools.extend(rs.reasoning.symptoms[UNSHOWN_POOL][1])
    for _fact, kept in owner_kept(facts, rs):
        pools.extend(kept)
    extra = []
    for sc in pools:
        if sc.category not in listed:
            extra.append(sc)
            listed.add(sc.category)
    return list(causes) + extra if extra else causes


def _completed(causes: list[Any], present: dict[str, float], rs: RuleSet) -> list[Any]:
    """Three distinct hypotheses always show: when the rules and the family (with the categories the facts
    lifted) name fewer than ``WIDTH`` categories, the generic family's causes complete them, each weighed
    below the family's least likely listed cause (the family's own list knows this failure better)."""
    listed = {sc.category for sc in causes} | set(present)
    generic = rs.reasoning.symptoms.get(GENERIC_FAMILY)
    if len(listed) >= WIDTH or generic is None or not causes:
        return causes
    floor = min(sc.prior for sc in causes)
    top = max((sc.prior for sc in generic[1]), default=1.0) or 1.0
    extra = []
    for sc in sorted(generic[1], key=lambda x: -x.prior):
        if len(listed) >= WIDTH:
            break
        if sc.category not in listed:
            extra.append(dataclasses.replace(sc, prior=0.5 * floor * sc.prior / top))
            listed.add(sc.category)
    return list(causes) + extra


def _point(facts: Facts, analysis: Analysis) -> Evidence | None:
    if facts.exc_type:
        return Evidence(
            "direct", facts.source or "log", f"{facts.exc_type}: {facts.message}".strip(": ")[:500], facts.line
        )
    fp = analysis.profile.first_failure
    if fp is not None:
        return Evidence("direct", fp.source, fp.excerpt[:500], fp.line)
    return None


def diversify(
    ranked: list[RootCause],
    width: int = WIDTH,
    keep: list[str] | tuple[str, ...] = (),
    lifts: dict[str, float] | None = None,
) -> list[RootCause]:
    """Distinct hypotheses first: the best cause of each category, in order, until ``width`` categories
    are shown; then the rest in their order. Three variants of one category tell the user nothing new.
    A category of ``keep`` (``kept_homes``) that did not make the first ``width`` takes the place of the
    weakest hypothesis shown when only its family's prior put that one there (no fact of the evidence lifted
    it), with at least its confidence (that one follows right after): the evidence cannot rule the kept home
    out, and it is more often the home than such a guess. A hypothesis the evidence points at keeps its place,
    and so does every hypothesis above the weakest: a guess whose prior outranks a hypothesis the evidence
    lifted is a stronger guess than the kept home (a pytest run lifts the tests' code a little; the installed
    versions' prior can still stand above it). With ``lifts`` (``category_lifts``) a hypothesis counts as pointed
    at only when the facts lift it by ``POINTED_LIFT`` or more, and a rule's own cause always does
    (``pointed_at``)."""
    head: list[RootCause] = []
    seen: set[str] = set()
    for c in ranked:
        if len(head) >= width:
            break
        if c.category not in seen:
            head.append(c)
            seen.add(c.category)
    for cat in keep:
        best = next((c for c in ranked if c.category == cat), None)
        if best is None or cat in seen:
            continue
        if len(head) < width:
            head.append(best)
        else:
            guess = head[-1]  # the weakest shown (a stronger guess above one the evidence points at stays)
            if len(head) < 2 or guess.category in keep or pointed_at(guess, lifts):
                continue
            best.confidence = max(best.confidence, guess.confidence)
            head[-1] = best
        seen.add(cat)
    rest = [c for c in ranked if not any(c is h for h in head)]
    if head:  # a variant of a shown category never reads as more likely than the hypotheses above it
        floor = head[-1].confidence
        for c in rest:
            c.confidence = min(c.confidence, floor)
    return head + rest


def pointed_at(cause: RootCause, lifts: dict[str, float] | None = None) -> bool:
    """Whether a fact of the evidence lifted this hypothesis (a ``context:`` check that passed). With
    ``lifts`` (each category's net factor from the facts, ``category_lifts``), only a lift of at least
    ``POINTED_LIFT`` counts: a hypothesis that who-raised lifted a little (the program's frame lifts its
    configuration by 1.2, its data by 1.1) is still a guess of its family's prior."""
    if not (cause.rule or "").startswith(("differential:", "fallback")):
        return True  # a rule that knows the message listed this home
    passed = any(v.name.startswith("context:") and v.status == "passed" for v in cause.validation_checks)
    if lifts is None or not passed:
        return passed
    return lifts.get(cause.category, 1.0) >= POINTED_LIFT


def category_lifts(facts: Facts, categories: list[str]) -> dict[str, float]:
    """Each category's net factor from the facts that hold (the product of their factors, bounded)."""
    return {cat: _factor(cat, facts.contexts)[0] for cat in set(categories)}


def calibrate(confidence: float, points: list[tuple[float, float]]) -> float:
    """Map a raw confidence through the calibration curve (piecewise linear, monotone), fitted on the
    train logs by ``bench/calibrate.py`` so that "80 %" is right about 80 % of the time."""
    if not points:
        return confidence
    if confidence <= points[0][0]:
        return points[0][1] * (confidence / points[0][0]) if points[0][0] > 0 else points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if confidence <= x1:
            return y0 + (y1 - y0) * ((confidence - x0) / (x1 - x0) if x1 > x0 else 0.0)
    return points[-1][1]


# --- test code and resource homes ---------------------------------------------------------------------
# Three facts that hold for any log. Hypothesis runs a property only inside a test (``@given`` wraps the test
# function; its errors are raised by the test runner's call of it), so a Hypothesis exception class says that
# tests ran even where the paste kept no runner's report. pytest's ConftestImportFailure is raised from pytest's
# frames for what a conftest's import raised: the tests' set-up failed, not pytest. A resource that ran out (a full /dev/shm or disk, a
# SIGBUS on a mapped page) is often reported in an error line of its own (NCCL's WARN, a DataLoader worker's
# "insufficient shared memory", an OSError printed before the exception that ends the run) above the failure the
# run dies on: the log's error lines are read for those words too, not only the failing message.

CONFTEST_CUE = "cue:conftest_import"  # pytest's ConftestImportFailure: it re-raised what a conftest's import raised
TEST_PROPERTY_FAMILY = "test_property"  # [[exception]] family of Hypothesis's verdicts on a test
LOG_RESOURCE_CUES = ("cue:shared_memory", "cue:disk_full")  # [[context]] facts also read in every error line
# a device runtime reports a kernel's fault in error lines of its own, around the exception the framework raises
# for it (CANN's "[ERROR] The aicpu execution is abnormal" after PyTorch's "NPU function error"): read them too
LOG_DEVICE_CUES = ("cue:kernel_fault",)
LOG_RESOURCE_LINES = 200  # the error lines read for them (the head of a cascade)


def _tests_ran_under_hypothesis(facts: Facts) -> None:
    """A Hypothesis error (``test_property`` family) was raised by a test: tests ran."""
    if facts.family != TEST_PROPERTY_FAMILY or facts.tests_seen:
        return
    facts.tests_seen = True
    facts.active[:] = [a for a in facts.active if a != "run:no_tests"]
    if "run:pytest" not in facts.active:
        facts.active.append("run:tests")


def _error_lines_and_tails(facts: Facts, scan: ScanResult) -> str:
    """The head of the log's error lines and each log's last lines (paths blanked): where a runtime's own words
    stand when the failing message does not repeat them (a C++ ``what():`` line, a runtime's closing report)."""
    tails = [t for info in scan.sources.values() for t in list(info.tail)[-TAIL_READ:]]
    return facts.error_head_bare + "\n" + "\n".join(_PATHS.sub(" ", t) for t in tails)


def _cue_in(facts: Facts, reasoning: Reasoning, wanted: Collection[str], text: str) -> None:
    """Each context cue of ``wanted`` (a ``[[context]]`` with a pattern) that the failing message did not state
    but ``text`` does: its factors apply as if the message had said it."""
    for ctx in reasoning.contexts:
        if ctx.fact in wanted and ctx.fact not in facts.cued and ctx.pattern is not None and ctx.pattern.search(text):
            facts.contexts.append((ctx.fact, ctx.why, ctx.factors))
            facts.cued.add(ctx.fact)


def _resources_in_error_lines(facts: Facts, reasoning: Reasoning) -> None:
    """The resource cues (``LOG_RESOURCE_CUES``) that the failing message does not state but an error line of
    the log does: the resource ran out before the failure the run ended on."""
    _cue_in(facts, reasoning, LOG_RESOURCE_CUES + LOG_DEVICE_CUES, facts.error_head_bare)


def _conftest_reraise(facts: Facts) -> None:
    """pytest re-raises what a conftest.py's import raised as ConftestImportFailure from its own frames
    (``_importconftest``): those frames are the importer of the tests' own set-up, not the code that failed,
    so they do not say that only libraries raised (``raiser:library_only`` is dropped)."""
    if CONFTEST_CUE not in facts.cued or "raiser:library_only" not in facts.active:
        return
    facts.active.remove("raiser:library_only")
    facts.contexts[:] = [c for c in facts.contexts if c[0] != "raiser:library_only"]


# --- config and dataset homes ---------------------------------------------------------------------------
# Facts that put a failure in the user's settings (how the program was launched) or in the data it was given,
# read from the message's numbers and names where a word pattern alone cannot tell (05-reasoning.toml says
# what each fact means, under the same heading).

# the variables a launcher sets for each process it starts (torch/distributed/run.py's "Environment
# Variables": torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR,
# MASTER_PORT; the env:// rendezvous reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): ``[patterns] launcher_var``
# KeyError's message is the missing key's repr; the env:// rendezvous names the variable it lacks
# (torch/distributed/rendezvous.py: "environment variable {var} expected, but not set"): ``[patterns] launcher_key``,
# ``launcher_unset``
# conv's check of its input (aten's Convolution.cpp): "Given groups=1, weight of size [...], expected input[...]
# to have C channels, but got D channels instead" (``[patterns] conv_channels``)
# the channel counts of a sample's own format: a grayscale (1), RGB (3) or RGBA/CMYK (4) image (PIL's modes
# L, RGB, RGBA, CMYK), a mono (1) or stereo (2) audio signal; a layer inside a network has its own widths
SAMPLE_CHANNELS = frozenset({1, 2, 3, 4})
# the batch a DataLoader builds from unequal samples: default_collate's own check for sequences, and
# torch.stack's check when it stacks the samples' tensors (torch/utils/data/_utils/collate.py): ``[patterns]
# collate_unequal``, ``stack_unequal``
_COLLATE_FUNC = re.compile(r"collate")


def settings_and_data(facts: Facts, analysis: Analysis, frames: list[Frame], reasoning: Reasoning) -> list[str]:
    """The facts of this section that hold: ``cfg:launcher_env`` (a variable a launcher sets for every process
    it starts is missing: the script was run without the launcher, or the launcher was told other processes),
    ``data:sample_channels`` (a convolution's input has the channel count of another sample format than the
    model's first layer takes: an RGBA or grayscale image, a stereo signal) and ``data:unequal_samples`` (the
    DataLoader could not batch the samples because they differ in size: the data's samples, not the model)."""
    out = []
    text = _message_text(facts, analysis)
    short = (facts.exc_type or "").rsplit(".", 1)[-1]
    key, unset = _text(reasoning, "launcher_key"), _text(reasoning, "launcher_unset")
    if (short == "KeyError" and key.match(facts.message or "")) or unset.search(text):
        out.append("cfg:launcher_env")
    m = _text(reasoning, "conv_channels").search(text)
    if m and m["want"] != m["got"] and {int(m["want"]), int(m["got"])} <= SAMPLE_CHANNELS:
        out.append("data:sample_channels")
    collating = facts.stage == "data" or any(_COLLATE_FUNC.search(fr.func or "") for fr in frames)
    if _text(reasoning, "collate_unequal").search(text) or (
        _text(reasoning, "stack_unequal").search(text) and collating
    ):
        out.append("data:unequal_samples")
    return out


# --- top-3 homes (ktop3) ----------------------------------------------------------------------------------
# Where a run stopped when it printed no exception: its last line. A line that a library's compiled code wrote
# (a C/C++/CUDA source location — glog's and Horovod's `operations.cc:633]`, gdb's `at ./stdlib/cxa_atexit.c:41`
# —, a frame of a native backtrace, `#1  __GI___cxa_atexit (…)` (``scan.native_frame``), or a collective
# library's own log line, `NCCL INFO …`) says that library's code was running when the run stopped, and nothing shows the program's
# code on the way: the evidence cannot rule the library out, as for a failure that shows no frame of the
# program (``program_unshown``).
_NATIVE_LINE = re.compile(r"\b[\w./-]+\.(?:c|cc|cpp|cxx|cu|cuh|h|hpp)(?::\d+|\(\d+\))|\b[NR]CCL (?:INFO|WARN)\b")


def _native_stop(scan: ScanResult, reasoning: Reasoning) -> str | None:
    """Where a native backtrace in the logs' last lines stopped: ``"wait"`` when its innermost frame (gdb's lowest
    number shown, the signal handler's first) is a blocking call (``[patterns] blocking_wait``: a thread of a stalled
    process), ``"fault"`` when it is any other code (where a signal stopped it: a debugger's or a crash handler's
    backtrace of a fault), None without one. Read only where nothing else typed the failure (``refine_profile``)."""
    wait = _text(reasoning, "blocking_wait")
    best: tuple[int, str] | None = None
    for info in scan.sources.values():
        for line in info.tail:
            frame = native_frame(line)
            if frame is None or frame[1] == "??":
                continue
            if best is None or frame[0] < best[0]:
                best = frame
            if frame[0] == 0:
                break
    if best is None:
        return None
    return "wait" if wait.search(" " + best[1]) else "fault"


def _native_tail(scan: ScanResult, libraries: frozenset[str]) -> bool:
    """Whether the last line of a log came from a library's compiled code (``_NATIVE_LINE``), and no frame of
    the program's or its tests' code shows in a stack dump (a dump of the program's threads shows where it
    waits)."""
    for d in scan.dumps:
        if any(frame_owner(fr, libraries)[0] in ("user", "test") for fr in d.innermost or []):
            return False
    for info in scan.sources.values():
        last = next((t for t in reversed(info.tail) if t.strip()), "")
        if last and (_NATIVE_LINE.search(last) or native_frame(last) is not None):
            return True
    return False


def _run_as_script(frames: list[Frame]) -> bool:
    """Whether a Python traceback's outermost frame is the top level (``<module>``) of a file named like a test
    (``test.py``, ``test_x.py``) that no runner imported: Python prints the main program's frame first, so
    that file ran as the program (``python test.py``, a repro script). A test runner calls a test's function
    (pytest and unittest print from it), and a test module it imports sits below the importer's frames
    (importlib's, pytest's), never outermost. Its frames are the program's code, not a test's; no test ran."""
    if not frames or frames[0].func != "<module>" or _TEST_SETUP_FILE.search(frames[0].file.replace("\\", "/")):
        return False
    return frame_owner(frames[0], frozenset())[0] == "test"


# --- a setting the run was given, refused (kcfg2) -----------------------------------------------------------
# A variable of the process's environment is the user's setting: a runtime or library that reads it and says its
# value is wrong names the setting to change. The words are those the runtimes print for a value they read and
# refuse: CANN's EE1001 ("The argument is invalid.Reason: set ASCEND_RT_VISIBLE_DEVICES:0,2,1 error, it must be
# configured in ascending order"), HCCL's tiling checks ("HCCL_BUFFSIZE is too SMALL, … HCCL_BUFFSIZE=200MB"),
# torch's own ("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL", "environment variable
# `OMP_PREFIX` is invalid", "<PKG>_AUTOTUNE_MAX_CONFIGS must be an integer"). A variable that is missing is not
# read here (a launcher's: cfg:launcher_env; a toolkit's path, CUDA_HOME or CC not set: the installation), nor a
# variable printed as a hint for debugging (CUDA_LAUNCH_BLOCKING=1, NCCL_DEBUG=INFO), nor a status code
# (INVALID_ARGUMENT: …, CUDA_ERROR_…), nor a constant of C++ code (aclCompileOpt::ACL_PRECISION_MODE).
SETTING_REFUSED = "cfg:setting_refused"  # its words: [patterns] setting_refused in 05-reasoning.toml

# a shared library loaded at run time of another version than the build was compiled against (torch's cuDNN check,
# torch/backends/cudnn/__init__.py: "PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)", since
# "… but found runtime version …", whose advice is "ensure PyTorch can find the bundled cuDNN" and "your
# LD_LIBRARY_PATH contains incompatible version of cudnn"; XLA's and TensorFlow's cuda_dnn.cc: "Loaded runtime CuDNN
# library: 8.0.5 but source was compiled with: 8.1.0"): the copy the dynamic loader found comes first in its search
# path, which the user's LD_LIBRARY_PATH (PATH on Windows) sets, or from a system-wide install
LIBRARY_SEARCH_PATH = "cfg:library_search_path"  # its words: [patterns] loaded_other_build
# where the run's device index came from: the launcher's index of the process on its node (``[patterns]
# local_rank_word``)
RANKS_EXCEED_DEVICES = "cfg:ranks_exceed_devices"


def refused_settings(
    facts: Facts, analysis: Analysis, scan: ScanResult, frames: list[Frame], reasoning: Reasoning
) -> list[str]:
    """The facts of this section that hold: ``cfg:setting_refused`` (a runtime or library says that the value of
    a variable of the environment is wrong, in the failing message, an error line or the last lines of the log:
    the setting is the home, not the installation or the operator that read it), ``cfg:library_search_path`` (a
    shared library of another version than the build's was loaded: the loader's search path is a home beside the
    installation) and ``cfg:ranks_exceed_devices`` (CUDA's or HIP's invalid device ordinal for a device index that
    the program took from the launcher's local rank: more processes per node were started, ``--nproc_per_node``,
    than devices are visible; the runtime counted the devices and refused the index, so neither it nor the device
    failed)."""
    out = []
    text = _message_text(facts, analysis)
    lines = _error_lines_and_tails(facts, scan)  # a runtime's closing words
    for fact, words in ((SETTING_REFUSED, "setting_refused"), (LIBRARY_SEARCH_PATH, "loaded_other_build")):
        pattern = reasoning.patterns.get(words)
        if pattern is not None and (pattern.search(text) or pattern.search(lines)):
            out.append(fact)
    if "cue:device_ordinal" in facts.cued and any(
        _text(reasoning, "local_rank_word").search(fr.code or "") for fr in frames
    ):
        out.append(RANKS_EXCEED_DEVICES)
    return out


# --- kpta3: what CANN's own messages name -------------------------------------------------------------------------
# CANN's error manager prints the reason for a code on lines of its own ("EE1001: [PID: N] … Reason: …", "EZ9999[PID:
# N] … (EZ9999): <reason>"), below the RuntimeError that carries only the numeric ACL/aclnn code; the lines that name
# an Ascend chip are often a compiler's or a kernel loader's. The hint rule NPU_LINES keeps both (05-reasoning.toml,
# ``# --- kpta3 ---``); the cues NPU_LOG_CUES are read in them and in the head of the error lines, not only in the
# failing message.
NPU_LINES = "reason.npu_message_lines"
CHIP_CUE = "cue:chip_unsupported"
NPU_SETTING_CUE = "cue:npu_setting_refused"
NPU_LOG_CUES = (NPU_SETTING_CUE, CHIP_CUE)


def _npu_message_cues(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """The ``NPU_LOG_CUES`` that the failing message does not state but a line of CANN's error manager, a line
    naming an Ascend chip (the ``NPU_LINES`` hint rule's findings) or an error line of the log does."""
    lines = [f.text for f in scan.findings if f.rule.id == NPU_LINES][:LOG_RESOURCE_LINES]
    _cue_in(facts, reasoning, NPU_LOG_CUES, "\n".join(_PATHS.sub(" ", t) for t in lines) + "\n" + facts.error_head_bare)
    if CHIP_CUE in facts.cued and "type:unsupported_op" not in facts.cued:
        # no implementation for this chip is an operation this device does not support: the type where no rule or
        # exception class named one (``refine_profile``); the factors are the cue's own
        facts.contexts.append(("type:unsupported_op", "an Ascend chip named as lacking support", {}))
        facts.cued.add("type:unsupported_op")


# --- klib3 ---
# Which code the raise site speaks for, and what the words name (docs/engine.md, the klib3 block).
# 1. A class's ``__getattr__`` (Python calls it when ordinary lookup fails) raises AttributeError for the name its
#    caller asked for, as a module's does (PEP 562): ``torch.ops``'s namespaces (``_OpNamespace.__getattr__``: an
#    operator that no loaded library registered), lazy modules, proxies. When that ``__getattr__`` belongs to one
#    package and the line that asked is another library's, the asking library was written against a release of the
#    first that had the name: the two installed releases do not fit (``api:cross_library``, as ``module 'M' has no
#    attribute`` raised in another library's frame is), not an invariant of the asking library's own code
#    (``raiser:library_internal`` is withdrawn).
# 2. Python's TypeError for a call that lacks arguments its callee requires ("f() missing 1 required positional
#    argument: 'x'", "missing 2 required keyword-only arguments"): the call does not fit the callee's signature;
#    nothing is absent from the installation, so the generic "missing" of ``cue:absent`` does not hold on it alone.
# 3. The device runtime's or driver's own error report (CUDA's "cuda runtime error (710)", "CUDA error: …", Triton's
#    "Triton Error [CUDA]: …", cudaError*/CUDA_ERROR_* names, HIP's, CANN's ACL/NPU errors, a device-side assert, an
#    illegal address, a kernel image the driver cannot load). CUDA reports a kernel's fault asynchronously, at a
#    later API call (the CUDA programming guide; PyTorch's message says "CUDA kernel errors might be asynchronously
#    reported at some other API call"), and the driver refuses a kernel image or a context, not an operand: the
#    library's line where the error surfaced did not compute what failed. Who raised (``raiser:library``,
#    ``raiser:library_only``) and ``raiser:library_op`` say nothing of that library's code there and are withdrawn.
API_CROSS = "api:cross_library"
LIBRARY_INTERNAL = "raiser:library_internal"
ABSENT_CUE = "cue:absent"
_RAISE_SITE_FACTS = (LIBRARY_OP, "raiser:library", "raiser:library_only")


def _foreign_getattr(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> bool:
    """Whether the failing AttributeError came from a ``__getattr__`` of another package than the library whose
    line asked for the name (``_owners`` already read that line's frame as the raiser)."""
    if facts.family != "attribute" or facts.raiser != "library" or not facts.library or len(frames) < 2:
        return False
    last = frames[-1]
    if last.func != "__getattr__" or facts.raise_frame is last:
        return False
    kind, pkg = frame_owner(last, reasoning.libraries)
    return kind == "library" and bool(pkg) and _package(pkg or "") != _package(facts.library)


def _retract(facts: Facts, fact: str) -> None:
    """Withdraw a fact whose premise a later reading refuted (its context no longer moves any category)."""
    if fact in facts.active:
        facts.active.remove(fact)
    facts.contexts = [c for c in facts.contexts if c[0] != fact]
    facts.cued.discard(fact)


def _signature_not_absent(facts: Facts, analysis: Analysis, reasoning: Reasoning) -> bool:
    """Whether ``cue:absent`` held only on a call's missing required argument (``[patterns] signature_missing``)."""
    if ABSENT_CUE not in facts.cued:
        return False
    entry = next((c for c in reasoning.contexts if c.fact == ABSENT_CUE and c.pattern is not None), None)
    if entry is None or entry.pattern is None:
        return False
    text = _message_text(facts, analysis)
    missing = _text(reasoning, "signature_missing")
    return bool(missing.search(text)) and not entry.pattern.search(missing.sub(" ", text))


def library_home_facts(facts: Facts, analysis: Analysis, frames: list[Frame], reasoning: Reasoning) -> None:
    """The klib3 facts (block comment above): a foreign ``__getattr__`` is version skew between two installed
    packages (``_foreign_getattr``); a call's missing argument is not something absent (``_signature_not_absent``);
    a device runtime's error is no evidence of the library whose frame it surfaced in ([patterns]
    ``device_runtime_error``)."""
    if _foreign_getattr(facts, frames, reasoning):
        _retract(facts, LIBRARY_INTERNAL)
        _add_fact(facts, API_CROSS, reasoning)
    if _signature_not_absent(facts, analysis, reasoning):
        _retract(facts, ABSENT_CUE)
    device_error = reasoning.patterns.get("device_runtime_error")
    if facts.raiser == "library" and device_error is not None and device_error.search(facts.message or ""):
        for fact in _RAISE_SITE_FACTS:
            _retract(facts, fact)


# --- tests' code and layout (ktest2) -----------------------------------------------------------------------
# Three facts about a test run that hold without any rule. pytest heads every error it reports with a section
# line of its own (_pytest/terminal.py, summary_errors: "ERROR collecting <node>" for a collector's error,
# "ERROR at setup of <test>" / "ERROR at teardown of <test>" for a fixture's; _pytest/python.py: "ImportError
# while importing test module '<path>'."; _pytest/config/__init__.py: "ImportError while loading conftest
# '<path>'."): the header says that tests ran and in which phase, whatever message the section holds. pytest's
# FixtureLookupError (_pytest/fixtures.py, formatrepr) lists every fixture visible to the test after "fixture
# 'x' not found" ("available fixtures: a, b, …"): a family of fixtures named after the missing one (pytest-
# asyncio's `_function_event_loop`, `_module_event_loop` for `event_loop`; pytest-mock's `class_mocker`,
# `module_mocker` for `mocker`) says that the plugin providing that family is installed, so the name the tests
# request is not one its release offers (removed or renamed there, or misspelt): the tests' request changes, the
# installation is not what is missing. And a child process started by spawn or forkserver (multiprocessing's
# popen_spawn_posix/popen_spawn_win32/popen_forkserver `_launch` pickle the Process object with its target and
# arguments) needs everything handed to it picklable; fork (the POSIX default before Python 3.14; macOS's until
# 3.8) copies the parent instead. A pickling error raised there is the code that created the Process handing it
# a lambda, a local function, a module or an open handle: that code's owner (the test's, the program's, a
# library's), not the installation, even when a new Python's default start method exposed it.

TEST_SETUP_CUE = "cue:test_setup"  # [[context]]: pytest's words for a test's set-up or the suite's layout
AVAILABLE_FIXTURES = "reason.pytest_available_fixtures"  # hint rule keeping pytest's "available fixtures:" line
FIXTURE_PROVIDER = "fixture:provider_installed"  # its words: [patterns] fixture_not_found, available_fixtures
FIXTURE_FAMILY = 2  # listed fixtures named after the missing one that make a provider's family
_SPAWN_LAUNCH = re.compile(r"(?:^|/)multiprocessing/popen_(?:spawn_posix|spawn_win32|forkserver)\.py$")
_SPAWN_FACT = {
    "test": "spawn:unpicklable_test",
    "user": "spawn:unpicklable_user",
    "library": "spawn:unpicklable_library",
}


def _pytest_sections(facts: Facts, analysis: Analysis, reasoning: Reasoning) -> None:
    """pytest's collection headers in the log's error lines (``[patterns] pytest_collect_header``): a collector's error is
    the collection's (``stage:collection`` where neither the frames nor a rule placed the failure). That tests
    ran is read with the other test runners' words (``[patterns] test_runner_words``, ``_tests_seen``)."""
    if (
        facts.stage is None
        and not analysis.stage_by_rule
        and _text(reasoning, "pytest_collect_header").search(facts.error_head)
    ):
        facts.stage = "collection"
        facts.active.append("stage:collection")


def _setup_header(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """pytest's "ERROR at setup of" / "at teardown of" header in an error line, when the failing message does not
    say it: the section's error is a fixture's (``cue:test_setup``), whatever the message below it."""
    if TEST_SETUP_CUE in facts.cued:
        return
    if not _text(reasoning, "pytest_setup_header").search(facts.error_head):
        return
    for ctx in reasoning.contexts:
        if ctx.fact == TEST_SETUP_CUE:
            facts.contexts.append((ctx.fact, ctx.why, ctx.factors))
            facts.cued.add(ctx.fact)
            return


def _fixture_provider(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> str | None:
    """``fixture:provider_installed``: pytest's list of the available fixtures holds a family (``FIXTURE_FAMILY``
    or more) of fixtures named after the missing one (its ``_``-separated words in order inside theirs), so the
    plugin that provides them is installed."""
    not_found, available = _text(reasoning, "fixture_not_found"), _text(reasoning, "available_fixtures")
    missing = {m["name"] for _src, _ln, t in scan.pytest_errors if (m := not_found.search(t))}
    missing |= {m["name"] for m in not_found.finditer(facts.error_head)}
    missing |= {m["name"] for f in scan.findings if (m := not_found.search(f.text))}
    if not missing:
        return None
    # pytest prints the list behind its "> " marker, which the scanner reads as code (no rule matches there): the
    # last lines of each log keep it, as the end of a short run's report
    lists = [f.groups.get("names") or "" for f in scan.findings if f.rule.id == AVAILABLE_FIXTURES]
    lists += [m["names"] for info in scan.sources.values() for t in info.tail if (m := available.search(t))]
    for names in lists:
        listed = [n.strip() for n in names.split(",") if n.strip()]
        for name in missing:
            inner = f"_{name}_"
            family = [n for n in listed if n != name and inner in f"_{n.strip('_')}_"]
            if len(family) >= FIXTURE_FAMILY:
                return FIXTURE_PROVIDER
    return None


def _spawn_unpicklable(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``spawn:unpicklable_<owner>``: a pickling error raised while multiprocessing started a child by spawn or
    forkserver (a ``popen_spawn_*``/``popen_forkserver`` frame): the code that created the Process handed it what
    cannot be pickled. Its owner is the innermost frame outside the standard library above those frames; none
    shown in a test run is a test's (pytest's report of a test starts at the test's function, or the paste cut
    it)."""
    if not _text(reasoning, "pickle_refused").search(f"{facts.exc_type or ''}: {facts.message}"):
        return None
    at = next((i for i, fr in enumerate(frames) if _SPAWN_LAUNCH.search(fr.file.replace("\\", "/"))), None)
    if at is None:
        return None
    owners = [frame_owner(fr, reasoning.libraries)[0] for fr in frames[:at]]
    owner = next((k for k in reversed(owners) if k != "stdlib"), None)
    if owner is None:
        owner = "test" if facts.tests_seen else None
    return _SPAWN_FACT.get(owner or "")


def _spawn_raiser(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> None:
    """The ``spawn:unpicklable_<owner>`` fact, and what it voids: multiprocessing's frames only pickled what the
    Process's creator handed them, so they do not say that only libraries raised (``raiser:library_only`` goes,
    as for pytest's re-raise of a conftest's error)."""
    fact = _spawn_unpicklable(facts, frames, reasoning)
    if fact is None:
        return
    _retract(facts, "raiser:library_only")
    _add_fact(facts, fact, reasoning)


# --- native version checks (kjax5) ---------------------------------------------------------------------------------
BUILD_VERSION_CUE = "cue:build_version"  # a native library's own check of the release it loaded (05-reasoning.toml)
BUILD_VERSION_HINT = "reason.build_version"  # the hint rule that keeps those checks' lines wherever they are printed


def _build_version_in_log(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """A native library's version check (``cue:build_version``: "Loaded runtime CuDNN library: 8.0.5 but source was
    compiled with: 8.1.0", "Found cuDNN version X, but JAX was built against version Y") runs when the library is
    loaded and prints as a line of its own (glog's ``E …cuda_dnn.cc:352]``, a warning), above the failure the run
    ends on ("DNN library is not found", "DNN library initialization failed" at the first operation): read wherever
    the log prints it (the hint rule ``reason.build_version`` keeps those lines), not only in the failing message,
    as the resource cues are read in every error line (``_resources_in_error_lines``)."""
    if BUILD_VERSION_CUE in facts.cued or not any(f.rule.id == BUILD_VERSION_HINT for f in scan.findings):
        return
    ctx = next((c for c in reasoning.contexts if c.fact == BUILD_VERSION_CUE and c.pattern is not None), None)
    if ctx is None:
        return
    facts.contexts.append((ctx.fact, ctx.why, ctx.factors))
    facts.cued.add(ctx.fact)


# --- distributed homes (kdist4) ---------------------------------------------------------------------------
# ProcessGroupNCCL's watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; torch_npu's ProcessGroupHCCL
# prints the same) numbers the collectives of each process group from 1 and reports a timeout with the number of
# the collective that did not finish ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N, …)") and
# the group's progress ("last enqueued NCCL work: N, last completed NCCL work: M"; -1 when none completed): the
# words are [patterns] watchdog_seq and last_completed in 05-reasoning.toml.


def _collective_progress(facts: Facts, reasoning: Reasoning) -> str | None:
    """Whether a collective that timed out had a communicator that worked before: the watchdog's report names
    the collective's sequence number and the last one completed. A later collective (number 2 or more, or some
    work completed) timing out follows collectives that went through: the transport, the installation and the
    launch worked, and one rank did not reach the collective in time (it ran out of data, took another branch,
    raised, or ran a framework's long checkpoint or evaluation step) — ``collective:timeout_after_progress``.
    The first collective timing out (number 1, nothing completed) is not read here: that communicator never
    carried anything (the rule ``nccl.watchdog_first_collective`` knows it)."""
    text = facts.error_head  # the head of a cascade: the watchdog's report of the first collective stuck
    seq, done = reasoning.patterns.get("watchdog_seq"), reasoning.patterns.get("last_completed")
    seqs = [int(m.group(1)) for m in seq.finditer(text)] if seq is not None else []
    seqs += [int(m.group(1)) + 1 for m in done.finditer(text)] if done is not None else []  # the next one is stuck
    return "collective:timeout_after_progress" if seqs and max(seqs) >= 2 else None


# --- kasc6 ---
# The type CANN's own words give a failure on an Ascend NPU (docs/engine.md, the kasc6 block).
# 1. CANN's runtime refusing an argument of its caller: the error manager's EE1001 ("The argument is invalid.
#    Reason: …", Solution: "Check the input parameter range of the function. Check the function invocation
#    relationship"), ACL's parameter-verification codes (aclError 100000…, ACL_ERROR_INVALID_PARAM "Parameter
#    verification failed") and the runtime's 107xxx codes (ACL_ERROR_RT_PARAM_INVALID 107000, INVALID_DEVICEID
#    107001, CONTEXT_NULL 107002, STREAM_CONTEXT 107003 …: the first digit 1 is the caller's invalid use in ACL's
#    code scheme, 2 a resource, 5 an internal fault) say that the call was checked and refused: nothing ran on the
#    device, so the failure is the program's call (``runtime_error``), not the device runtime failing (``backend``).
#    Not where the same lines carry an internal or device-execution code (5xxxxx) or an inner error (EZ9999 …): a
#    refused call after a fault (torch_npu fetching the device's message without a context) is that fault's.
# 2. An Ascend chip named as lacking an implementation (kpta3's ``cue:chip_unsupported``) is an operation this
#    device does not support, whatever generic wrapper carried it (a kernel compiler's ``MLIRCompilationError``
#    that torch's compile rule reads as ``runtime_error``, a kernel that cannot be found read as ``backend``).
NPU_ARG_REFUSED = "cue:npu_argument_refused"
NPU_FAULT_CODE = "cue:npu_fault_code"


def _npu_argument_refused(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """``cue:npu_argument_refused`` when CANN's words (the failing message, its error-manager lines, the head of
    the error lines) say that its runtime refused an argument of the call and no internal or device fault is
    named beside it (``cue:npu_fault_code``, a context without factors: its pattern is what is read here)."""
    lines = [f.text for f in scan.findings if f.rule.id == NPU_LINES or f.rule.backend == "npu"]
    text = "\n".join([facts.message or "", facts.error_head, *lines[:LOG_RESOURCE_LINES]])
    fault = next((c.pattern for c in reasoning.contexts if c.fact == NPU_FAULT_CODE and c.pattern is not None), None)
    if fault is not None and fault.search(text):
        _retract(facts, NPU_ARG_REFUSED)  # the failing message's words too: the fault beside them types the failure
    else:
        _cue_in(facts, reasoning, (NPU_ARG_REFUSED,), text)


def npu_type(analysis: Analysis, facts: Facts) -> None:
    """The type CANN's words give: a refused argument is the program's call (``runtime_error``) where a device
    runtime's reading typed it ``backend``; a chip named as lacking an implementation is ``unsupported_op`` where a
    generic reading typed it ``runtime_error`` or ``backend``."""
    prof = analysis.profile
    if NPU_ARG_REFUSED in facts.cued and prof.type == "backend":
        prof.type = "runtime_error"
    elif CHIP_CUE in facts.cued and prof.type in ("runtime_error", "backend"):
        prof.type = "unsupported_op"


# --- kdist6 ---
# A collective that timed out names "runtime" as its family's default (any step can issue one), but its exception is
# raised from the call that issued the collective (Gloo's "Timed out waiting …ms for recv operation" from work.wait(),
# c10d's monitored_barrier report): when its frames are an evaluation loop's or a checkpoint's (a trainer's evaluate
# gathering metrics, save_checkpoint's barrier, [[frame_stage]]), the ranks waited in that work — typically for the
# rank still doing it (evaluation or saving on rank 0 only) — and that work is the stage.
COLLECTIVE_IN_WORK = "collective:wait_in_rank_work"  # its [[context]]: 22-distributed-ownership.toml


def _collective_in_work(facts: Facts, analysis: Analysis, reasoning: Reasoning) -> str | None:
    """``collective:wait_in_rank_work`` when the failure is a collective wait that timed out (the rule that names
    the stage is one of the context's ``lead_rules``) and the frames it was raised from are an evaluation's or a
    checkpoint's."""
    waits = next((c.lead_rules for c in reasoning.contexts if c.fact == COLLECTIVE_IN_WORK), frozenset())
    lead = next((f.rule for f in analysis.findings if f.rule.stage), None)
    if lead is None or lead.id not in waits or facts.stage not in ("evaluation", "checkpoint"):
        return None
    return COLLECTIVE_IN_WORK


# A loopback address other than 127.0.0.1 that a distributed run's connection names (``cue:loopback_peer`` in
# rules/05-reasoning.toml) is usually printed on the transport's own line, not in the exception line the run ends
# on: an uncaught C++ exception prints ``terminate called after throwing an instance of 'gloo::IoException'`` and
# then its message on a ``  what():  …`` line that holds no error word (libstdc++'s verbose terminate handler),
# c10d's and NCCL's socket errors come before the traceback. It is read in the head of the log's error lines and in
# the last lines of each log as well.
LOOPBACK_CUE = "cue:loopback_peer"


# --- pytest's import-mismatch report, Cython frames (kpytest5) --------------------------------------------------
# pytest imports a test module under its basename (the default ``prepend`` import mode puts the module's first
# folder without an ``__init__.py`` on sys.path) and refuses a module whose name is already imported from another
# file: ``_pytest/python.py`` (``importtestmodule``) raises "import file mismatch:\nimported module 'm' has this
# __file__ attribute:\n  <have>\nwhich is not the same as the test file we want to collect:\n  <want>\nHINT: remove
# __pycache__ / .pyc files and/or use a unique basename for your test file modules". The two paths say which layout
# collides: two files of the tests sharing a basename (the tests' layout), or the collected file a copy in a source
# tree of a module that Python imported from its install (``site-packages``): pytest was pointed at a source tree
# whose package is installed (pytest's "Good Integration Practices": with the prepend mode, tests inside the
# application's package collide with its install; ``testpaths``, ``--import-mode=importlib`` or running from
# another folder is the run's set-up, not a test's code).
IMPORT_MISMATCH_HINT = "reason.pytest_import_mismatch"  # hint rule keeping pytest's mismatch lines
MISMATCH_BASENAME = "pytest:mismatch_basename"
MISMATCH_INSTALLED = "pytest:mismatch_installed"  # the report's words: [patterns] import_mismatch_have, _want


def _mismatch_paths(lines: list[str], reasoning: Reasoning) -> tuple[str, str] | None:
    """The two paths of pytest's import-mismatch report in these lines (each on the line below its header)."""
    have_words, want_words = _text(reasoning, "import_mismatch_have"), _text(reasoning, "import_mismatch_want")
    for i, text in enumerate(lines[:-1]):
        if not have_words.search(text):
            continue
        have = lines[i + 1].strip()
        want = next(
            (lines[j + 1].strip() for j in range(i + 2, min(i + 4, len(lines) - 1)) if want_words.search(lines[j])),
            "",
        )
        return have, want
    return None


def pytest_import_mismatch(facts: Facts, analysis: Analysis, scan: ScanResult, reasoning: Reasoning) -> None:
    """pytest's import-mismatch report (a hint rule's finding, or its lines in a log's last lines): a test module's
    name imported from another file. The imported file installed and the collected one not is
    ``pytest:mismatch_installed`` (the run collected a source tree beside its install), else
    ``pytest:mismatch_basename`` (the tests' layout). Either way pytest was collecting: tests ran, at
    ``collection`` where nothing else placed the failure."""
    seen = any(f.rule.id == IMPORT_MISMATCH_HINT for f in scan.findings)
    paths = None
    for info in scan.sources.values():
        paths = paths or _mismatch_paths(info.tail, reasoning)
    if not seen and paths is None:
        return
    fact = MISMATCH_BASENAME
    if paths is not None:
        have, want = (p.replace("\\", "/") for p in paths)
        if _SITE.search(have) and want and not _SITE.search(want):
            fact = MISMATCH_INSTALLED
    facts.active.append(fact)
    if "run:no_tests" in facts.active:
        facts.active.remove("run:no_tests")
        facts.active.append("run:tests")
    facts.tests_seen = True
    if facts.stage is None and not analysis.stage_by_rule:
        facts.stage = "collection"
        facts.active.append("stage:collection")


# Cython compiles a ``.pyx`` module into an extension whose traceback entries name the source file as it was given to
# the compiler (``mtrand.pyx``, ``h5py/h5f.pyx``: a path relative to the package's build, not where it is installed)
# and the function by its qualified name (``numpy.random.mtrand.RandomState.seed``; Cython's ``__Pyx_AddTraceback``).
# Such a frame of a well-known library's extension is that library's code, not a file of the program.
_CYTHON_FILE = re.compile(r"\.(?:pyx|pxd|pxi)$")


def cython_owner(frame: Frame, libraries: frozenset[str]) -> tuple[str, str | None] | None:
    """("library", package) for a Cython frame of a well-known library's extension (its qualified function name's
    first part is that library), else None."""
    f = frame.file.replace("\\", "/")
    if not _CYTHON_FILE.search(f) or _SITE.search(f) or "." not in frame.func:
        return None
    top = frame.func.split(".", 1)[0]
    return ("library", top) if top in libraries else None


# pytest's session loop (``_pytest/main.py``, ``wrap_session``) catches what escapes its own code and reports it
# through the ``pytest_internalerror`` hook, which prints every line as ``INTERNALERROR> …`` (``_pytest/terminal.py``;
# ``config/__init__.py`` writes the same prefix to stderr when no plugin handles it), exit status 3. A test's own
# exception never gets there: ``runtestprotocol`` catches it in the test's set-up, call or teardown and reports it as
# a failure or an error. So the raiser is pytest's code or a hook implementation (an installed plugin's, or a
# conftest's), not the code under test.
PYTEST_INTERNAL = "pytest:internalerror"  # its words: [patterns] pytest_internalerror


def pytest_internal_error(facts: Facts, reasoning: Reasoning) -> str | None:
    """``pytest:internalerror`` when an error line of the log is pytest's INTERNALERROR report."""
    return PYTEST_INTERNAL if _text(reasoning, "pytest_internalerror").search(facts.error_head) else None


# --- the installed releases shown changing before an API mismatch (kowner) ------------------------------------
# The call that failed does not fit an installed package's API (a name missing, a keyword or argument count that
# does not fit, a removed or renamed name: the API facts below) and the same log shows a package installer putting
# releases in place before the failure (pip's "Successfully installed x-1.2", conda's "The following packages will
# be UPDATED:", mamba's "Changing a-1 ==> a-2", uv's "Installed N packages in …": the hint rule
# ``reason.installer_changed``). Whoever's code made the call, the log itself shows the installed versions
# changing under it: ``env:installed_in_run`` lifts the installation (docs/engine.md, the kowner block).
INSTALLED_IN_RUN = "env:installed_in_run"
INSTALLER_HINT = "reason.installer_changed"
_API_MISMATCH = frozenset(
    {API_CUE, "cue:installed_api", "cue:unknown_keyword", API_CROSS, "api:own_library", "api:jax_removed_in_library"}
)


def _installed_in_run(facts: Facts, scan: ScanResult) -> str | None:
    """``env:installed_in_run`` when an API fact holds and the installer's hint rule fired anywhere in the log."""
    if not (_API_MISMATCH & (facts.cued | set(facts.active))):
        return None
    return INSTALLED_IN_RUN if any(f.rule.id == INSTALLER_HINT for f in scan.findings) else None


# --- kland1 ---
# ggml's device back ends (the tensor library under llama.cpp, whisper.cpp, llamafile) send every failed runtime
# call to one error handler (ggml-cuda's ``ggml_cuda_error``, ggml-cann's ``ggml_cann_error``): it prints
# "<BACKEND> error: <the runtime's message>", "  current device: N, in function <F> at <file>:<line>" and the call's
# statement, then aborts (rules/57-ggml-catalogue.toml). The line names the ggml function whose call failed. Where the
# runtime's own words say that the call misused the runtime's objects — a stream, model or context used outside the
# context it belongs to, a context missing or destroyed, a handle not valid (CANN's 107002-107005 in ACL's code
# scheme, where the first digit 1 is the caller's invalid use; CUDA's cudaErrorInvalidResourceHandle,
# cudaErrorContextIsDestroyed, CUDA_ERROR_INVALID_CONTEXT) — and no fault or exhaustion is named beside them, nothing
# failed on the device: the code that made the call, ggml's back end, used its own objects wrongly
# (``cue:ggml_backend_misuse``). A device id out of range (107001, invalid device ordinal) is the run's selection, not
# read here.
GGML_HINT = "reason.ggml_backend_lines"  # the hint rule keeping ggml's "current device: N, in function F at" lines
GGML_MISUSE = "cue:ggml_backend_misuse"  # its words: [patterns] ggml_caller, runtime_misuse, runtime_fault


def ggml_backend_misuse(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> str | None:
    """``cue:ggml_backend_misuse`` when ggml's error handler names a ggml function whose runtime call failed and the
    runtime's words (the head of the error lines, the handler's lines) say the call misused a stream, model, context
    or handle, with no device fault or exhaustion named beside them."""
    lines = [f.text for f in scan.findings if f.rule.id == GGML_HINT]
    if not any(_text(reasoning, "ggml_caller").search(t) for t in lines):
        return None
    text = "\n".join([facts.message or "", facts.error_head, *lines])
    if not _text(reasoning, "runtime_misuse").search(text) or _text(reasoning, "runtime_fault").search(text):
        return None
    return GGML_MISUSE


# --- kland2: installed code outside site-packages, a control-flow branch's origin, a tolerance just missed ----------
# Code that an installer put outside ``site-packages`` is still not the program's own:
# - a distribution's package manager installs an application's private modules under ``/usr/lib/<package>/``,
#   ``/usr/libexec/<package>/`` or ``/usr/share/<package>/`` (the Filesystem Hierarchy Standard: /usr/lib holds
#   "object files and internal binaries that are not intended to be executed directly by users", /usr/share
#   architecture-independent data, each package in a subdirectory of its own); a user's program does not live
#   there. ``/usr/lib/python3.X/`` (the standard library) and ``dist-packages`` are read before this.
# - a virtual environment's folder (``.venv``, ``venv``: the venv module's and the packaging guides' conventional
#   name; tox's and nox's ``.tox/<env>``, ``.nox/<env>``) holds what pip installed: its ``site-packages`` (read
#   before this), pip's checkouts of editable VCS requirements (``<venv>/src/<name>/``, pip's documented default
#   ``--src``), and the same paths shortened by a paste (``.venv/.../transformers/x.py``).
_SYSTEM_PACKAGE = re.compile(r"^/usr/(?:local/)?(?:lib(?:64|exec)?|share)/(?P<pkg>(?!python\d)[A-Za-z][\w.+-]*)/.")
_VENV_PACKAGE = re.compile(
    r"(?:^|/)(?:\.?venv|\.tox/[^/]+|\.nox/[^/]+)/(?:\.{3}|…|src)/(?P<pkg>(?!lib\b|lib64\b|python\d|bin\b)[A-Za-z_][\w.-]*)/."
)


def installed_outside_site(path: str) -> str | None:
    """The package whose installed code a frame's file is, when an installer put it outside ``site-packages``: a
    distribution's application under ``/usr/lib/<package>/`` (``/usr/libexec``, ``/usr/share``), or a package in a
    virtual environment's folder whose path a paste shortened (``.venv/.../pkg/mod.py``) or pip's checkout of an
    editable requirement (``venv/src/pkg/…``). ``path`` uses forward slashes."""
    m = _SYSTEM_PACKAGE.match(path) or _VENV_PACKAGE.search(path)
    return m["pkg"] if m else None


# JAX's tracer errors name the function being traced when the value was refused (jax/_src/interpreters/
# partial_eval.py, ``_origin_msg``: "The error occurred while tracing the function <name> at <file>:<line> for
# <transform>."). lax's control flow (cond, switch, scan, while_loop: ``_initial_style_jaxpr`` with the primitive's
# name, "while_cond" and "while_loop" for while_loop's two functions) traces the branch or body function that its
# caller wrote and handed it: a function defined in a library's file (a lambda, a local function) is that
# library's own code, run under the trace, and the code that used the traced value as a concrete one ran inside
# it. ``jit`` is not read: its function is often a wrapper that a library puts around the program's (Haiku's
# ``apply_fn``, a module's ``apply``).


def traced_branch_origin(facts: Facts, reasoning: Reasoning) -> None:
    """A JAX tracer error with no frame outside JAX and NumPy, whose message names the control-flow branch or body
    being traced as a library's function: that library's code used the traced value (``raiser:trace_library``, as
    a shown library frame or ``_trace_origin``'s lines would make it). The program's own function, or any other
    transform, leaves the raiser unseen."""
    if facts.family != TRACE_FAMILY or facts.raiser is not None:
        return
    if (facts.exc_type or "").rsplit(".", 1)[-1] in _TRACER_LEAKS:
        return
    m = _text(reasoning, "jax_traced_function").search(
        "\n".join((facts.message, facts.error_head)).replace("\\\\", "\\")
    )
    if m is None:
        return
    fr = Frame(m["path"], int(m["line"]), "")
    kind, pkg = frame_owner(fr, reasoning.libraries)
    if kind != "library" or not pkg or _package(pkg) in _TRACE_CONDUIT:
        return
    facts.raise_frame, facts.raiser, facts.library = fr, kind, pkg


# A comparison with an explicit tolerance that failed by less than the tolerance itself: numpy.testing's
# assert_allclose ("Not equal to tolerance rtol=R, atol=A", then "Max absolute difference: D" and "Max relative
# difference: Q"; numpy 2 adds "among violations"; an element fails when |actual - desired| > atol + rtol *
# |desired|), assert_array_almost_equal ("Arrays are not almost equal to N decimals": it fails when the difference
# is not below 1.5 * 10**-N) and torch.testing.assert_close ("Greatest absolute difference: D at index … (up to A
# allowed)", "Greatest relative difference: Q … (up to R allowed)"; a scalar prints "Absolute difference: D (up to A
# allowed)"). A result within twice the allowed difference agrees with the expected value to the order of the
# tolerance the test chose: the computation is right to that precision and the test's tolerance is too tight for the
# dtype, the platform or the algorithm (the tolerance is the test's own choice); a wrong result misses by orders of
# magnitude. The tests' code leads, the code under test recedes. (Differences of a few ulp with an exact comparison
# are float-rounding's.) The reports' words: ``[patterns] numpy_*`` and ``torch_close_*``.
NEAR_TOLERANCE = "cue:near_tolerance"
NEAR_FACTOR = 2.0  # a difference within twice what the test allowed


def _num(text: str) -> float | None:
    try:
        return float(text.rstrip("."))
    except ValueError:
        return None


def _allowed(abs_diff: float, rel_diff: float | None, atol: float, rtol: float) -> float:
    """What the comparison allowed at the worst element: atol + rtol * |desired|, |desired| read as D / Q."""
    desired = abs_diff / rel_diff if rel_diff and rel_diff == rel_diff and rel_diff != float("inf") else 0.0
    return atol + rtol * desired


TOLERANCE_HINT = "reason.tolerance_report"  # the hint rule that keeps a comparison's report lines (05-reasoning.toml)
REPORT_LINES = 8  # the first report lines read: one comparison's tolerance and differences


def near_tolerance(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> str | None:
    """``cue:near_tolerance`` when a tolerance comparison's report (the failing message, or the report lines that
    the hint rule ``reason.tolerance_report`` kept: pytest prints them as E lines under the exception) shows a
    difference within NEAR_FACTOR of what the test allowed. The first report of the log is read."""
    if facts.family != "assertion":
        return None
    kept = [f.text for f in scan.findings if f.rule.id == TOLERANCE_HINT][:REPORT_LINES]
    text = "\n".join([facts.message, *kept])
    a = _text(reasoning, "numpy_max_abs").search(text)
    if a is not None and (h := _text(reasoning, "numpy_tolerance").search(text)) is not None:
        d, rtol, atol = _num(a["v"]), _num(h["rtol"]), _num(h["atol"])
        q = _text(reasoning, "numpy_max_rel").search(text)
        if d is None or rtol is None or atol is None:
            return None
        allowed = _allowed(d, _num(q["v"]) if q else None, atol, rtol)
    elif a is not None and (dec := _text(reasoning, "numpy_decimals").search(text)) is not None:
        d, allowed = _num(a["v"]), 1.5 * 10.0 ** -int(dec["dec"])
    elif (c := _text(reasoning, "torch_close_abs").search(text)) is not None:
        d, atol = _num(c["v"]), _num(c["tol"])
        r = _text(reasoning, "torch_close_rel").search(text)
        if d is None or atol is None:
            return None
        allowed = _allowed(d, _num(r["v"]) if r else None, atol, _num(r["tol"]) or 0.0 if r else 0.0)
    else:
        return None
    if d is None or d != d or allowed <= 0:
        return None
    return NEAR_TOLERANCE if d <= NEAR_FACTOR * allowed else None


def installed_main_value(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``raiser:library_internal`` for an AttributeError on a builtin value (``'bool' object has no attribute
    'lower'``) raised where every frame, from the outermost module's top level down, is one installed package's or
    the standard library's: the run's main module is installed code (a distribution's application, a package's
    script), so no caller's frame handed the value in; the package's own code made it (a default, its own parse).
    ``_library_raise`` leaves such a value to the caller, which is right only where a caller is shown."""
    if facts.raiser != "library" or not facts.library_only or not frames or "raiser:library_internal" in facts.active:
        return None
    if facts.family != "attribute" or frames[0].func != "<module>":
        return None
    attr = _text(reasoning, "object_has_no_attribute").search(facts.message or "")
    if attr is None or attr["cls"] not in _VALUE_TYPES:
        return None
    owners = {frame_owner(fr, reasoning.libraries) for fr in frames}
    packages = {_package(p) for k, p in owners if k == "library" and p}
    if len(packages) != 1 or any(k not in ("library", "stdlib") for k, _ in owners):
        return None
    return "raiser:library_internal"


def installed_main_startup(facts: Facts, frames: list[Frame], reasoning: Reasoning, progressed: bool) -> None:
    """Stage ``startup`` where the run's main module is installed code (its outermost frame is an installed
    package's top level, ``installed_outside_site``'s application or a package's script) and the failing call is a
    constructor that this top level called directly, before any progress: the objects the program builds before
    its work, as kstage reads the program's own constructors (``_constructor_frame`` leaves libraries' constructors
    out because a library builds helper objects inside any call; here no program's call is around it)."""
    if facts.stage is not None or progressed or len(frames) < 2 or frames[0].func != "<module>":
        return
    top, ctor = frame_owner(frames[0], reasoning.libraries), frame_owner(frames[1], reasoning.libraries)
    if top[0] != "library" or ctor != top or frames[1].func != "__init__":
        return
    facts.stage, facts.stage_frame = "startup", frames[1]


# Cython's size check (``cue:compiled_abi``) raises in the compiled module's initialisation (``File "src/epr.pyx",
# line 1, in init epr``): the frame names the extension that was built against the other release. Its ``.pyx`` path is
# the build tree's, not a file of the program that ran: the module is a built binary (a wheel's, or a build left from
# another release), so the frame is not the program's own code.
_CYTHON_INIT = re.compile(r"\.(?:pyx|pxd|pxi)$")
COMPILED_ABI = "cue:compiled_abi"


def abi_checked_extension(facts: Facts, reasoning: Reasoning) -> None:
    """Read the Cython module whose initialisation failed the size check as a built extension (``raiser:library``),
    not as the program's code (``raiser:user``), when its frame is the raise site."""
    fr = facts.raise_frame
    if COMPILED_ABI not in facts.cued or fr is None or "raiser:user" not in facts.active:
        return
    if not (fr.func == "init" or fr.func.startswith("init ")) or not _CYTHON_INIT.search(fr.file):
        return
    _retract(facts, "raiser:user")
    _add_fact(facts, "raiser:library", reasoning)


# --- ktf2: Keras's HDF5 loaders under h5py 3, and a weights file that is not in its format ---
# h5py 3.0 reads variable-length string attributes as ``str`` (h5py 2 returned ``bytes``); the HDF5 loaders of
# Keras < 2.4 and tf.keras < 2.4 (keras/engine/topology.py, saving.py, network.py, tensorflow/python/keras/saving/
# hdf5_format.py) call ``.decode('utf8')`` on them and fail with "'str' object has no attribute 'decode'"
# (TensorFlow 2.4's and Keras 2.4's fixes; the pin ``h5py<3`` of the releases before): the installed h5py against
# the installed Keras, not the program's code.
_KERAS_HDF5_LOADER = re.compile(
    r"(?:^|/)(?:tf_)?keras/(?:src/)?(?:engine/(?:topology|saving|network)|saving/(?:legacy/)?hdf5_format)\.py$"
)
H5PY3_STR_ATTRS = "api:h5py3_str_attrs"  # its words: [patterns] str_decode
# a file-format error (``cue:file_format``: HDF5's "file signature not found", PIL's, gzip's) raised while the frames
# load a checkpoint (a ``[[frame_stage]]`` of stage checkpoint: load_weights, load_model, load_state_dict, …): the
# file that is not in its format is the weights file itself (an LFS pointer, an interrupted download, another format)
WEIGHTS_FILE_FORMAT = "file:weights_format"


def keras_hdf5_str_attrs(facts: Facts, reasoning: Reasoning) -> str | None:
    """``api:h5py3_str_attrs``: "'str' object has no attribute 'decode'" raised in Keras's (or tf.keras's) own
    HDF5 loading module, the frame that decodes the file's attributes."""
    fr = facts.raise_frame
    if fr is None or facts.family != "attribute" or not _text(reasoning, "str_decode").search(facts.message or ""):
        return None
    return H5PY3_STR_ATTRS if _KERAS_HDF5_LOADER.search(fr.file.replace("\\", "/")) else None


def weights_file_format(facts: Facts) -> str | None:
    """``file:weights_format``: the message says the file is not in its format and the frames show a checkpoint
    being loaded (the stage from the frames, not the message's words)."""
    return WEIGHTS_FILE_FORMAT if facts.stage == "checkpoint" and "cue:file_format" in facts.cued else None


# --- kland3: a crash while an interactive or one-line import ran ---------------------------------------------------
# The interactive interpreter echoes each statement after its prompt (``>>> import torch``) and a shell echoes the
# command line (``$ python -c "import torch"``); the statement runs before the next prompt is printed. A process that
# dies of a signal (the shell's "Illegal instruction", "Segmentation fault", "Aborted", "Bus error" line) with such an
# echoed import as the last statement and no prompt after it died while that import ran: the interpreter loading the
# package and its extension modules, before any of the program's own steps (start-up). Python's own tracebacks and
# frames, where printed, place it instead (``stage_from_frames``).
_IMPORT_STMT = (
    r"(?:import\s+[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*|from\s+[\w.]+\s+import\s+[\w., ()*]+?)"
)
# only import statements: ``>>> import torch``, ``python -c "import numpy; import torch"`` (a statement that calls
# anything after the import could be what died)
_REPL_IMPORT = re.compile(rf"^\s*(?:>>>|In \[\d+\]:)\s*{_IMPORT_STMT}\s*;?\s*$")
_SHELL_IMPORT = re.compile(
    rf"(?:^|[$#%>]\s*)python[\d.]*(?:\.exe)?\s+(?:-\S+\s+)*-c\s+([\"'])(?:\s*{_IMPORT_STMT}\s*;?)+\s*\1\s*$"
)
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.|In \[\d+\]:)|(?:^|\s)[$#%]\s+\S")


def interactive_import_crash(facts: Facts, scan: ScanResult, crashed: bool) -> None:
    """Stage ``startup`` for a crash whose log ends with an echoed import statement (a ``>>>`` prompt's or a shell's
    ``python -c "import …"``) followed by no further prompt: the import was running when the process died. Only where
    no frame, traceback or progress says more."""
    if not crashed or facts.stage is not None or facts.exc_type or scan.progress > 0:
        return
    for info in scan.sources.values():
        last = None
        for i, line in enumerate(info.tail):
            if _REPL_IMPORT.search(line) or _SHELL_IMPORT.search(line):
                last = i
            elif last is not None and _PROMPT.search(line):
                last = None  # a later prompt: the import returned
        if last is not None and any(t.strip() for t in info.tail[last + 1 :]):
            facts.stage = "startup"
            return


# --- kjax12 ---
def script_not_collected(facts: Facts, frames: list[Frame], script: bool) -> None:
    """A file named like a test whose top level is a Python traceback's outermost frame ran as the main program
    (``_run_as_script``: ``python test_x.py``, a repro script): no runner imported it, so the ``[[frame_stage]]``
    entry that reads a test module's top level as pytest's collection does not hold there. The stage it set is
    withdrawn (left to the rule, the other frames and the message's words); a test module that pytest imported
    sits below importlib's or pytest's frames and keeps it."""
    if script and facts.stage == "collection" and facts.stage_frame is frames[0]:
        facts.stage, facts.stage_frame = None, None


COORDINATION_RPC = "cue:coordination_rpc"  # its words: the [[context]] of that fact (# --- kjax12 --- in 05-reasoning)


def coordination_rpc_in_log(facts: Facts, scan: ScanResult, reasoning: Reasoning) -> None:
    """XLA's coordination service names a failed RPC as a path ("RPC: /tensorflow.CoordinationService/RegisterTask"),
    which the message's path filter blanks: read it in the failing message, the log's error lines and each log's last
    lines as printed."""
    tails = [t for info in scan.sources.values() for t in list(info.tail)[-TAIL_READ:]]
    text = "\n".join([facts.message or "", facts.error_head, *tails])
    _cue_in(facts, reasoning, (COORDINATION_RPC,), text)


NNX_MUTATION_LIBRARY = "raiser:nnx_mutation_library"
# the packages an NNX object's mutation passes through before Flax's check raises (Flax itself, and JAX's
# transforms that call the program's or a library's function)
_NNX_CONDUIT = frozenset({"flax", "jax", "jaxlib", "numpy"})


def nnx_mutation_owner(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """Flax NNX's ``TraceContextError`` is raised by the objects' own ``__setattr__``/``__delattr__`` for the
    statement that assigned: the innermost frame outside Flax, JAX, NumPy and the standard library made the
    mutation. A library's frame there is that library's code (``raiser:nnx_mutation_library``)."""
    if (facts.exc_type or "").rsplit(".", 1)[-1] != "TraceContextError":
        return None
    owner = _nearest_outside(frames, reasoning.libraries, _NNX_CONDUIT)
    return NNX_MUTATION_LIBRARY if owner is not None and owner[0] == "library" else None


# --- klibbug: a library's own exception class ------------------------------------------------------------------
# Python's documented convention for a call's bad input is a TypeError ("an operation or function is applied to an
# object of inappropriate type") or a ValueError ("an argument that has the right type but an inappropriate value");
# libraries follow it at their entry checks (``raiser:library_entry``) or name a class of their own for the input
# (``ValidationError``, ``MisconfigurationException``, ``RepositoryNotFoundError``). A class of a library's own
# package that names neither -- TFLite's ``ConverterError``, Flax NNX's ``TraceContextError``, datasets'
# ``ExpectedMoreSplits``, coverage's ``CoverageException`` -- is that library reporting that its own operation (a
# conversion, a trace context, a verification of what it built) failed. Raised by a ``raise`` statement of that
# library's own code (the innermost frame, shown), with a class the [[exception]] catalogue does not name (the
# catalogue gives the documented classes their homes) and, where Python printed the class's module, a module of
# the raising package: ``raiser:library_own_error`` lifts the library a little. The generic runtime family such a
# class falls into was set for a bare RuntimeError, which frameworks raise for a caller's misuse too.
LIBRARY_OWN_ERROR = "raiser:library_own_error"


def library_own_error(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``raiser:library_own_error`` (klibbug, block comment above)."""
    if facts.raiser != "library" or not facts.library or not frames or not facts.exc_type:
        return None
    qualified = facts.exc_type
    short = qualified.rsplit(".", 1)[-1]
    if isinstance(getattr(builtins, short, None), type) or qualified in reasoning.exceptions:
        return None
    if short in reasoning.exceptions:
        return None
    refused_input = reasoning.patterns.get("input_error_class")
    if refused_input is None or refused_input.search(short):
        return None
    last = frames[-1]
    kind, pkg = frame_owner(last, reasoning.libraries)
    if kind != "library" or not pkg or not _RAISE_STATEMENT.match(last.code or ""):
        return None
    if "." in qualified and _package(qualified) != _package(pkg):
        return None  # another package's class (``raise requests.HTTPError``): not this library's own statement
    return LIBRARY_OWN_ERROR


# --- kland4: a constructor the main program's top level called before any progress ---------------------------------
def main_constructor_startup(facts: Facts, frames: list[Frame], reasoning: Reasoning, progressed: bool) -> None:
    """Stage ``startup`` where the outermost frame is the top level (``<module>``) of the program's own main script and
    the failing call is a constructor (``__init__``) that this top level called directly, before the log shows any
    progress: an object the script builds before its work (an autocast context, a model, a loader), as kstage reads the
    program's own constructors and kland2 an installed application's. A library's constructor called from inside any
    other function is not read (libraries build helper objects inside any call)."""
    if facts.stage is not None or progressed or len(frames) < 2 or frames[0].func != "<module>":
        return
    if frames[1].func != "__init__" or frame_owner(frames[0], reasoning.libraries)[0] != "user":
        return
    facts.stage, facts.stage_frame = "startup", frames[1]


# --- kland4: the main thread's asyncio event loop, unset ----------------------------------------------------------
# asyncio's default policy (asyncio/events.py, BaseDefaultEventLoopPolicy.get_event_loop) creates a loop for the main
# thread only while nobody has called set_event_loop() in it; asyncio.run() and asyncio.Runner (and test runners'
# loops built on them, unittest's IsolatedAsyncioTestCase) call set_event_loop(None) when they close.
# So "There is no current event loop in thread 'MainThread'" on Pythons before 3.14 means that an earlier asyncio.run()
# or loop fixture unset the loop and a later synchronous get_event_loop() found none: in a test run, another test or
# the tests' loop handling (the same test passes alone). Python 3.14 made get_event_loop() raise whenever no loop is
# current (the documentation's "Changed in version 3.14"): on 3.14 or later (the asyncio frame's path names the
# release), in a test or not, the calling code was written for the implicit loop of the older Pythons.
TEST_LOOP_UNSET = "cue:test_loop_unset"
LOOP_CHANGED_AT_314 = "cue:loop_changed_at_release"


def main_thread_loop_unset(facts: Facts, frames: list[Frame], reasoning: Reasoning) -> str | None:
    """``cue:loop_changed_at_release`` for the main thread's missing event loop raised by a Python 3.14+ asyncio (its
    frame's path names the release: every caller of get_event_loop() without a running loop fails there, in a test or
    not); else ``cue:test_loop_unset`` for the same words in a test run (an earlier loop unset it)."""
    words = reasoning.patterns.get("no_current_main_loop")
    if words is None or not words.search("\n".join((facts.message, facts.error_head, facts.lead))):
        return None
    release = reasoning.patterns.get("asyncio_release_path")
    if release is not None:
        for fr in frames:
            m = release.search(fr.file.replace("\\", "/"))
            if m and int(m["minor"]) >= 14:
                return LOOP_CHANGED_AT_314
    if "run:pytest" in facts.active or "run:tests" in facts.active:
        return TEST_LOOP_UNSET
    return None
