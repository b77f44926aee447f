"""The media I/O catalogue (39-media-io-catalogue.toml): OpenCV's binding and colour conversions, Pillow's
fromarray and image combination, imageio's plugin lookup, torchaudio's backends and TorchCodec, soundfile's
format check, transformers' audio feature extractors' sampling rate, librosa's
audio checks, albumentations' input checks. No train log of the thread corpus shows these families, so each
rule is shown on output the real library printed here (``tests/data/kb/kmedia``: ``NAME.out`` is what
``job.py`` printed, ``jobs.json`` holds each job's source; the interpreter prefix is rewritten to
``/usr/local`` and the job folder to ``/home/user/work``; README.md says which releases). The jobs run again
live where an interpreter with the libraries is at hand (``FAILDIAG_MEDIA_PYTHON``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, build_ruleset
from tests.kb.kb_helpers import fired, pack_rules, top3

PACK = "39-media-io-catalogue.toml"
CAPTURED = Path(__file__).resolve().parents[1] / "data" / "kb" / "kmedia"
JOBS: dict[str, str] = json.loads((CAPTURED / "jobs.json").read_text())

CASES = {
    # file: (rule, the category first, the second category among the first three or None)
    "cv_imshow": ("opencv.gui_not_implemented", "environment", "model"),
    "cv_channels": ("opencv.channel_count", "model", "dataset"),
    "cv_depth": ("opencv.unsupported_depth", "model", None),
    "cv_sizes": ("opencv.sizes_mismatch", "model", "dataset"),
    "cv_not_array": ("opencv.binding_argument_type", "model", None),
    "cv_rect_float": ("opencv.binding_argument_type", "model", None),
    "cv_layout": ("opencv.binding_argument_type", "model", None),
    "cv_imwrite_no_ext": ("opencv.imwrite_no_writer", "config", "model"),
    "cv_resize_zero": ("opencv.resize_zero_size", "model", "dataset"),
    "pil_fromarray_float": ("pil.fromarray_dtype", "model", None),
    "pil_fromarray_chw": ("pil.fromarray_dtype", "model", None),
    "pil_paste_mask": ("pil.images_mismatch", "model", "dataset"),
    "pil_blend": ("pil.images_mismatch", "model", "dataset"),
    "imageio_no_backend": ("imageio.no_backend", "environment", "dataset"),
    "imageio_v2_format": ("imageio.no_backend", "environment", "dataset"),
    "torchaudio_no_backend": ("torchaudio.no_backend", "environment", None),
    "sf_subtype": ("soundfile.format_subtype", "model", "config"),
    "hf_sampling_rate": ("audio.sampling_rate_mismatch", "model", "dataset"),
    "librosa_int_audio": ("librosa.integer_audio", "model", None),
    "librosa_nonfinite": ("librosa.non_finite_audio", "model", "dataset"),
    "alb_shapes": ("albumentations.target_shapes", "dataset", "model"),
    "alb_bbox_range": ("albumentations.bbox_out_of_range", "dataset", "config"),
    "alb_crop_size": ("albumentations.crop_larger_than_image", "config", "dataset"),
}


def test_the_pack_loads_and_each_rule_has_a_case():
    mine = pack_rules(PACK)
    ids = {r.id for r in mine}
    # shown elsewhere: torchcodec below, the backend list by train logs (test_build_and_backend_availability.py)
    shown = {rule for rule, _, _ in CASES.values()} | {
        "torchaudio.torchcodec_required",
        "torchaudio.backend_not_available",
    }
    assert ids == shown, (ids - shown, shown - ids)
    families = {}
    for r in mine:
        families[r.id.split(".")[0]] = families.get(r.id.split(".")[0], 0) + 1
        assert r.causes and all(c.fix_hints for c in r.causes), r.id
    assert families == {
        "opencv": 7,
        "pil": 2,
        "imageio": 1,
        "torchaudio": 3,
        "soundfile": 1,
        "audio": 1,
        "librosa": 2,
        "albumentations": 3,
    }


def test_no_rule_of_the_pack_replaces_another_packs_rule():
    others = [(n, t) for n, t in _builtin_packs() if n != PACK]
    other_ids = {r.id for r in build_ruleset(others).rules}
    assert not other_ids & {r.id for r in pack_rules(PACK)}


def _check(text_or_path, name: str) -> None:
    rule_id, first, second = CASES[name]
    diag = diagnose([str(text_or_path)], exit_code=1)
    rules = [c.rule for c in diag.root_causes]
    assert diag.profile.type == "runtime_error", (diag.profile.type, rules)
    top = diag.root_causes[0]
    assert (top.rule, top.category) == (rule_id, first), list(
        zip(rules, [c.category for c in diag.root_causes], strict=True)
    )
    assert top.fix_hints
    if second:
        assert second in top3(diag), (second, top3(diag))


@pytest.mark.parametrize("name", sorted(CASES))
def test_it_diagnoses_real_output(name: str):
    _check(CAPTURED / f"{name}.out", name)


def test_torchaudio_without_torchcodec_is_the_environment():
    # torchaudio 2.11's load() raises ImportError from the missing torchcodec module: the chained
    # ModuleNotFoundError keeps its own rule first; the TorchCodec rule adds its fix beside it
    diag = diagnose([str(CAPTURED / "torchaudio_no_torchcodec.out")], exit_code=1)
    assert fired(diag, "torchaudio.torchcodec_required")
    assert diag.root_causes[0].category == "environment"


def test_the_empty_image_rule_keeps_a_channel_assertion_quiet():
    # OpenCV 3.x spelled the channel check as an assertion; an empty image (imread's None) comes first
    text = "cv2.error: OpenCV(3.4.2) color.cpp:11111: error: (-215:Assertion failed) scn == 3 || scn == 4 in function 'cvtColor'\n"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "opencv.channel_count")
    diag = diagnose(
        texts={"stderr": "error: (-215:Assertion failed) !_src.empty() in function 'cvtColor'\n" + text}, exit_code=1
    )
    assert not fired(diag, "opencv.channel_count")


LIVE = os.environ.get("FAILDIAG_MEDIA_PYTHON")


@pytest.mark.skipif(
    not LIVE, reason="FAILDIAG_MEDIA_PYTHON names no interpreter with cv2/PIL/imageio/librosa/albumentations"
)
@pytest.mark.parametrize("name", sorted(n for n in CASES if not n.startswith("torchaudio")))
def test_it_diagnoses_the_job_run_live(name: str, tmp_path: Path):
    (tmp_path / "job.py").write_text(JOBS[name])
    p = subprocess.run([LIVE, "job.py"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert p.returncode != 0
    (tmp_path / "out.txt").write_text(p.stdout + p.stderr)
    _check(tmp_path / "out.txt", name)
