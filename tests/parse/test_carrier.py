"""What a log's carrier did to every line (``parse/carrier.py``): an envelope before each line (a CI service's or
a container runtime's time, journald's host and unit, ``srun --label``'s task, a Markdown quote), a page's
HTML escaping or a terminal's hard wraps. The diagnosis of the carried log must be the diagnosis of the log as printed: checked on real
program output here, on a real GitHub Actions log, and on the thread corpus's train logs."""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from bench.audit_extract import SHAPES
from bench.robustness import REWRITES, per_line
from pytest_faildiag.engine import diagnose
from pytest_faildiag.parse import scan
from pytest_faildiag.parse.carrier import (
    SUBLINE,
    WEAK_LINES,
    detect,
    json_records,
    page_escaped,
    unrecord,
    unwrap,
    wrap_width,
)
from pytest_faildiag.parse.scan import ScanResult, scan_stream, scan_text
from pytest_faildiag.rules import load_ruleset

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMAS = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "schemas"
THREADS = DATA / "corpus" / "threads"
CARRIERS = [
    "gha",
    "gitlab",
    "kubectl",
    "cri",
    "jenkins",
    "obs",
    "airflow",
    "journald",
    "quote",
    "kubectl-prefix",
    "mpirun",
    "ray",
    "compose",
    "pdsh",
]
WEAK = {"ray", "compose", "pdsh"}  # carrier.WEAK_FORMS
# a launcher's envelope that names each line's rank tells what the printed log does not: the run had several
# processes (the reasoning's run:single_process no longer holds), so a ranking made by the reasoning alone may move
RANKED = {"mpirun"}
# bench/robustness.py: what a page or a container runtime's log file does to the whole text
# the JSON-lines stores: a service's journal, a cloud log sink's export (plain and structured), a log store's export
RECORDS = [
    "journald-json",
    "cloud-logging-json",
    "cloud-logging-structured",
    "cloud-logging-exceptions",
    "filebeat-ecs",
    "loki-jsonl",
]
PAGES = ["html-escaped", "nbsp-spaces", "smart-quotes", "docker-json-file", *RECORDS]

PROGRAM = """
    import json

    def read_config(path):
        with open(path) as f:
            return json.load(f)

    def main():
        cfg = read_config("run.json")
        return cfg["optimizer"]["lr"]

    main()
"""


def _run(tmp_path: Path, code: str) -> str:
    (tmp_path / "run.json").write_text('{"optimizer": {"name": "adamw"}}')
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    return p.stdout + p.stderr


def _carried(text: str, shape: str) -> str:
    return per_line(SHAPES[shape])(text)


def _scan(text: str) -> ScanResult:
    res = ScanResult()
    scan_text(text, "log", load_ruleset(), res)
    return res


def _tracebacks(res: ScanResult) -> list[tuple]:
    return [(tb.exc_type, tb.message, [(f.file, f.line, f.func, f.code) for f in tb.frames]) for tb in res.tracebacks]


def _verdict(text: str) -> tuple:
    d = diagnose(texts={"log": text})
    top = d.root_causes[0] if d.root_causes else None
    return d.profile.type, d.profile.stage, top and top.category, top and top.rule


def test_a_real_github_actions_log_is_read_as_carried_by_its_runner():
    # the raw log of rust-lang/rust#70776's mingw-check job (public): every line behind the runner's time,
    # the excerpt's "---" gaps not
    log = (DATA / "envelope" / "gha_rust_toolstate.log").read_bytes()
    env = detect(log)
    assert env is not None and env.name == "rfc3339"
    res = _scan(log.decode())
    assert _tracebacks(res)[0][:2] == ("KeyError", "u'rustc-dev-guide'")
    # Python 2 printed a statement's last line as the frame's code: a bare name under ``<module>`` is its code,
    # not the rest of a wrapped function name
    assert [(f.func, f.code) for f in res.tracebacks[0].frames] == [
        ("<module>", "cur_datetime"),
        ("update_latest", "maintainers = ' '.join('@'+name for name in MAINTAINERS[tool])"),
    ]


@pytest.mark.parametrize("shape", CARRIERS)
def test_a_real_failure_carried_is_diagnosed_as_printed(tmp_path, shape):
    plain = _run(tmp_path, PROGRAM)
    assert "KeyError: 'lr'" in plain
    carried = _carried(plain, shape)
    assert detect(carried.encode()) is not None
    assert _tracebacks(_scan(carried)) == _tracebacks(_scan(plain))
    assert _verdict(carried) == _verdict(plain)


SHARD_PROGRAM = """
    def load_shard(path):
        with open(path) as f:
            return f.read()

    for step in range(3):
        print(f"step {step} loss {2.5 - step / 10:.3f}", flush=True)
    load_shard("/data/shards/train-00017.arrow")
"""
# two writers of each form that gathers several processes' output (carrier.FORMS) and who each is
WRITERS = {
    "pdsh": (("gpu-node-01: ", "gpu-node-01"), ("gpu-node-02: ", "gpu-node-02")),
    "kubectl-prefix": (
        ("[pod/trainer-worker-0/pytorch] ", "pod/trainer-worker-0/pytorch"),
        ("[pod/trainer-worker-1/pytorch] ", "pod/trainer-worker-1/pytorch"),
    ),
    "ray": (
        ("(RayTrainWorker pid=4242, ip=10.0.0.3) ", "RayTrainWorker pid=4242, ip=10.0.0.3"),
        ("(RayTrainWorker pid=4243, ip=10.0.0.4) ", "RayTrainWorker pid=4243, ip=10.0.0.4"),
    ),
    "compose": (("trainer-1  | ", "trainer-1"), ("trainer-2  | ", "trainer-2")),
}


@pytest.mark.parametrize("shape", sorted(WRITERS))
def test_the_interleaved_output_of_several_hosts_is_read_per_host(tmp_path, shape):
    # pdsh (DeepSpeed's multi-node runner), kubectl logs --prefix, Ray's driver and docker compose gather the lines
    # of several processes as they come: two real programs failing at once, their lines alternating. Each one's
    # traceback is read from its own lines (its frames, not the other's), and the first to fail is named.
    (a, who_a), (b, who_b) = WRITERS[shape]
    first, second = _run(tmp_path, SHARD_PROGRAM).splitlines(), _run(tmp_path, PROGRAM).splitlines()
    lines = []
    for i in range(max(len(first), len(second))):
        lines += [b + second[i]] if i < len(second) else []
        lines += [a + first[i]] if i < len(first) else []
    log = "\n".join(lines) + "\n"
    alone = _tracebacks(_scan("\n".join(first))) + _tracebacks(_scan("\n".join(second)))
    assert sorted(_tracebacks(_scan(log)), key=repr) == sorted(alone, key=repr)
    failed_first = min((who_a, "FileNotFoundError"), (who_b, "KeyError"), key=lambda w: log.index(w[1]))[0]
    d = diagnose(texts={"log": log})
    assert d.profile.ranks["first_failing"] == failed_first
    assert d.profile.ranks["ranks_with_errors"] == [failed_first, who_a if failed_first == who_b else who_b]
    # the error the diagnosis shows names whose it is, and the summary says so when it is not the first to fail
    point = d.profile.first_failure
    assert point is not None and point.line is not None
    assert point.rank == (who_a if lines[point.line - 1].startswith(a) else who_b)
    shown = f"on {point.rank}; " if point.rank != failed_first else ""
    assert f"({shown}{failed_first} failed first)" in d.summary
    jsonschema.validate(d.to_dict(), json.loads((SCHEMAS / "report.schema.json").read_text()))  # first_failure.rank


@pytest.mark.parametrize(
    ("shape", "time"),
    [("kubectl", "0514 09:31:07.123456789"), ("journald", "0514 09:31:07"), ("airflow", "0514 09:31:07")],
)
def test_the_envelope_time_is_the_time_of_the_findings(tmp_path, shape, time):
    code = 'import sys\nsys.tracebacklimit = 0\nraise PermissionError(13, "Permission denied", "/data/cache")\n'
    plain = _run(tmp_path, code)
    res = _scan(_carried(plain, shape))
    assert res.findings, "a rule reads a permission error"
    assert {f.ts for f in res.findings} == {time}
    assert all(not f.text.startswith("2024-") for f in res.findings)  # the evidence is the program's line


def test_srun_labels_are_the_ranks_of_the_lines(tmp_path):
    plain = _run(tmp_path, PROGRAM)
    res = _scan("".join(f"3: {line}\n" for line in plain.splitlines()))
    assert [(tb.exc_type, tb.rank) for tb in res.tracebacks] == [("KeyError", "3")]


def test_lines_a_program_stamped_itself_are_not_an_envelope(tmp_path):
    # a program that logs a few lines with an ISO time and then dies: its traceback's lines carry no time
    code = """
        import logging, sys
        logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", datefmt="%Y-%m-%dT%H:%M:%SZ",
                            stream=sys.stderr, level=logging.INFO)
        logging.info("loading shards")
        logging.info("2 shards found")
        def pick(shards, i):
            return shards[i]
        pick(["a", "b"], 7)
    """
    out = _run(tmp_path, code)
    assert out.count("Z INFO ") == 2
    assert detect(out.encode()) is None
    assert _tracebacks(_scan(out))[0][0] == "IndexError"


def test_pytest_code_lines_are_not_a_markdown_quote(pytester):
    pytester.makepyfile("def test_sum():\n    total = sum([1, 2])\n    assert total == 4\n")
    out = pytester.runpytest("-p", "no:cacheprovider").stdout.str()
    assert ">       assert total == 4" in out
    assert detect(out.encode()) is None


def test_a_page_escaped_log_is_decoded_before_it_is_searched(tmp_path):
    plain = _run(tmp_path, PROGRAM)
    page = html.escape(plain, quote=True)
    assert "File &quot;" in page and '"' not in page
    assert page_escaped(page.encode()) and not page_escaped(plain.encode())
    assert _tracebacks(_scan(page)) == _tracebacks(_scan(plain))
    assert _verdict(page) == _verdict(plain)


def test_a_containers_json_file_log_is_read_as_its_records_text(tmp_path):
    plain = _run(tmp_path, PROGRAM)
    stored = REWRITES["docker-json-file"](plain)  # what Docker's json-file driver keeps of the container's stderr
    assert stored.startswith('{"log":"Traceback') and "\\u003cmodule\\u003e" in stored
    assert json_records(stored.encode()) and not json_records(plain.encode())
    res = _scan(stored)
    assert _tracebacks(res) == _tracebacks(_scan(plain))
    assert _verdict(stored) == _verdict(plain)
    code = 'import sys\nsys.tracebacklimit = 0\nraise PermissionError(13, "Permission denied", "/data/cache")\n'
    found = _scan(REWRITES["docker-json-file"](_run(tmp_path, code))).findings
    assert found and all(f.ts and f.ts.startswith("0514 09:31:") for f in found)  # the records' time


@pytest.mark.parametrize("shape", RECORDS)
def test_a_services_journal_and_a_cloud_sinks_export_are_read_as_their_records_text(tmp_path, shape):
    # `journalctl -u train.service -o json` (the line in MESSAGE, microseconds since the epoch), a log sink's
    # export of a managed job (textPayload, or jsonPayload.message when the job logs JSON; an RFC 3339 timestamp),
    # Filebeat's documents (message, @timestamp, `log` an object) and Loki's logcli (line): the run's lines, each
    # in one JSON record
    plain = _run(tmp_path, PROGRAM)
    stored = REWRITES[shape](plain)
    assert stored.startswith("{") and '\\"' in stored  # the text JSON-escaped
    assert json_records(stored.encode()) and not json_records(plain.encode())
    assert _tracebacks(_scan(stored)) == _tracebacks(_scan(plain))
    assert _verdict(stored) == _verdict(plain)
    code = 'import sys\nsys.tracebacklimit = 0\nraise PermissionError(13, "Permission denied", "/data/cache")\n'
    found = _scan(REWRITES[shape](_run(tmp_path, code))).findings
    assert found and all(f.ts and f.ts.startswith("0514 09:31:") for f in found)  # the records' time


def test_an_api_error_body_is_no_log_record_and_keeps_what_failed(tmp_path):
    # an OpenAI-compatible server's error body, printed by the client as it came: "message" names the text of
    # objects that are no logger's record; its other fields (type, code) say what failed. A logger's record has
    # a time, a level or its logger's name beside "message"
    body = json.dumps(
        {"object": "error", "message": "System role not supported", "type": "BadRequestError", "code": 400}
    )
    assert not json_records(body.encode()) and unrecord(body.encode()).decode() == body
    logged = json.dumps({"levelname": "ERROR", "name": "server", "message": "System role not supported"})
    assert json_records(logged.encode()) and unrecord(logged.encode()).decode() == "System role not supported"
    # read alike bare and carried by a launcher: the body is the failure either way
    carried = "".join(f"[1,0]<stderr>:{line}\n" for line in body.splitlines())
    assert _verdict(body) == _verdict(carried)
    assert diagnose(texts={"log": body}).profile.first_failure is not None


@pytest.mark.parametrize("micros", ["99999999999999999999999", "253402300800000000", "18446744073709551615"])
def test_a_journal_record_whose_time_is_past_any_clock_is_read_without_it(tmp_path, micros):
    # a damaged export (a record cut and glued, a counter read as time) holds a number no calendar reaches:
    # the record's text is read, its time left out, and the diagnosis is made (it raised OverflowError, OSError
    # or ValueError before, out of the whole diagnosis)
    plain = _run(tmp_path, PROGRAM)
    stored = "\n".join(
        json.dumps({"MESSAGE": line, "__REALTIME_TIMESTAMP": micros if i % 3 == 0 else "1715679067123456"})
        for i, line in enumerate(plain.splitlines())
    )
    lines = unrecord(stored.encode()).decode().splitlines()
    assert lines[0] == plain.splitlines()[0] and lines[1].startswith("2024-05-14T09:31:07.123456Z ")
    assert _verdict(stored) == _verdict(plain)


JSON_LOGGER = """
    import json, logging, sys

    class JsonFormatter(logging.Formatter):  # what python-json-logger writes: one JSON object per record
        def format(self, record):
            out = {"asctime": self.formatTime(record), "levelname": record.levelname, "name": record.name,
                   "message": record.getMessage()}
            if record.exc_info:
                out["exc_info"] = self.formatException(record.exc_info)
            return json.dumps(out)

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("train")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    for step in range(40):
        log.info("step %d loss %.4f", step, 2.5 - step / 100)

    def load_shard(path):
        raise PermissionError(13, "Permission denied", path)  # what open() raises on a shard the job cannot read

    try:
        load_shard("/data/shards/00017.arrow")
    except OSError:
        log.exception("could not read the data shard")
        sys.exit(1)
"""


def test_a_json_loggers_records_are_read_with_the_traceback_they_logged(tmp_path):
    # a program logging through a JSON formatter: its records' text, and the traceback logger.exception put in
    # exc_info, read as the traceback it is (its frames) on its record's line number: the log is not renumbered
    stored = _run(tmp_path, JSON_LOGGER)
    assert stored.startswith('{"asctime"') and '"exc_info": "Traceback' in stored
    assert json_records(stored.encode())
    lines = unrecord(stored.encode()).decode().split("\n")
    assert lines[0] == "step 0 loss 2.5000" and lines[40] == "could not read the data shard"
    assert lines[41] == SUBLINE + "Traceback (most recent call last):"
    assert all(line.startswith(SUBLINE) for line in lines[41:-1])
    res = _scan(stored)
    assert res.sources["log"].lines == len(stored.splitlines()) == 41
    [tb] = res.tracebacks
    assert (tb.exc_type, tb.message) == ("PermissionError", "[Errno 13] Permission denied: '/data/shards/00017.arrow'")
    assert [f.func for f in tb.frames] == ["<module>", "load_shard"] and tb.exc_line == 41
    d = diagnose(texts={"log": stored})
    assert d.profile.first_failure is not None and d.profile.first_failure.line == 41
    assert all(e.line is None or e.line <= 41 for c in d.root_causes for e in c.evidence)


def _typeset(text: str) -> str:
    """What a typographer (SmartyPants, markdown-it's on a Discourse forum) makes of a pasted traceback."""
    text = re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", text).replace('"', "\u201d")
    return text.replace("'", "\u2019")


def test_a_traceback_from_a_typeset_page_is_read_as_printed(tmp_path):
    plain = _run(tmp_path, PROGRAM)
    page = _typeset(plain)
    assert "File \u201c" in page and "KeyError: \u2019lr\u2019" in page
    assert _tracebacks(_scan(page)) == _tracebacks(_scan(plain))
    assert _verdict(page) == _verdict(plain)


def test_no_break_spaces_from_a_rendered_page_are_spaces(tmp_path):
    plain = _run(tmp_path, PROGRAM)
    page = plain.replace("  ", "\u00a0\u00a0")  # a copy of the rendered text keeps &nbsp; for each run of spaces
    assert "\u00a0\u00a0File" in page
    res, want = _scan(page), _scan(plain)
    assert _tracebacks(res) == _tracebacks(want)
    assert [(f.rule.id, f.line) for f in res.findings] == [(f.rule.id, f.line) for f in want.findings]


def test_an_entity_in_a_log_that_kept_its_quotes_is_left_as_printed():
    text = 'curl: (22) The requested URL returned error: 403 for "https://x.test/a?b=1&amp;c=2"\n'
    assert not page_escaped(text.encode())


def _train_logs(stride: int = 5) -> list[tuple[str, str]]:
    split = json.loads((THREADS / "split.json").read_text())["split"]
    names = sorted(n for n, s in split.items() if s == "train")  # dev and calib logs are never opened
    return [(n, (THREADS / f"{n}.log").read_text("utf-8", "replace")) for n in names[::stride]]


def _same_reading(carried: tuple, printed: tuple, shape: str) -> bool:
    """The same verdict; under a ranked envelope, the same type and stage where the reasoning alone ranked both."""
    if carried == printed:
        return True
    alone = all(str(v[3] or "").startswith("differential:") for v in (carried, printed))
    return shape in RANKED and alone and carried[:2] == printed[:2]


@pytest.mark.parametrize(("outer", "inner"), [("gha", "obs"), ("gha", "compose"), ("jenkins", "srun"), ("obs", "obs")])
def test_a_failure_carried_by_two_carriers_is_diagnosed_as_printed(tmp_path, outer, inner):
    # a package build's log kept by a CI service, a compose service's lines behind the CI's time, srun's task
    # behind Jenkins' time: both envelopes come off, the inner one's rank or writer kept
    plain = _run(tmp_path, PROGRAM)
    carried = _carried(_carried(plain, inner), outer)
    env = detect(carried.encode())
    assert env is not None and env.inner is not None
    assert _tracebacks(_scan(carried)) == _tracebacks(_scan(plain))
    assert _verdict(carried) == _verdict(plain)


def test_an_envelope_is_found_behind_the_no_break_spaces_of_a_rendered_page(tmp_path):
    # docker compose pads the service's name with spaces, which a page's copy keeps as no-break spaces
    page = _carried(_run(tmp_path, PROGRAM), "compose").replace("  ", "\u00a0\u00a0")
    env = detect(page.encode())
    assert env is not None and env.name == "compose"


def test_an_open_build_service_log_is_a_test_run_s_failure_not_a_hang():
    # openSUSE's build of a package whose %check ran its test suite (numpy 2 removed np.float_): the report's
    # lines behind the build's seconds, cut before its E line
    name = "pytest_python/numpy2_removed_float_alias_in_unit_test"
    assert json.loads((THREADS / "split.json").read_text())["split"][name] == "train"
    log = (THREADS / f"{name}.log").read_text()
    env = detect(log.encode())
    assert env is not None and env.name == "obs-build"
    stripped = re.sub(r"(?m)^\[ *\d+s\] ", "", log)
    assert _verdict(log) == _verdict(stripped)
    assert _verdict(log)[0] == "runtime_error"


@pytest.mark.parametrize("shape", CARRIERS + PAGES)
def test_train_logs_carried_get_the_diagnosis_of_the_log_as_printed(shape):
    logs = _train_logs()
    assert len(logs) > 90
    carry = REWRITES[shape] if shape in PAGES else lambda text: _carried(text, shape)
    moved = [n for n, text in logs if not _same_reading(_verdict(carry(text)), _verdict(text), shape)]
    # a launcher's prefix that a program's own lines may take is an envelope only on a log of WEAK_LINES or more
    short = {n for n, text in logs if shape in WEAK and sum(map(bool, map(str.strip, text.splitlines()))) < WEAK_LINES}
    assert set(moved) <= short


WORKER = """
    import logging, sys
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout, level=logging.INFO)
    for i in range(6):
        logging.getLogger("dataloader").info("worker 3 prefetched batch %d", i)
"""


def test_another_writers_records_inside_a_traceback_do_not_cut_it(tmp_path):
    # two real processes writing to one terminal: the data worker's records land between the traceback's lines
    plain = _run(tmp_path, PROGRAM)
    records = _run(tmp_path, WORKER).splitlines()
    assert len(records) == 6 and records[0][:4].isdigit()
    lines, mixed = plain.splitlines(), []
    for i, line in enumerate(lines):
        mixed.append(line)
        if i % 3 == 1 and records:
            mixed.append(records.pop())
    text = "\n".join(mixed) + "\n"
    assert _tracebacks(_scan(text)) == _tracebacks(_scan(plain))
    assert _verdict(text) == _verdict(plain)


def test_a_traceback_cut_before_its_exception_is_not_given_a_later_one(tmp_path):
    # the paste stops inside the traceback; the job's log goes on (many records), and much later fails otherwise
    plain = _run(tmp_path, PROGRAM).splitlines()
    cut = [line for line in plain if not line.startswith("KeyError")]
    records = _run(tmp_path, WORKER).splitlines()
    later = _run(tmp_path, 'raise OSError(28, "No space left on device")\n').splitlines()
    res = _scan("\n".join(cut + records + later) + "\n")
    assert "KeyError" not in [tb.exc_type for tb in res.tracebacks]
    assert res.tracebacks[-1].exc_type == "OSError" and res.tracebacks[-1].frames[-1].func == "<module>"


DEEP = """
    def load_training_configuration_from_disk(path):
        with open(path) as handle:
            return handle.read()

    def prepare_experiment_before_the_first_epoch(root):
        return load_training_configuration_from_disk(root + "/configs/experiments/baseline_with_a_long_name.yaml")

    prepare_experiment_before_the_first_epoch(__file__.rsplit("/", 1)[0])
"""


def _deep(tmp_path: Path) -> str:
    """A real traceback whose lines are longer than a terminal: the program sits in a folder whose path is
    exactly 100 characters long, so every line, and where a terminal breaks it, is the same on any machine."""
    folder = tmp_path / ("p" * (99 - len(str(tmp_path))))
    assert len(str(folder)) == 100
    folder.mkdir()
    script = folder / "prog.py"
    script.write_text(textwrap.dedent(DEEP))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    return p.stdout + p.stderr


def _starts(text: str, line: int, head: str) -> bool:
    return text.splitlines()[line - 1].startswith(head)


def test_a_terminal_copy_with_hard_wraps_is_read_as_printed(tmp_path):
    plain = _deep(tmp_path)
    assert "FileNotFoundError: [Errno 2]" in plain and max(map(len, plain.splitlines())) > 160
    wrapped = REWRITES["wrapped-80"](plain)  # what a copy of an 80-column terminal's screen holds
    assert wrap_width(wrapped.encode()) == 80 and wrap_width(plain.encode()) is None
    got, want = _scan(wrapped), _scan(plain)
    assert _tracebacks(got) == _tracebacks(want)
    assert _verdict(wrapped) == _verdict(plain)
    # every line keeps its number: the exception and each finding are cited at the line where they start
    assert _starts(wrapped, got.tracebacks[0].exc_line, "FileNotFoundError")
    assert got.findings and all(_starts(wrapped, f.line, f.text[:20]) for f in got.findings)


def test_unwrapping_keeps_the_size_and_every_line_number():
    # a real paste from an issue thread (pytorch/pytorch, train split), copied from a terminal 117 columns wide
    log = (THREADS / "pytorch" / "pt_inductor_lowering_adaptive_max_pool2d_nameerror_regression.log").read_bytes()
    assert wrap_width(log) == 117
    whole = unwrap(log, 117)
    assert len(whole) == len(log) and whole.count(b"\n") == log.count(b"\n")
    lines = whole.decode().splitlines()
    assert lines[0].endswith("in call_function") and lines[1] == ""
    assert lines[3].endswith("in wrapped") and lines[6].endswith("in adaptive_max_pool2d")
    assert lines[10:] == log.decode().splitlines()[10:]  # the exception lines, never wrapped, where they were


def test_a_wrapped_line_across_two_chunks_is_joined(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "CHUNK", 4096)  # the log is read in many chunks; wrapped lines straddle them
    plain = _deep(tmp_path)
    records = [
        "epoch {e} step {s} loss={l:.6f} lr=3e-4 grad_norm={g:.4f} throughput={t:.1f} tokens/s samples_seen={n}",
        "data worker {w} prefetched {n} samples from /datasets/shards/train-{s:05d}-of-01024.arrow in {l:.3f} s",
        "saved checkpoint to /checkpoints/run-{e}/step-{s}/model.safetensors ({g:.1f} GB, {t:.1f} MB/s)",
        "eval at step {s}: accuracy={l:.4f} perplexity={g:.3f} examples={n} elapsed={t:.1f} s on {w} workers",
    ]
    noise = "".join(
        f"[2024-05-14 09:31:{i % 60:02d}] "
        + records[i % 4].format(e=i // 50, s=i * 50, l=i / 7, g=i / 3, t=18234.5 + i, n=i * 4096, w=i % 8)
        + "\n"
        for i in range(400)
    )
    wrapped = REWRITES["wrapped-80"](noise + plain)
    assert len(wrapped) > 10 * 4096
    res = ScanResult()
    scan_stream(io.BytesIO(wrapped.encode()), "log", load_ruleset(), res)
    assert _tracebacks(res) == _tracebacks(_scan(plain))
    assert _starts(wrapped, res.tracebacks[0].exc_line, "FileNotFoundError")


def test_pytest_output_padded_to_the_terminal_is_not_a_hard_wrap(pytester):
    # pytest pads its separators and progress lines to the terminal's width: lines of equal width, not wraps
    pytester.makepyfile(**{f"test_mod{i}": "def test_a():\n    assert [1, 2, 3] == [1, 2, 4]\n" for i in range(5)})
    out = pytester.runpytest("-q", "-p", "no:cacheprovider", "-o", "console_output_style=progress").stdout.str()
    widths = [len(line) for line in out.splitlines()]
    assert widths.count(max(widths)) >= 5  # the widest lines: many, all exactly as wide as the terminal
    assert wrap_width(out.encode()) is None


def test_a_programs_own_name_and_colon_lines_are_no_host_envelope(tmp_path):
    # eight workers report the same error by its dotted class (a lower-case package, a dot: no host), then a
    # field and logging's default format
    code = """
        import json, logging, sys, traceback
        for worker in range(8):
            try:
                json.loads("")
            except ValueError as exc:
                print("".join(traceback.format_exception_only(exc)), end="", flush=True)
        print("loss: 0.5000", flush=True)
        logging.basicConfig(level=logging.INFO, stream=sys.stdout)
        logging.info("all workers done")
    """
    out = _run(tmp_path, code)
    assert out.count("json.decoder.JSONDecodeError: Expecting value") == 8 and "INFO:root:all workers" in out
    assert detect(out.encode()) is None


def test_a_programs_fixed_width_records_are_not_a_hard_wrap(tmp_path):
    # the widest lines are one record format, ending in a word, each followed by the next record
    code = """
        for i in range(1000, 1300):
            print(f"step {i} | loss 2.{i % 97:02d} | lr 3.0e-04 | storage ok | quota fine | throughput {i * 7}", flush=True)
    """
    out = _run(tmp_path, code)
    widths = [len(line) for line in out.splitlines()]
    assert widths.count(max(widths)) > 100 and max(widths) >= 60
    assert wrap_width(out.encode()) is None
    assert _tracebacks(_scan(out + _run(tmp_path, PROGRAM))) == _tracebacks(_scan(_run(tmp_path, PROGRAM)))


SPLIT_WRITER = """
    import sys, time
    for step in range(50):
        print(f"step {step} | loss {2.5 - step / 100:.4f}")
    print("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled sys", end="")
    sys.stdout.flush()
    time.sleep(0.3)  # the rest of the line comes in a later piece of output
    print("tem error, NCCL version 2.18.1")
    print("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.")
"""


def _gitlab_job_log(tmp_path: Path, code: str) -> tuple[str, str]:
    """(what the program printed, what GitLab Runner 17+ keeps of it with FF_TIMESTAMPS): the output read from the
    pipe in the pieces it arrives in, each piece's lines behind the time and the stream (``00O``), and a piece
    that goes on from a line the last piece left open behind ``00O+``."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, cwd=tmp_path)
    assert p.stdout is not None
    plain, kept, open_line = "", [], False
    while piece := os.read(p.stdout.fileno(), 65536).decode():
        plain += piece
        parts = piece.split("\n")
        for k, part in enumerate(parts[:-1] if piece.endswith("\n") else parts):
            kept.append(f"2024-05-14T09:31:07.{len(kept):06d}Z 00O{'+' if k == 0 and open_line else ' '}{part}")
        open_line = not piece.endswith("\n")
    p.wait()
    return plain, "\n".join(kept) + "\n"


def test_gitlab_lines_continued_across_pieces_of_output_are_joined(tmp_path):
    plain, kept = _gitlab_job_log(tmp_path, SPLIT_WRITER)
    assert " 00O+tem error, NCCL version" in kept  # the runner split the error line where the program paused
    assert detect(kept.encode()) is not None
    assert _verdict(kept) == _verdict(plain)
    assert any("unhandled system error" in f.text for f in _scan(kept).findings)  # the line whole again
