"""Built-in validation checks: each reads numbers or structure out of the evidence (or, for a live
failure, the machine) and says whether it supports the cause. ``CHECKS`` at the end names them; rule
files refer to those names. Environment-lock checks live in ``checks_env``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from ..model import Evidence, RootCause, ValidationCheck
from .validate import CheckContext, CheckFn, listed

_SIZE = r"([\d.]+)\s*([KMGT]?i?B|bytes)"
GIB_PER_UNIT = {  # a size in these units times this is GiB (the memory checks' common unit)
    "B": 1 / 2**30,
    "BYTES": 1 / 2**30,
    "KB": 1 / 2**20,
    "KIB": 1 / 2**20,
    "MB": 1 / 2**10,
    "MIB": 1 / 2**10,
    "GB": 1.0,
    "GIB": 1.0,
    "TB": 1024.0,
    "TIB": 1024.0,
}


def _gib(value: str, unit: str) -> float:
    return float(value) * GIB_PER_UNIT.get(unit.upper(), 1.0)


def oom_numbers(text: str) -> dict[str, float]:
    """Numbers of a CUDA/NPU out-of-memory message, in GiB: alloc, total, free, process, allocated, reserved_unallocated."""
    pats = {
        "alloc": r"Tried to allocate " + _SIZE,
        "total": r"total capacity of " + _SIZE,
        "free": r"of which " + _SIZE + r" is free",
        "process": r"this process has " + _SIZE + r" memory in use",
        "allocated": r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch",
        "reserved_unallocated": r"and " + _SIZE + r" is reserved by PyTorch but unallocated",
    }
    out = {}
    for key, pat in pats.items():
        m = re.search(pat, text)
        if m:
            out[key] = _gib(m.group(1), m.group(2))
    # older format: "(GPU 0; 15.78 GiB total capacity; 14.2 GiB already allocated; 10.19 MiB free; 14.5 GiB reserved in total by PyTorch)"
    for key, pat in {
        "total": _SIZE + r" total capacity",
        "allocated": _SIZE + r" already allocated",
        "free": _SIZE + r" free",
        "reserved": _SIZE + r" reserved in total",
    }.items():
        if key not in out:
            m = re.search(pat, text)
            if m:
                out[key] = _gib(m.group(1), m.group(2))
    if "reserved" in out and "allocated" in out and "reserved_unallocated" not in out:
        out["reserved_unallocated"] = max(0.0, out["reserved"] - out["allocated"])
    return out


def _fmt(g: float) -> str:
    return f"{g:.1f} GiB" if g >= 0.1 else f"{g * 1024:.0f} MiB"


def _oom_text(ctx: CheckContext, finding: dict[str, Any]) -> dict[str, float]:
    nums = oom_numbers(finding.get("text", ""))
    if len(nums) < 2:  # the numbers may sit on another line of the same message
        for f in ctx.scan.findings:
            if f.rule.id == finding.get("rule"):
                more = oom_numbers(f.text)
                if len(more) > len(nums):
                    nums = more
    return nums


def _oom_single(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    n = _oom_text(ctx, finding)
    if "alloc" not in n or ("free" not in n and "total" not in n):
        return ValidationCheck("oom-single-allocation", "skipped", "the message carries no allocation/free numbers")
    free, total = n.get("free", 0.0), n.get("total", 0.0)
    detail = f"asked for {_fmt(n['alloc'])}; {_fmt(free)} free of {_fmt(total)} total"
    if n["alloc"] > total > 0 or (n["alloc"] > free and n["alloc"] > 0.25 * max(total, 1e-9)):
        return ValidationCheck(
            "oom-single-allocation", "passed", detail + ": one request larger than what the device can give"
        )
    return ValidationCheck("oom-single-allocation", "failed", detail + ": the request itself is small")


def _oom_growth(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    n = _oom_text(ctx, finding)
    if "allocated" not in n or "total" not in n:
        return ValidationCheck("oom-growth", "skipped", "the message does not say how much PyTorch had allocated")
    share = n["allocated"] / n["total"] if n["total"] else 0
    detail = f"{_fmt(n['allocated'])} of {_fmt(n['total'])} already allocated by PyTorch ({share:.0%})"
    if share >= 0.6 and n.get("alloc", 0) < 0.25 * n["total"]:
        return ValidationCheck(
            "oom-growth", "passed", detail + ": the device was filled by live tensors before a modest request"
        )
    return ValidationCheck("oom-growth", "failed", detail)


def _oom_frag(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    n = _oom_text(ctx, finding)
    if "reserved_unallocated" not in n or "alloc" not in n:
        return ValidationCheck("oom-fragmentation", "skipped", "no reserved-but-unallocated figure in the message")
    detail = f"{_fmt(n['reserved_unallocated'])} reserved but unallocated vs a request of {_fmt(n['alloc'])}"
    if n["reserved_unallocated"] >= n["alloc"] and n["reserved_unallocated"] > 0.05 * n.get("total", 1):
        return ValidationCheck("oom-fragmentation", "passed", detail + ": the memory exists but is fragmented")
    return ValidationCheck("oom-fragmentation", "failed", detail)


def _oom_other(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    n = _oom_text(ctx, finding)
    if not {"total", "free", "process"} <= n.keys():
        return ValidationCheck("oom-other-process", "skipped", "the message lacks total/free/process figures")
    others = n["total"] - n["free"] - n["process"]
    detail = f"{_fmt(max(others, 0))} held by other processes"
    if others > 0.2 * n["total"]:
        return ValidationCheck("oom-other-process", "passed", detail)
    return ValidationCheck("oom-other-process", "failed", detail)


def memory_trend(samples: list[float]) -> tuple[float, float, float] | None:
    """(first, last, increasing share) for a memory series, or None when too short to say."""
    if len(samples) < 3:
        return None
    ups = sum(1 for a, b in zip(samples, samples[1:], strict=False) if b > a)
    return samples[0], samples[-1], ups / (len(samples) - 1)


def _memory_growth(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    timeline = ctx.context.get("timeline") or []
    samples = [float(s.get("rss_gib", 0)) + float(s.get("gpu_gib", 0)) for s in timeline if isinstance(s, dict)]
    where = "the resource timeline"
    if len(samples) < 3:
        samples = [v for v, _, _ in ctx.scan.mem_series]
        where = "memory figures printed by the run"
    trend = memory_trend(samples)
    if trend is None:
        return ValidationCheck(
            "memory-growth", "skipped", "no memory series in the evidence (run under `faildiag run` to record one)"
        )
    first, last, ups = trend
    per = (last - first) / (len(samples) - 1)
    detail = f"{where}: {_fmt(first)} → {_fmt(last)} over {len(samples)} samples ({_fmt(abs(per))} per sample), rising in {ups:.0%} of steps"
    if last > first * 1.5 and ups >= 0.6:
        return ValidationCheck("memory-growth", "passed", detail)
    return ValidationCheck("memory-growth", "failed", detail)


def _killed_after_progress(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    trend = memory_trend([v for v, _, _ in ctx.scan.mem_series])
    if trend and trend[1] > trend[0] * 1.5 and trend[2] >= 0.6:
        return ValidationCheck(
            "killed-after-progress",
            "failed",
            "memory kept growing until the kill: memory explains it better than a time limit",
        )
    if ctx.scan.tracebacks or ctx.scan.findings:
        return ValidationCheck("killed-after-progress", "skipped", "other errors in the logs")
    return ValidationCheck("killed-after-progress", "passed", "no error was printed before the kill")


def _user_frame(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    from .analyze import primary_tracebacks  # a launcher's re-raise is not where the user's code failed

    for tb in [*reversed(primary_tracebacks(ctx.scan)), *reversed(ctx.scan.tracebacks)]:
        fr = tb.user_frame
        if fr:
            where = f"{fr.file}:{fr.line} in {fr.func}"
            if not any(e.excerpt.startswith("raised from ") for e in cause.evidence):
                cause.evidence.append(
                    Evidence("direct", tb.source, f"raised from {where}" + (f": {fr.code}" if fr.code else ""), tb.line)
                )
            return ValidationCheck("user-frame", "passed", f"the failing call is in user code at {where}")
    return None


def _launch_blocking(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    env = (ctx.lock or {}).get("env", {}) if isinstance(ctx.lock, dict) else {}
    if str(env.get("CUDA_LAUNCH_BLOCKING", "")) == "1":
        return ValidationCheck(
            "launch-blocking", "passed", "CUDA_LAUNCH_BLOCKING=1 was set: the reported frame is the failing launch"
        )
    return ValidationCheck(
        "launch-blocking",
        "skipped",
        "CUDA_LAUNCH_BLOCKING was not set: kernel errors are reported asynchronously, so the Python stack may point at a later call",
    )


def _index_assert(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    pat = re.compile(
        r"index out of bounds|ind >= ?0 && ind < |srcIndex < srcSelectDimSize|t >= 0 && t < n_classes|idx_dim >= 0 && idx_dim < index_size|index out of range"
    )
    for f in ctx.scan.findings:
        if pat.search(f.text):
            return ValidationCheck(
                "index-assert", "passed", f"the kernel assertion is an index bounds check: {f.text[:160]}"
            )
    return ValidationCheck("index-assert", "skipped", "no kernel assertion text in the logs")


def _nan_first(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    nan = [f for f in ctx.scan.findings if f.rule.id == finding.get("rule")]
    if not nan:
        return None
    first = nan[0]
    if first.line <= 3:
        return ValidationCheck(
            "nan-first-step",
            "passed",
            f"non-finite from the first logged step ({first.source}:{first.line}): an invalid operation, not slow divergence",
        )
    return ValidationCheck(
        "nan-first-step",
        "failed",
        f"finite for {first.line - 1} lines before turning non-finite: divergence (learning rate, fp16 overflow) is as likely",
    )


def _flight(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    dumps = ctx.context.get("flight_recorder") or []
    if not dumps:
        return ValidationCheck(
            "flight-recorder",
            "skipped",
            "no NCCL flight-recorder dump found (set TORCH_NCCL_DUMP_ON_TIMEOUT=1 and TORCH_NCCL_TRACE_BUFFER_SIZE)",
        )
    parts = []
    stuck = False
    for d in dumps:
        first = d.get("first_incomplete")
        if first:
            stuck = True
            parts.append(
                f"rank {d.get('rank', '?')}: {first['op']} seq {first['seq']} {first['state']} (last completed seq {d.get('last_completed')}) from {first.get('where', '?')}"
            )
        else:
            parts.append(f"rank {d.get('rank', '?')}: every recorded collective completed")
    return ValidationCheck("flight-recorder", "passed" if stuck else "failed", "; ".join(parts))


def _flight_not_started(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    dumps = ctx.context.get("flight_recorder") or []
    firsts = [d["first_incomplete"] for d in dumps if d.get("first_incomplete")]
    if not firsts:
        return ValidationCheck(
            "flight-recorder-not-started", "skipped", "no incomplete collective in a flight-recorder dump"
        )
    if all(f["state"] == "scheduled" for f in firsts):
        return ValidationCheck(
            "flight-recorder-not-started",
            "passed",
            "the timed-out collective never started on the GPU: work queued before it did not finish",
        )
    return ValidationCheck("flight-recorder-not-started", "failed", "the collective started and waited for peers")


def _rank_divergence(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    where: dict[str, str] = {}
    for d in ctx.scan.dumps:
        inner = d.innermost
        if d.rank is not None and inner:
            where.setdefault(d.rank, f"{inner[0].func} ({Path(inner[0].file).name}:{inner[0].line})")
    if len(where) >= 2:
        distinct = set(where.values())
        detail = "; ".join(f"rank {r}: {w}" for r, w in sorted(where.items()))
        return ValidationCheck("rank-divergence", "passed" if len(distinct) > 1 else "failed", detail)
    errs = ctx.scan.rank_first_error
    if len(errs) >= 1:
        detail = "errors from " + "; ".join(f"rank {r}: {v[2][:100]}" for r, v in sorted(errs.items()))
        earlier = _unnamed_error_before(ctx, errs)
        if earlier:  # first: the terminal shows the start of a check's detail
            detail = f"{earlier}; then the {detail}"
        return ValidationCheck("rank-divergence", "passed" if len(errs) == 1 or earlier else "skipped", detail)
    return ValidationCheck("rank-divergence", "skipped", "the logs do not tell ranks apart")


def _unnamed_error_before(ctx: CheckContext, errs: dict[str, tuple[str, int, str, str | None]]) -> str | None:
    """A traceback no rank prefix names, printed in a ranks' log before the first rank's own error, whose
    exception is not a collective's fallout: the process that failed first and never joined the collective
    (a caught and printed error, a rank whose output has no prefix). Launchers prefix only what they relay;
    ``traceback.print_exc()`` in a rank's own code is not relayed as its rank's."""
    fallout = ctx.patterns.get("collective_fallout")  # a rank's error because a peer or the transport failed
    firsts: dict[str, int] = {}
    for source, line, _text, _ts in errs.values():
        firsts[source] = min(firsts.get(source, line), line)
    for tb in ctx.scan.tracebacks:
        first = firsts.get(tb.source)
        at = tb.exc_line or tb.line
        if tb.rank is not None or tb.chained or not tb.exc_type or first is None or at >= first:
            continue
        if fallout is not None and fallout.search(tb.headline):
            continue
        fr = tb.user_frame or (tb.frames[-1] if tb.frames else None)
        where = f" at {Path(fr.file).name}:{fr.line}" if fr is not None else ""
        return (
            f"before the ranks' errors a process the log does not name raised {tb.headline[:120]}{where} "
            f"({tb.source}:{at}): a peer that failed and never joined the collective"
        )
    return None


def _native_frame(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    d = ctx.scan.framed_dump()
    if d is not None:
        fr = d.innermost[0]
        return ValidationCheck(
            "native-frame", "passed", f"faulthandler shows the crash under {fr.func} ({fr.file}:{fr.line})"
        )
    return ValidationCheck(
        "native-frame", "skipped", "no faulthandler dump: the Python frame that called native code is unknown"
    )


def _oom_killer(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    for f in ctx.scan.findings:
        if re.search(r"Out of memory: Killed process|oom-kill|oom_reaper|invoked oom-killer", f.text):
            return ValidationCheck("oom-killer", "passed", f"kernel log: {f.text[:160]}")
    measured = ctx.context.get("oom_killer")  # `faildiag run` read the counters before and after the run
    if isinstance(measured, dict) and measured.get("killed") is not None:
        return ValidationCheck(
            "oom-killer", "passed" if measured["killed"] else "failed", str(measured.get("detail", ""))
        )
    if not ctx.probe_machine:
        return ValidationCheck(
            "oom-killer", "skipped", "stored logs: the machine's OOM-killer counters are not available here"
        )
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        m = re.search(r"oom_kill (\d+)", text)
        if m:
            n = int(m.group(1))
            return ValidationCheck("oom-killer", "passed" if n > 0 else "failed", f"{path}: oom_kill {n}")
    return ValidationCheck("oom-killer", "skipped", "no readable cgroup memory.events or kernel log")


def _module_installed(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    module = (finding.get("groups") or {}).get("module")
    if not module:
        return ValidationCheck("module-installed", "skipped", "no module name in the message")
    lock = ctx.lock if isinstance(ctx.lock, dict) else {}
    dists = {k.lower().replace("_", "-") for k in (lock.get("packages") or {})}
    top = module.split(".")[0]
    if dists:
        present = top.lower().replace("_", "-") in dists
        return ValidationCheck(
            "module-installed",
            "failed" if present else "passed",
            f"the environment lock {'lists' if present else 'does not list'} a distribution named {top}",
        )
    if not ctx.probe_machine:
        return ValidationCheck("module-installed", "skipped", "stored logs and no environment lock")
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    return ValidationCheck(
        "module-installed",
        "failed" if found else "passed",
        f"{top} is {'importable' if found else 'not importable'} by this interpreter",
    )


_FIXTURE_PLUGINS = {
    "mocker": "pytest-mock",
    "benchmark": "pytest-benchmark",
    "httpx_mock": "pytest-httpx",
    "requests_mock": "requests-mock",
    "event_loop": "pytest-asyncio",
    "aioresponses": "aioresponses",
    "freezer": "pytest-freezer",
    "snapshot": "syrupy",
    "celery_app": "celery",
    "django_db_setup": "pytest-django",
    "db": "pytest-django",
    "client": "pytest-django / pytest-flask",
    "xprocess": "pytest-xprocess",
    "datadir": "pytest-datadir",
    "faker": "faker",
    "respx_mock": "respx",
    "cov": "pytest-cov",
    # pytest's own fixtures, by the release that added each (pytest's changelog): one reported missing means a
    # pytest older than that release
    "caplog": "-U 'pytest>=3.3'",
    "capsysbinary": "-U 'pytest>=3.3'",
    "capfdbinary": "-U 'pytest>=3.3'",
    "tmp_path": "-U 'pytest>=3.9'",
    "tmp_path_factory": "-U 'pytest>=3.9'",
    "record_testsuite_property": "-U 'pytest>=4.5'",
}


def _fixture_plugin(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    name = (finding.get("groups") or {}).get("fixture", "")
    plugin = _FIXTURE_PLUGINS.get(name)
    if plugin:
        cause.fix_hints.insert(0, f"pip install {plugin} (it provides the '{name}' fixture)")
        return ValidationCheck("fixture-plugin", "passed", f"'{name}' comes with `pip install {plugin}`")
    return ValidationCheck(
        "fixture-plugin", "failed", f"'{name}' is not a fixture of a well-known plugin: likely the project's own"
    )


def _prefix(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    for f in ctx.scan.findings:
        if "module." in f.text and ("Missing key" in f.text or "Unexpected key" in f.text):
            return ValidationCheck(
                "state-dict-prefix", "passed", "keys differ by the 'module.' prefix that DataParallel/DDP adds"
            )
    if any("size mismatch for" in f.text for f in ctx.scan.findings):
        sizes = [f.text for f in ctx.scan.findings if "size mismatch for" in f.text][:1]
        return ValidationCheck("state-dict-prefix", "failed", f"names match but shapes differ: {sizes[0][:200]}")
    return None


def _stuck(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    stuck = ctx.context.get("stuck") or []
    if not stuck:
        return ValidationCheck("stuck-frame", "skipped", "no thread dump in the evidence")
    return ValidationCheck("stuck-frame", "passed", "; ".join(s["detail"] for s in stuck[:4]))


# A float literal as Python, NumPy and unittest print it, optionally wrapped in NumPy's scalar repr
# (``np.float64(0.30000000000000004)``, ``float32(0.3)``); ``(a + b)`` is pytest's rendering of an
# arithmetic expression of literals (``assert (0.1 + 0.2) == 0.3``).
_FLOAT_LIT = r"[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
_FLOAT_ONE = re.compile(
    rf"^(?:(?:np|numpy)\.)?(?P<wrap>float(?:16|32|64)|double|single)?\(?\s*(?P<v>{_FLOAT_LIT})\s*\)?$"
)
_FLOAT_EXPR = re.compile(rf"^\(\s*(?P<a>{_FLOAT_LIT})\s*(?P<op>[-+*/])\s*(?P<b>{_FLOAT_LIT})\s*\)$")
# float64 rounding: a relative difference far below any real change of a result (one ulp is 2.2e-16);
# float32 values (printed as NumPy float32 scalars) round at 2**-24
FLOAT64_ROUNDING = 1e-9
FLOAT32_ROUNDING = 4 * 2.0**-24
FLOAT16_ROUNDING = 4 * 2.0**-11


def _float_value(text: str) -> tuple[float, float] | None:
    """A printed float (or a literal arithmetic expression pytest shows unevaluated) and the relative
    rounding of its type (float64 unless NumPy's repr names float32/float16); None when not a number."""
    text = text.strip()
    m = _FLOAT_EXPR.match(text)
    if m:
        a, b = float(m.group("a")), float(m.group("b"))
        op = m.group("op")
        if op == "/" and b == 0:
            return None
        value = a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b
        return value, FLOAT64_ROUNDING
    m = _FLOAT_ONE.match(text)
    if not m:
        return None
    wrap = m.group("wrap") or ""
    tol = (
        FLOAT16_ROUNDING
        if wrap == "float16"
        else FLOAT32_ROUNDING
        if wrap in {"float32", "single"}
        else FLOAT64_ROUNDING
    )
    return float(m.group("v")), tol


def _split_items(text: str) -> list[str]:
    """The items of a printed list or tuple body, split at top-level commas."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur)
    return [i.strip() for i in items]


def float_rounding_pairs(lhs: str, rhs: str) -> list[tuple[float, float]] | None:
    """Compare the two sides of a failed equality as numbers: the pairs that differ only by floating-point
    rounding (relative difference at most ``FLOAT64_ROUNDING``, ``FLOAT32_ROUNDING`` for a float32,
    ``FLOAT16_ROUNDING`` for a float16, or both NaN, which never equals itself), or None when a side is not
    numbers, the sides differ in length, or any pair differs by more than rounding (a real difference: the
    result, not the comparison)."""
    left, right = _split_items(lhs), _split_items(rhs)
    if not left or len(left) != len(right):
        return None
    close: list[tuple[float, float]] = []
    for a_text, b_text in zip(left, right, strict=True):
        a, b = _float_value(a_text), _float_value(b_text)
        if a is None or b is None:
            return None
        (x, x_tol), (y, y_tol) = a, b
        if x != x and y != y:  # NaN on both sides
            close.append((x, y))
            continue
        if x == y:
            continue
        scale = max(abs(x), abs(y))
        tol = max(x_tol, y_tol)
        if scale == float("inf") or abs(x - y) > tol * scale:
            return None
        close.append((x, y))
    return close or None


def _float_rounding(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    groups = finding.get("groups") or {}
    lhs, rhs = groups.get("lhs") or "", groups.get("rhs") or ""
    if not lhs or not rhs:
        return ValidationCheck("float-rounding", "skipped", "the failed comparison's two sides were not captured")
    pairs = float_rounding_pairs(lhs, rhs)
    if pairs is None:
        # the premise of the cause (two floats equal up to rounding) is refuted, not merely unsupported: the
        # validator drops the cause below the assertion's other homes
        return ValidationCheck(
            "float-rounding",
            "failed",
            f"{lhs[:60]} and {rhs[:60]} differ by more than rounding (or are not numbers): the value itself differs",
            refutes=True,
        )
    x, y = pairs[0]
    if x != x:
        detail = "NaN compared with NaN: NaN never equals itself"
    else:
        rel = abs(x - y) / max(abs(x), abs(y))
        detail = f"{x!r} and {y!r} differ by a relative {rel:.1e}: floating-point rounding, compared exactly"
    return ValidationCheck("float-rounding", "passed", detail)


def _code_changed(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Which side of a failing test changed since the last green run, where the test passed (``code_changes``
    of the context, given by the pytest plugin): the code it tests changed and the test did not → supports
    the code (``model``) and contradicts the test (``test_code``); only the test changed (its file or a
    conftest) → the other way round. Both or neither: nothing to say. The check a maintainer makes first
    about a red test ("did the test change, or the code?"), answered from git without a rerun."""
    info = ctx.context.get("code_changes")
    if not isinstance(info, dict) or cause.category not in ("model", "test_code"):
        return None
    rev = str(info.get("revision") or "")[:12]
    code = [str(p) for p in info.get("code") or []]
    test_side = bool(info.get("test_changed"))
    if bool(code) == test_side:
        return None
    name = "code-changed-since-green"
    if code:
        detail = f"the test is unchanged since the last green run at {rev}; the code changed: {listed(code)}"
        return ValidationCheck(name, "passed" if cause.category == "model" else "failed", detail)
    tests = [str(p) for p in info.get("tests") or []]
    detail = f"only the tests changed since the last green run at {rev}: {listed(tests)}; the code did not"
    return ValidationCheck(name, "passed" if cause.category == "test_code" else "failed", detail)


CHECKS: dict[str, CheckFn] = {
    "oom-single-allocation": _oom_single,
    "oom-growth": _oom_growth,
    "oom-fragmentation": _oom_frag,
    "oom-other-process": _oom_other,
    "memory-growth": _memory_growth,
    "killed-after-progress": _killed_after_progress,
    "user-frame": _user_frame,
    "launch-blocking": _launch_blocking,
    "index-assert": _index_assert,
    "nan-first-step": _nan_first,
    "flight-recorder": _flight,
    "flight-recorder-not-started": _flight_not_started,
    "rank-divergence": _rank_divergence,
    "native-frame": _native_frame,
    "oom-killer": _oom_killer,
    "module-installed": _module_installed,
    "fixture-plugin": _fixture_plugin,
    "state-dict-prefix": _prefix,
    "stuck-frame": _stuck,
    "float-rounding": _float_rounding,
    "code-changed-since-green": _code_changed,
}
