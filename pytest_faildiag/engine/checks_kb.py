"""Validation checks for the knowledge-base packs beyond PyTorch on CUDA: MindSpore and XLA memory
figures, and which pytest plugin owns a command-line option. Like the built-in checks they read the
evidence only, so they run the same on a stored log as on a live failure.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import RootCause, ValidationCheck
from .checks import GIB_PER_UNIT
from .validate import CheckContext, CheckFn

_GIB = float(2**30)


def _texts_of_rule(ctx: CheckContext, finding: dict[str, Any]) -> list[str]:
    """The finding's own line first, then the other lines the same rule matched (numbers may sit there)."""
    texts = [finding.get("text", "")]
    texts += [f.text for f in ctx.scan.findings if f.rule.id == finding.get("rule") and f.text not in texts]
    return texts


def ms_oom_numbers(text: str) -> dict[str, float]:
    """Sizes in a MindSpore device-memory error, in GiB: request (the failed allocation), total, used."""
    out: dict[str, float] = {}
    for key, pat in (
        ("request", r"(?:alloc size|Request memory size)\s*:?\s*(\d+)\s*B?"),
        ("total", r"total mem size\s*:?\s*(\d+)"),
        ("used", r"TotalUsedMemStatistics\s*:?\s*(\d+)"),
    ):
        m = re.search(pat, text)
        if m:
            out[key] = int(m.group(1)) / _GIB
    return out


def _ms_oom_size(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    nums: dict[str, float] = {}
    for t in _texts_of_rule(ctx, finding):
        for k, v in ms_oom_numbers(t).items():
            nums.setdefault(k, v)
    if "request" not in nums:
        return ValidationCheck("ms-oom-size", "skipped", "the message carries no allocation size")
    req = nums["request"]
    if "total" in nums:
        detail = f"asked for {req:.2f} GiB of a {nums['total']:.2f} GiB pool"
        if "used" in nums:
            detail += f" with {nums['used']:.2f} GiB in use"
        if req > nums["total"]:
            return ValidationCheck(
                "ms-oom-size",
                "passed",
                detail + ": one request is larger than the whole pool (batch/sequence too large for one device)",
            )
        return ValidationCheck("ms-oom-size", "passed", detail + ": the pool was filled by earlier allocations")
    return ValidationCheck("ms-oom-size", "passed", f"a request of {req:.2f} GiB could not be served")


_BUFFER_TOTAL = re.compile(r"total allocation:\s*([\d.]+)\s*([KMGT]i?B|B)")


def _xla_oom_size(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    req = None
    for t in _texts_of_rule(ctx, finding):
        m = re.search(r"allocate (\d+) bytes", t)
        if m:
            req = int(m.group(1)) / _GIB
            break
    if req is None:
        return ValidationCheck("xla-oom-size", "skipped", "the message carries no allocation size")
    total = None
    for info in ctx.scan.sources.values():  # BufferAssignment stats are printed right after the error
        for line in info.tail:
            m = _BUFFER_TOTAL.search(line)
            if m:
                total = float(m.group(1)) * GIB_PER_UNIT.get(m.group(2).upper(), 1.0)
    detail = f"XLA asked for {req:.2f} GiB in one allocation"
    if total is not None:
        detail += f"; the program's buffers total {total:.2f} GiB"
    return ValidationCheck("xla-oom-size", "passed", detail)


# option (as typed) → the plugin that provides it
_OPTION_PLUGINS = {
    "--cov": "pytest-cov",
    "--cov-report": "pytest-cov",
    "--cov-fail-under": "pytest-cov",
    "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist",
    "--timeout": "pytest-timeout",
    "--timeout-method": "pytest-timeout",
    "--reruns": "pytest-rerunfailures",
    "--reruns-delay": "pytest-rerunfailures",
    "--benchmark-only": "pytest-benchmark",
    "--benchmark-skip": "pytest-benchmark",
    "--html": "pytest-html",
    "--self-contained-html": "pytest-html",
    "--asyncio-mode": "pytest-asyncio",
    "--randomly-seed": "pytest-randomly",
    "-p": "",
    "--mypy": "pytest-mypy",
    "--flake8": "pytest-flake8",
    "--ds": "pytest-django",
    "--reuse-db": "pytest-django",
    "--json-report": "pytest-json-report",
    "--alluredir": "allure-pytest",
    "--count": "pytest-repeat",
    "--forked": "pytest-forked",
    "--instafail": "pytest-instafail",
    "--snapshot-update": "syrupy",
    "--hypothesis-show-statistics": "hypothesis",
}


def _pytest_option_plugin(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck:
    groups = finding.get("groups") or {}
    args = (groups.get("args") or groups.get("args2") or "").split()
    if groups.get("marker"):
        return ValidationCheck(
            "pytest-option-plugin",
            "passed",
            f"marker '{groups['marker']}' is not registered (with --strict-markers every marker must be declared)",
        )
    if not args:
        return ValidationCheck("pytest-option-plugin", "skipped", "no unrecognised option in the message")
    for a in args:
        opt = a.split("=", 1)[0]
        plugin = _OPTION_PLUGINS.get(opt)
        if plugin:
            hint = f"pip install {plugin} (it provides {opt})"
            if hint not in cause.fix_hints:
                cause.fix_hints.insert(0, hint)
            return ValidationCheck(
                "pytest-option-plugin", "passed", f"{opt} is an option of {plugin}, which is not active in this run"
            )
    return ValidationCheck(
        "pytest-option-plugin",
        "failed",
        f"{' '.join(args)[:80]} is not an option of a well-known plugin: likely a typo or a wrong runner command",
    )


CHECKS: dict[str, CheckFn] = {
    "ms-oom-size": _ms_oom_size,
    "xla-oom-size": _xla_oom_size,
    "pytest-option-plugin": _pytest_option_plugin,
}
