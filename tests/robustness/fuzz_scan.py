"""Fuzz targets: the log scanner, and ``faildiag report`` / ``faildiag fix`` over malformed snapshots.

    python tests/robustness/fuzz_scan.py -atheris_runs=100000         # coverage-guided, with atheris installed
    python tests/robustness/fuzz_scan.py --runs 2000                  # without atheris: a hypothesis-driven loop
    python tests/robustness/fuzz_scan.py --target snapshot --runs 300

The contract each target checks: bad input gives a result or a one-line error, never an exception out of
the parser and never the CLI's last-resort "internal error" line (that line means an exception escaped a
command). The inputs are seeded with the shapes real logs take (tracebacks, rank prefixes, dumps, ANSI,
workflow commands), so random mutations land near the parser's branches, not only in its "no match" path.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

SEEDS = [
    b"Traceback (most recent call last):\n",
    b'  File "/w/train.py", line 3, in <module>\n',
    b"    main()\n",
    b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)\n",
    b"[rank1]: ",
    b"NCCL WARN Call to connect returned Connection refused\n",
    b"\r",
    b"\x1b[31m",
    b"\x1b]8;;http://x\x07",
    b"During handling of the above exception, another exception occurred:\n",
    b"The above exception was the direct cause of the following exception:\n",
    b"Fatal Python error: Segmentation fault\n",
    b"Thread 0x00007f3a (most recent call first):\n",
    b'  File "/w/a.py", line 9 in run\n',
    b"~~~~~~~~ Stack of MainThread (140) ~~~~~~~~\n",
    b"E   assert 1 == 2\n",
    b"Root Cause (first observed failure):\n",
    b"  rank      : 1 (local_rank: 1)\n",
    b"  exitcode  : -9 (pid: 7)\n",
    b"::error::injected\n",
    b"::stop-commands::x\n",
    b"\x00",
    b"\xff\xfe",
    b"\xe2\x82",
    b"mem: 15.2 GiB\n",
    b"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970\n",
    b"Killed\n",
    b"E       RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n",
    b"x" * 5000,
    b"test_a.py:12: AssertionError\n",
    b"FAILED test_a.py::test_x - KeyError: 'a'\n",
]

# nested deeper than Python's JSON parser goes: json.loads raises RecursionError, not ValueError
DEEP_JSON = b'{"a": ' * 50_000 + b"1" + b"}" * 50_000

_RULESET: Any = None


def _ruleset() -> Any:
    global _RULESET
    if _RULESET is None:
        from pytest_faildiag.rules import load_ruleset

        _RULESET = load_ruleset()
    return _RULESET


def scan_one(data: bytes) -> None:
    """One input through the scanner (stream and text paths) and the whole engine. Raises on a bug only."""
    from pytest_faildiag.engine import diagnose, render_markdown, render_text, report_dict
    from pytest_faildiag.parse.logread import InputError
    from pytest_faildiag.parse.scan import ScanResult, scan_stream, scan_text

    rs = _ruleset()
    scan_stream(io.BytesIO(data), "fuzz.log", rs, ScanResult())
    text = data.decode("utf-8", "surrogateescape")
    scan_text(text, "fuzz.txt", rs, ScanResult())
    try:
        d = diagnose(texts={"stderr": text}, exit_code=1)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    doc = report_dict(d)
    json.dumps(doc)
    assert doc["schema"] == "faildiag.report/1"
    render_text(d)
    render_markdown(d)


def _cli(*argv: str) -> tuple[int, str, str]:
    from pytest_faildiag.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:  # argparse
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


def snapshot_one(report: Any, session: Any = None, raw: bytes | None = None) -> None:
    """A malformed ``report.json`` (and optionally ``session.json``) through ``faildiag report`` in every
    format and ``faildiag fix`` (propose only). Raises AssertionError when a command crashed."""
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snap"
        (snap / "meta").mkdir(parents=True)
        body = raw if raw is not None else json.dumps(report).encode()
        (snap / "report.json").write_bytes(body)
        if session is not None:
            (snap / "session.json").write_text(json.dumps(session))
        before = sorted((p.relative_to(tmp), p.stat().st_size) for p in Path(tmp).rglob("*"))
        runs = [("report", str(snap), "--format", fmt) for fmt in ("text", "md", "html", "github", "gitlab", "json")]
        runs.append(("fix", str(snap), "--format", "json"))
        for argv in runs:
            rc, _out, err = _cli(*argv)
            assert "internal error" not in err and "Traceback" not in err, (argv, err)
            assert rc in (0, 1, 2), (argv, rc, err)
            if rc == 2:
                assert len(err.strip().splitlines()) <= 1, (argv, err)
        after = sorted((p.relative_to(tmp), p.stat().st_size) for p in Path(tmp).rglob("*"))
        assert after == before, "a proposal or a report changed the snapshot on disk"


# ---------------------------------------------------------------------------------------------- drivers


def _json_values():
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=40),
        st.sampled_from(["oom", "runtime", "pytorch", "direct", "passed", ""]),
    )
    keys = st.one_of(
        st.sampled_from(
            [
                "schema",
                "summary",
                "profile",
                "root_causes",
                "evidence",
                "validation_checks",
                "fix_hints",
                "next_actions",
                "first_failure",
                "line",
                "excerpt",
                "source",
                "confidence",
                "type",
                "stage",
                "stack",
                "command",
                "exit_code",
                "tests",
                "slug",
                "nodeid",
                "snapshot",
                "id",
                "category",
                "kind",
                "status",
                "notes",
                "fix",
                "changes",
                "artifacts",
                "groups",
            ]
        ),
        st.text(max_size=10),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=6)),
        max_leaves=30,
    )


def _mutated_reports():
    """Real-shaped reports with fields replaced by wrong types: reaches the renderers, not only the loader."""
    from hypothesis import strategies as st

    from pytest_faildiag.engine import diagnose, report_dict

    base = report_dict(
        diagnose(
            texts={"stderr": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"},
            exit_code=1,
            command="python train.py",
        )
    )

    def mutate(args: tuple[list[str], Any]) -> dict[str, Any]:
        path, value = args
        doc = json.loads(json.dumps(base))
        node = doc
        for key in path[:-1]:
            nxt = node.get(key) if isinstance(node, dict) else None
            if isinstance(nxt, list) and nxt:
                nxt = nxt[0]
            if not isinstance(nxt, dict):
                break
            node = nxt
        if isinstance(node, dict):
            node[path[-1]] = value
        return doc

    paths = st.sampled_from(
        [
            ["summary"],
            ["profile"],
            ["profile", "first_failure"],
            ["profile", "confidence"],
            ["profile", "type"],
            ["root_causes"],
            ["root_causes", "evidence"],
            ["root_causes", "confidence"],
            ["root_causes", "validation_checks"],
            ["root_causes", "evidence", "line"],
            ["root_causes", "fix_hints"],
            ["next_actions"],
            ["schema"],
            ["fix"],
            ["artifacts"],
            ["profile", "command"],
        ]
    )
    return st.tuples(paths, _json_values()).map(mutate)


def run_hypothesis(target: str, runs: int, seed: int | None = None) -> int:
    """The fallback driver (no atheris): ``runs`` generated inputs for ``target``; returns how many ran."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    count = [0]
    cfg = settings(
        max_examples=runs,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
    )
    if target == "scan":
        chunks = st.lists(st.one_of(st.sampled_from(SEEDS), st.binary(max_size=64)), max_size=40).map(b"".join)

        @cfg
        @given(chunks)
        def check(data: bytes) -> None:
            count[0] += 1
            scan_one(data)
    else:
        raw = st.one_of(
            st.binary(max_size=200),
            st.sampled_from(
                [b"", b"{", b"[]", b"null", b'{"schema": 1}', b"\xff\xfe{}", b'{"root_causes": {}}', DEEP_JSON]
            ),
        )
        docs = st.one_of(_mutated_reports(), _json_values())

        @cfg
        @given(
            st.one_of(
                docs.map(lambda d: (d, None, None)),
                st.tuples(docs, _json_values(), st.none()),
                raw.map(lambda r: (None, None, r)),
            )
        )
        def check(case: tuple[Any, Any, bytes | None]) -> None:
            count[0] += 1
            snapshot_one(*case)

    if seed is not None:
        check = hseed(seed)(check)
    check()
    return count[0]


def main(argv: list[str]) -> int:
    target = "scan"
    if "--target" in argv:
        target = argv[argv.index("--target") + 1]
    try:
        import atheris  # type: ignore[import-not-found]
    except ImportError:
        atheris = None
    if atheris is not None and target == "scan" and "--runs" not in argv:
        with atheris.instrument_imports():
            import pytest_faildiag.parse.scan  # noqa: F401
        atheris.Setup([a for a in argv if not a.startswith("--target")], scan_one)
        atheris.Fuzz()
        return 0
    runs = 500
    for a in argv:
        if a.startswith("-atheris_runs="):
            runs = int(a.split("=", 1)[1])
    if "--runs" in argv:
        runs = int(argv[argv.index("--runs") + 1])
    n = run_hypothesis(target, runs, seed=int(os.environ.get("FUZZ_SEED", "0")) or None)
    print(
        f"fuzz_scan: {n} {target} inputs, no crash" + ("" if atheris else " (atheris not installed: hypothesis loop)")
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main(sys.argv))
