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

# Variable names whose value is a secret whatever it looks like. ML vocabulary that merely contains a
# secret word is carved out: ``tokenizer``, ``max_tokens``, ``pad_token``, ``token_ids``, ``author``,
# ``bypass``/``passes``, ``keyboard`` are everyday config keys, and masking them makes excerpts useless.
_SECRET_NAME = re.compile(
    r"(?i)(pass(word|wd|phrase)?(?![a-z])|secret|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key"
    r"|credential|auth(?!or(?!i[sz]))|cookie|session[_-]?(id|key|token)|signature|bearer|_pat$|^pat_|dsn|webhook"
    r"|(?<![a-z])token(?![a-z])|(?-i:[a-z]Token)(?![a-z]))"
)
# Names that contain a secret word but hold ordinary values.
_HARMLESS_NAME = re.compile(
    r"(?i)(tokeni[sz]|(pad|bos|eos|unk|sep|cls|mask|start|end|special|image|audio|video|vision|boi|eoi)_token"
    r"|token[_-](ids?|type|types|count|len|length|budget|limit|num|index|dim|embed\w*|level\w*)$|num_?tokens?"
    r"|max_?(new_)?tokens?"
    r"|author(?!i[sz])|auth_type|auth_mode|passes|bypass|compass|passthrough)"
)
# An env-style name ending in KEY (STRIPE_KEY, LICENSE_KEY): upper case only, so ``sort_key`` stays.
_UPPER_KEY = re.compile(r"^[A-Z0-9_]*(^|_)KEY$")

# Value shapes that are secrets wherever they appear.
_VALUE_PATTERNS = [
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"),  # GitHub
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI / Anthropic style
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google API key
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
    re.compile(r"\bnpm_[A-Za-z0-9]{30,}"),
    re.compile(r"\bpypi-[A-Za-z0-9_\-]{40,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)"),
    re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),  # Slack webhook
    re.compile(r"\b(?:AccountKey|SharedAccessSignature|sig)=[A-Za-z0-9%+/=]{20,}"),  # Azure storage
]
# A bare AWS secret access key (40 base64 characters; in an assertion diff or a pasted config line without
# its name). Shape checks in ``_mask_aws_secret`` keep git SHAs (lower-case hex) and paths out.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# A bare "Bearer <token>" outside an Authorization header (curl -H lines cut in half, proxies' logs).
_BEARER = re.compile(r"(?i)\b(bearer\s+)(?!\*\*\*)([A-Za-z0-9._~+/\-]{12,}=*)")
# user:pass@host in URLs
_URL_CREDS = re.compile(r"(?P<scheme>(?<![a-zA-Z0-9+.\-])[a-zA-Z][a-zA-Z0-9+.\-]{0,31}://)(?P<user>[^\s:/@]*):(?P<pw>[^\s@/]+)@")
# NAME=value / NAME: value / "name": "value" where NAME looks secret. No bare-whitespace separator: prose
# such as "Token indices sequence length is longer ..." (a transformers warning) must stay readable.
_ASSIGN = re.compile(
    r"""(?<![A-Za-z0-9_.\-])(?P<key>["']?[A-Za-z_][A-Za-z0-9_.\-]{0,127}["']?)(?P<sep>\s*[=:]\s*)(?P<q>["']?)(?P<val>[^\s"',;&]{1,})(?P=q)"""
)
# --password hunter2 / --api-key=sk-... / -p is too ambiguous and is left alone.
_FLAG = re.compile(
    r"""(?<![A-Za-z0-9_\-])(?P<flag>--[A-Za-z][A-Za-z0-9_\-]{0,127})(?P<sep>[= ]|\s+|["'],\s*["'])(?P<val>[^\s"'-][^\s"',]*)"""
)  # the third separator is an argv printed as a Python list: '--password', 'hunter2'

_AUTH_HEADER = re.compile(r"(?i)\b(authorization|x-api-key|api-key)(\s*[:=]\s*)(bearer\s+|basic\s+|token\s+)?([^\s\"',]{4,})")
_QUERY = re.compile(r"(?i)([?&](?:access_token|token|api_key|apikey|key|sig|signature|password|secret)=)([^&\s\"']+)")


def is_secret_name(name: str) -> bool:
    """True when an environment variable or key name says its value is a credential
    (``HF_TOKEN``, ``db_password``, ``STRIPE_KEY``), false for ML vocabulary (``max_tokens``, ``tokenizer``)."""
    name = (name or "").strip()
    if not name:
        return False
    if _UPPER_KEY.match(name):
        return True
    return bool(_SECRET_NAME.search(name)) and not _HARMLESS_NAME.search(name)


# Substrings at least one of which every pattern above needs (lower case): a line holding none of them
# cannot hold a secret we would mask, so bulk text (captured logs of megabytes) pays the full pass only on
# the lines that might. Found with str.find on the lowered text, which runs at C speed.
_TRIGGERS = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "hf_", "xox", "akia", "asia", "aiza",
    "eyj", "npm_", "pypi-", "hooks.slack", "accountkey", "sharedaccess", "sig=", "://", "pass", "secret", "key",
    "cred", "auth", "cookie", "session", "signature", "bearer", "_pat", "pat_", "dsn", "webhook", "token",
)
_PRIVATE_KEY = _VALUE_PATTERNS[10]
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
    return _redact_line(text)


def _redact_bulk(text: str) -> str:
    text = _PRIVATE_KEY.sub(MASK, text)  # the one pattern that spans lines
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
        for pattern in _VALUE_PATTERNS:
            text = pattern.sub(MASK, text)
        text = _AWS_SECRET.sub(_mask_aws_secret, text)
        text = _URL_CREDS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
        text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", text)
        text = _BEARER.sub(lambda m: f"{m[1]}{MASK}", text)
        text = _QUERY.sub(lambda m: f"{m[1]}{MASK}", text)
        text = _ASSIGN.sub(_mask_assignment, text)
        text = _FLAG.sub(_mask_flag, text)
    except Exception:  # pragma: no cover - regexes are static; belt and braces
        return MASK
    return text


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
    if is_secret_name(key) and not _looks_harmless(key, val):
        return f"{m['key']}{m['sep']}{m['q']}{MASK}{m['q']}"
    if depth < 3 and ("=" in val or ":" in val):
        # "wandb: WANDB_API_KEY=..." : the harmless key swallowed a secret assignment as its value; one more
        # linear pass over the value (bounded depth, so pathological "a=b=a=b..." lines stay linear)
        inner = _ASSIGN.sub(lambda x: _mask_assignment(x, depth + 1), val)
        if inner != val:
            start = m.start("val") - m.start()
            return m[0][:start] + inner + m[0][start + len(val):]
    return m[0]


_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})


def _mask_flag(m: re.Match[str]) -> str:
    flag = m["flag"].lstrip("-")
    if is_secret_name(flag) and MASK not in m["val"] and not _looks_harmless(flag, m["val"]):
        return f"{m['flag']}{m['sep']}{MASK}"
    return m[0]


def _looks_harmless(key: str, value: str) -> bool:
    """Keys like AUTH_TYPE=none or TOKENIZERS_PARALLELISM=false are not secrets."""
    low = value.lower().strip("\"'")
    if low in {"true", "false", "none", "null", "0", "1", "yes", "no", "on", "off", "disabled", "enabled", "",
               "required", "optional", "unset", "***", "<redacted>", "xxx"}:
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
            if (isinstance(flag, str) and isinstance(val, str) and flag.startswith("-") and "=" not in flag
                    and is_secret_name(flag.lstrip("-")) and val and not val.startswith("-")
                    and not _looks_harmless(flag, val)):
                out_list[i] = MASK
        return out_list
    return obj
