"""Hooks for third parties: rule packs, validation checks and evidence collectors.

Implement them in a module registered under the ``faildiag`` entry-point group (or pass the module to
``get_plugin_manager().register``). Rules of thumb, as for any pytest hook: return quickly, never raise
(an exception is caught, turned into a warning and the hook's contribution is dropped), and return
plain data — TOML text for rule packs, JSON-serialisable dicts for evidence — so results can travel
between pytest-xdist workers.
"""

from __future__ import annotations

import warnings
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("faildiag")
hookimpl = pluggy.HookimplMarker("faildiag")


@hookspec
def faildiag_rule_packs() -> list[tuple[str, str]]:
    """Return ``(name, toml_text)`` pairs of extra rule packs. A pack whose rule ids collide with the
    built-in ones replaces those rules; a malformed pack is skipped with a warning."""


@hookspec
def faildiag_register_checks() -> None:
    """Import modules that register validation checks with ``pytest_faildiag.engine.validate.check``."""


@hookspec
def faildiag_collect_evidence(context: dict[str, Any]) -> dict[str, str] | None:
    """Return extra ``{source_name: text}`` evidence for a failure (e.g. a vendor tool's output).
    ``context`` holds ``command``, ``exit_code`` and ``out_dir`` when known."""


_PM: pluggy.PluginManager | None = None


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide manager, with entry-point plugins of group ``faildiag`` loaded once."""
    global _PM
    if _PM is None:
        pm = pluggy.PluginManager("faildiag")
        pm.add_hookspecs(__import__(__name__, fromlist=["_"]))
        try:
            pm.load_setuptools_entrypoints("faildiag")
        except Exception as exc:  # a broken third-party plugin must not break diagnosis
            warnings.warn(f"faildiag: a plugin failed to load: {exc}", stacklevel=2)
        _PM = pm
    return _PM


def collect_rule_packs() -> list[tuple[str, str]]:
    pm = get_plugin_manager()
    packs: list[tuple[str, str]] = []
    try:
        pm.hook.faildiag_register_checks()
        for result in pm.hook.faildiag_rule_packs():
            packs.extend((str(n), str(t)) for n, t in (result or []))
    except Exception as exc:
        warnings.warn(f"faildiag: a rule-pack hook failed: {exc}", stacklevel=2)
    return packs


def collect_evidence(context: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        for result in get_plugin_manager().hook.faildiag_collect_evidence(context=context):
            if isinstance(result, dict):
                out.update({str(k): str(v) for k, v in result.items()})
    except Exception as exc:
        warnings.warn(f"faildiag: an evidence hook failed: {exc}", stacklevel=2)
    return out
