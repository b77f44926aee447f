"""Keep ``--faildiag-out DIR`` (a value after a space) from being taken for a test path.

The cause: pytest finds its rootdir and ini file (and so ``addopts``, markers, ``filterwarnings``) from a
first parse of the command line made *before* plugins installed through entry points are loaded; that
parse knows only pytest's built-in options, so in ``--faildiag-out /abs/dir`` the value is a positional
argument, and when that folder exists (xdist's controller creates it before its workers parse the same
command line) pytest takes it for a test path: the rootdir moves and the project's configuration is gone.
No way of declaring the option changes that (the first parse never sees it); ``--faildiag-out=/abs/dir``
never had the problem.

The repair, in ``pytest_load_initial_conftests`` (the first hook after the second parse, which does know
our options, and before conftests, ``-p`` plugins of ``addopts`` and the session see the configuration):
find rootdir and ini again from the real test paths; when they differ, adopt them and the ini's ``addopts``
as pytest would have. It uses pytest's private configuration attributes, so any surprise ends in a
one-line warning saying to write ``--faildiag-out=DIR``, never in a failed session.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import Any

VALUE_DESTS = ("faildiag_out", "faildiag_html", "faildiag_gitlab")


def misread_values(config: Any) -> list[str]:
    """Values of our options that pytest's first parse may have taken for test paths (they exist)."""
    ns = config.known_args_namespace
    out = []
    for dest in VALUE_DESTS:
        value = getattr(ns, dest, None)
        if value and Path(config.invocation_params.dir, str(value)).exists():
            out.append(str(value))
    return out


def repair_early_parse(config: Any, args: list[str]) -> bool:
    """Redo pytest's rootdir/ini decision without our options' values; True when it had to change."""
    if not misread_values(config):
        return False
    from _pytest.config.findpaths import determine_setup

    ns = config.known_args_namespace
    kwargs: dict[str, Any] = {
        "inifile": ns.inifilename,
        "args": ns.file_or_dir,
        "rootdir_cmd_arg": ns.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
    }
    if "override_ini" in inspect.signature(determine_setup).parameters:
        kwargs["override_ini"] = ns.override_ini
    found = determine_setup(**kwargs)
    rootpath, inipath, inicfg = found[0], found[1], found[2]
    if rootpath == config.rootpath and inipath == config.inipath:
        return False
    old_addopts = [str(a) for a in config.getini("addopts")]
    config._rootpath, config._inipath, config._inicfg = rootpath, inipath, inicfg
    if len(found) > 3 and hasattr(config, "_ignored_config_files"):
        config._ignored_config_files = found[3]
    config._inicache.clear()
    config._parser.extra_info["rootdir"] = str(rootpath)
    config._parser.extra_info["inifile"] = str(inipath)
    if old_addopts and args[: len(old_addopts)] == old_addopts:
        del args[: len(old_addopts)]
    args[:0] = config._validate_args(config.getini("addopts"), "via addopts config")
    config.known_args_namespace = config._parser.parse_known_args(args, namespace=copy.copy(config.option))
    config.pluginmanager.consider_preparse(args, exclude_only=False)
    if config.known_args_namespace.confcutdir is None:
        config.known_args_namespace.confcutdir = str(inipath.parent if inipath is not None else rootpath)
    if hasattr(config, "_configure_python_path"):
        config._configure_python_path()
    return True
