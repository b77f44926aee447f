"""pickle finds a class by its module path and name (``find_class``): "Can't get attribute 'X' on <module 'm' from
'.../site-packages/...'>" says an installed package's module is there without the class, so the installed
release is not the one that pickled the object (``py.pickled_class_missing_in_package``: environment first,
the package's missing alias second; ``torch.msg.pickled_class_missing``'s whole-object reading stays silent).
A real process that pickles an object of an installed package's release and loads it under a release that
renamed the class; a train log of Stable-Baselines3; the program's own ``__main__`` keeps the other reading."""

from __future__ import annotations

from pathlib import Path

from .kb_helpers import fired, run_failing, top3, train_log_with_rules

RULE = "py.pickled_class_missing_in_package"


def test_an_object_pickled_by_another_release_of_an_installed_package(tmp_path: Path) -> None:
    pkg = tmp_path / "site-packages" / "agentlib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "aliases.py").write_text("class TrainFreq:\n    def __init__(self, n):\n        self.n = n\n")
    diag, stderr = run_failing(
        tmp_path,
        """
        import importlib, pickle, sys
        sys.path.insert(0, "site-packages")
        from agentlib.aliases import TrainFreq
        blob = pickle.dumps(TrainFreq(4))
        with open("site-packages/agentlib/aliases.py", "w") as f:  # the next release renamed the class
            f.write("class TrainFrequency:\\n    pass\\n")
        del sys.modules["agentlib.aliases"]
        importlib.invalidate_caches()
        pickle.loads(blob)
        """,
    )
    assert "Can't get attribute 'TrainFreq' on <module 'agentlib.aliases' from" in stderr
    assert fired(diag, RULE)
    assert not fired(diag, "torch.msg.pickled_class_missing")
    assert diag.profile.stage == "checkpoint"
    assert top3(diag)[:2] == ["environment", "library"]


def test_a_train_log_of_an_older_release_loading_a_newer_ones_object() -> None:
    diag, label = train_log_with_rules("environment/sb3_old_version_cannot_unpickle_trainfreq")
    assert fired(diag, RULE)
    assert top3(diag)[0] == "environment" == label["category"]


def test_a_class_of_the_programs_own_main_is_not_an_installed_package() -> None:
    diag, _ = train_log_with_rules("pytorch/torch_load_whole_model_class_missing_repo_inference_script")
    assert not fired(diag, RULE)
    assert fired(diag, "torch.msg.pickled_class_missing")
