"""Hooks for third parties: rule packs, validation checks and evidence collectors.

Where to implement them:

* In a ``conftest.py`` or a pytest plugin: plain functions with the names below. ``plugin.py`` adds these
  specs to pytest's own plugin manager (``pytest_addhooks``), so they act on every diagnosis that
  ``pytest --faildiag`` makes. Mark them ``@pytest.hookimpl(optionalhook=True)`` when faildiag may be
  absent or disabled (``-p no:faildiag``), or pytest rejects them as unknown hooks.
* For the ``faildiag`` command line (no pytest running): in a module registered under the ``faildiag``
  entry-point group. The same function names work there, marked with ``hookimpl`` below or not.

The names start with ``pytest_`` because pytest only reads hook functions named so. Rules of thumb, as for
any pytest hook: return quickly, never raise (an exception is caught, turned into a warning naming the
plugin, and only that plugin's contribution is dropped), and return plain data -- TOML text for rule packs,
``{name: function}`` for checks, ``{source: text}`` for evidence -- so nothing depends on import order.
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("faildiag")
hookimpl = pluggy.HookimplMarker("faildiag")
HOOK_PREFIX = "pytest_faildiag_"


@hookspec
def pytest_faildiag_rule_packs() -> list[tuple[str, str]]:  # type: ignore[empty-body]
    """Return ``(name, toml_text)`` pairs of extra rule packs (format: docs/rules.md). They load after the
    built-in packs; a rule whose id collides replaces the built-in one; a malformed pack is skipped with a
    warning."""


@hookspec
def pytest_faildiag_checks() -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
    """Return ``{check_name: function}``: validation checks a rule may list in ``checks = [...]``. A check
    is called as ``fn(ctx, cause, finding)`` (see ``engine/validate.py``) and returns a
    ``ValidationCheck`` or None. A name of a built-in check replaces it."""


@hookspec
def pytest_faildiag_collect_evidence(context: dict[str, Any]) -> dict[str, str] | None:
    """Return extra ``{source_name: text}`` evidence for a failure (a vendor tool's output, a service log).
    ``context`` holds ``command``, ``exit_code`` and ``out_dir`` (the folder this diagnosis is written to,
    None when it is only printed)."""


class _FaildiagPluginManager(pluggy.PluginManager):
    """The command line's manager. Like pytest's, it takes unmarked ``pytest_faildiag_*`` functions as hook
    implementations, so one plugin module serves ``pytest --faildiag`` and ``faildiag`` alike."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX) and inspect.isroutine(getattr(plugin, name, None)):
            opts = {
                "wrapper": False,
                "hookwrapper": False,
                "optionalhook": False,
                "tryfirst": False,
                "trylast": False,
                "specname": None,
            }
        return opts


@functools.cache
def get_plugin_manager() -> pluggy.PluginManager:
    """The command line's manager, with entry-point plugins of group ``faildiag`` loaded once per process
    (under pytest the engine is handed ``config.hook`` instead)."""
    from .rules import has_entry_points  # a cached answer: no scan of every distribution when none is ours

    pm = _FaildiagPluginManager("faildiag")
    pm.add_hookspecs(sys.modules[__name__])
    try:
        if has_entry_points("faildiag"):
            pm.load_setuptools_entrypoints("faildiag")
    except Exception as exc:  # third-party code: a plugin that fails to import must not cost the diagnosis
        warnings.warn(f"faildiag: a plugin failed to load: {type(exc).__name__}: {exc}", stacklevel=2)
    return pm


def _results(hook: pluggy.HookRelay | None, name: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
    """``(plugin name, result)`` of each implementation of hook ``name``, called one by one in pluggy's
    order (so one plugin that raises loses only its own contribution). ``hook`` is the relay to call:
    pytest's ``config.hook``, or None for the command line's manager."""
    relay = hook if hook is not None else get_plugin_manager().hook
    caller = getattr(relay, name, None)
    if caller is None:  # a relay that never had our specs added: no plugin can implement them there
        return
    for impl in reversed(caller.get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            continue  # wrappers wrap a call we do not make; our hooks have nothing for them to wrap
        try:
            result = impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
        except Exception as exc:  # third-party code: its failure becomes a warning, never a lost diagnosis
            warnings.warn(
                f"faildiag: hook {name} of plugin {impl.plugin_name} failed: {type(exc).__name__}: {exc}", stacklevel=3
            )
            continue
        if result is not None:
            yield impl.plugin_name, result


def collect_rule_packs(hook: pluggy.HookRelay | None = None) -> list[tuple[str, str]]:
    """Every ``(name, toml_text)`` the ``pytest_faildiag_rule_packs`` implementations return."""
    packs: list[tuple[str, str]] = []
    for plugin, result in _results(hook, "pytest_faildiag_rule_packs"):
        try:
            packs.extend((str(n), str(t)) for n, t in result)
        except (TypeError, ValueError) as exc:
            warnings.warn(
                f"faildiag: plugin {plugin} returned rule packs that are not (name, text) pairs: {exc}", stacklevel=2
            )
    return packs


def collect_checks(hook: pluggy.HookRelay | None = None) -> dict[str, Callable[..., Any]]:
    """Every check the ``pytest_faildiag_checks`` implementations return, by name (callables only)."""
    found: dict[str, Callable[..., Any]] = {}
    for plugin, result in _results(hook, "pytest_faildiag_checks"):
        if not isinstance(result, Mapping):
            warnings.warn(
                f"faildiag: plugin {plugin} returned {type(result).__name__} from "
                "pytest_faildiag_checks, not a {name: function} mapping",
                stacklevel=2,
            )
            continue
        for name, fn in result.items():
            if callable(fn):
                found[str(name)] = fn
            else:
                warnings.warn(f"faildiag: check {name!r} of plugin {plugin} is not callable", stacklevel=2)
    return found


def collect_evidence(context: dict[str, Any], hook: pluggy.HookRelay | None = None) -> dict[str, str]:
    """Every ``{source: text}`` the ``pytest_faildiag_collect_evidence`` implementations return."""
    out: dict[str, str] = {}
    for plugin, result in _results(hook, "pytest_faildiag_collect_evidence", context=context):
        if isinstance(result, Mapping):
            out.update({str(k): str(v) for k, v in result.items()})
        else:
            warnings.warn(
                f"faildiag: plugin {plugin} returned {type(result).__name__} as evidence, "
                "not a {source: text} mapping",
                stacklevel=2,
            )
    return out
