"""Pack 46 (the data libraries' own messages): each rule is shown on output produced for real.

The logs under tests/data/kb/data_catalogue/ were printed by child processes that ran the failing call with the
real library, in a separate environment (datasets 5.2 / pyarrow 26, transformers 5 / tokenizers 0.23,
sentencepiece 0.2.3, soundfile 0.14 with libsndfile 1.2.2, librosa 0.11 / audioread 3.1 on a machine without
FFmpeg, PyAV 18.1, opencv-python-headless 5.0, numpy 2.4, py-lmdb 3.0, zarr 3; offline, local files only); only the
install and working-directory paths were replaced. The Python standard library's readers (codecs, json, csv,
pickle, zipfile, gzip, tarfile) are run here, in a subprocess, on real bad files. One train log of the thread
corpus shows the platform-codec rule.

Rules without a log of their own (catalogue facts, shown through a neighbouring message): tokenizer.
vocabulary_unloadable (transformers wraps the tokenizer's OSError; neighbours: the sentencepiece logs),
audio.torchaudio_open_input (torchaudio's FFmpeg reader; neighbour: PyAV's "Invalid data found"),
tfrecord.corrupted_record (TensorFlow; neighbours: the truncated gzip/tar/npy files), lmdb.reader_slots
(neighbours: the other lmdb logs)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids

LOGS = Path(__file__).resolve().parents[1] / "data" / "kb" / "data_catalogue"
THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _rules(d) -> list[str]:
    return [c.rule for c in d.root_causes]


def _cats(d) -> list[str]:
    return [c.category for c in d.root_causes]


def test_the_pack_loads_without_warnings():
    assert {
        "data.utf8_undecodable",
        "datasets.cast_error",
        "arrow.parquet_magic",
        "tokenizer.pad_without_pad_token",
        "audio.libsndfile_format",
        "opencv.empty_image",
        "numpy.allow_pickle",
        "lmdb.map_full",
        "tfrecord.corrupted_record",
    } <= loaded_rule_ids()


# log, the rule that must fire, the category the catalogue puts first, the stage
CASES = [
    # a data file whose columns differ from the first file's: the data, not the model
    ("datasets_cast_error", "datasets.cast_error", "dataset", "data"),
    ("datasets_json_parse_error", "arrow.json_parse", "dataset", "data"),
    # a git-lfs pointer where the Parquet file should be
    ("datasets_parquet_lfs_pointer", "arrow.parquet_magic", "dataset", "data"),
    ("arrow_csv_ragged_row", "arrow.csv_columns", "dataset", "data"),
    ("arrow_mixed_column_types", "arrow.type_conversion", "dataset", "data"),
    # the split / column the call names: the argument the user set
    ("datasets_unknown_split", "datasets.unknown_split", "config", "data"),
    ("datasets_column_missing", "datasets.column_missing", "config", "data"),
    # a None in the text column
    ("tokenizers_none_in_text_column", "tokenizers.text_input_type", "dataset", "data"),
    # the tokenizer file is a git-lfs pointer: the weights' files
    ("sentencepiece_model_is_lfs_pointer", "sentencepiece.model_unparsable", "checkpoint", "startup"),
    ("sentencepiece_model_path_missing", "sentencepiece.model_not_found", "config", "startup"),
    ("soundfile_not_audio", "audio.libsndfile_format", "dataset", "data"),
    ("soundfile_path_missing", "audio.libsndfile_system_error", "config", "data"),
    # soundfile cannot read m4a and no FFmpeg is installed: the machine
    ("librosa_no_backend", "audio.no_backend", "environment", "data"),
    ("pyav_invalid_data", "video.ffmpeg_invalid_data", "dataset", "data"),
    # imread returned None for a wrong path, cvtColor asserts !_src.empty()
    ("opencv_imread_wrong_path", "opencv.empty_image", "config", "data"),
    ("numpy_object_array_allow_pickle", "numpy.allow_pickle", "model", "data"),
    ("numpy_npy_truncated", "numpy.npy_truncated", "dataset", "data"),
    ("lmdb_map_full", "lmdb.map_full", "config", "data"),
    ("lmdb_not_an_lmdb_file", "lmdb.not_lmdb", "dataset", "data"),
    # an array name the store does not hold
    ("zarr_array_path_wrong", "zarr.node_not_found", "config", "data"),
]


@pytest.mark.parametrize(("name", "rule", "category", "stage"), CASES, ids=[c[0] for c in CASES])
def test_it_places_the_data_library_message_where_the_catalogue_puts_it(name, rule, category, stage):
    d = diagnose([str(LOGS / f"{name}.log")])
    assert d.profile.type == "runtime_error"
    assert d.profile.stage == stage
    assert rule in _rules(d), _rules(d)
    assert _cats(d)[0] == category, list(zip(_rules(d), _cats(d), strict=True))


def test_padding_without_a_pad_token_names_the_code_before_the_data():
    """A tokenizer without a pad token asked to pad: the code's setup (model), then the configuration. The
    generic tokenizer rule of 30-python.toml (py.tokenizer, 'dataset') stands aside for the catalogue's
    reading of the same line (its suppressed_by), so the two no longer tie."""
    d = diagnose([str(LOGS / "transformers_pad_without_pad_token.log")])
    assert d.profile.stage == "data"
    assert "py.tokenizer" not in _rules(d)
    mine = [c for c in d.root_causes if c.rule == "tokenizer.pad_without_pad_token"]
    assert [c.category for c in mine] == ["model", "config"]
    assert _cats(d)[0] == "model"


def test_the_alternatives_are_distinct_hypotheses():
    """A data-reading message still names the competing homes: the Parquet pointer is the data first, then the
    machine's git-lfs/download, then the path."""
    d = diagnose([str(LOGS / "datasets_parquet_lfs_pointer.log")])
    assert _cats(d)[:3] == ["dataset", "environment", "config"]


def test_the_audioread_fallback_outranks_the_soundfile_error_it_follows():
    """librosa tries soundfile first; its 'Format not recognised' is always chained before NoBackendError, so
    the last word (no decoder on the machine) leads and the file stays a competing cause."""
    d = diagnose([str(LOGS / "librosa_no_backend.log")])
    assert "audio.libsndfile_format" not in _rules(d)
    assert {"environment", "dataset"} <= set(_cats(d)[:3])


def test_the_platform_codec_on_a_train_log_of_the_thread_corpus():
    """A Windows run decoded a UTF-8 file with cp1252 ('charmap'): open() without encoding= (model)."""
    log = THREADS / "pytest_python" / "py_unicodedecode_cp1252_open_no_encoding.log"
    d = diagnose([str(log)])
    assert "data.locale_codec" in _rules(d)
    assert _cats(d)[0] == "model"


# --- Python's own readers, run here on real bad files ---------------------------------------------------------

PREPARE = {
    "latin1.txt": b"caf\xe9 na\xefve\n",
    "rows.json": b'{"a": 1}\n{"a": 2}\n',
    "hand.json": b"{'a': 1, 'b': 2}",
    "ascii_only.txt": "d\u00e9j\u00e0 vu\n".encode(),
}

# script, the rule that must fire, the category first, extra environment
STDLIB = [
    ("open('latin1.txt', encoding='utf-8').read()", "data.utf8_undecodable", "dataset", {}),
    (
        "import gzip; gzip.open('rows.csv.gz', 'wb').write(b'a,b\\n' * 100); open('rows.csv.gz').read()",
        "data.binary_read_as_text",
        "model",
        {"PYTHONUTF8": "1"},
    ),
    # a C locale without coercion: open() decodes with ASCII
    (
        "open('ascii_only.txt').read()",
        "data.locale_codec",
        "model",
        {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
    ),
    ("import json; json.load(open('rows.json'))", "data.jsonl_as_json", "model", {}),
    ("import json; json.load(open('hand.json'))", "data.json_malformed", "dataset", {}),
    (
        "import csv; open('t.csv', 'w').write('id,text\\n1,\"' + 'x' * 200000 + '\\n'); list(csv.reader(open('t.csv')))",
        "data.csv_field_limit",
        "dataset",
        {},
    ),
    (
        "import pickle; b = pickle.dumps(list(range(5000))); open('cache.pkl', 'wb').write(b[: len(b) // 2]);"
        " pickle.load(open('cache.pkl', 'rb'))",
        "data.pickle_truncated",
        "dataset",
        {},
    ),
    (
        "import zipfile; open('data.zip', 'w').write('version https://git-lfs.github.com/spec/v1\\n');"
        " zipfile.ZipFile('data.zip')",
        "data.not_a_zip",
        "dataset",
        {},
    ),
    (
        "import gzip; open('train.json.gz', 'w').write('<html>login</html>'); gzip.open('train.json.gz').read()",
        "data.not_gzip",
        "dataset",
        {},
    ),
    (
        "import gzip; d = gzip.compress(bytes(range(256)) * 400); open('x.gz', 'wb').write(d[: len(d) // 2]);"
        " gzip.open('x.gz').read()",
        "data.compressed_truncated",
        "dataset",
        {},
    ),
    (
        "import os, tarfile\n"
        "open('m.bin', 'wb').write(os.urandom(60000))\n"
        "with tarfile.open('shard-000.tar', 'w') as t: t.add('m.bin')\n"
        "b = open('shard-000.tar', 'rb').read(); open('shard-000.tar', 'wb').write(b[:30000])\n"
        "tarfile.open('shard-000.tar').extractall('out', filter='data')",
        "data.tar_unreadable",
        "dataset",
        {},
    ),
]


@pytest.mark.parametrize(("script", "rule", "category", "env"), STDLIB, ids=[s[1] for s in STDLIB])
def test_it_reads_pythons_own_reader_errors(tmp_path, script, rule, category, env):
    for name, data in PREPARE.items():
        (tmp_path / name).write_bytes(data)
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONUTF8", "PYTHONIOENCODING"))}
    child_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=child_env,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    d = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert d.profile.type == "runtime_error"
    assert rule in _rules(d), (proc.stderr[-400:], _rules(d))
    assert _cats(d)[0] == category, list(zip(_rules(d), _cats(d), strict=True))
