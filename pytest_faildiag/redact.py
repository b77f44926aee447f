"""Secret redaction applied to everything the project writes (reports, excerpts, locks, annotations).

Why here and not at each writer: a secret must not depend on every writer remembering to call a helper,
so the snapshot writer, the CI reporters and the lock all pass their text through ``redact_text`` /
``redact_obj`` on the way out. Redaction is deliberately greedy: a false positive costs a few characters
of a log excerpt, a false negative leaks a credential into CI logs.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

MASK = "***REDACTED***"


class _lazy:  # noqa: N801 - used where ``re.compile`` was
    """A pattern compiled on its first use. Why: this module is imported by every ``pytest --faildiag``
    session (test ids, the session index), and compiling all of its patterns costs more than a passing
    session's whole per-test journal; most texts are cleared by the trigger check alone (``_may_hold_secret``)
    and never reach them. After the first use the compiled pattern's methods sit on the instance, so a
    pattern in use is called as directly as a compiled one."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str) -> Any:
        compiled = re.compile(self.pattern, self.flags)
        for method in ("search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split"):
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


# Variable names whose value is a secret whatever it looks like. ML vocabulary that merely contains a
# secret word is carved out: ``tokenizer``, ``max_tokens``, ``pad_token``, ``token_ids``, ``author``,
# ``bypass``/``passes``, ``keyboard`` are everyday config keys, and masking them makes excerpts useless.
_SECRET_NAME = _lazy(
    r"(?i)(pass(word|wd|phrase)?(?![a-z])|secret|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key"
    r"|[_-]pwd(?![a-z])|credential|auth(?!or(?!i[sz]))|cookie|session[_-]?(id|key|token)|signature|bearer|_pat$|^pat_"
    r"|dsn|webhook"
    r"|(?<![a-z])token(?![a-z])|(?-i:[a-z]Token)(?![a-z]))"
)
# Names that contain a secret word but hold ordinary values.
_HARMLESS_NAME = _lazy(
    r"(?i)(tokeni[sz]|(pad|bos|eos|unk|sep|cls|mask|start|end|special|image|audio|video|vision|boi|eoi)_token"
    r"|token[_-](ids?|type|types|count|len|length|budget|limit|num|index|dim|embed\w*|level\w*)$|num_?tokens?"
    r"|max_?(new_)?tokens?"
    r"|author(?!i[sz])|auth_type|auth_mode|passes|bypass|compass|passthrough)"
)
# An env-style name ending in KEY (STRIPE_KEY, LICENSE_KEY): upper case only, so ``sort_key`` stays.
_UPPER_KEY = _lazy(r"^[A-Z0-9_]*(^|_)KEY$")

# A token that starts a word; "_" counts as a separator too, so a token inside a slug or an identifier
# (``test_param_ghp_...``, the folder name of a parametrised test) is still found.
_W = r"(?<![A-Za-z0-9])"
# Value shapes that are secrets wherever they appear.
_VALUE_PATTERNS = [
    _lazy(_W + r"(gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"),  # GitHub
    _lazy(_W + r"gl(?:pat|dt|rt|ptt|soat|ft|cbt|imt|oas|agent)-[A-Za-z0-9_\-]{20,}"),  # GitLab token family
    _lazy(r"\bGR1348941[A-Za-z0-9_\-]{20,}"),  # GitLab runner registration token
    _lazy(_W + r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI / Anthropic style
    _lazy(_W + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    _lazy(_W + r"hf_[A-Za-z0-9]{20,}"),  # Hugging Face
    _lazy(_W + r"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}"),  # Slack bot/user/app/refresh tokens
    _lazy(_W + r"(AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),  # AWS access key id
    _lazy(r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google API key
    _lazy(r"\bya29\.[0-9A-Za-z_\-]{20,}"),  # Google OAuth access token
    _lazy(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
    _lazy(_W + r"npm_[A-Za-z0-9]{30,}"),
    _lazy(r"\bpypi-[A-Za-z0-9_\-]{40,}"),
    _lazy(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),  # SendGrid
    _lazy(
        _W + r"(?:dckr_pat_|do[opr]_v1_|dapi|gsk_|shp(?:at|ss|ca|pa)_)[A-Za-z0-9_\-]{20,}"
    ),  # Docker, DO, Databricks, Groq, Shopify
    _lazy(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{32,}"),  # Telegram bot token
    _lazy(r"https://(?:hooks\.slack\.com/services|(?:\w+\.)?discord(?:app)?\.com/api/webhooks)/[A-Za-z0-9/_\-]+"),
    _lazy(r"\b(?:AccountKey|SharedAccessSignature|sig)=[A-Za-z0-9%+/=]{20,}"),  # Azure storage
]
# PEM and PGP private keys: the one shape that spans lines (masked before any per-line pass).
PRIVATE_KEY_BLOCK = _lazy(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)"
)
# A bare AWS secret access key (40 base64 characters; in an assertion diff or a pasted config line without
# its name). Shape checks in ``_mask_aws_secret`` keep git SHAs (lower-case hex) and paths out; a run glued to
# an identifier by "_" is part of that identifier (a mangled C++ symbol such as
# ``_ZN10tensorflow8OpKernel11TraceStringEPNS_15OpKernelContextEb``, the evidence of a loader error).
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=_])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_])")
# A bare "Bearer <token>" outside an Authorization header (curl -H lines cut in half, proxies' logs).
_BEARER = _lazy(r"(?i)\b(bearer\s+)(?!\*\*\*)([A-Za-z0-9._~+/\-]{12,}=*)")
# user:password@host in URLs. The password may hold "/" or "@" (written unencoded, as people do): it runs to
# the last "@" that is followed by a host and the end of the authority (greedy: in ``u:pw@host/x@v1`` the
# host goes too, rather than part of a password). ``host:8080/path@ref`` is a port, not a password.
_URL_CREDS = _lazy(
    r"(?P<scheme>(?<![a-zA-Z0-9+.\-])[a-zA-Z][a-zA-Z0-9+.\-]{0,31}://)(?P<user>[^\s:/@]*):(?P<pw>[^\s\"'<>`]{1,256})"
    r"@(?=[A-Za-z0-9.\-_~%]*(?::\d+)?(?:[/?#\s\"'<>),;`]|$))"
)
_PORT_AND_PATH = _lazy(r"\d{1,5}(?:/|$)")
# NAME=value / NAME: value / "name": "value" where NAME looks secret. No bare-whitespace separator: prose
# such as "Token indices sequence length is longer ..." (a transformers warning) must stay readable.
_ASSIGN = _lazy(
    r"""(?<![A-Za-z0-9_.\-])(?P<key>["']?[A-Za-z_][A-Za-z0-9_.\-]{0,127}["']?)(?P<sep>\s*[=:]\s*)(?P<q>["']?)(?P<val>[^\s"',;&]{1,})(?P=q)"""
)
# --password hunter2 / --api-key=sk-... / '--password', 'hunter2' (an argv printed as a Python list). A value
# that starts with "-" is taken after "=" always, after a space only when it cannot be another option
# (``_dash_value_is_secret``); one that starts with "--" is the next option, so the pattern does not take it.
_FLAG = _lazy(
    r"""(?<![A-Za-z0-9_\-])(?P<flag>--[A-Za-z][A-Za-z0-9_\-]{0,127})(?P<sep>=|\s+|["'],\s*["'])(?P<val>(?!--)[^\s"',]+)"""
)
# curl/wget-style credentials: -u user:password, --user user:password, -U/--proxy-user user:password.
_USER_PASS = _lazy(r"""(?<![A-Za-z0-9_\-])(?:-u|-U|--user|--proxy-user)(?:\s+|=)["']?[^\s:"']*:(?P<pw>[^\s"']+)""")
# The tools whose short option is the password: mysql's family takes it attached (-pSECRET; "-p SECRET"
# prompts and SECRET is the database), sshpass -p, docker/podman login -p, redis-cli -a. Elsewhere -p is a
# port, a path or a flag and is left alone.
_PW_ARG = r"""(?P<q>["'])?(?P<pw>(?(q)[^"'\n]+|[^\s"'-][^\s"']*))"""  # 'quoted words' or one word
_TOOL_PASSWORDS = [
    _lazy(r"""\b(?:mysql\w*|mariadb[\w-]*)\b[^\n|;&]{0,400}?\s-p""" + _PW_ARG),
    _lazy(r"""\bsshpass\b[^\n|;&]{0,400}?\s-p\s*""" + _PW_ARG),
    _lazy(r"""\b(?:docker|podman|nerdctl|buildah)\s+login\b[^\n|;&]{0,400}?\s-p\s+""" + _PW_ARG),
    _lazy(r"""\bredis-cli\b[^\n|;&]{0,400}?\s-a\s+""" + _PW_ARG),
]
# netrc: "machine HOST login USER password SECRET"
_NETRC = _lazy(r"(?i)\b(machine\s+\S{1,255}.{0,400}?\bpassword\s+)(\S+)")

_AUTH_HEADER = _lazy(
    r"(?i)\b(authorization|x-api-key|api-key)(\s*[:=]\s*)(bearer\s+|basic\s+|token\s+)?([^\s\"',]{4,})"
)
# Cookie: a=b; c=d ... carries sessions in every pair: the whole header value goes.
_COOKIE_HEADER = _lazy(r"(?i)\b((?:set-)?cookie\s*:\s*)(?!\*\*\*)([^\r\n]+)")
_QUERY = _lazy(r"(?i)([?&](?:access_token|token|api_key|apikey|key|sig|signature|password|secret)=)([^&\s\"']+)")


def is_secret_name(name: str) -> bool:
    """True when an environment variable or key name says its value is a credential
    (``HF_TOKEN``, ``db_password``, ``STRIPE_KEY``), false for ML vocabulary (``max_tokens``, ``tokenizer``)."""
    name = (name or "").strip()
    if not name:
        return False
    if name.endswith("KEY") and _UPPER_KEY.match(name):
        return True
    if name.isascii() and not any(word in name.lower() for word in _SECRET_NAME_WORDS):
        return False  # (ASCII only: case-insensitive regexes also match some non-ASCII letters, e.g. "ſ" for "s")
    return bool(_SECRET_NAME.search(name)) and not _HARMLESS_NAME.search(name)


# Every match of ``_SECRET_NAME`` holds one of these (lower case). Why: most names asked about are not secret
# (``-q``, ``-p``, ``--faildiag`` on the command line every ``pytest --faildiag`` session journals), and
# compiling ``_SECRET_NAME`` for them cost a passing session more than its whole per-test journal.
_SECRET_NAME_WORDS = (
    "pass",
    "secret",
    "api",
    "access",
    "private",
    "pwd",
    "credential",
    "auth",
    "cookie",
    "session",
    "signature",
    "bearer",
    "pat",
    "dsn",
    "webhook",
    "token",
)


# Substrings at least one of which every pattern above needs (lower case): a line holding none of them
# cannot hold a secret we would mask, so bulk text (captured logs of megabytes) pays the full pass only on
# the lines that might. Found with str.find on the lowered text, which runs at C speed.
_TRIGGERS = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "glsoat-",
    "glft-",
    "glcbt-",
    "glimt-",
    "gloas-",
    "glagent-",
    "gr1348941",
    "sk-",
    "k_live_",
    "k_test_",
    "hf_",
    "xox",
    "xapp-",
    "akia",
    "asia",
    "aiza",
    "ya29.",
    "eyj",
    "npm_",
    "pypi-",
    "sg.",
    "dckr_pat_",
    "_v1_",
    "dapi",
    "gsk_",
    "shp",
    ":aa",
    "hooks.slack",
    "discord",
    "accountkey",
    "sharedaccess",
    "sig=",
    "://",
    "pass",
    "pwd",
    "secret",
    "key",
    "cred",
    "auth",
    "cookie",
    "session",
    "signature",
    "bearer",
    "_pat",
    "pat_",
    "dsn",
    "webhook",
    "token",
    "-u",
    "mysql",
    "mariadb",
    "login",
    "redis-cli",
)
BULK_LINES = 64  # texts with more lines than this are redacted line by line behind the triggers


def redact_text(text: str) -> str:
    """Mask every credential-shaped substring of ``text``; never raises."""
    if not text:
        return text
    if text.count("\n") > BULK_LINES:
        try:
            return _redact_bulk(text)
        except Exception:  # pragma: no cover
            return MASK
    if not _may_hold_secret(text):
        return text  # most short texts (test ids, summaries, file names): a few substring checks, no regex pass
    return _redact_line(text)


# The triggers as one alternation: a single C-speed search instead of one `in` per trigger (this runs once
# per test id in every pytest session, passing tests included).
# "pass" only where a secret name can start (``_SECRET_NAME``: password, passwd, passphrase, or "pass" before
# no letter): prose such as "the program passes values the API rejects", a rule summary in many reports,
# would otherwise compile and run every pattern (a tenth of a fresh ``faildiag diagnose`` of a small log).
_PASS_TRIGGER = r"pass(?:word|wd|phrase|(?![a-z]))"
_TRIGGER_RE = re.compile(
    "|".join(_PASS_TRIGGER if t == "pass" else re.escape(t) for t in sorted(_TRIGGERS, key=len, reverse=True))
)


def _may_hold_secret(text: str) -> bool:
    return _TRIGGER_RE.search(text.lower()) is not None or _AWS_SECRET.search(text) is not None


def _redact_bulk(text: str) -> str:
    text = PRIVATE_KEY_BLOCK.sub(MASK, text)  # the one pattern that spans lines
    low = text.lower()
    hits: list[int] = []
    for word in _TRIGGERS:
        i = low.find(word)
        while i >= 0:
            hits.append(i)
            i = low.find(word, low.find("\n", i) + 1 or len(low))  # the rest of that line is covered anyway
    hits.extend(m.start() for m in _AWS_SECRET.finditer(text))
    if not hits:
        return text
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    lines = text.split("\n")
    for idx in {bisect.bisect_right(starts, h) - 1 for h in hits}:
        lines[idx] = _redact_line(lines[idx])
    return "\n".join(lines)


def _redact_line(text: str) -> str:
    try:
        text = PRIVATE_KEY_BLOCK.sub(MASK, text)
        for pattern in _VALUE_PATTERNS:
            text = pattern.sub(MASK, text)
        text = _AWS_SECRET.sub(_mask_aws_secret, text)
        text = _URL_CREDS.sub(_mask_url_creds, text)
        text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", text)
        text = _COOKIE_HEADER.sub(lambda m: f"{m[1]}{MASK}", text)
        text = _BEARER.sub(lambda m: f"{m[1]}{MASK}", text)
        text = _QUERY.sub(lambda m: f"{m[1]}{MASK}", text)
        text = _USER_PASS.sub(_mask_group_pw, text)
        for pattern in _TOOL_PASSWORDS:
            text = pattern.sub(_mask_group_pw, text)
        text = _NETRC.sub(lambda m: f"{m[1]}{MASK}", text)
        text = _ASSIGN.sub(_mask_assignment, text)
        text = _FLAG.sub(_mask_flag, text)
    except Exception:  # pragma: no cover - regexes are static; belt and braces
        return MASK
    return text


def _mask_group_pw(m: re.Match[str]) -> str:
    """The match with its ``pw`` group masked (the option and the user name stay readable)."""
    if MASK in m["pw"]:
        return m[0]
    start, end = m.start("pw") - m.start(), m.end("pw") - m.start()
    return m[0][:start] + MASK + m[0][end:]


def _mask_url_creds(m: re.Match[str]) -> str:
    if _PORT_AND_PATH.match(m["pw"]):
        return m[0]  # host:8443/org/repo.git@main: a port and a path, not a password
    return f"{m['scheme']}{m['user']}:{MASK}@"


def _mask_aws_secret(m: re.Match[str]) -> str:
    s = m[0]
    if s.startswith("/") or s.count("/") > 3 or s.isdigit():
        return s
    if any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s):
        return MASK
    return s


def _mask_assignment(m: re.Match[str], depth: int = 0) -> str:
    key = m["key"].strip("\"'")
    val = m["val"]
    if val.lower() in _AUTH_SCHEMES or MASK in val:
        return m[0]  # "Authorization: Bearer ***REDACTED***" is already safe; keep the scheme readable
    if key.lower() == "pass" and m["sep"].strip() == ":" and val.isdigit() and len(val) <= 6:
        return m[0]  # test runners count results as "pass: 12" ("tests pass: 12 passed"); PASS=1234 stays masked
    if (
        _is_assignment(m, key, val)
        and (is_secret_name(key) or _is_odbc_pwd(key, val))
        and not _looks_harmless(key, val)
    ):
        return f"{m['key']}{m['sep']}{m['q']}{MASK}{m['q']}"
    if depth < 3 and ("=" in val or ":" in val):
        # "wandb: WANDB_API_KEY=..." : the harmless key swallowed a secret assignment as its value; one more
        # linear pass over the value (bounded depth, so pathological "a=b=a=b..." lines stay linear)
        inner = _ASSIGN.sub(lambda x: _mask_assignment(x, depth + 1), val)
        if inner != val:
            start = m.start("val") - m.start()
            return m[0][:start] + inner + m[0][start + len(val) :]
    return m[0]


_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
# A source or log file's name before ":": a location (``test_auth.py:12``), not a key.
_FILE_NAME = _lazy(
    r"(?i)\.(py[iwx]?|ipynb|c|cc|cpp|cxx|h|hpp|cu|cuh|rs|go|java|kt|scala|rb|php|js|mjs|cjs|ts|tsx"
    r"|jsx|swift|cs|sh|bash|txt|log|out|err|json|jsonl|ya?ml|toml|ini|cfg|md|rst|xml|html?)$"
)


def _is_assignment(m: re.Match[str], key: str, val: str) -> bool:
    """False for the colon of a location rather than of a key: a pytest node id or C++ scope
    (``tests/test_auth.py::test_login``, ``auth::Session``) and ``file.py:12`` name code, they hold no
    secret value; redacting them would hide which test failed in every test module named after auth. So is
    a path's last part before its colon, and a colon that a clause follows (``signature: it is ...``)."""
    if m["sep"].strip() != ":":
        return True
    if val.startswith(":") or _FILE_NAME.search(key):
        return False
    before = m.string[m.start() - 1 : m.start()]
    if before in ("/", "\\"):
        return False  # the last part of a path before its colon (``/root/.cache/huggingface/token: ...``)
    after = m.string[m.end() : m.end() + 1]
    return not (after == " " and val.lower() in _PROSE_WORDS)


# Words that open a clause, not a secret: "signature: it is not HDF5", "wrong type or signature: one of its
# usual causes" (the engine's and the rules' own sentences, and people's prose in logs). Only as a value that
# more words follow: ``password: the`` at the end of a line stays masked.
_PROSE_WORDS = frozenset(
    "a an the it its one this that these those is are was were not there which what when where if any some each"
    " every all both either neither nothing see use".split()
)


def _is_odbc_pwd(key: str, value: str) -> bool:
    """``PWD=secret`` in a connection string, not ``PWD=/home/user`` (the shell's working directory)."""
    return key.upper() == "PWD" and not value.startswith(("/", "~", ".", "$")) and ":\\" not in value[:3]


def _mask_flag(m: re.Match[str]) -> str:
    flag, val = m["flag"].lstrip("-"), m["val"]
    if not is_secret_name(flag) or MASK in val or _looks_harmless(flag, val):
        return m[0]
    if val.startswith("-") and m["sep"] != "=" and not _dash_value_is_secret(val):
        return m[0]  # "--password -v": the next option, the password is prompted for
    return f"{m['flag']}{m['sep']}{MASK}"


def _dash_value_is_secret(val: str) -> bool:
    """After ``--password`` and a space, ``-x9Kq2!`` is a password and ``-v`` or ``-no-echo`` an option:
    long enough, and holding a digit or a sign that option names do not."""
    return len(val) >= 6 and any(c.isdigit() or not (c.isalpha() or c in "-_") for c in val[1:])


def _looks_harmless(key: str, value: str) -> bool:
    """Keys like AUTH_TYPE=none or TOKENIZERS_PARALLELISM=false are not secrets."""
    low = value.lower().strip("\"'")
    if low in {
        "true",
        "false",
        "none",
        "null",
        "0",
        "1",
        "yes",
        "no",
        "on",
        "off",
        "disabled",
        "enabled",
        "",
        "required",
        "optional",
        "unset",
        "***",
        "<redacted>",
        "xxx",
    }:
        return True
    if low.startswith(("${", "$(", "{{", "<")) or (low.startswith("$") and low[1:].replace("_", "").isalnum()):
        return True  # a reference to a secret ("$HF_TOKEN", "${{ secrets.X }}", "<your token>") is not one
    return key.upper().startswith("TOKENIZER")


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Copy of an environment mapping with secret-named values masked and the rest scrubbed."""
    out: dict[str, str] = {}
    for k, v in env.items():
        if is_secret_name(k) and v and not _looks_harmless(k, str(v)):
            out[k] = MASK
        else:
            out[k] = redact_text(str(v))
    return out


def redact_obj(obj: Any) -> Any:
    """Recursively redact strings in JSON-like data; secret-named keys lose their values."""
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and isinstance(v, str) and v and is_secret_name(k) and not _looks_harmless(k, v):
                out[k] = MASK
            else:
                out[k] = redact_obj(v)
        return out
    if isinstance(obj, list | tuple):
        out_list = [redact_obj(v) for v in obj]
        for i in range(1, len(out_list)):  # an argv: ["--password", "hunter2"] holds the secret in the next item
            flag, val = obj[i - 1], out_list[i]
            if (
                isinstance(flag, str)
                and isinstance(val, str)
                and flag.startswith("-")
                and "=" not in flag
                and is_secret_name(flag.lstrip("-"))
                and val
                and not val.startswith("-")
                and not _looks_harmless(flag, val)
            ):
                out_list[i] = MASK
        return out_list
    return obj
