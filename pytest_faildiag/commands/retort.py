"""``faildiag retort diagnose|ab``: classify failed retort runs; A/B an intermittent cause.

``diagnose --format json`` prints exactly ``{"runs": [...]}`` (the contract) — a strict consumer may reject
unknown top-level keys, so the roll-up goes to the text output and to ``<out>/retort-rollup.json``.
Files are written only when ``--out`` is given (or ``--rescore``, which defaults it to ``./faildiag-out``).
Bad input is one line on stderr and exit 2; a locked/corrupt ``retort.db`` gives a best-effort, folder-only
result plus a one-line warning on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the sub-actions (argparse only: importing this must stay cheap)."""
    sub = parser.add_subparsers(dest="retort_action", metavar="ACTION")
    d = sub.add_parser("diagnose", help="classify every failed run of an experiment (or a folder of them)")
    d.add_argument("--experiment-dir", required=True, help="a retort experiment, or a folder holding several")
    d.add_argument("--format", choices=("text", "json"), default="text")
    d.add_argument("--out", default=None, help="write retort-diagnosis.json, retort-rollup.json, report here")
    d.add_argument("--rescore", action="store_true", help="record corrected test_coverage of scorer false-fails")
    d.add_argument("--write-db", action="store_true", help="with --rescore: also update retort.db")
    d.add_argument("--no-run-tests", action="store_true", help="do not re-run the runs' tests (faster, weaker)")
    d.add_argument(
        "--install-deps",
        action="store_true",
        help="install a run's declared dependencies (pip/npm) before testing it (needs network)",
    )
    d.add_argument("--test-timeout", type=float, default=120.0, help="seconds per run's test command")
    d.add_argument("--jobs", type=int, default=1, help="runs diagnosed in parallel")
    a = sub.add_parser("ab", help="rerun one run's tests N times per arm, changing one environment variable")
    a.add_argument("--run-dir", required=True)
    a.add_argument("--variable", required=True, help="environment variable that differs between the arms")
    a.add_argument("--a", dest="value_a", default=None, help="value in arm A (omit: unset)")
    a.add_argument("--b", dest="value_b", default=None, help="value in arm B (omit: unset)")
    a.add_argument("-n", type=int, default=5, help="runs per arm")
    a.add_argument("--language", default=None)
    a.add_argument("--test-timeout", type=float, default=120.0)
    a.add_argument("--format", choices=("text", "json"), default="text")


def _fail(msg: str) -> int:
    print(f"faildiag retort: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "retort_action", None)
    if action == "diagnose":
        return _diagnose(args)
    if action == "ab":
        return _ab(args)
    return _fail("choose an action: diagnose or ab")


def _diagnose(args: argparse.Namespace) -> int:
    from pytest_faildiag.integrations import retort as rt

    if args.write_db and not args.rescore:
        return _fail("--write-db only makes sense with --rescore")
    if args.test_timeout <= 0:
        return _fail("--test-timeout must be positive")
    out = Path(args.out) if args.out else (Path("faildiag-out") if args.rescore else None)
    opts = rt.Options(
        run_tests=not args.no_run_tests,
        test_timeout=args.test_timeout,
        install_deps=args.install_deps,
        work_dir=(out / ".work") if out else None,
        jobs=max(1, args.jobs),
        cache_dir=(out / ".rerun-cache") if out else None,
    )
    try:
        result = rt.diagnose_experiments(Path(args.experiment_dir), opts)
    except rt.RetortInputError as exc:
        return _fail(str(exc))
    finally:
        if out is not None:
            _rmdir_quiet(out / ".work")
    roll = rt.rollup(result)
    from pytest_faildiag.sanitize import display

    for problem in result.problems:  # they name the agents' folders and files
        print(f"faildiag retort: warning: {display(problem, one_line=True)}", file=sys.stderr)
    if out is not None:
        try:
            rt.write_outputs(out, result, roll)
            if args.rescore:
                rt.rescore(result, out, write_db=args.write_db)
        except OSError as exc:
            return _fail(f"cannot write to {out}: {exc}")
    if args.format == "json":
        sys.stdout.write(json.dumps({"runs": [d.to_contract() for d in result.diagnoses]}, indent=2) + "\n")
    else:
        sys.stdout.write(rt.render_text(result, roll))
    return 0


def _rmdir_quiet(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def _ab(args: argparse.Namespace) -> int:
    from pytest_faildiag.integrations import retort as rt

    if args.n < 1:
        return _fail("-n must be at least 1")
    try:
        arm_a, arm_b = rt.ab_test(
            Path(args.run_dir),
            args.variable,
            args.value_a,
            args.value_b,
            n=args.n,
            language=args.language,
            timeout=args.test_timeout,
        )
    except rt.RetortInputError as exc:
        return _fail(str(exc))
    arms = [
        {
            "arm": a.label,
            "variable": args.variable,
            "value": a.value,
            "runs": len(a.outcomes),
            "passed": a.passed,
            "outcomes": a.outcomes,
        }
        for a in (arm_a, arm_b)
    ]
    if args.format == "json":
        sys.stdout.write(json.dumps({"arms": arms}, indent=2) + "\n")
    else:
        for a in arms:
            shown = "unset" if a["value"] is None else repr(a["value"])
            sys.stdout.write(
                f"arm {a['arm']} ({args.variable}={shown}): {a['passed']}/{a['runs']} passed {a['outcomes']}\n"
            )
        if arm_a.passed != arm_b.passed:
            sys.stdout.write(f"the arms differ: {args.variable} plausibly matters (n={args.n} per arm)\n")
        else:
            sys.stdout.write(f"no difference between the arms at n={args.n}\n")
    return 0
