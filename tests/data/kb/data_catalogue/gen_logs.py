"""Regenerate the real logs of this folder: each case runs in a child interpreter that has the data
libraries installed (datasets, pyarrow, transformers, tokenizers, sentencepiece, soundfile, librosa, av,
opencv-python-headless, numpy, lmdb, zarr: a scratch virtualenv, not the project's), and its real output is
written as <case>.log with the install and working-directory paths made neutral.

    python gen_logs.py SCRATCH_VENV_PYTHON OUT_DIR
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

V = sys.argv[1]
OUT = pathlib.Path(sys.argv[2])
OUT.mkdir(parents=True, exist_ok=True)
SITE = subprocess.run(
    [V, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
).stdout.strip()
PREFIX = subprocess.run(
    [V, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True
).stdout.strip()
WORK = pathlib.Path(tempfile.mkdtemp())
CASES = {
    "datasets_cast_error": (
        """
import pathlib
pathlib.Path('one.jsonl').write_text('{"text": "a", "label": 1}\\n')
pathlib.Path('two.jsonl').write_text('{"text": "b", "score": 0.5}\\n')
import datasets
datasets.load_dataset('json', data_files=['one.jsonl', 'two.jsonl'])
""",
        "datasets.cast_error",
        "dataset",
    ),
    "datasets_json_parse_error": (
        """
import pathlib
pathlib.Path('train.jsonl').write_text('{"text": "a"}\\n{"text": "b",,}\\n')
import datasets
datasets.load_dataset('json', data_files='train.jsonl')
""",
        "arrow.json_parse",
        "dataset",
    ),
    "datasets_parquet_lfs_pointer": (
        """
import pathlib
pathlib.Path('train.parquet').write_text('version https://git-lfs.github.com/spec/v1\\noid sha256:4d7a2146\\nsize 1048576\\n')
import datasets
datasets.load_dataset('parquet', data_files='train.parquet')
""",
        "arrow.parquet_magic",
        "dataset",
    ),
    "arrow_csv_ragged_row": (
        """
import pathlib
pathlib.Path('rows.csv').write_text('id,text\\n1,hello\\n2,hello, world\\n')
import pyarrow.csv as pc
pc.read_csv('rows.csv')
""",
        "arrow.csv_columns",
        "dataset",
    ),
    "arrow_mixed_column_types": (
        """
import pyarrow as pa
rows = [{'id': 1, 'label': 'cat'}, {'id': 2, 'label': 3}]
pa.Table.from_pylist(rows, schema=pa.schema([('id', pa.int64()), ('label', pa.string())]))
""",
        "arrow.type_conversion",
        "dataset",
    ),
    "datasets_unknown_split": (
        """
import pathlib
pathlib.Path('train.jsonl').write_text('{"text": "a"}\\n')
import datasets
datasets.load_dataset('json', data_files='train.jsonl', split='validation')
""",
        "datasets.unknown_split",
        "config",
    ),
    "datasets_column_missing": (
        """
import pathlib
pathlib.Path('train.jsonl').write_text('{"sentence": "a", "label": 0}\\n')
import datasets
ds = datasets.load_dataset('json', data_files='train.jsonl', split='train')
ds.remove_columns(['text'])
""",
        "datasets.column_missing",
        "config",
    ),
    "transformers_pad_without_pad_token": (
        """
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
core = Tokenizer(models.WordLevel({'a': 0, 'b': 1, '<unk>': 2, '</s>': 3}, unk_token='<unk>'))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token='<unk>', eos_token='</s>')
tok(['a', 'a b'], padding=True)
""",
        "tokenizer.pad_without_pad_token",
        "model",
    ),
    "tokenizers_none_in_text_column": (
        """
from tokenizers import Tokenizer, models, pre_tokenizers
tok = Tokenizer(models.WordLevel({'a': 0, '[UNK]': 1}, unk_token='[UNK]'))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
texts = ['a', None, 'a a']  # an empty cell read from the data
tok.encode_batch(texts)
""",
        "tokenizers.text_input_type",
        "dataset",
    ),
    "sentencepiece_model_is_lfs_pointer": (
        """
import pathlib
pathlib.Path('tokenizer.model').write_text('version https://git-lfs.github.com/spec/v1\\noid sha256:9e556afd\\nsize 499723\\n')
import sentencepiece as spm
spm.SentencePieceProcessor(model_file='tokenizer.model')
""",
        "sentencepiece.model_unparsable",
        "checkpoint",
    ),
    "sentencepiece_model_path_missing": (
        """
import sentencepiece as spm
spm.SentencePieceProcessor(model_file='models/spm/tokenizer.model')
""",
        "sentencepiece.model_not_found",
        "config",
    ),
    "soundfile_not_audio": (
        """
import pathlib
pathlib.Path('clip_0001.wav').write_text('<html><body>404 Not Found</body></html>')
import soundfile as sf
sf.read('clip_0001.wav')
""",
        "audio.libsndfile_format",
        "dataset",
    ),
    "soundfile_path_missing": (
        """
import soundfile as sf
sf.read('wavs/clip_0001.wav')
""",
        "audio.libsndfile_system_error",
        "config",
    ),
    "librosa_no_backend": (
        """
import pathlib
pathlib.Path('song.m4a').write_bytes(b'\\x00\\x00\\x00\\x20ftypM4A ' + bytes(200))
import librosa
librosa.load('song.m4a', sr=16000)
""",
        "audio.no_backend",
        "environment",
    ),
    "pyav_invalid_data": (
        """
import pathlib
pathlib.Path('video_0001.mp4').write_bytes(bytes(range(256)) * 8)
import av
av.open('video_0001.mp4')
""",
        "video.ffmpeg_invalid_data",
        "dataset",
    ),
    "opencv_imread_wrong_path": (
        """
import cv2
img = cv2.imread('images/0001.jpg')
img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
""",
        "opencv.empty_image",
        "config",
    ),
    "numpy_object_array_allow_pickle": (
        """
import numpy as np
np.save('features.npy', np.array([[1, 2], [3]], dtype=object))
feats = np.load('features.npy')
""",
        "numpy.allow_pickle",
        "model",
    ),
    "numpy_npy_truncated": (
        """
import numpy as np
np.save('emb.npy', np.zeros((1000, 16), dtype=np.float32))
data = open('emb.npy', 'rb').read()
open('emb.npy', 'wb').write(data[: len(data) // 3])
np.load('emb.npy')
""",
        "numpy.npy_truncated",
        "dataset",
    ),
    "lmdb_map_full": (
        """
import lmdb
env = lmdb.open('train_lmdb', map_size=1 << 16)
with env.begin(write=True) as txn:
    for i in range(1000):
        txn.put(f'{i:08d}'.encode(), b'x' * 1024)
""",
        "lmdb.map_full",
        "config",
    ),
    "lmdb_not_an_lmdb_file": (
        """
import pathlib
pathlib.Path('train.lmdb').write_bytes(b'\\x00' * 8192)
import lmdb
lmdb.open('train.lmdb', subdir=False, readonly=True, lock=False)
""",
        "lmdb.invalid_or_busy",
        "dataset",
    ),
    "zarr_array_path_wrong": (
        """
import zarr
root = zarr.open_group('features.zarr', mode='w')
root.create_array('train/images', shape=(8, 32, 32), dtype='uint8')
images = zarr.open_array('features.zarr', path='train/image', mode='r')  # the array is named 'images'
""",
        "zarr.node_not_found",
        "config",
    ),
}

for name, (code, _rule, _category) in CASES.items():
    work = WORK / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "prepare_data.py").write_text(textwrap.dedent(code))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(work / ".hf"), PYTHONUNBUFFERED="1")
    r = subprocess.run([V, "prepare_data.py"], cwd=work, capture_output=True, text=True, env=env)
    text = r.stdout + r.stderr
    text = text.replace(SITE, "/opt/venv/lib/python3.11/site-packages").replace(str(work), "/home/user/project")
    text = text.replace(PREFIX, "/opt/venv")
    assert str(WORK) not in text, (name, text)
    (OUT / f"{name}.log").write_text(text)
    print(name, r.returncode, text.strip().splitlines()[-1][:150] if text.strip() else "")
