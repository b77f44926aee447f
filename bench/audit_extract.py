"""Does the parser read pasted logs as a person does? An audit of what the engine extracts (not a unit test).

Logs pasted into issue threads come quoted (``> ``), indented, glued to a REPL prompt, behind rank/host
prefixes (``[rank3]:``, ``0: ``, ``host-12:``), behind timestamps and log levels, with CRLF, ANSI colours,
chained exceptions. For each log this prints what the engine extracts — the failing exception and its
message, the raising frame and its owner, the stage the frames give — and runs a check that needs no
knowledge of any log: every line a reader would take for a Python exception line (``Name(Error|…): msg``
anywhere in the line, after whatever prefix) or for a traceback frame (``File "…", line N``) should be
covered by some parsed record (a traceback's frame or exception line, a bare exception line, a pytest
``E`` line or raise site, a thread dump's frame). It lists the logs whose final exception or raising frame
was not found although the text has one.

Only the thread corpus's ``train`` split and the kb fixtures are read: dev and calib logs are never opened.

    .venv/bin/python bench/audit_extract.py [--verbose] [--kb-only | --train-only]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
THREADS = REPO / "tests/data/corpus/threads"
KB = REPO / "tests/data/kb"

# What a reader takes for an exception line: a class named for what it is, maybe module-qualified, then
# ": " and a message, anywhere after a prefix (a quote, a prompt, a rank, a timestamp); warnings are not.
_READER_EXC = re.compile(
    r"(?:^|(?<=[\s>:\]|]))(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault))"
    r":\s(?P<msg>.*)"
)
_READER_ALONE = re.compile(r"^\W*(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt))\s*$")
# a Python frame (a SyntaxError's names no function), or IPython 8's (``File ~/x.py:12, in f``); C++ sources
# printed the same way by TVM (``File "x.cc", line 840``) are not Python's frames
_READER_FRAME = re.compile(
    r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?P<tail>.*)$|File (?P<ifile>[^\s"][^"]*?):(?P<iline>\d+), in '
)
# the code a traceback shows under a frame, and pytest's source lines, can spell an exception: not output
_CODE = re.compile(r"^\s*(?:raise|except|assert|return|def|class|if|elif|with|>|from|import)\b")


@dataclass
class ReaderView:
    """What a person sees: the exception lines and frames, by line number."""

    exceptions: list[tuple[int, str, str]] = field(default_factory=list)  # (line, class, message)
    frames: list[tuple[int, str, int]] = field(default_factory=list)  # (line, file, line in file)


def _python_frame(file: str, tail: str) -> bool:
    """A frame names its function (``, in f``; faulthandler's `` in f``); a SyntaxError's last frame names
    none, for a ``.py`` file or ``<string>``. TVM prints its C++ sources in the same form: not Python's."""
    return tail.startswith((", in ", " in ")) or (not tail.strip() and (file.endswith(".py") or file.startswith("<")))


def reader_view(text: str) -> ReaderView:
    view = ReaderView()
    after_frame = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", raw.split("\r")[-1] if raw.strip("\r") else raw)
        fm = _READER_FRAME.search(line)
        if fm:
            if fm["file"] and not _python_frame(fm["file"], fm["tail"]):
                continue
            view.frames.append((number, fm["file"] or fm["ifile"], int(fm["line"] or fm["iline"])))
            after_frame = True
            continue
        if after_frame:  # the code line a frame shows
            after_frame = False
            continue
        if _CODE.match(line) or "Warning" in line.split(":", 1)[0]:
            continue
        em = _READER_EXC.search(line) or _READER_ALONE.match(line)
        if em and "Error: 0" not in line:
            view.exceptions.append((number, em["type"], (em.groupdict().get("msg") or "").strip()))
    return view


@dataclass
class Audit:
    name: str
    engine: str
    frame: str
    owner: str
    stage: str
    final_missed: str = ""
    frame_missed: str = ""
    uncovered_exc: int = 0
    uncovered_frames: int = 0


@dataclass
class Extracted:
    """What the engine reads from one log: the failing exception, the raising frame and its owner, the stage."""

    exc: str
    message: str
    frame: tuple[str, int] | None
    func: str
    owner: str
    stage: str
    exc_lines: set[int]
    exc_seen: set[tuple[str, str]]
    frames_seen: set[tuple[str, int]]


def extract(text: str, label: dict) -> Extracted:
    from pytest_faildiag.engine.analyze import analyze, failure_point
    from pytest_faildiag.engine.reason import frame_owner, gather_facts, refine_profile
    from pytest_faildiag.parse import scan as scan_mod
    from pytest_faildiag.rules import load_ruleset

    rs = load_ruleset()
    scan_mod.MAX_TRACEBACKS = 10_000  # the audit wants every record, not the capped first and last
    res = scan_mod.ScanResult()
    scan_mod.scan_text(text, "log", rs, res)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        an = analyze(res, rs, exit_code=label.get("exit_code"), command=label.get("command"))
        an.profile.first_failure = failure_point(res, an.findings)
        facts = gather_facts(res, an, rs)
        refine_profile(an, facts, rs, progressed=res.progress > 0, scan=res)
    fr = facts.raise_frame
    owner = "-"
    if fr is not None:
        kind, lib = frame_owner(fr, rs.reasoning.libraries)
        owner = f"{kind}:{lib}" if lib else kind
    exc_lines: set[int] = set()
    exc_seen: set[tuple[str, str]] = set()
    frames_seen: set[tuple[str, int]] = set()
    for tb in res.tracebacks:
        if tb.exc_line is not None:
            exc_lines.add(tb.exc_line)
        if tb.exc_type:
            exc_seen.add((tb.exc_type.rsplit(".", 1)[-1], tb.message[:60].strip()))
        frames_seen.update((f.file, f.line) for f in tb.frames)
    for d in res.dumps:
        frames_seen.update((f.file, f.line) for f in d.frames)
    exc_lines.update(ln for _s, ln, _t in res.pytest_errors)
    exc_lines.update(ln for _s, ln, _site, _e in res.pytest_locations)
    return Extracted(
        facts.exc_type or "",
        facts.message,
        (fr.file, fr.line) if fr else None,
        fr.func if fr else "",
        owner,
        an.profile.stage,
        exc_lines,
        exc_seen,
        frames_seen,
    )


def audit_one(name: str, path: Path, label: dict) -> Audit:
    text = path.read_text("utf-8", "replace")
    ex = extract(text, label)
    fr = ex.frame
    out = Audit(
        name,
        f"{ex.exc}: {ex.message[:80]}" if ex.exc else "-",
        f"{fr[0]}:{fr[1]} in {ex.func}" if fr else "-",
        ex.owner,
        ex.stage,
    )
    view = reader_view(text)

    def covered_exc(ln: int, typ: str, msg: str) -> bool:
        return ln in ex.exc_lines or (typ.rsplit(".", 1)[-1], msg[:60].strip()) in ex.exc_seen

    def covered_frame(file: str, line: int) -> bool:
        return (file, line) in ex.frames_seen

    out.uncovered_exc = sum(not covered_exc(*e) for e in view.exceptions)
    out.uncovered_frames = sum(not covered_frame(f, n) for _ln, f, n in view.frames)
    if view.exceptions:
        ln, typ, msg = view.exceptions[-1]
        if not covered_exc(ln, typ, msg):
            out.final_missed = f"line {ln}: {typ}: {msg[:70]}"
        before = [f for f in view.frames if f[0] < ln]
        if before and not covered_frame(before[-1][1], before[-1][2]):
            out.frame_missed = f"line {before[-1][0]}: {before[-1][1]}:{before[-1][2]}"
    elif view.frames and not covered_frame(view.frames[-1][1], view.frames[-1][2]):
        out.frame_missed = f"line {view.frames[-1][0]}: {view.frames[-1][1]}:{view.frames[-1][2]}"
    return out


# How logs reach a thread: every line passed through one launcher, logger or paste. Each shape is one
# documented output format (Markdown's blockquote, torchrun's ``[rankN]:``/``--tee``'s ``[defaultN]:``,
# ``srun --label``'s ``N: ``, pdsh's ``host: ``, Open MPI's ``--tag-output``, Ray's ``(Actor pid=N)``,
# docker compose's ``name  | ``, Python logging's default-ish format, glog's header, ANSI colours, CRLF), or
# its carrier's envelope (``parse/carrier.py``: GitHub Actions' and GitLab's raw logs, ``kubectl logs --timestamps``,
# containerd's CRI file, Jenkins' Timestamper, Airflow's task log, journald's short form).
SHAPES: dict[str, Callable[[str], str]] = {
    "gha": lambda s: "2024-05-14T09:31:07.1234567Z " + s,
    "kubectl": lambda s: "2024-05-14T09:31:07.123456789Z " + s,
    "gitlab": lambda s: "2024-05-14T09:31:07.123456Z 01E " + s,
    "cri": lambda s: "2024-05-14T09:31:07.123456789+00:00 stderr F " + s,
    "jenkins": lambda s: "[2024-05-14T09:31:07.123Z] " + s,
    "obs": lambda s: "[ 1232s] " + s,
    "journald": lambda s: "May 14 09:31:07 node07 python3[48211]: " + s,
    "airflow": lambda s: "[2024-05-14, 09:31:07 UTC] {pod_manager.py:342} INFO - " + s,
    "quote": lambda s: "> " + s,
    "indent": lambda s: "    " + s,
    "crlf": lambda s: s + "\r",
    "ansi": lambda s: "\x1b[31m" + s + "\x1b[0m",
    "rank": lambda s: "[rank3]:" + s,
    "kubectl-prefix": lambda s: "[pod/trainer-worker-3/pytorch] " + s,
    "default": lambda s: "[default0]:" + s,
    "srun": lambda s: "0: " + s,
    "pdsh": lambda s: "host-12: " + s,
    "mpirun": lambda s: "[1,0]<stderr>:" + s,
    "ray": lambda s: "(RayWorker pid=4242) " + s,
    "compose": lambda s: "trainer-1  | " + s,
    "logging": lambda s: "2024-05-01 12:00:01,123 - ERROR - " + s,
    "glog": lambda s: "E0501 12:00:01.123456  1234 train.cc:12] " + s,
}


def shapes_audit(all_cases: list[tuple[str, Path, dict]], verbose: bool) -> None:
    """Each log re-shaped line by line: is the same exception and raising frame read as from the original?"""
    kept: dict[str, int] = dict.fromkeys(SHAPES, 0)
    base_n = 0
    for name, path, label in all_cases:
        text = path.read_text("utf-8", "replace")
        base = extract(text, label)
        if not base.exc:
            continue
        base_n += 1
        for shape, fn in SHAPES.items():
            got = extract("\n".join(fn(s) for s in text.splitlines()) + "\n", label)
            same = got.exc.rsplit(".", 1)[-1] == base.exc.rsplit(".", 1)[-1] and got.frame == base.frame
            kept[shape] += same
            if not same and verbose:
                print(f"  {shape:8} {name}: {base.exc} @ {base.frame} -> {got.exc} @ {got.frame}")
    print(
        f"shapes: {base_n} logs whose exception the engine reads; same exception and raising frame when every line is"
    )
    print("  " + ", ".join(f"{s} {k}/{base_n}" for s, k in kept.items()))


def cases(which: str) -> list[tuple[str, Path, dict]]:
    out: list[tuple[str, Path, dict]] = []
    if which in ("all", "train"):
        split = json.loads((THREADS / "split.json").read_text())["split"]
        for name, s in sorted(split.items()):
            if s != "train":  # dev and calib logs are never opened
                continue
            log = THREADS / f"{name}.log"
            if log.is_file():
                out.append((f"train:{name}", log, json.loads(log.with_suffix(".json").read_text())))
    if which in ("all", "kb"):
        for log in sorted(KB.glob("**/*.log")):
            meta = log.with_suffix(".json")
            label = json.loads(meta.read_text()) if meta.is_file() else {}
            out.append((f"kb:{log.parent.name}/{log.stem}", log, label))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", "-v", action="store_true", help="print what the engine extracts for every log")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--kb-only", action="store_const", dest="which", const="kb")
    g.add_argument("--train-only", action="store_const", dest="which", const="train")
    ap.add_argument("--shapes", action="store_true", help="also re-shape each log as launchers and pastes do")
    a = ap.parse_args(argv)
    selected = cases(a.which or "all")
    audits = [audit_one(n, p, lab) for n, p, lab in selected]
    for au in audits:
        missed = au.final_missed or au.frame_missed
        if a.verbose or missed:
            mark = "✗ " if missed else "  "
            print(f"{mark}{au.name}\n    engine: {au.engine} | frame {au.frame} ({au.owner}) | stage {au.stage}")
            if au.final_missed:
                print(f"    final exception not parsed: {au.final_missed}")
            if au.frame_missed:
                print(f"    raising frame not parsed:   {au.frame_missed}")
    for group in ("train", "kb"):
        sel = [au for au in audits if au.name.startswith(group + ":")]
        if not sel:
            continue
        print(
            f"{group}: {len(sel)} logs; final exception missed {sum(bool(x.final_missed) for x in sel)}, "
            f"raising frame missed {sum(bool(x.frame_missed) for x in sel)}, "
            f"uncovered exception lines {sum(x.uncovered_exc for x in sel)} "
            f"(in {sum(x.uncovered_exc > 0 for x in sel)} logs), "
            f"uncovered frames {sum(x.uncovered_frames for x in sel)} (in {sum(x.uncovered_frames > 0 for x in sel)} logs)"
        )
    if a.shapes:
        shapes_audit(selected, a.verbose)
    return 0


if __name__ == "__main__":
    sys.path.append(str(REPO))  # PYTHONPATH first: the audit can read another checkout's parser
    sys.exit(main())
