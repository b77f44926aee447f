"""Config values are edited in place: only the value's characters change, whatever the format."""

from __future__ import annotations

import pytest

from pytest_faildiag.fix.edit import find_config_values, integer_values, replace_span

CASES = [
    (
        "yaml",
        "model:\n  hidden_size: 16  # width\n  num_classes: 5\ntrain: {lr: 0.1, batch_size: 32}\n",
        "num_classes",
        "5",
        "model:\n  hidden_size: 16  # width\n  num_classes: 8\ntrain: {lr: 0.1, batch_size: 32}\n",
    ),
    ("yaml", "train: {lr: 0.1, batch_size: 32}\n", "batch_size", "32", "train: {lr: 0.1, batch_size: 8}\n"),
    (
        "json",
        '{"model": {"num_classes": 5, "name": "mlp"}}',
        "num_classes",
        "5",
        '{"model": {"num_classes": 8, "name": "mlp"}}',
    ),
    (
        "json",
        '{\n  "optimizer": "adam",\n  "lr": 0.1\n}\n',
        "optimizer",
        "adam",
        '{\n  "optimizer": "8",\n  "lr": 0.1\n}\n',
    ),
    ("toml", "[data]\nnum_workers = 4 # per rank\n", "num_workers", "4", "[data]\nnum_workers = 8 # per rank\n"),
    ("ini", "[train]\nbatch_size: 64\nlr = 0.01\n", "batch_size", "64", "[train]\nbatch_size: 8\nlr = 0.01\n"),
]


@pytest.mark.parametrize(("fmt", "text", "key", "old", "expected"), CASES)
def test_it_replaces_only_the_value_of_the_key(fmt, text, key, old, expected):
    (span,) = find_config_values(text, key, fmt)
    assert span.value == old
    assert replace_span(text, span, "8") == expected


def test_it_does_not_take_a_longer_key_for_the_one_asked():
    text = "num_classes_extra: 3\nmax_num_classes: 4\n"
    assert find_config_values(text, "num_classes", "yaml") == []


def test_it_reports_the_line_of_each_occurrence():
    text = "a:\n  num_classes: 5\nb:\n  num_classes: 6\n"
    assert [(s.line, s.value) for s in find_config_values(text, "num_classes", "yaml")] == [(2, "5"), (4, "6")]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("yaml", "model:\n  hidden_size: 32  # width\n  name: mlp\ntrain: {batch_size: 16}\n"),
        ("json", '{"model": {"hidden_size": 32, "name": "mlp", "lr": 0.5}, "train": {"batch_size": 16}}'),
        ("ini", "[model]\nhidden_size = 32 ; width\nname = mlp\n[train]\nbatch_size: 16\n"),
    ],
)
def test_it_lists_the_integer_values_of_a_config_in_file_order(fmt, text):
    assert [(k, s.value) for k, s in integer_values(text, fmt)] == [("hidden_size", "32"), ("batch_size", "16")]


def test_it_keeps_windows_line_endings_around_the_edited_value():
    text = "[model]\r\nhidden_size = 32 ; width\r\nnum_classes = 5\r\n"
    (span,) = find_config_values(text, "num_classes", "ini")
    assert replace_span(text, span, "8") == "[model]\r\nhidden_size = 32 ; width\r\nnum_classes = 8\r\n"
    assert [(k, s.value) for k, s in integer_values(text, "ini")] == [("hidden_size", "32"), ("num_classes", "5")]
