"""What a log's carrier did to every line (``parse/carrier.py``): an envelope before each line (a CI service's or
a container runtime's time, journald's host and unit, ``srun --label``'s task, a Markdown quote) or a page's
HTML escaping. The diagnosis of the carried log must be the diagnosis of the log as printed: checked on real
program output here, on a real GitHub Actions log, and on the thread corpus's train logs."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.audit_extract import SHAPES
from bench.robustness import REWRITES, per_line
from pytest_faildiag.engine import diagnose
from pytest_faildiag.parse.carrier import detect, page_escaped
from pytest_faildiag.parse.scan import ScanResult, scan_text
from pytest_faildiag.rules import load_ruleset

DATA = Path(__file__).resolve().parents[1] / "data"
THREADS = DATA / "corpus" / "threads"
CARRIERS = ["gha", "kubectl", "cri", "jenkins", "journald", "quote"]
PAGES = ["html-escaped", "nbsp-spaces", "smart-quotes"]  # bench/robustness.py: what a page does to the whole text

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


def test_the_envelope_time_is_the_time_of_the_findings(tmp_path):
    code = 'import sys\nsys.tracebacklimit = 0\nraise PermissionError(13, "Permission denied", "/data/cache")\n'
    plain = _run(tmp_path, code)
    res = _scan(_carried(plain, "kubectl"))
    assert res.findings, "a rule reads a permission error"
    assert {f.ts for f in res.findings} == {"0514 09:31:07.123456789"}
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


@pytest.mark.parametrize("shape", CARRIERS + PAGES)
def test_train_logs_carried_get_the_diagnosis_of_the_log_as_printed(shape):
    logs = _train_logs()
    assert len(logs) > 90
    carry = REWRITES[shape] if shape in PAGES else lambda text: _carried(text, shape)
    moved = [n for n, text in logs if _verdict(carry(text)) != _verdict(text)]
    assert moved == []


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
