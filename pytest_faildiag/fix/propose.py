"""Propose ONE fix for a snapshot: the exact minimal change, or manual steps when none is safe.

The fix comes from the top-ranked cause's ``fix_template`` (copied by the engine from the rule pack's
``fix = {...}``). When the top cause has no template that fits the evidence, the other causes of the same
rule (alternative remedies for the same failing line) are tried in rank order; a cause from another rule
is never used, because its evidence is a different line. A proposal's id is a hash of everything it will
do: every file (resolved path, sha256 of its content before and after), the exact diff, and the command
and folder of the verification rerun. Confirming an id therefore applies and runs exactly what was shown,
and fails cleanly when a file, the command or the folder changed in between. Only regular files inside the
run's folder are candidates (``FixContext.project_file``).

Template kinds (see ``docs/fix.md``): ``source`` (regex ``find``/``replace`` on the user frame's file, or
``strategy = "linear_in_features"``), ``config`` (``strategy = "class_count"``), ``env`` (``name`` and
optional ``defaults``), ``dependency`` (``pin``/``module``: manual, installing packages is never automatic).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .context import CONFIG_SUFFIXES, FixContext
from .edit import find_config_values, integer_values, replace_span
from .paths import read_regular

SECRET_NAME = re.compile(r"(?i)(token|secret|passw|api_?key|access_?key|private|credential|auth|cookie|session)")
CLASS_COUNT_KEYS = (
    "num_classes",
    "n_classes",
    "nclasses",
    "num_class",
    "n_class",
    "num_labels",
    "n_labels",
    "classes",
    "num_outputs",
    "out_classes",
)


@dataclass
class Change:
    """One concrete edit. ``new_text`` (the whole new file) stays in memory: the JSON shows ``diff``."""

    kind: str  # "env" | "config" | "source" | "dependency"
    description: str
    path: str | None = None
    key: str | None = None
    old: str | None = None
    new: str | None = None
    line: int | None = None
    diff: str | None = None
    before_sha256: str | None = None
    resolved_path: str | None = None  # the file written, symbolic links resolved
    after_sha256: str | None = None
    new_text: str | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "description": self.description,
            "path": self.path,
            "key": self.key,
            "old": self.old,
            "new": self.new,
            "line": self.line,
            "diff": self.diff,
            "before_sha256": self.before_sha256,
            "resolved_path": self.resolved_path,
            "after_sha256": self.after_sha256,
        }
        return {k: v for k, v in d.items() if v is not None}


@dataclass
class Rerun:
    """The verification rerun a proposal will do: the exact command and folder, and whether it may run
    without its own confirmation (``recorded_here``: given with --command, or sealed by this user's
    faildiag for this snapshot and folder)."""

    command: str | None
    cwd: str
    recorded_here: bool
    origin: str = "report"

    @property
    def id(self) -> str:
        """What ``--confirm-command`` takes: a hash of the command and its folder."""
        blob = json.dumps([self.command, self.cwd]).encode()
        return f"cmd-{hashlib.sha256(blob).hexdigest()[:10]}"

    @property
    def trust(self) -> str:
        if self.command is None:
            return "no command to rerun"
        if self.origin == "option":
            return "given with --command"
        if self.recorded_here:
            return "recorded by faildiag on this machine for this snapshot and folder"
        return (
            "NOT recorded by faildiag on this machine for this snapshot and folder (another machine's "
            "snapshot, or edited): it runs only with its own confirmation"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "cwd": self.cwd,
            "recorded_here": self.recorded_here or self.origin == "option",
            "trust": self.trust,
            "command_id": self.id,
        }


@dataclass
class Proposal:
    id: str
    summary: str
    impact: str
    cause: str | None
    changes: list[Change] = field(default_factory=list)
    manual_steps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kind: str = "manual"
    rerun: Rerun | None = None

    @property
    def automatic(self) -> bool:
        return any(c.kind in {"env", "config", "source"} for c in self.changes)

    @property
    def touches_source(self) -> bool:
        return any(c.kind == "source" for c in self.changes)

    @property
    def needs_command_confirmation(self) -> bool:
        """The rerun's command was not recorded here: ``--yes`` and the fix id are not enough to run it."""
        return (
            self.rerun is not None
            and self.rerun.command is not None
            and not (self.rerun.recorded_here or self.rerun.origin == "option")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "summary": self.summary,
            "impact": self.impact,
            "changes": [c.to_dict() for c in self.changes],
            "cause": self.cause,
            "automatic": self.automatic,
            "manual_steps": list(self.manual_steps),
            "notes": list(self.notes),
            "rerun": self.rerun.to_dict() if self.rerun else None,
        }


Strategy = Callable[[FixContext, dict[str, Any], dict[str, Any]], "Proposal | None"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    data = read_regular(path)
    if data is None:
        raise ValueError(f"{path}: not a readable regular file")
    return _sha(data)


def proposal_id(p: Proposal) -> str:
    """The hash of everything the proposal will do (files, hashes, diffs, env values, rerun command and
    folder) and says (summary, impact, manual steps); notes are commentary and left out."""
    payload = {
        "kind": p.kind,
        "cause": p.cause,
        "summary": p.summary,
        "impact": p.impact,
        "changes": [c.to_dict() for c in p.changes],
        "manual": list(p.manual_steps),
        "rerun": [p.rerun.command, p.rerun.cwd] if p.rerun else None,
    }
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return f"{p.kind}-{hashlib.sha256(blob).hexdigest()[:10]}"


def _finish(
    kind: str, cause: dict[str, Any], summary: str, impact: str, changes: list[Change], manual: list[str] | None = None
) -> Proposal:
    """A proposal without its id: ``propose`` adds the rerun and then hashes the whole."""
    cid = str(cause.get("id")) if cause.get("id") else None
    return Proposal("", summary, impact, cid, changes, manual or [], kind=kind)


def split_lines(text: str) -> list[str]:
    """Lines as Python numbers them (``\n``, ``\r\n``, ``\r``), ends kept. ``str.splitlines`` also splits
    at form feeds and U+2028, which would put a traceback's line N elsewhere."""
    return [m.group() for m in re.finditer(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)]


def _read(path: Path) -> str | None:
    """The file's text with its line endings as they are (CRLF files stay CRLF after an edit); None for
    anything but a regular UTF-8 file of bounded size."""
    data = read_regular(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _diff(ctx: FixContext, path: Path, old: str, new: str) -> str:
    name = ctx.rel(path)
    return "".join(difflib.unified_diff(split_lines(old), split_lines(new), f"a/{name}", f"b/{name}"))


def _breaks_python(path: Path, old_text: str, new_text: str) -> bool:
    """A source edit that turns a parseable Python file into an unparseable one is never proposed."""
    if path.suffix != ".py":
        return False
    try:
        ast.parse(old_text)
    except (SyntaxError, ValueError):
        return False
    try:
        ast.parse(new_text)
    except (SyntaxError, ValueError):
        return True
    return False


def _config_value_change(ctx: FixContext, path: Path, text: str, key: str, span: Any, new_value: str) -> Change:
    """One value of a config file replaced in place (its span), as a proposed file change."""
    return _file_change(
        ctx,
        "config",
        path,
        text,
        replace_span(text, span, new_value),
        span.line,
        f"{ctx.rel(path)}: {key}: {span.value} -> {new_value}",
        key=key,
        old=span.value,
        new=new_value,
    )


def _file_change(
    ctx: FixContext,
    kind: str,
    path: Path,
    old_text: str,
    new_text: str,
    line: int,
    description: str,
    key: str | None = None,
    old: str | None = None,
    new: str | None = None,
) -> Change:
    if _breaks_python(path, old_text, new_text):
        raise ValueError(f"the edit of {ctx.rel(path)}:{line} would not parse as Python")
    return Change(
        kind=kind,
        description=description,
        path=ctx.rel(path),
        key=key,
        old=old,
        new=new,
        line=line,
        diff=_diff(ctx, path, old_text, new_text),
        before_sha256=_sha(old_text.encode("utf-8")),
        resolved_path=str(path),
        after_sha256=_sha(new_text.encode("utf-8")),
        new_text=new_text,
    )


def _line_change(
    ctx: FixContext, path: Path, text: str, no: int, new_line: str, description: str, **fields: str | None
) -> Change:
    """A source edit that replaces line ``no`` (1-based) of ``text`` with ``new_line``."""
    lines = split_lines(text)
    lines[no - 1] = new_line
    return _file_change(ctx, "source", path, text, "".join(lines), no, description, **fields)


def _impact(ctx: FixContext, what: str) -> str:
    excerpt = str(ctx.first_failure.get("excerpt") or "").strip()
    short = excerpt if len(excerpt) <= 140 else excerpt[:139].rstrip() + "…"
    tail = f": the run should no longer stop at “{short}”" if excerpt else ""
    return f"{what}{tail}"


# --------------------------------------------------------------------------------------------- source


def _source_regex(ctx: FixContext, cause: dict[str, Any], tpl: dict[str, Any]) -> Proposal | None:
    """Apply the template's ``find``/``replace`` to exactly one line: the user frame's line when it matches,
    else the only matching line in the candidate files (more than one candidate: no automatic change)."""
    try:
        find = re.compile(str(tpl["find"]))
    except (KeyError, re.error):
        return None
    replace = str(tpl.get("replace", ""))
    skip = str(tpl.get("skip_if") or "")
    candidates: list[tuple[Path, int, str, str]] = []
    for fr in ctx.editable_frames():
        text = _read(fr.path) if fr.path else None
        if text is None:
            continue
        lines = split_lines(text)
        if 0 < fr.line <= len(lines):
            hit = _sub_line(find, replace, skip, lines[fr.line - 1])
            if hit is not None:
                candidates = [(fr.path, fr.line, text, hit)]  # type: ignore[list-item]
                break
    if not candidates:
        for path in ctx.source_files():
            text = _read(path)
            if text is None:
                continue
            for no, line in enumerate(split_lines(text), 1):
                hit = _sub_line(find, replace, skip, line)
                if hit is not None:
                    candidates.append((path, no, text, hit))
            if len(candidates) > 1:
                break
    if len(candidates) != 1:
        return None
    path, no, text, new_line = candidates[0]
    old_line = split_lines(text)[no - 1].strip()
    change = _line_change(
        ctx,
        path,
        text,
        no,
        new_line,
        f"{ctx.rel(path)}:{no}: {old_line} -> {new_line.strip()}",
        old=old_line,
        new=new_line.strip(),
    )
    note = str(tpl.get("note") or "")
    summary = f"change {ctx.rel(path)}:{no} to `{new_line.strip()}`" + (f" ({note})" if note else "")
    return _finish(
        "source", cause, summary, _impact(ctx, "the call at the failing line is changed as the rule suggests"), [change]
    )


def _sub_line(find: re.Pattern[str], replace: str, skip: str, line: str) -> str | None:
    if skip and skip in line:
        return None
    try:
        new, n = find.subn(replace, line, count=1)
    except (re.error, IndexError):
        return None
    return new if n and new != line else None


_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((?P<m>\d+)x(?P<k>\d+) and (?P<k2>\d+)x(?P<n>\d+)\)")
_CALLED_ATTR = re.compile(r"self\.(\w+)\s*\(")


def _linear_in_features(ctx: FixContext, cause: dict[str, Any], tpl: dict[str, Any]) -> Proposal | None:
    """``mat1 and mat2 shapes cannot be multiplied (AxK and JxN)``: a Linear declared with in_features J
    receives K features. Fix the one literal ``Linear(J, N)`` in the user's code (the layer the failing
    frame calls when it can tell) to ``Linear(K, N)``. Ambiguous or computed sizes: no automatic change."""
    m = _MATMUL.search(ctx.evidence_text)
    if not m or m["k"] == m["k2"]:
        return None
    got, declared, out = m["k"], m["k2"], m["n"]
    decl = re.compile(
        rf"(?P<pre>\bLinear\(\s*(?:in_features\s*=\s*)?){declared}(?P<post>\s*,\s*(?:out_features\s*=\s*)?{out}\b)"
    )
    called = {a for fr in ctx.user_frames() for a in _CALLED_ATTR.findall(fr.code)}
    hits: list[tuple[Path, int, str, re.Match[str], str]] = []
    for path in ctx.source_files():
        text = _read(path)
        if text is None:
            continue
        for no, line in enumerate(split_lines(text), 1):
            dm = decl.search(line)
            if dm:
                hits.append((path, no, text, dm, line))
    if len(hits) > 1 and called:
        named = [h for h in hits if any(re.search(rf"\bself\.{a}\s*=", h[4]) for a in called)]
        hits = named or hits
    if len(hits) != 1:
        return None
    path, no, text, dm, line = hits[0]
    new_line = line[: dm.start()] + dm["pre"] + got + dm["post"] + line[dm.end() :]
    change = _line_change(
        ctx,
        path,
        text,
        no,
        new_line,
        f"{ctx.rel(path)}:{no}: in_features {declared} -> {got}",
        key="in_features",
        old=declared,
        new=got,
    )
    summary = f"set in_features of the Linear at {ctx.rel(path)}:{no} to {got} (it receives {got} features, declared {declared})"
    return _finish(
        "source", cause, summary, _impact(ctx, f"the layer accepts the {got}-feature input it is given"), [change]
    )


# --------------------------------------------------------------------------------------------- config


_TARGET = re.compile(r"Target (?P<t>\d+) is out of bounds")


def _class_count(ctx: FixContext, cause: dict[str, Any], tpl: dict[str, Any]) -> Proposal | None:
    """``Target T is out of bounds``: the class count in the config is too small. Raise the one class-count
    key whose integer value is <= T to T + 1 (the smallest value that admits the label seen)."""
    raw = str(tpl.get("target") or "")
    if not raw.isdigit():
        m = _TARGET.search(ctx.evidence_text)
        if not m:
            return None
        raw = m["t"]
    target = int(raw)
    keys = [str(k) for k in tpl.get("keys") or CLASS_COUNT_KEYS]
    hits = []
    for path in ctx.config_files():
        text = _read(path)
        if text is None:
            continue
        fmt = CONFIG_SUFFIXES[path.suffix.lower()]
        for key in keys:
            for span in find_config_values(text, key, fmt):
                if span.value.isdigit() and int(span.value) <= target:
                    hits.append((path, text, key, span))
    if len(hits) != 1:
        return None
    path, text, key, span = hits[0]
    new_value = str(target + 1)
    change = _config_value_change(ctx, path, text, key, span, new_value)
    summary = f"set {key} = {new_value} in {ctx.rel(path)} (was {span.value}; the data has label {target})"
    return _finish("config", cause, summary, _impact(ctx, f"the model/loss accept labels up to {target}"), [change])


_SIZE_MISMATCH = re.compile(
    r"size mismatch for (?P<param>\S+?): copying a param with shape torch\.Size\(\[(?P<ckpt>[\d, ]*)\]\) "
    r"from checkpoint, the shape in current model is torch\.Size\(\[(?P<model>[\d, ]*)\]\)"
)
_SIZE_KEY = re.compile(
    r"(?i)(hidden|dim|width|embd|embed|units|channels|features|d_model|d_ff|ffn|heads|vocab|n_layer|num_layers|depth)"
)
_NOT_SIZE_KEY = re.compile(r"(?i)(batch|seed|epoch|step|worker|port|rank|patience|log|save|eval)")


def _checkpoint_sizes(ctx: FixContext, cause: dict[str, Any], tpl: dict[str, Any]) -> Proposal | None:
    """``size mismatch for W: copying a param with shape [64, 8] from checkpoint, the shape in current model
    is [32, 8]``: the model was built with a size the checkpoint was not trained with. Map each differing
    dimension (current -> checkpoint); change the one size-like config key that holds a current value to
    the checkpoint's. Inconsistent shapes or several candidate keys: no automatic change."""
    mapping: dict[int, int] = {}
    for m in _SIZE_MISMATCH.finditer(ctx.evidence_text):
        ck = [int(v) for v in m["ckpt"].replace(" ", "").split(",") if v]
        mo = [int(v) for v in m["model"].replace(" ", "").split(",") if v]
        if len(ck) != len(mo):
            return None
        for now, want in zip(mo, ck, strict=True):
            if now != want:
                if mapping.get(now, want) != want:
                    return None
                mapping[now] = want
    if not mapping:
        return None
    hits = []
    for path in ctx.config_files():
        text = _read(path)
        if text is None:
            continue
        fmt = CONFIG_SUFFIXES[path.suffix.lower()]
        for key, span in integer_values(text, fmt):
            leaf = key.rsplit(".", 1)[-1]
            if int(span.value) in mapping and _SIZE_KEY.search(leaf) and not _NOT_SIZE_KEY.search(leaf):
                hits.append((path, text, key, span))
    if len(hits) != 1:
        return None
    path, text, key, span = hits[0]
    new_value = str(mapping[int(span.value)])
    change = _config_value_change(ctx, path, text, key, span, new_value)
    summary = (
        f"set {key} = {new_value} in {ctx.rel(path)} (was {span.value}; the checkpoint was trained with {new_value})"
    )
    return _finish("config", cause, summary, _impact(ctx, "the model is built with the checkpoint's sizes"), [change])


# --------------------------------------------------------------------------------------------- env


_ENV_MISSING = [
    re.compile(r"environment variable (?P<var>[A-Za-z_][A-Za-z0-9_]*) expected, but not set"),
    re.compile(
        r"(?:environment variable|env var(?:iable)?)\s+['\"`]?(?P<var>[A-Z_][A-Z0-9_]*)['\"`]?\s+(?:is\s+)?(?:not set|unset|missing|must be set|is required)"
    ),
    re.compile(r"['\"`]?(?P<var>[A-Z][A-Z0-9_]{2,})['\"`]? (?:environment variable )?is not set"),
]
_KEYERROR = re.compile(r"^KeyError: '(?P<var>[A-Z][A-Z0-9_]+)'\s*$", re.M)


def _missing_var(ctx: FixContext, tpl: dict[str, Any]) -> str | None:
    name = str(tpl.get("name") or "")
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        if _KEYERROR.search(ctx.evidence_text) and not re.search(r"environ|getenv", ctx.evidence_text):
            return None  # a KeyError on an upper-case dict key, not the environment
        return name
    for pat in _ENV_MISSING:
        m = pat.search(ctx.evidence_text)
        if m:
            return m["var"]
    m = _KEYERROR.search(ctx.evidence_text)
    if m and re.search(rf"(environ|getenv)\S*\(?\s*\[?['\"]{m['var']}['\"]", ctx.evidence_text):
        return m["var"]
    return None


def _env_value(ctx: FixContext, var: str, tpl: dict[str, Any]) -> tuple[str, str] | None:
    """A value for ``var`` and where it came from: the template's defaults, an ``.env.example``-style file
    in the run folder, or, for a ``*_DIR``/``*_PATH``/``*_ROOT`` name, the one folder named after it."""
    defaults = tpl.get("defaults") if isinstance(tpl.get("defaults"), dict) else {}
    if var in defaults:
        return str(defaults[var]), "the rule's default for a single-node run"
    for name in (".env.example", ".env.sample", ".env.template", ".env.dist", "env.example"):
        p = ctx.cwd / name  # hidden names are expected here: only the link-out and non-regular checks apply
        inside = Path(os.path.realpath(p)).is_relative_to(os.path.realpath(ctx.cwd))
        text = _read(p) if inside else None
        if text is None:
            continue
        m = re.search(
            rf"^\s*(?:export\s+)?{re.escape(var)}\s*=\s*['\"]?(?P<v>[^'\"\n#]*?)['\"]?\s*(?:#.*)?$", text, re.M
        )
        if m and m["v"] and "<" not in m["v"]:
            return m["v"], f"{name} in the run folder"
    stem_m = re.fullmatch(r"(?P<stem>[A-Z0-9_]+?)_(?:DIR|PATH|ROOT|FOLDER)", var)
    if stem_m:
        stem = stem_m["stem"].lower()
        dirs = [d for d in (ctx.cwd / stem, ctx.cwd / f"{stem}s", ctx.cwd / f"{stem}set") if d.is_dir()]
        if len(dirs) == 1:
            return str(dirs[0].resolve()), f"the folder {ctx.rel(dirs[0])}/ in the run folder"
    return None


def _env(ctx: FixContext, cause: dict[str, Any], tpl: dict[str, Any]) -> Proposal | None:
    var = _missing_var(ctx, tpl)
    if var is None or SECRET_NAME.search(var):
        return None
    found = _env_value(ctx, var, tpl)
    if found is None:
        return None
    value, origin = found
    content = env_text([(var, value)])
    change = Change(
        kind="env",
        description=f"{var}={value} for the rerun (recorded in the snapshot's fix/fix.env)",
        key=var,
        new=value,
        path="fix/fix.env",
        resolved_path=str(Path(os.path.realpath(ctx.snapshot)) / "fix" / "fix.env"),
        after_sha256=_sha(content.encode("utf-8")),
    )
    summary = f"set the environment variable {var}={value} (value from {origin})"
    return _finish("env", cause, summary, _impact(ctx, f"the program finds {var} in its environment"), [change])


def env_text(pairs: list[tuple[str, str]]) -> str:
    """The content of ``SNAPSHOT/fix/fix.env`` for ``(name, value)`` pairs (what the proposal hashes)."""
    lines = ["# written by `faildiag fix`: the environment of the verification rerun\n"]
    for key, value in pairs:
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key}="{escaped}"\n')
    return "".join(lines)


# --------------------------------------------------------------------------------------------- manual


def _dependency_steps(tpl: dict[str, Any]) -> list[str]:
    pin = str(tpl.get("pin") or "")
    module = str(tpl.get("module") or "")
    if pin:
        return [
            f"in the run's environment: python -m pip install '{pin}'",
            f"record the pin '{pin}' in the project's dependencies",
        ]
    if module and module != "?":
        top = module.split(".")[0]
        return [
            f"install the distribution that provides '{top}' into the interpreter the run uses "
            f"(often: python -m pip install {top}); the import name and the package name can differ",
            "declare it in the project's dependencies",
        ]
    return []


def manual_proposal(ctx: FixContext, cause: dict[str, Any] | None) -> Proposal:
    """No safe automatic change: say so, and give the steps a person should take."""
    if cause is None:
        steps = [str(a) for a in ctx.report.get("next_actions") or []] or ["collect the full log of the failing run"]
        return _finish(
            "manual", {}, "no fix to propose: the diagnosis found no known cause", "none (nothing to change)", [], steps
        )
    tpl = cause.get("fix_template") if isinstance(cause.get("fix_template"), dict) else {}
    steps = _dependency_steps(tpl) if tpl.get("kind") == "dependency" else []
    steps += [str(h) for h in cause.get("fix_hints") or [] if str(h) not in steps]
    profile = ctx.report.get("profile") or {}
    if cause.get("category") == "operator" or profile.get("type") == "unsupported_op":
        steps.append(
            "hand off to operator work: the operator in the evidence has no implementation for this "
            f"device/dtype; attach {ctx.snapshot / 'report.json'} (the failing op, its inputs' dtypes and "
            "shapes) to the request and keep the CPU/float32 fallback until it lands"
        )
    if not steps:
        steps = ["read the evidence in report.md and change the code or configuration it points at"]
    what = "a package installation" if tpl.get("kind") == "dependency" else "no safe automatic change"
    summary = f"{what} for {cause.get('id')}: {cause.get('summary', '')}".strip()
    return _finish("manual", cause, summary, "none until the manual steps are done", [], steps)


# --------------------------------------------------------------------------------------------- driver


STRATEGIES: dict[str, Strategy] = {
    "linear_in_features": _linear_in_features,
    "class_count": _class_count,
    "checkpoint_sizes": _checkpoint_sizes,
}
KIND_DEFAULT: dict[str, Strategy] = {"source": _source_regex, "env": _env}


def _from_template(ctx: FixContext, cause: dict[str, Any]) -> Proposal | None:
    tpl = cause.get("fix_template")
    if not isinstance(tpl, dict):
        return None
    fn = STRATEGIES.get(str(tpl.get("strategy") or "")) or KIND_DEFAULT.get(str(tpl.get("kind") or ""))
    if fn is None:
        return None
    try:
        return fn(ctx, cause, tpl)
    except (OSError, ValueError, re.error) as exc:  # a bad template or an unreadable file: no automatic fix
        ctx.notes.append(f"fix template of {cause.get('id')} not applicable: {exc}")
        return None


def propose(ctx: FixContext) -> Proposal:
    """One proposal for the snapshot in ``ctx``, with its verification rerun and its id; never touches a file."""
    p = _choose(ctx)
    p.rerun = Rerun(ctx.command, os.path.realpath(ctx.cwd), ctx.command_recorded_here, ctx.command_origin)
    p.id = proposal_id(p)
    return p


def _choose(ctx: FixContext) -> Proposal:
    prior = ctx.report.get("fix")
    if isinstance(prior, dict) and prior.get("applied") and not prior.get("rolled_back"):
        ctx.notes.append(
            f"fix {prior.get('id')} was already applied to this snapshot's run "
            f"(verification: {prior.get('verification')}); this proposal is computed from the files as they are now"
        )
    causes = ctx.causes
    if not causes:
        return manual_proposal(ctx, None)
    top = causes[0]
    for cause in [top] + [c for c in causes[1:] if c.get("rule") and c.get("rule") == top.get("rule")]:
        p = _from_template(ctx, cause)
        if p is not None:
            if cause is not top:
                p.notes.append(
                    f"the top cause {top.get('id')} has no automatic fix; this is the remedy of "
                    f"{cause.get('id')}, another explanation of the same failing line"
                )
            p.notes.extend(ctx.notes)
            return p
    p = manual_proposal(ctx, top)
    p.notes.extend(ctx.notes)
    return p
