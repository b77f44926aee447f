"""Classification of one run into the contract's verdict/subtype, every claim ``direct`` or ``hypothesis``."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_faildiag.integrations.retort.environment import at_limit, did_no_work, is_kill, telemetry
from pytest_faildiag.integrations.retort.groundtruth import (
    archive_drops_language,
    ground_truth,
    inventory,
    missing_named_sources,
)
from pytest_faildiag.integrations.retort.model import (
    _GATE_ERROR,
    Claim,
    Inventory,
    Options,
    RunDiagnosis,
    RunRecord,
    Signature,
    TestRun,
)
from pytest_faildiag.integrations.retort.signals import LogSignals, _read_json, match_signatures, read_agent_logs
from pytest_faildiag.redact import redact_text

_TIMEOUT_ERROR = re.compile(r"^(Timeout after \d+s|Killed after \d+s)", re.I | re.M)
_FACTUAL_ERROR = re.compile(r"answers wrong|factual_accuracy", re.I)


def _num(v: Any) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def recorded_test_coverage(rec: RunRecord) -> float | None:
    v = rec.metrics.get("test_coverage")
    return _num(v if v is not None else rec.scores.get("test_coverage"))


def _telemetry_claims(rec: RunRecord, logs: LogSignals) -> list[Claim]:
    """Duration/tokens/cost as context, and what they say about the environment (see ``environment``)."""
    out: list[Claim] = []
    dur, tok, cost = telemetry(rec)
    if dur is not None or tok is not None:
        parts = [
            f"duration {dur:.0f}s" if dur is not None else "",
            f"tokens {int(tok)}" if tok is not None else "",
            f"cost ${cost:.4f}" if cost is not None else "",
        ]
        src = "retort.db run_results" if rec.metrics else f"{rec.rel}/.faildiag/.capture.json"
        out.append(Claim("recorded " + ", ".join(p for p in parts if p), "direct", src))
        no_work = did_no_work(rec)
        if no_work:
            out.append(
                Claim(
                    f"the agent {no_work}: it did no model work, so what stopped it was outside the model",
                    "direct",
                    src,
                )
            )
    limit = at_limit(rec)
    if limit:
        out.append(Claim(limit, "direct", "retort.db run_results + workspace.yaml"))
    if rec.cluster:
        out.append(Claim(rec.cluster, "direct", "retort.db experiment_runs.finished_at"))
    if logs.present:
        out.append(_seen(rec, f"agent logs present: {', '.join(logs.present)}"))
    return out


@dataclass
class _Verdict:
    verdict: str
    subtype: str
    action: str


def _hyp(rec: RunRecord, text: str) -> Claim:
    """An inference about the run, sourced to its folder."""
    return Claim(text, "hypothesis", rec.rel)


def _seen(rec: RunRecord, text: str) -> Claim:
    """Something observed in the run's folder."""
    return Claim(text, "direct", rec.rel)


def _test_claim(rec: RunRecord, tr: TestRun) -> Claim:
    src = f"{tr.command or 'test run'} in a clean copy of {rec.rel}/{'' if tr.root == '.' else tr.root}".rstrip("/")
    cov = f", coverage {tr.coverage:.0%}" if tr.coverage is not None else ""
    text = {
        "passed": f"the run's own tests passed here: {tr.passed} passed, {tr.failed} failed{cov}",
        "failed": f"the run's own tests fail: {tr.passed} passed, {tr.failed} failed",
        "compile_error": (
            "the code does not compile / import (syntax or build error)"
            if tr.command != "npm install"
            else "npm install fails building the native dependency "
            f"{tr.missing_module or '(see excerpt)'} here, so no test can run"
        ),
        "no_tests": "the test runner found no tests to run",
        "undeclared_deps": f"tests fail at import of '{tr.missing_module}', which no requirements/pyproject declares",
        "deps_unavailable": "the project's dependencies are not available here (offline/not installed); "
        "tests could not be ground-truthed",
        "toolchain_missing": f"could not run the tests: {(tr.excerpt or 'toolchain missing')[:300]}",
        "data_missing": "the tests need task support data (data/...) that the archive does not hold; "
        f"{tr.failed} failed/errored here for that reason, which says nothing about the code",
        "timeout": f"the rerun of the tests did not finish within its {tr.timeout_s or 0:.0f}s timeout and was "
        "killed with everything it started",
        "not_run": f"tests not run: {tr.excerpt}",
        "error": f"test run errored before any test ran: {tr.excerpt[-200:]}",
    }.get(tr.status, tr.status)
    kind = "direct" if tr.status not in {"not_run"} else "hypothesis"
    if tr.cached:
        text += " (rerun reused from an earlier pass over the same folder content)"
    return Claim(text, kind, src)


def classify(rec: RunRecord, signatures: list[Signature], opts: Options) -> RunDiagnosis:
    """Judge one run from its gathered signals; every branch says what it saw and where."""
    claims: list[Claim] = list(rec.notes)
    logs = read_agent_logs(rec)
    hits = match_signatures(rec, logs, signatures)
    tc = recorded_test_coverage(rec)
    if rec.db_status:
        err = (rec.db_error or "").strip().splitlines()
        claims.append(
            Claim(
                f"retort recorded status '{rec.db_status}'" + (f" with error '{err[-1][:200]}'" if err else ""),
                "direct",
                "retort.db experiment_runs",
            )
        )
    if rec.meta:
        claims.append(
            Claim(
                f"_meta.json succeeded={rec.meta.get('succeeded')} (the agent's exit status, not pass/fail)",
                "direct",
                f"{rec.rel}/_meta.json",
            )
        )
    if tc is not None:
        zero_all = rec.scores and all(v == 0 for v in rec.scores.values() if isinstance(v, int | float))
        claims.append(
            Claim(
                f"recorded test_coverage={tc:g}" + (" and every score zeroed by the gate" if zero_all else ""),
                "direct",
                "retort.db run_results" if "test_coverage" in rec.metrics else f"{rec.rel}/scores.json",
            )
        )
    if rec.superseded_by:
        claims.append(_seen(rec, f"an earlier attempt, superseded by {rec.superseded_by}"))
    if rec.eval_status:
        claims.append(Claim(f"evaluation.md status: {rec.eval_status[:200]}", "direct", f"{rec.rel}/evaluation.md"))
    claims += _telemetry_claims(rec, logs)
    for h in hits:
        # rule id last: the redactor masks the word after a secret-looking "name:" (e.g. "auth-expired: x")
        claims.append(Claim(f"{h.excerpt[:240]} (rule {h.signature.id})", h.signature.kind, h.source))

    live_cap = rec.capture if rec.capture.get("origin") != "rescore" else {}
    crashed = (
        rec.db_status == "crashed" or rec.meta.get("succeeded") is False or (live_cap.get("exit_code") not in (None, 0))
    )
    err = (rec.db_error or "").strip()

    inv = inventory(rec.rep_dir) if rec.rep_dir is not None else Inventory()
    if rec.rep_dir is not None:
        where = ", ".join(r if r != "." else "top level" for r in inv.roots[:4]) or "-"
        claims.append(
            _seen(
                rec,
                f"{len(inv.sources)} source file(s), {len(inv.tests)} test file(s) in the run folder (where: {where})",
            )
        )

    # 1. A signature that explains why nothing could happen wins when the run crashed or produced no code.
    for h in hits:
        if (crashed or not inv.sources) and (h.signature.kind == "direct" or not inv.sources):
            return _done(rec, claims, _Verdict(h.signature.verdict, h.signature.subtype, h.signature.action), tc)

    # 2. Killed by the harness's wall clock or stall guard (or ended exactly at the configured limit).
    if is_kill(rec) or (crashed and at_limit(rec)):
        return _killed(rec, claims, inv, opts, tc)

    # 2b. The agent did no model work at all: an environment stop (or the harness's config, for a whole level).
    if did_no_work(rec):
        return _no_work(rec, claims, tc)

    # 3. The DB records a run the archive does not hold.
    if rec.rep_dir is None:
        claims.append(_seen(rec, f"no archived folder runs/{rec.cell}/rep{rec.replicate}[-failed] for this DB row"))
        rq = _num(rec.metrics.get("requirement_coverage"))
        if rq is not None and rq < 1.0:
            claims.append(
                Claim(
                    f"retort's spec judge recorded requirement_coverage={rq:g} (<1): the code fell short "
                    "of the spec whatever its tests did",
                    "direct",
                    "retort.db run_results",
                )
            )
            return _done(
                rec,
                claims,
                _Verdict(
                    "genuine",
                    "spec_shortfall",
                    "count as a genuine spec shortfall; the code itself cannot be re-checked (not archived)",
                ),
                tc,
            )
        peers = _peer_measured_gate_fail(rec, tc, crashed, "its folder is not archived")
        if peers is not None:
            return _done(rec, claims + peers, _gate_fail_verdict("re-run the cell with archiving on"), tc)
        return _done(
            rec,
            claims,
            _Verdict(
                "infra_false_fail",
                "archive_gap",
                "the measurement cannot be verified; re-run the cell (retort run --resume --retry-failed) with archiving on",
            ),
            tc,
        )

    # 3b. A half-written folder: no code and none of the files retort writes when it archives a run.
    if not inv.sources and not any(
        (rec.rep_dir / n).is_file() for n in ("_meta.json", "scores.json", "stack.json", "TASK.md")
    ):
        claims.append(
            _seen(
                rec,
                "the folder holds none of the files retort writes when it archives a run (_meta.json, "
                "scores.json, stack.json, TASK.md): it is half-written or trimmed",
            )
        )
        return _done(
            rec,
            claims,
            _Verdict(
                "unknown",
                "insufficient_evidence",
                "the archive of this run is incomplete; re-run the cell to settle it",
            ),
            tc,
        )

    # 4. No code at all.
    if not inv.sources:
        if tc is not None and tc > 0 and rec.rep_dir.name.endswith("-failed") and rec.meta.get("succeeded") is True:
            claims.append(
                _hyp(
                    rec,
                    "the agent exited 0 and its tests ran (test_coverage>0), yet the attempt was archived "
                    "as -failed: retort renames an attempt a later one replaced, so a later gate (spec "
                    "or factual) failed it",
                )
            )
            return _done(
                rec,
                claims,
                _Verdict(
                    "genuine",
                    "spec_shortfall",
                    "count as a genuine spec shortfall of this attempt; its code was not "
                    "archived, so it cannot be re-checked",
                ),
                tc,
            )
        dropped = archive_drops_language(rec.rep_dir, rec.language) if rec.language else None
        if dropped is not None:
            claims.append(Claim(f"the archive cannot hold {rec.language} code: {dropped}", "direct", ".gitignore"))
            peers = _peer_measured_gate_fail(rec, tc, crashed, "the archive cannot hold its sources")
            if peers is not None:
                return _done(rec, claims + peers, _gate_fail_verdict("keep the sources in the archive"), tc)
            return _done(
                rec,
                claims,
                _Verdict(
                    "infra_false_fail",
                    "archive_gap",
                    f"the archive keeps no {rec.language} sources: the failure cannot be "
                    "re-checked from it; diagnose the working tree's runs/ instead",
                ),
                tc,
            )
        lost = missing_named_sources(rec.rep_dir)
        if lost is not None:
            claims.append(
                Claim(
                    f"{lost[0]} names {', '.join(lost[1])}; none of them is in the archived folder",
                    "direct",
                    f"{rec.rel}/{lost[0]}",
                )
            )
            peers = _peer_measured_gate_fail(rec, tc, crashed, "the archive dropped its sources")
            if peers is not None:
                return _done(rec, claims + peers, _gate_fail_verdict("keep the sources in the archive"), tc)
            return _done(
                rec,
                claims,
                _Verdict(
                    "infra_false_fail",
                    "archive_gap",
                    "the archive dropped this run's sources: the failure cannot be "
                    "re-checked; keep sources in the archive and re-run the cell",
                ),
                tc,
            )
        if tc is not None and tc > 0:
            claims.append(
                _seen(
                    rec,
                    f"test_coverage={tc:g} was measured at scoring time, so code existed then; the "
                    "archive holds none of it",
                )
            )
            return _done(
                rec,
                claims,
                _Verdict(
                    "infra_false_fail",
                    "archive_gap",
                    "the archived run cannot be re-checked; keep source in the archive "
                    "(or diagnose before the workspace is trimmed)",
                ),
                tc,
            )
        if any("outside the run workspace" in c.text for c in rec.notes):
            return _done(
                rec,
                claims,
                _Verdict(
                    "genuine",
                    "wrong_location",
                    "count as a genuine miss (wrote outside the workspace); tighten the "
                    "agent's working-directory instructions",
                ),
                tc,
            )
        if rec.cohort:
            return _whole_level_failed(rec, claims, tc)
        if crashed and rec.retry_completed:
            claims.append(
                _hyp(
                    rec,
                    "a retry of the identical configuration completed, so what stopped this attempt "
                    "was transient (interruption, limit, serving hiccup), not the model",
                )
            )
            if not logs.present and not live_cap:
                claims.append(
                    _hyp(
                        rec,
                        "it exited non-zero and left no files of its own: the agent most likely never "
                        "got to work (not logged in, a quota or usage-limit window, the model server "
                        "down); its logs, which would name the cause, were not archived",
                    )
                )
                return _done(
                    rec,
                    claims,
                    _Verdict(
                        "environment",
                        "agent_start_failure",
                        "not a model result; keep the agent's stderr (faildiag_capture) to name the cause next time",
                    ),
                    tc,
                )
        if crashed and not logs.present and not live_cap:
            claims.append(
                _hyp(rec, "the agent exited non-zero and left no code and no logs; the cause is not recorded")
            )
            return _done(
                rec,
                claims,
                _Verdict(
                    "unknown",
                    "insufficient_evidence",
                    "re-run this cell with the faildiag retort plugin enabled to capture agent output",
                ),
                tc,
            )
        if not logs.present and not live_cap:
            claims.append(
                _hyp(
                    rec,
                    "a blocked file-write tool leaves the same empty workspace; the agent logs that "
                    "would tell the two apart were not archived",
                )
            )
        return _done(
            rec,
            claims,
            _Verdict(
                "genuine",
                "no_code",
                "count as a genuine miss; check the agent log for a blocked tool before trusting it",
            ),
            tc,
        )

    # 5. Code exists: ground-truth it.
    tr = ground_truth(rec, inv, opts)
    claims.append(_test_claim(rec, tr))
    gate_failed = err.startswith(_GATE_ERROR) or tc == 0
    spec_short = bool(_FACTUAL_ERROR.search(err)) or (
        _num(rec.metrics.get("requirement_coverage")) is not None
        and rec.metrics["requirement_coverage"] < 1.0
        and not gate_failed
    )
    if spec_short:
        claims.append(
            Claim(
                "retort's spec/factual gate failed the run (requirement_coverage<1 or wrong answers)",
                "direct",
                "retort.db",
            )
        )
    elif rec.rep_dir.name.endswith("-failed") and rec.meta.get("succeeded") is True and tc is not None and tc > 0:
        # retort names a folder -failed only for a non-zero agent exit, or when a retry superseded the attempt;
        # with exit 0 and tests that ran, the gate that failed it was the spec or factual one.
        spec_short = True
        claims.append(
            _hyp(
                rec,
                "the agent exited 0 and its tests ran (test_coverage>0), yet the attempt was archived "
                "as -failed: the spec/factual gate is what failed it",
            )
        )

    if tr.status == "passed":
        if spec_short and not gate_failed:
            return _done(
                rec,
                claims,
                _Verdict(
                    "genuine", "spec_shortfall", "count as a genuine spec shortfall (tests pass, spec/answers do not)"
                ),
                tc,
                tr,
            )
        if gate_failed:
            sub = "scorer_gap" if (tr.root != "." or _unusual_runner(rec.rep_dir, rec.language)) else "mis_measurement"
            why = (
                "the project lives in a subfolder or uses a runner the scorer does not drive"
                if sub == "scorer_gap"
                else "coverage was measured 0 on tests that pass"
            )
            claims.append(Claim(why, "direct" if tr.root != "." else "hypothesis", _test_claim(rec, tr).source))
            return _done(
                rec,
                claims,
                _Verdict(
                    "infra_false_fail",
                    sub,
                    "rescore it (faildiag retort diagnose --rescore, or retort rescore "
                    "--only-failed) after fixing the scorer",
                ),
                tc,
                tr,
            )
        if crashed:
            return _done(
                rec,
                claims,
                _Verdict(
                    "unknown",
                    "insufficient_evidence",
                    "the code passes its tests but the agent exited non-zero; re-run with capture to see why",
                ),
                tc,
                tr,
            )
        return _done(
            rec,
            claims,
            _Verdict(
                "unknown",
                "insufficient_evidence",
                "tests pass and no recorded gate explains the failure; read evaluation.md",
            ),
            tc,
            tr,
        )
    if tr.status == "undeclared_deps" and not (set(inv.sources) - set(inv.tests)):
        claims.append(
            _seen(
                rec,
                f"the tests import '{tr.missing_module}', and the run folder holds no code besides its "
                "tests: the module under test was never written (not a missing package)",
            )
        )
        return _done(
            rec, claims, _Verdict("genuine", "no_code", "count as a genuine miss: only tests were written"), tc, tr
        )
    if tr.status == "undeclared_deps":
        return _done(
            rec,
            claims,
            _Verdict(
                "infra_false_fail",
                "undeclared_deps",
                f"declare '{tr.missing_module}' (or have the scorer install test deps) and rescore",
            ),
            tc,
            tr,
        )
    if tr.status == "compile_error" and tr.command == "npm install":
        claims.append(
            _hyp(
                rec,
                "this machine's Node toolchain may differ from the runner's; retort's own evaluation "
                "of the run tells whether the dependency built there",
            )
        )
    if tr.status == "compile_error":
        return _done(
            rec, claims, _Verdict("genuine", "compile_error", "count as a genuine miss (does not build)"), tc, tr
        )
    if tr.status == "failed":
        contention = [
            h
            for h in (s for s in signatures if s.subtype in {"stray_process", "concurrency_env_contention"})
            if h.regex.search(tr.excerpt)
        ]
        if contention:
            s = contention[0]
            claims.append(
                Claim(
                    f"the failing test output matches {s.id}; run `faildiag retort ab` to confirm",
                    "hypothesis",
                    _test_claim(rec, tr).source,
                )
            )
            return _done(rec, claims, _Verdict(s.verdict, s.subtype, s.action), tc, tr)
        return _done(rec, claims, _Verdict("genuine", "tests_fail", "count as a genuine miss (its tests fail)"), tc, tr)
    if tr.status == "no_tests" and not inv.tests:
        return _done(rec, claims, _Verdict("genuine", "no_tests", "count as a genuine miss (no tests written)"), tc, tr)
    if not inv.tests:
        claims.append(_seen(rec, "no test file exists in the run folder"))
        return _done(rec, claims, _Verdict("genuine", "no_tests", "count as a genuine miss (no tests written)"), tc, tr)

    # 6. Could not ground-truth: fall back to what was recorded, as hypotheses.
    if spec_short:
        return _done(
            rec,
            claims,
            _Verdict(
                "genuine", "spec_shortfall", "count as a genuine spec shortfall (per retort's gate); tests not re-run"
            ),
            tc,
            tr,
        )
    if tr.status == "timeout":
        claims.append(
            Claim(
                f"the rerun hung past {tr.timeout_s or opts.test_timeout:.0f}s; nothing it printed settles the verdict",
                "direct",
                _test_claim(rec, tr).source,
            )
        )
    guess = _guess_from_records(rec)
    if guess is not None:
        claims.append(Claim(guess[2], "hypothesis", guess[3]))
        return _done(
            rec,
            claims,
            _Verdict(guess[0], guess[1], "install the toolchain/dependencies and re-run the diagnosis to confirm"),
            tc,
            tr,
        )
    if tr.status in {"deps_unavailable", "toolchain_missing", "data_missing", "not_run"}:
        peers = _peer_measured_gate_fail(rec, tc, crashed, f"its tests could not be re-run here ({tr.status})")
        if peers is not None:
            return _done(
                rec,
                claims + peers,
                _gate_fail_verdict("install the toolchain/dependencies (or pass --install-deps) and diagnose again"),
                tc,
                tr,
            )
    settle = {
        "timeout": f"rerun with a larger --test-timeout (this one was {tr.timeout_s or opts.test_timeout:.0f}s)",
        "toolchain_missing": "install the language toolchain here and diagnose again",
        "deps_unavailable": "pass --install-deps (network for the install step only) and diagnose again",
        "data_missing": "provide the task's support data (data/...) and diagnose again",
    }
    return _done(
        rec,
        claims,
        _Verdict(
            "unknown",
            "insufficient_evidence",
            settle.get(tr.status, "install the language toolchain (or pass --install-deps) and diagnose again"),
        ),
        tc,
        tr,
    )


def _peer_measured_gate_fail(rec: RunRecord, tc: float | None, crashed: bool, why_unchecked: str) -> list[Claim] | None:
    """Claims for "retort's zero stands": the gate found no test run, the harness demonstrably runs this language's
    tests in this experiment, and nothing points at the harness; None when that evidence is not all there.

    Why: when the code cannot be re-checked here (the archive does not hold it, or this machine lacks the toolchain
    or the dependencies), the remaining question is whether the zero came from the run or from the harness. Other
    runs of the same language measured non-zero in the same experiment answer it for the harness; a retry of the
    same cell that completed, an agent that exited non-zero or did no model work would each point elsewhere, so any
    of them withholds the inference.
    """
    if tc != 0 or crashed or rec.retry_completed or not rec.scorer_peers or rec.cohort or did_no_work(rec):
        return None
    _, tok, _ = telemetry(rec)
    if tok is not None and tok <= 0:
        return None
    return [
        Claim(rec.scorer_peers, "direct", "retort.db run_results"),
        _hyp(
            rec,
            f"this run's tests did not run at scoring time while the same harness ran other {rec.language} runs' "
            f"tests; {why_unchecked}, so the zero most likely is the run's own (a project whose tests do not build "
            "or run)",
        ),
    ]


def _gate_fail_verdict(what: str) -> _Verdict:
    return _Verdict(
        "genuine",
        "gate_fail",
        f"count as a genuine miss per retort's gate; {what} to confirm",
    )


def _killed(rec: RunRecord, claims: list[Claim], inv: Inventory, opts: Options, tc: float | None) -> RunDiagnosis:
    """A harness kill (wall clock or stall guard): the agent did not finish — unless its code already works.

    Code that passes its own tests when the clock ran out means the budget, not the model, ended the run.
    """
    if inv.sources and rec.rep_dir is not None:
        tr = ground_truth(rec, inv, opts)
        claims.append(_test_claim(rec, tr))
        if tr.status == "passed" and at_limit(rec):
            claims.append(
                _hyp(rec, "the code passes its own tests, so the configured wall clock, not the model, ended this run")
            )
            return _done(
                rec,
                claims,
                _Verdict(
                    "infra_false_fail",
                    "harness_config",
                    "raise the budget that ended it (timeout_minutes / max_turns) for this cell and re-run it",
                ),
                tc,
                tr,
            )
        return _done(rec, claims, _non_termination(), tc, tr)
    return _done(rec, claims, _non_termination(), tc)


def _non_termination() -> _Verdict:
    return _Verdict(
        "genuine",
        "non_termination",
        "count as a genuine non-termination; if the code already passes its tests, consider a larger turn/time "
        "budget and re-run",
    )


def _whole_level_failed(rec: RunRecord, claims: list[Claim], tc: float | None) -> RunDiagnosis:
    """Every run of one factor level failed together: the harness could not run that level, not the model."""
    claims.append(Claim(rec.cohort, "direct", "retort.db run_results"))
    claims.append(
        Claim("the harness could not launch or configure runs of that factor level", "hypothesis", "retort.db")
    )
    return _done(
        rec,
        claims,
        _Verdict(
            "infra_false_fail",
            "harness_config",
            "fix how the harness runs that factor level (prompt file, agent flags, tooling) and re-run those cells",
        ),
        tc,
    )


def _no_work(rec: RunRecord, claims: list[Claim], tc: float | None) -> RunDiagnosis:
    """A run that spent no tokens: a whole factor level (config), several cells at once (outage) or one start."""
    if rec.cohort:
        return _whole_level_failed(rec, claims, tc)
    if rec.cluster:
        claims.append(
            Claim(
                "several cells stopping without model work at the same time point at the model server "
                "or provider being down (or a login/quota that lapsed for all of them)",
                "hypothesis",
                "retort.db",
            )
        )
        return _done(
            rec,
            claims,
            _Verdict(
                "environment",
                "serving_failure",
                "check the model server/provider for that window, then re-run these "
                "cells (retort run --resume --retry-failed)",
            ),
            tc,
        )
    claims.append(
        _hyp(
            rec,
            "the agent could not start work: not logged in, a quota or usage-limit window, or the model "
            "server not answering; its stderr (not archived) would name which",
        )
    )
    return _done(
        rec,
        claims,
        _Verdict(
            "environment",
            "agent_start_failure",
            "not a model result: re-run the cell; keep the agent's stderr (faildiag_capture) to name the cause",
        ),
        tc,
    )


def _unusual_runner(rep_dir: Path | None, language: str) -> bool:
    """A layout retort's test_coverage scorer is known not to drive (bun, deno, lein-only, CT-only suites)."""
    if rep_dir is None:
        return False
    if (rep_dir / "bun.lockb").exists() or (rep_dir / "bunfig.toml").exists() or (rep_dir / "deno.json").exists():
        return True
    pkg, _ = _read_json(rep_dir / "package.json")
    if isinstance(pkg, dict) and re.search(
        r"\b(bun|deno|node --test|tap)\b", str((pkg.get("scripts") or {}).get("test"))
    ):
        return True
    return language == "clojure" and (rep_dir / "project.clj").exists() and not (rep_dir / "deps.edn").exists()


_EVAL_HINTS: list[tuple[re.Pattern[str], str, str]] = [
    (
        re.compile(r"build fail|does not (build|compile)|compil\w* (error|fail)|won'?t compile", re.I),
        "genuine",
        "compile_error",
    ),
    (re.compile(r"\d+ test failures?|tests? fail(ed|ing|s)?\b", re.I), "genuine", "tests_fail"),
    (re.compile(r"no tests\b|without tests", re.I), "genuine", "no_tests"),
    (re.compile(r"\bok\b|tests pass|build \+ tests passed|functional", re.I), "infra_false_fail", "scorer_gap"),
]


def _guess_from_records(rec: RunRecord) -> tuple[str, str, str, str] | None:
    """A verdict suggested by evaluation.md / findings.jsonl when tests could not be re-run (hypothesis only)."""
    if rec.eval_status:
        for rx, verdict, subtype in _EVAL_HINTS:
            if rx.search(rec.eval_status):
                if subtype == "scorer_gap" and recorded_test_coverage(rec) not in (0, 0.0):
                    continue
                return (
                    verdict,
                    subtype,
                    f"evaluation.md suggests {subtype.replace('_', ' ')}",
                    f"{rec.rel}/evaluation.md",
                )
    kinds = Counter(str(f.get("kind")) for f in rec.findings if str(f.get("severity")) in {"critical", "high"})
    if kinds.get("build_failure") or kinds.get("compile_error"):
        return "genuine", "compile_error", "findings.jsonl reports a build failure", f"{rec.rel}/findings.jsonl"
    if kinds.get("test_failure"):
        return "genuine", "tests_fail", "findings.jsonl reports failing tests", f"{rec.rel}/findings.jsonl"
    return None


def _done(
    rec: RunRecord, claims: list[Claim], v: _Verdict, tc: float | None, test_run: TestRun | None = None
) -> RunDiagnosis:
    safe = [
        Claim(
            redact_text(c.text), c.kind if c.kind in {"direct", "hypothesis"} else "hypothesis", redact_text(c.source)
        )
        for c in claims
    ]
    return RunDiagnosis(
        run=rec.rel,
        verdict=v.verdict,
        subtype=v.subtype,
        claims=safe,
        action=v.action,
        experiment=str(rec.experiment),
        db_id=rec.db_id,
        test_run=test_run,
        recorded_test_coverage=tc,
        superseded=rec.superseded_by is not None,
        superseded_by=rec.superseded_by,
        retry_completed=rec.retry_completed,
    )


def _classify_safely(rec: RunRecord, signatures: list[Signature], opts: Options) -> RunDiagnosis:
    """``classify`` that turns an internal error into an ``unknown`` verdict: one odd run must not sink the rest."""
    try:
        return classify(rec, signatures, opts)
    except Exception as exc:
        return RunDiagnosis(
            run=rec.rel,
            verdict="unknown",
            subtype="insufficient_evidence",
            claims=[Claim(f"internal error while diagnosing: {type(exc).__name__}: {exc}", "direct", "faildiag")],
            action="report this as a faildiag bug",
            experiment=str(rec.experiment),
            db_id=rec.db_id,
        )
