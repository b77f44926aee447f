"""What a log's carrier did to every line, recognised once per log and undone: envelopes and page escaping.

A failure log is seldom read as the program wrote it. On its way it passed through something that rewrote
every line, and each of these writes a fixed, documented form.

**Envelopes**, a prefix before every line:

* GitHub Actions' and Azure Pipelines' raw logs, ``kubectl logs --timestamps``, ``docker logs -t``: an
  RFC 3339 time and a space (``2024-05-14T09:31:07.1234567Z``; Docker and Kubernetes give nanoseconds);
* GitLab's raw job log, which GitLab Runner 17 and later time-stamp line by line (``FF_TIMESTAMPS``, on for
  gitlab.com's runners): that time, the stream and a space or a ``+`` (``… 00O ``, ``… 01E+``); a ``+`` line
  goes on from its stream's last line (the runner read a piece of output that ended inside a line, as a
  block-buffered stdout's pieces do) and is joined to it;
* containerd's CRI log files (``/var/log/pods/…``, what Fluent Bit and Promtail ship): that time, the
  stream and a full/partial flag (``… stderr F ``);
* Jenkins' Timestamper plugin and Buildkite: the time in brackets (``[2024-05-14T09:31:07.123Z] ``);
* Apache Airflow's task log, where a KubernetesPodOperator or a BashOperator writes each line of its job's
  output as an Airflow record (``[2024-05-14, 09:31:07 UTC] {pod_manager.py:342} INFO - ``, and the cncf
  provider's ``Container logs: ``);
* journald's and syslog's short form (``journalctl``, ``/var/log/syslog``):
  ``May 14 09:31:07 host unit[pid]: ``;
* Slurm's ``srun --label``: the task's number and a colon (``3: ``), the task being the rank; torchrun's
  ``--tee``/``--local-ranks-filter`` and torchelastic's ``--log-line-prefix-template``: ``[rank3]:``,
  ``[default3]:``;
* the Open Build Service's build log (openSUSE's and others' package builds, whose ``%check`` runs the package's
  test suite): the seconds since the build started, in brackets and right-aligned (``[ 1232s] ``), obs-build's
  prefix of every line of the build's output;
* an issue thread's Markdown quote of a paste: ``> `` before each line;
* what gathers many processes' output into one stream: ``kubectl logs --prefix``
  (``[pod/trainer-worker-3/pytorch] ``), Open MPI's ``mpirun --tag-output`` (``[1,3]<stderr>:``, the rank
  kept), Ray's driver (``(RayTrainWorker pid=4242, ip=10.0.0.3) ``), ``docker compose`` (``trainer-1  | ``)
  and pdsh, clush or DeepSpeed's pdsh runner (``gpu-node-07: ``, ``10.0.0.3: ``). A program's own lines can
  take the last three forms (a name and a bar, a process in brackets, a dotted name and a colon), so these
  are envelopes only on a log of ``WEAK_LINES`` lines or more, and a host is what RFC 1123 allows (lower case,
  no underscore) with a digit or a hyphen in it. These forms name who printed each line (a rank, a host, a pod,
  a worker, a service): the scanner reads each one's lines apart, as it reads each rank's (several processes'
  tracebacks interleave line by line), and the first to fail is named as a rank is.

None of these says anything about the failure, and each hides it: a pattern anchored at a line's start
no longer matches, an exception line no longer starts the line, a quoted traceback frame looks like
pytest's ``>`` code line. So the form is recognised on the log's first lines (most of them must carry
it: a form seen on a few lines is the program's own output, not an envelope) and taken off every line
that carries it, before anything else reads the line; its time is kept for the timeline and its task
number as the line's rank.

**Page escaping**: a log copied from a page's HTML source (a CI server's console page, a notebook's HTML
export, a thread's rendered text) has ``"``, ``<``, ``>`` and ``&`` as entities (HTML's five predefined
character references, ``&#39;``/``&#x27;`` for the apostrophe): ``File &quot;x.py&quot;, line 3, in
&lt;module&gt;``. A page escapes every such character, so a log whose head holds entities and not one raw
``"``, ``<`` or ``>`` is read as escaped throughout and decoded before it is searched: the patterns and
keywords that spell a quote or an angle bracket find their lines again.

**Typesetting**: a page's renderer or a word processor sets quotes typographically (SmartyPants, the
typographer of markdown-it that Discourse forums enable, a document editor): ``File “x.py”, line 3`` and
``found <class ’NoneType’>``. A page keeps a run of spaces only as no-break spaces (U+00A0, ``&nbsp;``),
which a copy of the rendered text carries. Programs print straight quotes and spaces in what a diagnosis
reads (tracebacks, error messages), so typographic quotes are straightened and no-break spaces made spaces
wherever they are found.

**Records**: a log kept as JSON lines, one record per line the program printed, its text JSON-escaped in one
field: Docker's default ``json-file`` driver (``/var/lib/docker/containers/<id>/<id>-json.log``, and
``/var/log/containers/`` on Kubernetes nodes that ran Docker:
``{"log":"…\\n","stream":"stderr","time":"2024-05-14T09:31:07.123456789Z"}``, Go's encoder writing ``<``, ``>``
and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026``); ``journalctl -o json`` of a service (the line in
``MESSAGE``, its time in microseconds in ``__REALTIME_TIMESTAMP``); a cloud log sink's export, where a managed
job's output lands (Google Cloud Logging's ``textPayload`` and ``timestamp``: a Vertex AI or GKE job; its
``jsonPayload.message`` when the job logs JSON); a log store's export (Elastic's Filebeat documents, ``message``
and ``@timestamp``; Grafana Loki's ``logcli --output=jsonl``, ``line``); and a program's JSON logger
(``message``: python-json-logger, structlog; ``msg``: zap, klog, logrus), whose traceback sits in
``exc_info``/``exception``. A log whose head is such records is read as each record's time and text,
one line for each record, before anything else: the time then reads as the RFC 3339 envelope. A text that holds
several lines (a logged traceback, or one a logging agent joined into one entry) keeps them, each after the first
marked as its record's (``SUBLINE``): its frames are read as a traceback's, and numbered as the record's line.

**Hard wraps**: a copy of a terminal's screen (a selection in tmux or screen, a console window, a
screenshot typed out) breaks every line longer than the terminal at its last column: ``File "…/graph.py",
line 979, in call_`` and ``function`` on the next line. No line of such a log is longer than that width,
and several of its lines are exactly that wide with a word broken across the break. A log that shows this
in its head has each line of exactly that width joined with the line after it; the line that held the
continuation is left empty, so every other line keeps its number and its place.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from itertools import pairwise

_RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)"
# torchrun's ``--tee``/``--local-ranks-filter`` and torchelastic's ``[defaultN]:`` before a line (the scanner reads
# it on any line too: ``scan._RANK_PREFIX``)
RANK_PREFIX = r"\[(?:rank|default)?(?P<rank>\d+)\]:\s?"
# HTML's predefined references for the characters a page must escape (no numeric reference of a newline: a decoded
# log keeps its line numbers); the scanner decodes them in a single line of a log that is not escaped throughout
ENTITIES = r"&(?:lt|gt|quot|amp|apos|#0*39|#0*34|#x0*27|#x0*22);"
# the months as syslog, journald and ``dmesg -T`` name them (the scanner reads their time from any line: ``scan``)
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DIGITS, _MONTH_INITIALS = "0123456789", "".join(sorted({m[0] for m in MONTHS}))
# name -> (the characters its lines start with, the envelope at a line's start); ``stamp``: its time, ``rank``:
# the task that printed the line. A form is compiled only for a log whose lines mostly start as it does.
FORMS: dict[str, tuple[str, str]] = {
    "cri": (_DIGITS, rf"(?P<stamp>{_RFC3339}) (?:stdout|stderr) [FP] "),
    # GitLab Runner's timestamped job log (FF_TIMESTAMPS, runner 17+): the time, the stream's number, O or E for
    # stdout or stderr, then a space, or a ``+`` where the line goes on from the one before
    "gitlab": (_DIGITS, rf"(?P<stamp>{_RFC3339}) (?P<stream>[0-9a-f]{{2}}[OE])(?P<mark>[ +])"),
    "rfc3339": (_DIGITS, rf"(?P<stamp>{_RFC3339}) "),
    "bracketed-time": ("[", rf"\[(?P<stamp>{_RFC3339}|\d\d:\d\d:\d\d(?:\.\d+)?)\] "),
    # Apache Airflow's task log, where a KubernetesPodOperator's or a BashOperator's job writes each line of its
    # output as an Airflow record: the time in brackets (2.4+: ``2024-05-14, 09:31:07 UTC``), the logging call's
    # file and line in braces, the level, and the cncf provider's ``Container logs: `` (7+) or ``[base] ``
    "airflow": (
        "[",
        r"\[(?P<stamp>\d{4}-\d\d-\d\d,? \d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z]{2,5}|[+-]\d\d:?\d\d)?)\] "
        r"\{[^{}\s]+:\d+\} [A-Z]+ - (?:Container logs: |\[base\] )?",
    ),
    "syslog": (
        _MONTH_INITIALS,
        rf"(?P<stamp>(?:{'|'.join(MONTHS)}) [ \d]\d \d\d:\d\d:\d\d) \S+ [^\s:\[]+(?:\[\d+\])?: ",
    ),
    "torchrun-rank": ("[", RANK_PREFIX),
    # the Open Build Service's build log: the seconds since the build started (``[   12s] ``, ``[ 1232s] ``)
    "obs-build": ("[", r"\[ *\d+s\] "),
    "srun-label": (_DIGITS + " ", r" *(?P<rank>\d{1,5}): "),
    "markdown-quote": (">", r">(?: |$)"),
    # ``kubectl logs --prefix`` (with ``-l``/``--all-containers``, one job's pods at once): the pod and the container
    "kubectl-prefix": ("[", r"\[(?P<writer>pod/[^/\]\s]+/[^\]\s]+)\] "),
    # Open MPI's ``mpirun --tag-output``: the job and the rank, and the stream (``[1,3]<stderr>:``)
    "mpirun-tag": ("[", r"\[\d+,(?P<rank>\d+)\]<(?:stdout|stderr|stddiag)>:"),
    # Ray's driver shows each worker's or actor's lines behind its name and process (``(RayTrainWorker pid=4242,
    # ip=10.0.0.3) ``)
    "ray-worker": ("(", r"\((?P<writer>(?:[\w.:-]+ )?pid=\d+(?:, ip=[\d.:a-fA-F]+)?)\) "),
    # ``docker compose up``/``logs``: the service's container and a bar, padded to the longest name (``trainer-1  | ``)
    "compose": (_DIGITS + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_", r"(?P<writer>[\w.-]+) *\| "),
    # pdsh's and clush's output: the host and a colon (``gpu-node-07: ``). A host name is lower case letters, digits,
    # hyphens and dots (RFC 1123; no underscore) and here holds a digit or a hyphen: a level word or a field name
    # (``INFO: ``, ``loss: ``), a dotted exception class (``torch.cuda.OutOfMemoryError: ``) or a library's file name
    # (``flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: ``) is none
    "pdsh-host": (_DIGITS + "abcdefghijklmnopqrstuvwxyz", r"(?P<writer>(?=[a-z\d.-]*[\d-])[a-z\d][a-z\d.-]{0,62}): "),
}


@cache
def _form(name: str) -> re.Pattern[str]:
    return re.compile(FORMS[name][1])


@cache
def _entity() -> re.Pattern[bytes]:
    return re.compile(ENTITIES.encode())


SAMPLE_LINES = 200  # the first non-empty lines looked at
SHARE = 0.8  # of them, the part that must carry one form for it to be the log's envelope
# the forms a few lines of a program's own output may happen to take (a name and a bar or a colon, a process in
# brackets): an envelope only on at least this many lines
WEAK_FORMS, WEAK_LINES = frozenset({"ray-worker", "compose", "pdsh-host"}), 5
HEAD_BYTES = 256 * 1024
_DECODED = {b"lt": b"<", b"gt": b">", b"quot": b'"', b"amp": b"&", b"apos": b"'"}
MIN_ENTITIES = 2
WRAP_MIN = 60  # the narrowest terminal a hard wrap is read at (below this, short lines of equal width are data)
WRAP_BREAKS = 3  # distinct lines of the full width with a word broken at its end, to read a log as wrapped
WRAP_LINES = 2000  # the head's lines looked at for a wrap


@dataclass(frozen=True)
class Envelope:
    """The form a log's carrier wrapped its lines in."""

    name: str
    pattern: re.Pattern[str]
    # from the pattern's groups, once (``open`` runs on every line the scanner reads)
    stamped: bool = False  # it gives each line a time
    # the group that names who printed each line: ``rank`` (the task, a number) or ``writer`` (a host, a pod, a
    # worker process, a service), whose lines are apart from the others' (their tracebacks interleave)
    who: str | None = None
    # a second carrier's envelope inside this one (an OBS build's log kept by a CI service, a compose service's
    # lines behind the CI's time): taken off after this one
    inner: Envelope | None = None

    def open(self, line: str) -> tuple[str, str | None, str | None]:
        """(the line without its envelope, the envelope's time, who printed it): a line that does not carry it
        (a blank one, a line the carrier wrapped) comes back as it was."""
        m = self.pattern.match(line)
        if m is None:
            return line, None, None
        rest, stamp, who = line[m.end() :], m["stamp"] if self.stamped else None, m[self.who] if self.who else None
        if self.inner is None:
            return rest, stamp, who
        rest, inner_stamp, inner_who = self.inner.open(rest)
        return rest, stamp or inner_stamp, who or inner_who


def _head_lines(head: bytes | bytearray | memoryview) -> list[str]:
    """The first non-empty lines of ``head`` (a record's further lines, ``SUBLINE``, are its record's), with
    no-break spaces as spaces: as the decoder hands every line to the envelope (``carrier_decoder``)."""
    text = bytes(head[:HEAD_BYTES]).replace(NBSP, b" ").decode("utf-8", "replace")
    return [s for s in text.splitlines()[: SAMPLE_LINES * 4] if s.strip() and s[:1] != SUBLINE][:SAMPLE_LINES]


def detect(head: bytes | bytearray | memoryview) -> Envelope | None:
    """The envelope most of the first ``SAMPLE_LINES`` non-empty lines of ``head`` carry, if one does, with the
    envelope most of them carry inside it, if one does (two carriers, one around the other).

    Forms are tried in the order of ``FORMS`` (a CRI line is also an RFC 3339 one: the longer form first);
    the first that enough lines carry is the envelope."""
    lines = _head_lines(head)
    outer = _detect_lines(lines)
    if outer is None:
        return None
    opened = [outer.open(s)[0] for s in lines]
    inner = _detect_lines([s for s in opened if s.strip()], len(lines))
    return outer if inner is None else replace(outer, inner=inner)


def _detect_lines(lines: list[str], sampled: int = 0) -> Envelope | None:
    """The first form of ``FORMS`` that most of ``lines`` (of ``sampled`` lines) carry."""
    if not lines:
        return None
    need = SHARE * max(len(lines), sampled)
    for name, (starts, _) in FORMS.items():
        if sum(1 for s in lines if s[:1] in starts) < max(need, WEAK_LINES if name in WEAK_FORMS else 1):
            continue
        pattern = _form(name)
        carried = sum(1 for s in lines if pattern.match(s))
        if carried >= need:
            who = next((g for g in ("rank", "writer") if g in pattern.groupindex), None)
            return Envelope(name, pattern, "stamp" in pattern.groupindex, who)
    return None


_LEFT_DOUBLE, _RIGHT_DOUBLE, _LEFT_SINGLE, _RIGHT_SINGLE = (
    b"\xe2\x80\x9c",
    b"\xe2\x80\x9d",
    b"\xe2\x80\x98",
    b"\xe2\x80\x99",
)
NBSP = b"\xc2\xa0"
_TYPOGRAPHIC = b"\xe2\x80"  # the first two bytes of U+2018/2019/201C/201D (and of other punctuation: a hint)


def carrier_decoder(
    escaped: bool, records: bool = False, continued: bool = False
) -> Callable[[bytes | bytearray | memoryview], bytes]:
    """What undoes a page's or a log store's doing to whole lines of a log (never longer than its input;
    a line stays a line): JSON-lines records read as their time and text where the log is ``records``
    (``json_records`` on its head), GitLab's continued lines joined where its envelope is GitLab's
    (``continued``: ``rejoin``), its entities decoded where it is ``escaped`` (``page_escaped`` on its head: an
    entity alone may be the program's own text), typographic quotes straightened and no-break spaces made spaces
    wherever they are (no diagnosis hangs on either)."""

    def decode(data: bytes | bytearray | memoryview) -> bytes:
        out = unrecord(data) if records else bytes(data)
        out = rejoin(out) if continued else out
        out = unescape(out) if escaped else out
        if _TYPOGRAPHIC in out:
            out = straighten(out)
        return out.replace(NBSP, b" ") if NBSP in out else out

    return decode


def page_marks(buf: bytes | bytearray, end: int) -> bool:
    """Whether ``buf[:end]`` holds a typographic quote's or a no-break space's first bytes (what ``carrier_decoder``
    undoes in any log): most logs hold neither, and are not copied to find out."""
    return buf.find(_TYPOGRAPHIC, 0, end) >= 0 or buf.find(NBSP, 0, end) >= 0


def straighten(data: bytes) -> bytes:
    """Typographic quotes as the straight ones they were typed as."""
    for curly, straight in ((_LEFT_DOUBLE, b'"'), (_RIGHT_DOUBLE, b'"'), (_LEFT_SINGLE, b"'"), (_RIGHT_SINGLE, b"'")):
        if curly in data:
            data = data.replace(curly, straight)
    return data


def page_escaped(head: bytes | bytearray | memoryview) -> bool:
    """Whether ``head`` reads as text a page escaped: entities, and none of the characters a page escapes."""
    data = bytes(head[:HEAD_BYTES])
    return (
        b'"' not in data
        and b"<" not in data
        and b">" not in data
        and len(_entity().findall(data, 0, HEAD_BYTES)) >= MIN_ENTITIES
    )


def _decoded(m: re.Match[bytes]) -> bytes:
    name = m[0][1:-1].lower()
    if name in _DECODED:
        return _DECODED[name]
    return b"'" if name.lstrip(b"#x0") in (b"39", b"27") else b'"'


def unescape(data: bytes | bytearray | memoryview) -> bytes:
    """``data`` with the page's entities decoded (never longer than ``data``; its newlines stay where they were)."""
    return _entity().sub(_decoded, bytes(data))


def _lines(head: bytes | bytearray | memoryview) -> list[str]:
    """The head's whole lines (the last one may be cut: it is left out), without a carriage return."""
    text = bytes(head[:HEAD_BYTES]).decode("utf-8", "replace")
    return [s.removesuffix("\r") for s in text.split("\n")[:-1][:WRAP_LINES]]


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def wrap_width(head: bytes | bytearray | memoryview) -> int | None:
    """The width a terminal copy hard-wrapped ``head``'s lines at, if it did: the longest line's length, when
    at least ``WRAP_BREAKS`` different lines of that length end in a word that the next line goes on with, and
    what goes on is a fragment: the next lines start otherwise than the broken ones, with different words, none
    with most of them.

    A log written as it ran has a longest line or two, not a crowd of equally long ones cut mid-word; lines
    of equal width that a program pads (pytest's separators and progress lines, tables) end at a margin, not
    inside a word; and a program's fixed-width records (``step 1200 | loss 2.31 | lr 3.0e-04``) are followed
    by more of the same record, not by the rest of a word."""
    lines = _lines(head)
    width = max(map(len, lines), default=0)
    if width < WRAP_MIN:
        return None
    breaks = [
        (a, word)
        for a, b in pairwise(lines)
        if len(a) == width and _word(a[-1]) and _word(b[:1]) and (word := _head(b)) != _head(a.lstrip())
    ]
    if len({a for a, _ in breaks}) < WRAP_BREAKS:
        return None
    heads = Counter(word for _, word in breaks)
    return width if len(heads) >= WRAP_BREAKS and heads.most_common(1)[0][1] * 2 <= len(breaks) else None


def _head(line: str) -> str:
    m = _HEAD_WORD.match(line)
    return m[0] if m else ""


_HEAD_WORD = re.compile(r"\w+")


def _full(line: bytes, width: int) -> bool:
    """Whether ``line`` (no newline) fills the terminal's width: it was broken there, unless it was exactly
    that long (the copy cannot tell; such a line joined with the next costs a line, not a diagnosis)."""
    return len(line) >= width and len(line.removesuffix(b"\r").decode("utf-8", "replace")) == width


def unwrap(data: bytes | bytearray | memoryview, width: int) -> bytes:
    """Whole lines ``data`` with the pieces of each wrapped line joined on its first line and the lines that
    held the rest left empty: as long as ``data``, with as many newlines, every other line where it was."""
    lines = bytes(data).split(b"\n")
    out: list[bytes] = []
    i, last = 0, len(lines) - 1  # ``lines[last]`` follows the final newline (the partial rest, or empty)
    while i < last:
        j = i
        while j < last - 1 and _full(lines[j], width):
            j += 1
        pieces = lines[i : j + 1]
        if len(pieces) == 1:
            out.append(pieces[0])
        else:
            ends = [b"\r" if p.endswith(b"\r") else b"" for p in pieces]
            out.append(b"".join(p.removesuffix(b"\r") for p in pieces) + ends[-1])
            out += ends[:-1]
        i = j + 1
    out.append(lines[last])
    return b"\n".join(out)


def wrap_cut(buf: bytes | bytearray, cut: int, width: int) -> int:
    """Where whole lines ``buf[:cut]`` may be unwrapped before the rest of the log is read: before the run of
    full-width lines at its end (their continuation may be in what is still to come), unless that run is all
    of it."""
    end = cut
    while end > 0:
        start = buf.rfind(b"\n", 0, end - 1) + 1
        if not _full(bytes(buf[start : end - 1]), width):
            break
        end = start
    return end or cut


# a record's fields: where its text is (in this order), the object that holds a structured record's fields (Google
# Cloud Logging's jsonPayload), what a logger adds after the text (a logged traceback), where its time is as RFC
# 3339 text, and journald's time (microseconds since the epoch)
RECORD_TEXT = ("log", "MESSAGE", "textPayload", "message", "msg", "line")
RECORD_PAYLOAD = "jsonPayload"
RECORD_EXTRA = ("exc_info", "exception")
RECORD_TIME = ("time", "timestamp", "@timestamp")
# a record whose text holds several lines (a traceback that a logger put in exc_info, or that a logging agent's
# exception detection joined into one entry): each line after the first starts with this character, ASCII's unit
# separator, which a log's line does not hold (it is a control character: never printed, and no line break for
# str.splitlines). The scanner reads each such line as a line of its own, a traceback's frames included, and
# numbers it as its record, so no line of the log is renumbered.
SUBLINE = "\x1f"
_JOURNAL_TIME = "__REALTIME_TIMESTAMP"
# "message" and "msg" also name the text of objects that are no log record: an API's error body printed as it
# came ({"object":"error","message":"...","type":"BadRequestError","code":400}), whose other fields say what
# failed. An object is read as a logger's record by those two fields only with what a logger adds to each
# record: a time, a level, the logger's or the process's name (structlog, pino, bunyan, python-json-logger)
_GENERIC_TEXT = ("message", "msg")
_RECORD_META = (*RECORD_TIME, _JOURNAL_TIME, "level", "levelname", "severity", "lvl", "logger", "stream", "pid")
_RFC3339_WHOLE = re.compile(_RFC3339 + "$")


def _record_time(rec: dict[str, object]) -> str:
    """The record's time as RFC 3339 text, or "" when it has none in a form the envelopes read."""
    for key in RECORD_TIME:
        value = rec.get(key)
        if isinstance(value, str) and _RFC3339_WHOLE.match(value):
            return value
    micros = rec.get(_JOURNAL_TIME)
    if isinstance(micros, str) and micros.isdigit():
        seconds, part = divmod(int(micros), 1_000_000)
        try:
            when = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):  # a damaged record's number past what a clock holds
            return ""
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{part:06d}Z"
    return ""


def _record_text(rec: dict[str, object]) -> str | None:
    """The record's text and what its logger added after it (a logged traceback), its lines after the first marked
    ``SUBLINE``; None when no field holds text."""
    for key in RECORD_TEXT:
        text = rec.get(key)
        if isinstance(text, str):
            break
    else:
        payload = rec.get(RECORD_PAYLOAD)
        return _record_text(payload) if isinstance(payload, dict) else None
    text = text.rstrip("\r\n")
    for key in RECORD_EXTRA:
        extra = rec.get(key)
        if isinstance(extra, str) and extra:
            text = f"{text}\n{extra.rstrip()}"
    return text.replace("\r\n", "\n").replace("\n", "\n" + SUBLINE) if "\n" in text else text


def _record(line: bytes) -> bytes | None:
    """A JSON-lines record as its time, a space and its text (never longer than the record: JSON escapes a newline
    in two characters, a newline and ``SUBLINE`` are two); None for another line."""
    if line[:1] != b"{":
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    text = _record_text(rec) if isinstance(rec, dict) else None
    if text is None or not _logged(rec):
        return None
    time = _record_time(rec)
    out = (f"{time} {text}" if time else text).encode("utf-8", "replace")
    return out if len(out) <= len(line) else None


def _logged(rec: dict[str, object]) -> bool:
    """Whether ``rec`` is a logger's record: its text under a log shipper's own field, or under a generic one
    (``_GENERIC_TEXT``) beside a logger's metadata (``_RECORD_META``)."""
    if any(key in rec for key in RECORD_TEXT if key not in _GENERIC_TEXT) or RECORD_PAYLOAD in rec:
        return True
    return any(key in rec for key in _RECORD_META)


def json_records(head: bytes | bytearray | memoryview) -> bool:
    """Whether most of ``head``'s first non-empty lines are JSON-lines records (``RECORD_TEXT``)."""
    start = bytes(head[:HEAD_BYTES])
    if b'{"' not in start and b'{ "' not in start:
        return False  # most logs: not one record, and nothing split to find out
    lines = _head_lines(head)
    return bool(lines) and sum(_record(s.encode()) is not None for s in lines) >= SHARE * len(lines)


def unrecord(data: bytes | bytearray | memoryview) -> bytes:
    """Whole lines ``data`` with each record as its time and text (never longer: a record holds its text escaped,
    and more); other lines as they were."""
    lines = bytes(data).split(b"\n")
    return b"\n".join(line if (text := _record(line)) is None else text for line in lines)


# a GitLab line's envelope (``FORMS``), read on bytes: its stream (the two hex digits and O or E), then `+` where the
# line goes on from the stream's last one (the runner read a piece of output that did not end a line: a
# block-buffered stdout ends its pieces anywhere)
_GITLAB_LINE = re.compile(FORMS["gitlab"][1].encode())


def rejoin(data: bytes) -> bytes:
    """Whole lines ``data`` of a GitLab job log with each continued line's text appended to its stream's last
    line, the line that held it left empty (never longer; as many lines). A line whose start is in an earlier
    chunk keeps its parts apart."""
    if b"+" not in data:
        return data
    lines = data.split(b"\n")
    last: dict[bytes, int] = {}
    for i, line in enumerate(lines):
        m = _GITLAB_LINE.match(line)
        if m is None:
            continue
        stream = m["stream"]
        if m["mark"] == b"+" and stream in last:
            j = last[stream]
            lines[j] += line[m.end() :]
            lines[i] = b""
        else:
            last[stream] = i
    return b"\n".join(lines)
