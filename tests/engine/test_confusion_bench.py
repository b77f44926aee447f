"""bench/confusion.py: the truth-vs-top-1 table and the rank of each train log's true home (train only)."""

from __future__ import annotations

import re

from bench.confusion import main


def test_frozen_splits_are_refused(capsys) -> None:
    for split in ("dev", "calib"):
        assert main(["--split", split]) == 2
    assert "refused" in capsys.readouterr().err


def test_a_row_lists_each_train_log_with_the_rank_of_its_true_home(capsys) -> None:
    assert main(["--row", "library", "--names"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^rank of the true category: 1 \d+, 2 \d+, 3 \d+, out \d+$", out, re.M)
    row = re.search(r"^library\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s", out, re.M)
    assert row, out
    logs, right, at2, at3, outside = (int(x) for x in row.groups())
    lines = re.findall(r"^    (ok |-> )(\w+)\s+@(\S+)\s+(\S+)$", out, re.M)
    assert len(lines) == logs > 0
    assert sum(mark == "ok " for mark, *_ in lines) == right
    assert all((mark == "ok ") == (rank == "1") for mark, _got, rank, _name in lines)
    assert [sum(rank == r for *_, rank, _n in lines) for r in ("2", "3", "out")] == [at2, at3, outside]
