"""One pass over each log: keyword hits, tracebacks, thread dumps, rank order and memory numbers.

The scan works on 2 MiB byte chunks of whole lines and lets one multi-pattern search (every rule keyword
plus a few structural markers) find candidate lines in C: Hyperscan or RE2 for a big log (``mpscan``),
Python's ``re`` for a small one or when neither is installed, with the same findings. Python only touches
the lines that hit, plus the lines inside a traceback or thread dump once one has started. That is what
keeps a gigabyte of NCCL chatter close to ``grep -E`` speed and flat in memory. Everything kept is bounded (first/last tracebacks, a
capped list of findings per rule, a capped memory series).
"""

from __future__ import annotations

import html
import io
import keyword
import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, BinaryIO

from ..rules import KW_ANY, KW_EXACT, KW_FOLDED, LazyRegex, Rule, RuleSet, keep_cache
from . import mpscan
from .carrier import (
    ENTITIES,
    MONTHS,
    RANK_PREFIX,
    SUBLINE,
    Envelope,
    carrier_decoder,
    detect,
    json_records,
    page_escaped,
    page_marks,
    unrecord,
    unwrap,
    wrap_cut,
    wrap_width,
)
from .logread import MAX_LINE, _visible, open_log

# 2 MiB: the chunk is read, searched by the engine and its newlines counted while it is still in the
# core's cache (2 MiB L2 here); 8 MiB chunks cost ~10 % more CPU on a 300 MB log (the read's copy and
# the count go to memory), and the buffer of two chunks is faulted in once per process
CHUNK = 2 << 20
# When the reading budget runs out inside one huge log, the scan jumps to its last part: a failure log ends
# with its failure, so the tail is the part worth the remaining time.
TAIL_AFTER_BUDGET = 64 << 20
MAX_FINDINGS_PER_RULE = 20
MAX_TRACEBACKS = 24
MAX_FRAMES = 120
MAX_MEM_SAMPLES = 4000
TAIL_LINES = 40
# ``newlines``: ranges of COUNT_BY_REPLACE bytes or more are counted by pieces of COUNT_PIECE bytes, each by
# ``replace`` where its first COUNT_PROBE bytes hold lines of COUNT_SPARSE bytes or more on average
COUNT_BY_REPLACE = 4096
COUNT_PIECE = 1 << 20
COUNT_PROBE = 1024
COUNT_SPARSE = 64

# pytest's ``path.py:N: in f`` entries (Windows paths too), at a line's start or behind a launcher's or a
# paste's prefix (``[rank3]:``, ``0: ``, ``> ``): after a character no path holds
# (``--tb=long`` prints an entry that is not the innermost as ``path.py:N: `` with nothing after, below its code)
_PY_LOCATION = rb"(?m:(?:^|[^\w\n/.\-\\:])[\w/.\-\\:]+\.py:\d+: (?:\w|\r?$))"
_STRUCTURAL = [
    rb"Traceback \(most recent call last\)",
    rb"Root Cause \(first observed failure\)",
    rb"~~~ Stack of ",
    rb"\(most recent call first\)",
    # pytest's ``E   `` lines, at a line's start or behind a prefix, as ``_PY_LOCATION``
    rb"(?m:(?:^|[^\w\n] ?)E {3})",
    _PY_LOCATION,
    rb'File "[^"\n]*", line \d+, in ',  # a traceback's frame, also when its header was not printed
    rb'(?m:File "[^"\n]*", line \d+\r?$)',  # a SyntaxError's frame (no function): the file that does not parse
    rb"File [^\s\"][^\n]*:\d+, in ",  # IPython 8's frame (``File ~/x.py:12, in f(a)``)
    # IPython 7's frame (``/x/y.py in f(a)``, ``<ipython-input-4-…> in <module>``; Colab's copy links the file:
    # ``[/x/y.py](https://…) in f(a)``), also when its header was not printed (``_IPY7_HEADLESS``)
    rb"\.py in [\w<]|\.py\]\(\w+://[^)\s]*\) in [\w<]|<ipython-input-[^>\s]*> in <",
    # (the three patterns anchored at a line's start below also find it behind a carrier's envelope: ``carrier``)
    rb"(?m:(?:^|[ \t:\]>])-{2,}> +\d+ )",  # IPython's arrow at a frame's line, the frame's own line cut above it (``_IPY7_HEADLESS``)
    rb"(?i:\bmem(?:ory)?\b)",
    rb"(?i:error|exception|fatal|killed|abort|segmentation fault|timed? ?out)",
    rb"(?m:(?:^|[ \t:\]>])(?:FAILED|ERROR) \S+ - [\w.]*Warning)",  # a warning that failed a test (``summary_warning``)
    # libstdc++'s verbose terminate handler (``__gnu_cxx::__verbose_terminate_handler``): ``terminate called after
    # throwing an instance of 'X'``, then ``  what():  <message>``, the exception's ``what()``: its message line
    # names no error word (``connect [127.0.1.1]:3210: Connection refused``) but is the error
    rb"  what\(\):  ",
    # the stack dumpers users run on a hung job (``_PYSPY_THREAD``): py-spy's thread header and its process line,
    # pystack's thread header, gdb's Python frame (``py-bt-full``, ``bt``), torch's flight recorder's stack of a
    # timed-out collective (ProcessGroupNCCL's watchdog) and its analyser's (``fr_trace``)
    rb"Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active|gil)",
    rb"(?m:(?:^|[ \t:\]>])Process \d+: )",
    rb"Traceback for thread \d",
    rb"Frame 0x[0-9a-fA-F]+, for file ",
    rb"(?:Stack trace of the failed collective|collective stack trace):",
]
# What Hyperscan searches instead of a marker whose literal healthy logs are full of (``mpscan.Patterns.
# prefilters``): ``.py:`` is in every line of a logger printing ``trainer.py:412``, and anchoring on it cost
# half the scan of a training log; every line holding ``_PY_LOCATION`` also holds ``\d: \w``, few others do.
_PREFILTERS = ((_PY_LOCATION, rb"(?m:\d: (?:\w|\r?$))"),)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>[^\s(]+)')
# a SyntaxError's last frame has no function: it names the file (or ``<string>``) that does not parse
_SYNTAX_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+\.py|<[^"]+>)", line (?P<line>\d+)\s*$')
# Python's traceback frame (``line N, in f``; faulthandler's dumps print ``line N in f``, innermost first)
_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\s(]+)')
# IPython/Jupyter print their own traceback: a header ``ExcType   Traceback (most recent call last)``, frames
# as ``File ~/x.py:12, in Class.f(a)`` and ``Cell In[3], line 2`` (IPython 8) or ``~/x.py in f(a)`` and
# ``<ipython-input-4-…> in <module>`` (IPython 7, the line then marked ``---> 12`` among the numbered code; a
# module-level frame names ``<module>`` without parentheses). Google Colab's rendered traceback, copied from the
# page into an issue, wraps each file in a link (``[/usr/…/utils.py](https://localhost:8080/#) in f(a)``) and
# names a cell's frame ``<cell line: 12>()``. IPython 8 prints a module-level frame as ``File ~/x.py:237`` (no
# ``, in <module>``). VS Code's notebooks render the locations as Markdown links (``Cell In[1], [line 7](vscode-
# notebook-cell:…)``, ``----> [7](…) import x``): a copy keeps the link syntax, which ``_MD_LINK`` reduces to the
# text shown, wherever in a frame line it is. The header names the exception's class (right-aligned to
# IPython's width); pytest's report marks its exception lines with ``E`` and spaces, never a class.
_IPY_HEADER = re.compile(r"(?<![\w.])(?!E\s)[A-Za-z_][\w.]*\s{2,}Traceback \(most recent call last\)")
# Ray raises a remote task's exception in the caller as a class it makes for it, named for the class it wraps:
# Python prints its line as ``ray.exceptions.RayTaskError(NameError): ray::f() (pid=…, ip=…)`` (the remote
# process's title), and its message goes on with the remote traceback: frames without a ``Traceback`` header,
# then the remote exception line. The class in parentheses is what the remote code raised; the frames that follow
# are the remote raise's, called from the caller's frames above (a task that called another task shows one such
# header and frames per hop): one call chain, read as one traceback.
_RAY_TASK_ERROR = re.compile(r"^(?:[\w.]*\.)?RayTaskError\((?P<cause>[A-Za-z_][\w.]*)\):(?:\s(?P<msg>.*))?$")
_IPY_FRAME = re.compile(
    r"^(?:File (?P<file>[^\s\"].*?):(?P<line>\d+)(?:, in (?P<func>[^\s(]+)|\s*$)"
    r"|Cell In ?\[(?P<cell>\d*)\], line (?P<cline>\d+)"
    r"|\[?(?P<file7>(?:[~/<]|[A-Za-z]:\\)[^\s\[\]]*)\]?(?:\(\w+://[^)\s]*\))? in (?P<func7><[^>\n]*>|[^\s(]+)(?:\(|\s*$))"
)
# IPython 7's frame line alone opens its traceback only where nothing else could print it: at the margin, a Python
# file or a cell (``<ipython-input-N-hash>``), its function named with IPython's argument list ``(…)`` or
# ``<module>``; a frame without its header (a paste that began below it) is followed by IPython's numbered code
_IPY7_HEADLESS = re.compile(
    r"^\[?(?:[~/]\S*\.py|<ipython-input-[^>\s]*>)\]?(?:\(\w+://[^)\s]*\))? in (?:<module>|[A-Za-z_][\w.]*\()"
)
_IPY7_START = frozenset("-/~<[")
_IPY_ARROW = re.compile(r"^-{2,}> +(?P<n>\d+)(?:\s(?P<code>.*))?$")
_IPY_CODE = re.compile(r"^\s*(?P<arrow>-*>)?\s*(?P<n>\d+)(?:\s(?P<code>.*))?$")
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\s]*\)")
# A part of a traceback left out, on a line of its own: by whoever pasted it (``...``, ``[...]``, ``…``,
# ``<snip>``), by IPython (``[... skipping hidden 15 frame]``, frames marked ``__tracebackhide__``) or by
# faulthandler (``  ...``: a dump cut at its 100 frames; ``  <no Python frame>``). The traceback goes on after it.
_ELISION = re.compile(
    r"^(?:\.{3,}|…+|\[\s*(?:\.{3}|…)[^\]]*\]|\(\s*(?:\.{3}|…)[^)]*\)|<\s*snip(?:ped)?\s*>|\[\s*snip(?:ped)?\s*\]"
    r"|<no Python frame>)$",
    re.IGNORECASE,
)
# Another writer's log record: a line that starts as a logger's record does (an ISO or a clock time, glog's or
# absl's ``I0514 09:31:07.1``, c10d's ``[W ProcessGroupNCCL.cpp:1234]``, a bracketed time or level, a level word
# and its separator). Python prints a traceback's lines as frames, code, carets and the exception, whose class
# name starts none of these ways: such a line inside an open traceback was written into it by another process
# or thread (a data worker, another rank without a prefix, a logging thread), and the traceback goes on after it.
_RECORD_HEAD = re.compile(
    r"(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\d\d:\d\d:\d\d[.,\s]|[IWEF]\d{4} \d\d:\d\d:\d\d|\[[IWEF] [\w.]+:\d+\]"
    r"|\[(?:\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b"
    r"|(?:DEBUG|INFO|WARNING|WARN|CRITICAL)(?::| - | ))"
)
FOREIGN_MAX = 3  # records in a row that a traceback stays open across; more, and it was cut before its exception
# a frame line wrapped at a terminal's or a forum's width: the rest of its function name alone on the next line
_WRAPPED_TAIL = re.compile(r"^[\w.<>]+$")
WRAP_WIDTH = 40
# faulthandler's report of a fatal signal (``Fatal Python error: Segmentation fault``) and Python's own fatal
# errors print every thread's stack; the thread that died is the one named ``Current thread 0x… (most recent
# call first):``: its innermost frame is the Python code that was running when the process crashed
_FATAL = "Fatal Python error: "
# The stack dumpers users run on a hung job print each thread's Python frames in a format of their own; each is
# read as a ``StackDump`` (``kind`` names the tool), so the dump reasoning sees where the threads wait:
# * py-spy ``dump``: ``Process 9162: python train.py`` and ``Python v3.11.7 (…)`` above, then per thread
#   ``Thread 9162 (idle): "MainThread"`` (``Thread 0x7F…`` where the OS thread id is unknown; ``active``,
#   ``+gil``) and its frames innermost first as ``    func (file.py:12)`` (the file relative to its ``sys.path``
#   entry unless ``--full-filenames``); ``--native`` adds native frames (``    0x7f… (libc.so.6)``,
#   ``    PyThread_acquire_lock_timed (libpython3.11.so.1.0)``), ``--locals`` a frame's ``Arguments:``/``Locals:``
#   indented under it
# * pystack ``remote``/``core``: ``Traceback for thread 9164 (python) [] (most recent call last):``, its frames
#   outermost first as ``    (Python) File "x.py", line 10, in worker`` with the code below; ``--native`` adds
#   ``    (C) File "…", line N, in func (lib.so)``
# * gdb with CPython's ``python-gdb.py``: ``py-bt`` prints ``Traceback (most recent call first):`` and Python's
#   own frame lines (with the code), a builtin as ``  <built-in method __enter__ of _thread.lock object at
#   remote 0x…>``; ``py-bt-full`` and ``bt`` name a frame as ``#13 Frame 0x7f…, for file x.py, line 10, in worker
#   (args)`` (in ``bt``, inside ``_PyEval_EvalFrameDefault (…, f=Frame 0x…, …)``)
# * torch's flight recorder: ProcessGroupNCCL's watchdog logs ``Stack trace of the failed collective: `` and
#   the collective's Python stack as it was called, innermost first, ``#0 all_reduce from …/distributed_c10d.py:
#   2696`` (``FlightRecorder::Entry::getTraceback``); its analyser ``fr_trace`` logs ``collective stack trace:``
#   then ``all_reduce at …/distributed_c10d.py:2696`` lines (``flight_recorder/components/utils.format_frame``)
_PYSPY_THREAD = re.compile(r'^Thread (?P<id>0x[0-9A-Fa-f]+|\d+) \((?P<state>[a-z+]+)\)(?:: "(?P<name>.*)")?\s*$')
_PYSPY_FRAME = re.compile(r"^ {4}(?P<func>\S.*?) \((?P<file>[^()\s]+?)(?::(?P<line>\d+))?\)\s*$")
_PYSTACK_THREAD = re.compile(r"^Traceback for thread (?P<id>\d+)(?: \((?P<name>[^)]*)\))?")
_PYSTACK_FRAME = re.compile(r'^\s+\((?P<kind>Python|C)\) File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
# A frame of a native backtrace: gdb's ``#3  0x00007f… in func (args) at file.c:41`` (``#1  func (args)`` for an
# inlined frame) and Abseil's/glog's failure signal handler's ``@     0x555a…        64  func()``. gdb numbers the
# innermost frame 0; the handler prints it first. Its words are a function's and its arguments' names and values
# (``timeout=-1``, ``__GI_abort``), not a message: no error line of their own (``generic``); the reasoning reads the
# backtrace as a whole (``reason._native_stop``).
NATIVE_FRAME = re.compile(
    r"^\s*(?:#(?P<n>\d+)\s+(?:0x[0-9a-fA-F]+\s+in\s+(?P<f1>[^\s(]+)|(?P<f2>[^\s(]+)\s*\()"
    r"|@\s+0x[0-9a-fA-F]+\s+(?:\d+\s+)?(?P<f3>[^\s(]+))"
)


def native_frame(line: str) -> tuple[int, str] | None:
    """(frame number, function) of a native backtrace's frame line (``NATIVE_FRAME``; the signal handler's
    frames count as 0, in the order printed), else None."""
    m = NATIVE_FRAME.match(line)
    if m is None:
        return None
    return (int(m["n"]) if m["n"] is not None else 0), (m["f1"] or m["f2"] or m["f3"])


_GDB_FRAME = re.compile(r"Frame 0x[0-9a-fA-F]+, for file (?P<file>.+?), line (?P<line>\d+), in (?P<func>[^\s(),]+)")
_GDB_LINE = re.compile(r"^#\d+ ")
# what py-bt prints in place of a Python frame (a builtin, a frame it cannot read, the interpreter's own states)
_GDB_NOT_FRAME = ("<built-in ", "(unable to read", "(frame information", "Waiting for the GIL", "Garbage-collecting")
_FR_FRAME = re.compile(
    r"^\s*(?:#\d+ (?P<func>\S+) from (?P<file>\S.*?)|(?P<func2>\S+) at (?P<file2>\S+?)):(?P<line>\d+)\s*$"
)
_PROCESS_LINE = re.compile(r"^Process (?P<pid>\d+): (?P<cmd>.+)$")
# GitHub Actions prints a workflow command's annotation before the line's text in its raw log: ``##[error]``,
# ``##[warning]``, ``##[group]`` …
_GHA_COMMAND = re.compile(r"##\[[a-z]+\]")
# A page's HTML escapes ``<``, ``>``, ``"``, ``'`` and ``&`` in its text: a log copied from the page's source (a CI
# server's or a notebook's HTML) keeps the entities (``File &quot;x.py&quot;, line 3, in &lt;module&gt;``)
_HTML_ENTITY = re.compile(ENTITIES)
_RANK_PREFIX = re.compile("^" + RANK_PREFIX)
_RANK_INLINE = re.compile(r"\b(?:rank|Rank|RANK)[\s:=]*(?P<rank>\d+)\b")
_GLOG_TS = re.compile(r"\b[EWIF](?P<md>\d{4}) (?P<t>\d\d:\d\d:\d\d(?:\.\d+)?)")
# ISO 8601 and its common variants (Python logging's comma before the milliseconds, Airflow's ``2024-05-14, 09:31:07``)
_ISO_TS = re.compile(r"\b\d{4}-(?P<m>\d\d)-(?P<d>\d\d)(?:T|,? )(?P<t>\d\d:\d\d:\d\d(?:[.,]\d+)?)")
# syslog's and journald's short form and ``dmesg -T``: a month's name, the day, the time (no year)
_SYSLOG_TS = re.compile(rf"\b(?P<mon>{'|'.join(MONTHS)}) (?P<d>[ \d]\d) (?P<t>\d\d:\d\d:\d\d)\b")
# (Python 3.11's builtin groups, ``ExceptionGroup: msg (2 sub-exceptions)``, end with neither)
_EXC_LINE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|ExceptionGroup)|[A-Za-z_][\w.]*\.[A-Z]\w*|Exception|ExceptionGroup|EOFError|StopIteration|StopAsyncIteration|KeyboardInterrupt|Failed|Skipped|XFailed)(?::\s?(?P<msg>.*))?$"
)
_PYTEST_E = re.compile(r"^E {3}(?P<text>.*)$")
_PYTEST_E_SQUEEZED = re.compile(r"^E\s+(?P<text>.*)$")
# a line that may be an exception of a class named otherwise (``Boom: msg``, a bare ``Boom``): classes are
# CapWords, code lines below a frame are not of this shape (``x: int = 1`` is lower case)
_CLASS_LINE = re.compile(r"^[A-Z]\w*(?::\s|:?$)")
# any dotted name alone or before ``: `` (``socket.timeout: timed out``: an exception class may be lower case)
_NAME_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::\s|:?$)")
_PYTEST_E_BEHIND = re.compile(r"[\s:>\]|]E {3}(?P<text>.*)$")  # behind a launcher's, a CI log's or a paste's prefix
# pytest's long and short tracebacks end each entry with ``path.py:LINE: ExcType`` (the raise site)
# (``--tb=long``: the entries before the innermost end with ``path.py:LINE: `` alone, their code above them)
_PYTEST_LOC = re.compile(r"^(?P<file>[\w/.\-\\:]+\.py):(?P<line>\d+):(?: (?P<type>in [\w<>.]+|[A-Za-z_][\w.]*))?$")
# pytest's ``--tb=line`` report: one line per failure, the raise site and the exception's first line
_PYTEST_LINE_SITE = re.compile(r"^(?P<file>[\w/.\-\\:]+\.py):(?P<line>\d+): (?P<type>)(?P<rest>[A-Za-z_][\w.]*: .*)$")
_PYTEST_LOC_BEHIND = re.compile(
    r"[\s>\]|]:?(?P<file>[\w/.\-\\]+(?::\\)?[\w/.\-\\]*\.py):(?P<line>\d+):(?: (?P<type>in [\w<>.]+|[A-Za-z_][\w.]*))?$"
)
# PyTorch's ``Module.load_state_dict`` raises ``RuntimeError("Error(s) in loading state_dict for M:\n\t" +
# "\n\t".join(error_msgs))`` (torch/nn/modules/module.py): each line of its report starts with one of these. A
# paste that cut the exception line, or re-indented the tabs, leaves them right below a frame: they are the
# exception's message, never a frame's code.
_STATE_DICT_REPORT = (
    "Error(s) in loading state_dict for ",
    "Missing key(s) in state_dict: ",
    "Unexpected key(s) in state_dict: ",
    "size mismatch for ",
    "While copying the parameter named ",
)
_MEM = re.compile(r"(?i)\bmem(?:ory)?\b[^0-9\n]{0,24}?(?P<v>\d+(?:\.\d+)?)\s*(?P<u>[KMGT]i?B|[KMGT])\b")
# an exception line printed without its traceback (a log cut before it, a launcher's one-line summary):
# a class named for what it is (``…Error``, ``…Exception``, ``…Exit``, ``…Fault``; ``Exception`` itself), or
# any class qualified by its module (``django.core.exceptions.ImproperlyConfigured: msg``): Python prints
# the module of every exception class that is not a builtin, and a lower-case dotted path followed by a
# capitalised name and ``: `` is that form. Warnings are left out: printed alone they are not failures.
# ``Name: msg``; never ``Name::member`` (a C++ qualified name in a native backtrace, ``c10::DistError::DistError``)
_BARE_EXC = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)|Exception|(?:_pytest\.fixtures\.)?ScopeMismatch)(?::(?!:)\s?(?P<msg>.*))?$"
)
_BARE_QUALIFIED = re.compile(r"^(?P<type>(?:[a-z_][a-z0-9_]*\.)+_?[A-Z][A-Za-z0-9_]*(?<!Warning)): (?P<msg>\S.*)$")
# pytest's short summary names what failed each test, a warning included: run with warnings as errors
# (``-W error``, ``filterwarnings = error``), a warning raised is the test's failure, ``FAILED id - FutureWarning: …``.
# Behind that prefix (not elsewhere: printed alone a warning is no failure) a warning class is an exception line.
_PYTEST_SUMMARY_WARNING = re.compile(
    r"^(?:FAILED|ERROR) \S+ - (?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*Warning)(?::\s?(?P<msg>.*))?$"
)
_QUOTE = re.compile(r"^(?:(?:>>>|>|\.\.\.)\s?)+")  # REPL prompts or Markdown quotes before an exception line
# An exception line behind a prefix its writer put before it (a logger's time and level, a launcher's rank or
# host label, a worker's ``(Name pid=N)``, pytest's ``FAILED id - ``, ``INTERNALERROR> ``, a wrapper's own
# name): the prefix ends with one of these separators; the exception starts right after one. Looked for
# only on a line that names an exception class by its kind (``_names_exception``: plain substring tests, as
# most lines a big log holds name none), and only in its head.
_PREFIX_SEP = re.compile(r"(?:[:>\])|\]]|\s-)\s*")
PREFIX_HEAD = 240
_DIGITS = re.compile(r"\d+")
# a run that printed progress got past its start; searched in C over the first bytes only, up to
# PROGRESS_ENOUGH. A counter (step/epoch/iteration N) is progress only once it advances: one number after
# such a word is a setting or a header (nccl-tests' ``step: 2(factor) … iters: 20``), not work done. A rate
# (``3.1it/s``), a loss value or passed tests are work done by themselves.
_PROGRESS = re.compile(
    rb"(?i)\b(?P<counter>epoch|step|iter(?:ation)?|global_step)\b\s*[:=#]?\s*\[?(?P<n>\d+)|\d\s?(?:it/s|s/it)\b|\bloss\b\s*[:=]\s*-?\d|\b\d+ passed\b|\bPASSED\b"
)
PROGRESS_ENOUGH = 3
PROGRESS_BYTES = 64 << 20
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
# A traceback a program printed and handled (kfp2). logging prints a record's ``exc_info`` right under its message
# line (logging/__init__.py, Formatter.format), so a traceback under a record whose level is below ERROR
# (``logger.warning(..., exc_info=True)``, ``logger.info``: logging's ``WARNING:name:``, a formatted ``… WARNING
# name: …``, absl's and glog's ``W1202 hh:mm:ss``) may be a note, not the failure; but a program that dies of an
# uncaught exception right after it logged a line prints the same two lines, and such a traceback is the failure.
# The traceback is read as handled ("apart") where that is certain: in pytest's ``PASSES``/``XPASSES`` sections
# (the captured output of passing tests, ``-rP``/``-rA``; _pytest/terminal.py, summary_passes), under a record of
# pytest's captured log (``WARNING  name:file.py:N msg``: only logging's records are captured there), or under a
# record below ERROR when the program went on logging records below ERROR right after it (``_went_on``). Under a
# record below ERROR alone it is a "maybe": evidence unless the run exited 0. ``logger.exception``/``logger.error``
# (ERROR) always count. What is read in a handled traceback (its findings, its error lines) is kept with it, apart
# (``ScanResult.handled_*``) or flagged (``Traceback.handled``, ``Finding.handled``, ``ScanResult.maybe_lines``);
# ``settle_handled`` decides once the exit status is known.
_LOW_RECORD = re.compile(
    r"(?:\S+\s+){0,3}?[\[(]?(?:DEBUG|INFO|WARNING|WARN)[\])]?(?::|\s)|[\[(]?[DIW]\d{4} \d\d:\d\d:\d\d"
)
_PASSES = (b"= PASSES =", b"= XPASSES =")
_PYTEST_RECORD = re.compile(r"(?:DEBUG|INFO|WARNING) +[^\s:]+:[^\s:]+:\d+ ")  # _pytest/logging.py DEFAULT_LOG_FORMAT
# the generic error check's words (``generic``); one inside an identifier, a module path, an object's repr or a
# package's versioned name (``asyncio.timeouts``, ``timeout_obj=``, ``<Timeout [finished]>``, ``timeout-2.4.0``,
# ``/errors/``) or in the noun phrase "error handling" reports no error: a line with no other is no failure of a run
# that exited 0 (``ScanResult.maybe_lines``). Where the run failed such a line is still kept: the generic lines are
# the reasoning's material (a compiler's ``-Werror=…`` command, a frame ``in error_handler``), not its verdict.
_ERROR_WORD = re.compile(r"(?i)error|exception|fatal|killed|abort|segmentation fault|timed out|timeout")
_NAME_REST = re.compile(r"[\w.]*")
_CODE_SET = re.compile(r"\s*[=:]\s*-?[1-9]")
# JAX's traceback filtering (jax/_src/traceback_util.py) prints a wrapper beside the exception raised through a
# JAX API boundary (jit, grad, vmap, …): ``UnfilteredStackTrace: TypeError: msg`` chained as the cause of the
# real exception (the original traceback, unmodified, with JAX's frames), ``FilteredStackTrace: TypeError:
# msg`` (JAX 0.2: the user's frames), or a bare ``SimplifiedTraceback: For simplicity, JAX has removed …``
# chained as its cause. A wrapper is read as the exception it wraps; a SimplifiedTraceback is a note, not a cause.
JAX_WRAPPERS = frozenset({"UnfilteredStackTrace", "FilteredStackTrace"})
_JAX_NOTE = "SimplifiedTraceback"
_UNIT = {"K": 2**-20, "M": 2**-10, "G": 1.0, "T": 1024.0}


@dataclass
class Finding:
    rule: Rule
    source: str
    line: int
    text: str
    groups: dict[str, str] = field(default_factory=dict)
    rank: str | None = None
    ts: str | None = None
    seq: int = 0  # global order of discovery across sources
    handled: bool = False  # read in a traceback that may have been handled (``_LOW_RECORD``)


@dataclass
class Frame:
    file: str
    line: int
    func: str
    code: str = ""

    @property
    def is_library(self) -> bool:
        f = self.file.replace("\\", "/")
        return (
            "site-packages/" in f
            or "dist-packages/" in f
            or "/lib/python3" in f
            or f.startswith("<frozen")
            or f.startswith("<")
            or "/_pytest/" in f
            or "/pluggy/" in f
            or f.endswith(".pyx")
        )


@dataclass
class Traceback:
    source: str
    line: int
    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    message: str = ""
    exc_line: int | None = None
    rank: str | None = None
    chained: bool = False  # printed after "During handling…"/"The above exception…"
    seq: int = 0
    bare: bool = False  # an exception line seen without a traceback before it
    headless: bool = False  # frames printed without the "Traceback (most recent call last):" line
    margin: int = 0  # the traceback's own indentation (a paste indented as a whole): its exception line sits there
    after_frame: bool = False  # the last line read was a frame: the next is its code or the exception
    after_code: bool = False  # the last line read was a frame's code: the next is a frame, the exception or its rest
    ipython: bool = False  # IPython's format (``_IPY_FRAME``)
    elided: bool = False  # a paste left lines out after the last frame read: the code below is not that frame's
    foreign: int = 0  # another writer's log records read in a row inside it (``_RECORD_HEAD``)
    handled: bool = False  # printed under a record below ERROR: maybe handled (``_LOW_RECORD``)

    @property
    def headline(self) -> str:
        """The exception line as Python prints it (``KeyError: 'lr'``; the class alone when it has no message)."""
        return f"{self.exc_type}: {self.message}".strip(": ")

    @property
    def user_frame(self) -> Frame | None:
        for fr in reversed(self.frames):
            if not fr.is_library:
                return fr
        return None


@dataclass
class StackDump:
    source: str
    line: int
    thread: str
    frames: list[Frame] = field(default_factory=list)
    innermost_first: bool = False
    rank: str | None = None
    # the tool that printed it: "" (faulthandler, pytest-timeout), "py-spy", "pystack", "gdb", "flight-recorder"
    kind: str = ""
    process: str = ""  # the process it was taken from, where the tool named it (py-spy's ``Process N: cmd``)

    @property
    def innermost(self) -> list[Frame]:
        return self.frames if self.innermost_first else list(reversed(self.frames))


@dataclass
class RootCauseBlock:
    """torchelastic's "Root Cause (first observed failure)" summary."""

    source: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class SourceInfo:
    name: str
    lines: int = 0
    bytes: int = 0
    tail: list[str] = field(default_factory=list)
    truncated_lines: int = 0
    skipped_bytes: int = 0  # the middle of a log not read because the reading budget was spent


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    tracebacks: list[Traceback] = field(default_factory=list)
    dumps: list[StackDump] = field(default_factory=list)
    elastic: list[RootCauseBlock] = field(default_factory=list)
    pytest_errors: list[tuple[str, int, str]] = field(default_factory=list)
    pytest_locations: list[tuple[str, int, Frame, str]] = field(
        default_factory=list
    )  # (source, line, raise site, exc type)
    error_lines: list[tuple[str, int, str]] = field(default_factory=list)
    # where a chain's header ("The above exception was the direct cause…", "During handling…") was printed:
    # in pytest's report it separates a cause's raise site from the exception that wrapped it
    chain_lines: list[tuple[str, int]] = field(default_factory=list)
    mem_series: list[tuple[float, str, int]] = field(default_factory=list)
    sources: dict[str, SourceInfo] = field(default_factory=dict)
    rank_first_error: dict[str, tuple[str, int, str, str | None]] = field(default_factory=dict)
    hits_per_rule: dict[str, int] = field(default_factory=dict)
    seq: int = 0
    progress: int = 0  # lines that show training/test progress (step N, epoch N, it/s, loss=…), counted to 3
    counters: dict[bytes, bytes] = field(default_factory=dict)  # a progress counter's word → the first value seen
    # what the program printed and handled (``_LOW_RECORD``): apart from the evidence until ``settle_handled``
    handled_tracebacks: list[Traceback] = field(default_factory=list)
    handled_findings: list[Finding] = field(default_factory=list)
    handled_error_lines: list[tuple[str, int, str]] = field(default_factory=list)
    # error lines that report no failure where the run exited 0 (``settle_handled``): read in a "maybe" handled
    # traceback, or whose error words are all inside names (``_reports_error``)
    maybe_lines: set[tuple[str, int]] = field(default_factory=set)

    def rule_ids(self) -> set[str]:
        return {f.rule.id for f in self.findings}

    def framed_dump(self) -> StackDump | None:
        """The first stack dump that shows frames (faulthandler's, py-spy's, …): where the evidence already says
        which Python call a crashed or stuck process was in."""
        return next((d for d in self.dumps if d.innermost), None)


class _Scanner:
    """Stateful scanner for one source; call ``feed_line`` for lines Python must see."""

    def __init__(self, ruleset: RuleSet, result: ScanResult, source: str):
        self.rs = ruleset
        self.compiled = compiled(ruleset)
        self.res = result
        self.source = source
        self.info = SourceInfo(source)
        result.sources[source] = self.info
        self.open_tb: dict[str | None, Traceback] = {}
        self.pending_chain: dict[str | None, bool] = {}
        # JAX's SimplifiedTraceback was printed: its chain header is no chain
        self.jax_note: dict[str | None, bool] = {}
        self.dump: StackDump | None = None
        self.dump_code = False  # the last line read in a tool's dump was a Python frame: code may follow
        self.dump_line = False  # the line read is a stack dumper's frame, code or locals (``_tool_dump_line``)
        self.process = ""  # py-spy's ``Process N: cmd`` line last read: the process its thread dumps are of
        self.elastic: RootCauseBlock | None = None
        self.elastic_left = 0
        self.prefix: re.Pattern[str] | None = None  # a logger's prefix seen before "Traceback", stripped after
        self.envelope: Envelope | None = None  # the carrier's form around every line (``carrier``)
        self.escaped = False  # the log is a page's escaped text, decoded chunk by chunk (``carrier``)
        self.decode: Callable[[bytes | bytearray | memoryview], bytes] | None = None  # what undoes the carrier's doing
        self.every_chunk = False  # ``decode`` changes every chunk (else only one with a page's marks)
        self.sublines = False  # the log is JSON-lines records, whose text may hold several lines (``carrier.SUBLINE``)
        self.wrap: int | None = None  # the width a terminal copy hard-wrapped the log's lines at (``carrier``)
        self.stamp: str | None = None  # the time the envelope gave the line being read
        # who the envelope says printed it (``srun --label``'s task, pdsh's host, a pod, a Ray worker): its rank, the
        # stream its tracebacks are read in
        self.label: str | None = None
        self.held: str | None = None  # the start of a frame line cut by a wrap, in an open traceback
        self.frame_width = 0  # the length of the last frame line read (``_WRAPPED_TAIL``)
        self.frame_tabbed = False  # the last frame line read was indented by a tab (a paste's own indentation)
        self.fatal = False  # a fatal error was reported: the next "Current thread" dump is the crashed thread's
        self.crashed: Traceback | None = None  # the crashed thread's stack, as a traceback (``_FATAL``)
        # a traceback whose exception's message ends with ":" (``backend='inductor' raised:``), by rank: the
        # exception line printed right after it is the one it wraps (line number, traceback)
        self.wrapping: dict[str | None, tuple[int, Traceback]] = {}
        # the least indentation of the lines read (a paste indented as a whole has its exception lines there)
        self.floor = MAX_LINE
        # the chunk read, where the line read starts in it, where pytest's section headers were looked for up to,
        # and the last line of the chunk before (``_handled``)
        self.buf: bytes | bytearray | None = None
        self.start = 0
        self.looked = 0
        self.last_line = b""
        self.passes = False  # inside pytest's PASSES section: the captured output of passing tests
        self.n = 0  # the end of the chunk's bytes
        self.hushed: Traceback | None = None  # a handled traceback being read (``_LOW_RECORD``)
        self.hush = ""  # how: "apart" or "maybe"
        self.after_hushed = ""  # how the last traceback closed was handled: a chained one is its sequel
        self.quiet_line = ""  # the line read belongs to a handled traceback ("apart" or "maybe")

    # -- state that forces line mode ------------------------------------------------------------
    @property
    def in_block(self) -> bool:
        return bool(self.open_tb) or self.dump is not None or self.elastic is not None

    def feed_line(self, number: int, text: str, seen: _Seen | bytes | bytearray | None = None) -> None:
        """One line Python must see; ``seen``: where the engine found the keyword search's literals in
        it, or the line's bytes when it found none there (else Python's re looks for them)."""
        rank = self.label
        body = text
        m = _RANK_PREFIX.match(text) if text[:1] == "[" else None
        if m:
            rank = m["rank"]
            body = text[m.end() :]
            while body[:1] == "[" and (m := _RANK_PREFIX.match(body)) is not None:  # "[default1]:[rank1]: …"
                body = body[m.end() :]
        body = self._strip_prefix(body)
        if body[:3] == "##[" and (gm := _GHA_COMMAND.match(body)) is not None:
            body = body[gm.end() :]  # GitHub Actions' log marks an annotated line (``##[error]RuntimeError: …``)
        while body.startswith("> ") and body[2:3] not in ("", " ", "\t"):
            body = body[2:]  # a Markdown quote ("> RuntimeError: ..."); pytest's own "> " marks code with indent
        # source code shown by a traceback frame or by pytest ("> " lines) is not an error message,
        # even when it spells one: match keywords only on lines the program printed as output. A REPL's
        # prompt glued to what was printed after it (``>>> RuntimeError: …``) is output.
        if self.floor:  # until the first line at column 0
            if body[:1] not in (" ", "\t"):
                self.floor = 0
            elif not body.isspace():
                self.floor = min(self.floor, _indent(body))
        if self.open_tb and rank in self.open_tb:
            if body.lstrip().startswith(_STATE_DICT_REPORT):
                self._state_dict_report(number, body, rank)  # closes the traceback: its exception's message
            elif body[:1] in (" ", "\t"):
                self._message_after_cut(body, rank)  # closes the traceback: the line is output, not code
        is_code = (body.startswith(">") and not _glued_output(body)) or (
            rank in self.open_tb
            and body[:1] in (" ", "\t")
            and not _FRAME.match(body)
            and not self._at_margin(body, rank)
        )
        self.dump_line = False
        before = self.open_tb.get(rank)
        quiet = self.hush if self.hushed is not None and before is self.hushed else ""
        self._structure(number, body, rank)
        opened = self.open_tb.get(rank)
        if opened is not None and opened is not before and opened.line == number:
            quiet = self._handled(opened) or quiet
        elif self.hushed is not None and all(t is not self.hushed for t in self.open_tb.values()):
            self.hushed = None  # its exception line was read
            self.after_hushed = self.hush
        elif self.after_hushed and "above exception" in body and (_CHAIN[0] in body or _CHAIN[1] in body):
            quiet = self.after_hushed
        self.quiet_line = quiet
        if not is_code and not self.dump_line:  # a tool's dump line is a frame, its code or its locals
            self._keywords(number, text, body, rank, seen)

    def _strip_prefix(self, body: str) -> str:
        """Loggers and wrappers put a prefix before every line (``INTERNALERROR> ``, ``(RayWorker pid=12) ``,
        ``ERROR 02-11 11:32:58 engine.py:389] ``). The prefix in front of a "Traceback" line is learnt (its
        digits as wildcards) and stripped from the lines that carry it, so the traceback parses."""
        at = body.find("Traceback (most recent call last)")
        if at > 0:
            ipy = _IPY_HEADER.search(body, 0, at + 40)  # IPython's header names the exception before it
            head = body[: ipy.start()] if ipy else body[:at]
            if head.endswith("+ Exception Group "):  # Python 3.11's group: its lines follow behind "| "
                head = head[: -len("+ Exception Group ")] + "| "
            if head.strip():
                self.prefix = _learnt(head)
        elif at == 0:
            self.prefix = None
        elif not self.open_tb and (self.dump is None or not self.dump.kind) and "File " in body:
            # (pystack's ``(Python) File …`` frames in its dump are read there: no prefix)
            # frames printed without their header (a logger's ``format_tb``, an excerpt) behind a prefix:
            # the prefix is what comes before the frame (and before Python's own two-space indentation)
            at = body.find('File "')
            if at >= 0 and _PY_FRAME.match(body[at:]):
                head = body[:at]
                head = head[:-2] if head.endswith("  ") else head
            else:
                at = body.find("File ")
                head = body[:at] if _IPY_FRAME.match(body[at:]) else ""
            if head.strip():
                self.prefix = _learnt(head)
        if self.prefix is not None:
            m = self.prefix.match(body)
            if m:
                return body[m.end() :]
        return body

    # -- structure: tracebacks, dumps, elastic blocks -------------------------------------------------
    def _structure(self, number: int, body: str, rank: str | None) -> None:
        stripped = body.strip()
        if self.elastic is not None:
            self._elastic_line(body)
        # every header looked for below holds "(", "~~~ " or "above exception": most lines hold none, and one
        # search for each is cheaper than a search for each header
        headers = "(" in body or "~~~ " in body or "above exception" in body
        if headers and "Root Cause (first observed failure)" in body:
            self.elastic = RootCauseBlock(self.source, number)
            self.elastic_left = 40
            self._keep(self.res.elastic, self.elastic)
            return
        if self.dump is not None:
            if self.dump.kind and self._tool_dump_line(body, stripped):
                self.dump_line = True
                return
            fm = _FRAME.match(body) if not self.dump.kind else None
            if fm:
                if len(self.dump.frames) < MAX_FRAMES:
                    frame = Frame(fm["file"], int(fm["line"]), fm["func"])
                    self.dump.frames.append(frame)
                    if self.crashed is not None:  # the crashed thread's frames, outermost first as a traceback's
                        self.crashed.frames.insert(0, frame)
                return
            if stripped and body.startswith("    ") and self.dump.frames and not self.dump.innermost_first:
                self.dump.frames[-1].code = stripped[:300]
                return
            if _elided(stripped):
                return
            self.dump = None
        self.crashed = None
        if _FATAL in body:
            self.fatal = True
        if headers and ("~~~ Stack of " in body or "(most recent call first)" in body):
            thread = stripped.strip("~ ").replace("Stack of ", "").replace(" (most recent call first):", "").rstrip(":")
            self.dump = StackDump(
                self.source, number, thread, innermost_first="most recent call first" in body, rank=rank
            )
            self._keep(self.res.dumps, self.dump)
            if thread == "Traceback":  # gdb's ``py-bt`` (``_PYSPY_THREAD``): Python's frames, their code, builtins
                self.dump.kind = "gdb"
                self.dump_code = False
            if self.fatal and thread.startswith("Current thread"):
                # the thread a fatal error stopped: its stack is where the process crashed, read as a
                # traceback cut before any exception (no exception was raised)
                self.fatal = False
                self.crashed = Traceback(self.source, number, rank=rank, seq=self._seq(), headless=True)
                self._keep_tb(self.crashed)
            return
        # a stack dumper's header (``_tool_dump_header``): py-spy's and pystack's start with "T", py-spy's process
        # line with "P"; one test of the first character spares most lines the method's call
        c0 = body[:1]
        if (c0 == "T" or c0 == "P" or "Frame 0x" in body or "collective" in body) and self._tool_dump_header(
            number, body, stripped, rank
        ):
            return
        if headers and "Traceback (most recent call last)" in body:
            ipy = _IPY_HEADER.match(body.lstrip())
            opened = Traceback(
                self.source,
                number,
                rank=rank,
                chained=self.pending_chain.pop(rank, False),
                seq=self._seq(),
                margin=0 if "+ Exception Group" in body else _indent(body),
                ipython=ipy is not None,
            )
            if ipy is not None:
                # IPython's header names the exception's class: a traceback cut before its exception line
                # still says what was raised (the exception line, when it comes, replaces it)
                opened.exc_type = ipy.group().split(None, 1)[0]
                opened.exc_line = number
            self.open_tb[rank] = opened
            self._keep_tb(opened)
            rest = body[body.find("last)") + 5 :].lstrip(": ")
            if rest.startswith("File "):  # the first frame glued to the header (a paste that lost a line break)
                opened.after_frame = self._frame(opened, rest)
            return
        if headers and (_CHAIN[0] in body or _CHAIN[1] in body):
            if self.jax_note.pop(rank, False):
                return  # the exception below is the failure; JAX's note above it is not its cause
            self.pending_chain[rank] = True
            self._keep(self.res.chain_lines, (self.source, number), cap=200)
            return
        if headers and "TaskError(" in body and (rm := _RAY_TASK_ERROR.match(stripped)) is not None:
            # Ray's wrapper of a remote exception (``_RAY_TASK_ERROR``): the remote frames follow it, the call
            # chain's next part after the caller's frames (or the hop's before), when they were printed
            chain = self.open_tb.get(rank) or self._open_headless(number, rank, margin=_indent(body))
            chain.exc_type, chain.exc_line = rm["cause"], number  # the remote exception line replaces it
            chain.after_frame = chain.after_code = False
            return
        tb = self.open_tb.get(rank)
        if tb is None:
            at_margin = body[:1] not in (" ", "\t") or _indent(body) <= self.floor
            if at_margin:
                bare = exception_line(_QUOTE.sub("", stripped) if stripped[:1] in (">", ".") else stripped)
                if bare:
                    self._bare_exception(number, *bare, rank)
                    return
            if stripped[:5] == "File " and (im := _IPY_FRAME.match(_unlinked(stripped))) and im["func"]:
                # IPython's frames, without the header (one that names its function: ``File x:12`` alone may
                # be any program's words)
                tb = self._open_headless(number, rank, margin=_indent(body), ipython=True)
                self._ipython_line(tb, body)
                return
            if body[:1] in _IPY7_START:  # IPython 7's frames and code without their header
                if body[:2] == "--" and (cm := _IPY_ARROW.match(body)) is not None:
                    # IPython's numbered code with its arrow, the frame's line above it cut by the paste: a frame
                    # whose file is not known (its code is the call the next frame runs)
                    tb = self._open_headless(number, rank, margin=0, ipython=True)
                    tb.frames.append(Frame("", int(cm["n"]), "", (cm["code"] or "").strip()[:300]))
                    return
                if (".py in " in body or "> in " in body or ") in " in body) and _IPY7_HEADLESS.match(body):
                    # a frame (``_IPY7_HEADLESS``)
                    tb = self._open_headless(number, rank, margin=0, ipython=True)
                    if self._ipython_line(tb, body):
                        return
                    del self.open_tb[rank]
            # an excerpt, a log handler or a launcher printed the frames alone
            # (a SyntaxError printed alone starts with its function-less frame: the file that does not parse)
            if 'File "' in body and (_PY_FRAME.match(body) or _SYNTAX_FRAME.match(body)):
                # Python indents a frame by two; a frame pasted without them sits at the log's margin
                margin = max(_indent(body) - 2, min(self.floor, _indent(body)))
                tb = self._open_headless(number, rank, margin=margin)
                tb.after_frame = self._frame(tb, body)
                return
            pm = _PYTEST_E.match(body) if body[:4] == "E   " else None
            if pm is None and "E   " in body:
                pm = _PYTEST_E_BEHIND.search(body)
            if pm is None and body[:2] == "E " and exception_line(body[2:].lstrip()):
                pm = _PYTEST_E_SQUEEZED.match(body)  # pytest's ``E   `` with its spaces squeezed by a paste
            if pm:
                self.res.pytest_errors.append((self.source, number, pm["text"][:500]))
                del self.res.pytest_errors[:-200]
                return
            py_at = stripped.find(".py:")
            has_py = py_at >= 0
            # ``_PYTEST_LOC``'s path holds no space: its ``.py:`` comes before the line's first one
            lm = _PYTEST_LOC.match(stripped) if has_py and not 0 <= stripped.find(" ", 0, py_at) else None
            line_exc: tuple[str, str] | None = None
            if lm is None and has_py and not 0 <= stripped.find(" ", 0, py_at):
                # ``--tb=line``: ``path.py:N: ExcType: message`` (a warning's ``path.py:N: UserWarning: msg`` is
                # the warnings module's format: not a raise site)
                # right after its ``E   `` line (a logger's ``file.py:N: Error: msg`` is no raise site)
                follows_e = bool(self.res.pytest_errors) and self.res.pytest_errors[-1][1] == number - 1
                lm = _PYTEST_LINE_SITE.match(stripped) if follows_e else None
                line_exc = exception_line(lm["rest"]) if lm is not None else None
                if line_exc is None:
                    lm = None
            if lm is None and has_py:
                # behind a prefix; only a line that ends as pytest's entries do (``: in f``, ``: ExcType``;
                # a warning's ``path.py:N: UserWarning: message`` does not) is searched
                tail = stripped[stripped.rfind(": ") + 2 :]
                if " " not in tail or tail[:3] == "in ":
                    lm = _PYTEST_LOC_BEHIND.search(stripped)
            if lm:
                kind = lm["type"] or (line_exc[0] if line_exc else "")
                site = Frame(lm["file"], int(lm["line"]), kind[3:] if kind.startswith("in ") else "")
                self._keep(
                    self.res.pytest_locations,
                    (self.source, number, site, "" if kind.startswith("in ") else kind),
                    cap=200,
                )
                return
            # most lines of a big log name no exception class: plain substring tests before any regex
            bare = prefixed_exception(stripped) if at_margin and _names_exception(stripped) else None
            if bare is None and at_margin and "Warning" in stripped:
                bare = summary_warning(stripped)
            if bare and not self._summarised(*bare):
                self._bare_exception(number, *bare, rank)
            return
        if tb.ipython and self._ipython_line(tb, body):
            return
        held, self.held = self.held, None
        if held is not None:
            joined = _unwrapped(held, stripped)
            if joined is not None:
                body, stripped = joined, joined.strip()
                if not _FRAME.match(body) and not _SYNTAX_FRAME.match(body):
                    self.held = body  # wrapped more than once
                    return
        elif stripped[:4] == "File" and _FRAME_START.match(body) and not _SYNTAX_FRAME.match(body):
            # a frame line cut by a hard wrap (a terminal's or a forum's width, ``fold``): its rest is the next line
            self.held = body
            return
        if self._frame(tb, body):
            tb.after_frame, tb.after_code, tb.foreign = True, False, 0
            return
        if stripped and not stripped.strip("^~ "):
            return  # the carets under a frame's code (Python 3.11+), wherever a paste left them
        if tb.foreign < FOREIGN_MAX and body[:1] not in (" ", "\t") and _RECORD_HEAD.match(stripped):
            tb.foreign += 1  # another writer's record between its lines (the flags of the line before it hold)
            return
        if _elided(stripped):
            tb.after_frame = tb.after_code = False  # what follows a cut is a frame, code or the exception
            tb.elided = True
            return
        after_frame, tb.after_frame = tb.after_frame, False
        after_code, tb.after_code = tb.after_code, False
        em = _EXC_LINE.match(stripped) if stripped else None
        if (
            after_frame
            and em is None
            and self.frame_width >= WRAP_WIDTH
            and not _CLASS_LINE.match(stripped)
            and tb.frames[-1].func
            and not tb.frames[-1].func.endswith(">")  # ``<module>``, ``<lambda>``: a code object's whole name
            and not tb.frames[-1].code
            and _WRAPPED_TAIL.match(stripped)
            and not keyword.iskeyword(stripped)
        ):
            # the frame's line was wrapped (a terminal's or a forum's width) inside its function's name
            tb.frames[-1].func += stripped
            tb.after_frame = True
            return
        if after_frame and em is None and stripped and not _CLASS_LINE.match(stripped):
            # the code line of a frame, pasted without its indentation (a forum that strips leading
            # spaces): right after a frame Python prints its code or the exception, never anything else
            if not tb.frames[-1].code:
                tb.frames[-1].code = stripped[:300]
            tb.after_code = len(body) >= WRAP_WIDTH
            return
        if (body.startswith((" ", "\t")) and not (tb.margin and _indent(body) <= tb.margin)) or not stripped:
            if stripped and tb.frames and not tb.frames[-1].code and not tb.elided and not set(stripped) <= set("^~ "):
                tb.frames[-1].code = stripped[:300]
            # a code line as long as a wrap's width may go on, at the margin, on the next line
            tb.after_code = len(body) >= WRAP_WIDTH and tb.frames != []
            return
        if after_code and em is None and not _CLASS_LINE.match(stripped) and not _NAME_LINE.match(stripped):
            # the rest of a code line a wrap cut (a terminal's or a forum's width): Python prints a frame or the
            # exception after a frame's code, and this is neither (no class, no ``name:`` of an exception)
            tb.after_code = len(body) >= WRAP_WIDTH
            return
        if tb.headless and em is None:
            # without the header, only an exception line ends these frames as their exception; anything
            # else (``traceback.print_stack()``, a log line) ends them as a cut traceback
            del self.open_tb[rank]
            self._structure(number, body, rank)
            return
        exc = em["type"] if em else stripped.split(":", 1)[0][:120]
        if len(tb.frames) == 1 and not tb.frames[0].file:
            # only the code of a frame whose own line was cut (``_IPY_ARROW``): where it was raised is not known,
            # the exception is read as printed alone
            tb.frames, tb.bare = [], True
        tb.exc_type, tb.message = jax_unwrapped(exc, ((em["msg"] or "") if em else stripped)[:2000])
        tb.exc_line = number
        del self.open_tb[rank]
        self._same_as_printed_before(tb)
        if tb.message.endswith(":") and tb.frames:
            self.wrapping[rank] = (number, tb)
        if exc.rsplit(".", 1)[-1] == _JAX_NOTE:
            self.res.tracebacks[:] = [t for t in self.res.tracebacks if t is not tb]
            self.jax_note[rank] = True

    def _tool_dump_header(self, number: int, body: str, stripped: str, rank: str | None) -> bool:
        """A stack dumper's header (``_PYSPY_THREAD``): opens its dump; py-spy's process line is kept for the
        thread dumps below it. Plain substring tests first: most lines hold none of these."""
        dump: StackDump | None = None
        frame: Frame | None = None
        if body[:7] == "Thread " and (m := _PYSPY_THREAD.match(body)) is not None:
            name = f' "{m["name"]}"' if m["name"] else ""
            dump = StackDump(self.source, number, f"Thread {m['id']}{name} ({m['state']})", innermost_first=True)
            dump.kind, dump.process = "py-spy", self.process
        elif body[:21] == "Traceback for thread " and (m := _PYSTACK_THREAD.match(body)) is not None:
            name = f" ({m['name']})" if m["name"] else ""
            dump = StackDump(self.source, number, f"Thread {m['id']}{name}")
            dump.kind = "pystack"
        elif "Frame 0x" in body and (gm := _GDB_FRAME.search(body)) is not None:
            dump = StackDump(self.source, number, "gdb backtrace", innermost_first=True)
            dump.kind = "gdb"
            frame = Frame(gm["file"], int(gm["line"]), gm["func"])
        elif "collective" in body and ("failed collective:" in body or "collective stack trace:" in body):
            dump = StackDump(self.source, number, "the timed-out collective's caller", innermost_first=True)
            dump.kind = "flight-recorder"
        elif body[:8] == "Process " and (pm := _PROCESS_LINE.match(stripped)) is not None:
            self.process = pm["cmd"][:200]
            return False
        if dump is None:
            return False
        dump.rank = rank
        if frame is not None:
            dump.frames.append(frame)
        self.dump = dump
        self.dump_code = frame is not None
        self._keep(self.res.dumps, dump)
        return True

    def _tool_dump_line(self, body: str, stripped: str) -> bool:
        """A line of an open stack dumper's dump (``_PYSPY_THREAD``): its Python frames are kept, in the order
        printed, its native frames and the lines that belong to it skipped; False where the dump has ended."""
        d = self.dump
        assert d is not None
        kind = d.kind
        fr: Frame | None = None
        code_ok, self.dump_code = self.dump_code, False
        if kind == "py-spy":
            if body[:4] != "    ":
                return False
            if body[:8] == "        ":  # ``--locals``: ``Arguments:``, ``Locals:`` and the values under them
                return True
            m = _PYSPY_FRAME.match(body)
            if m is None:  # a frame at py-spy's indentation still: a native one its pattern does not read
                return True
            if m["line"] is not None:  # a native frame names its library, no line
                # py-spy names a function by its qualified name on Python 3.11+ (``Queue.get``,
                # ``main.<locals>.run``); a traceback and the other dumpers by its own name (``get``)
                func = m["func"]
                fr = Frame(m["file"], int(m["line"]), func[func.rfind(".") + 1 :] if "." in func else func)
        elif kind == "pystack":
            if code_ok and body[:8] == "        " and stripped:
                d.frames[-1].code = stripped[:300]
                return True
            m = _PYSTACK_FRAME.match(body)
            if m is None:
                return body[:5] == "    (" or body[:5] == "    ["  # pystack's notes on a thread's state
            if m["kind"] == "Python":
                fr = Frame(m["file"], int(m["line"]), m["func"])
        elif kind == "gdb":
            if code_ok and body[:4] == "    " and stripped:
                d.frames[-1].code = stripped[:300]
                return True
            if body[:1] == "#" and _GDB_LINE.match(body):
                gm = _GDB_FRAME.search(body)
                if gm is not None:
                    fr = Frame(gm["file"], int(gm["line"]), gm["func"])
            elif (fm := _FRAME.match(body)) is not None:
                fr = Frame(fm["file"], int(fm["line"]), fm["func"])
            elif stripped.startswith(_GDB_NOT_FRAME):
                return True
            elif not (body[:1] in (" ", "\t") and d.frames and stripped):
                return False  # indented: the rest of a ``bt`` line wrapped by gdb
        else:  # flight-recorder
            m = _FR_FRAME.match(body)
            if m is None:
                return False
            fr = Frame(m["file"] or m["file2"], int(m["line"]), m["func"] or m["func2"])
        if fr is not None and len(d.frames) < MAX_FRAMES:
            d.frames.append(fr)
            self.dump_code = True
        return True

    def _ipython_line(self, tb: Traceback, body: str) -> bool:
        """A frame or a numbered code line of IPython's traceback (``_IPY_FRAME``); False for anything else
        (the exception line ends it as usual)."""
        body = _unlinked(body)
        fm = _IPY_FRAME.match(body.lstrip())
        if fm:
            if fm["file"]:
                frame = Frame(fm["file"], int(fm["line"]), (fm["func"] or "<module>").rsplit(".", 1)[-1])
            elif fm["cline"]:
                frame = Frame(f"<cell In[{fm['cell']}]>", int(fm["cline"]), "<module>")
            else:
                frame = Frame(fm["file7"], 0, fm["func7"])
            if len(tb.frames) < MAX_FRAMES:
                tb.frames.append(frame)
            else:
                tb.frames[-1] = frame
            return True
        cm = _IPY_CODE.match(body) if tb.frames else None
        if cm is None:
            return False
        if cm["arrow"]:  # the line the frame was at
            last = tb.frames[-1]
            if not last.line:
                last.line = int(cm["n"])
            last.code = (cm["code"] or "").strip()[:300]
        return True

    def _message_after_cut(self, body: str, rank: str | None) -> None:
        """Close the open traceback when ``body`` is a line of an exception's message printed after its last
        frame, the exception line itself cut (a paste that kept the message's details, such as torch's
        ``load_state_dict`` errors, ``\\tsize mismatch for …``). Python's traceback module prints one code line
        per frame, stripped and indented by four spaces (3.11+: then a caret line; with ``capture_locals``,
        ``name = value`` lines at the same four); 3.13 shows a statement spanning lines in full, but only one
        whose first line leaves a bracket, a string or a ``\\`` open. So a line indented by a tab (Python
        indents with spaces, torch's message lines start with one; unless the paste indents its frames so)
        or, below a complete code line, deeper than Python's four, not carets, is no part of the frame: it
        is the exception's."""
        tb = self.open_tb[rank]
        if tb.ipython or tb.elided or not tb.frames or not tb.frames[-1].code:
            return
        stripped = body.strip()
        if not stripped or not stripped.strip("^~ ") or stripped[:4] == "File" or _elided(stripped):
            return
        if "\u2500" <= stripped[0] <= "\u257f":
            return  # loguru's and better-exceptions' values of the code's names, drawn under it (``│ └ 0``)
        tabbed = body[:1] == "\t" and not self.frame_tabbed and _indent(body) > tb.margin
        if not tabbed and (_indent(body) <= tb.margin + 4 or not _complete_statement(tb.frames[-1].code)):
            return
        del self.open_tb[rank]

    def _state_dict_report(self, number: int, body: str, rank: str | None) -> None:
        """A line of ``load_state_dict``'s report (``_STATE_DICT_REPORT``) inside a traceback whose exception line
        was not printed before it (a cut paste): the traceback ends there, its exception the ``RuntimeError`` that
        ``load_state_dict`` raises with that report as its message (the report's own header, when kept, is its
        first line)."""
        tb = self.open_tb.pop(rank)
        if tb.exc_type is None:
            tb.exc_type, tb.message, tb.exc_line = "RuntimeError", body.strip()[:2000], number

    def _at_margin(self, body: str, rank: str | None) -> bool:
        """Whether an indented line inside a traceback is at the traceback's own margin (a paste indented
        as a whole): there it is the exception line, not source code."""
        tb = self.open_tb.get(rank)
        return tb is not None and tb.margin > 0 and _indent(body) <= tb.margin

    def _summarised(self, exc: str, msg: str) -> bool:
        """Whether an exception line repeats one of pytest's ``E   `` lines (its short summary
        ``FAILED id - Exc: msg`` does, cut to the terminal's width): the E lines and raise site already
        hold it, with its frames."""
        short = exc.rsplit(".", 1)[-1]
        if any(site_exc.rsplit(".", 1)[-1] == short for _s, _l, _f, site_exc in self.res.pytest_locations[-20:]):
            return True  # the raise site ``path.py:N: AssertionError`` (its E lines show ``assert …`` alone)
        head = msg.removesuffix("...").strip()[:40]
        for _src, _ln, text in self.res.pytest_errors[-20:]:
            got = raised_line(text.strip())
            if got and got[0].rsplit(".", 1)[-1] == short and got[1].strip().startswith(head):
                return True
        return False

    def _frame(self, tb: Traceback, body: str) -> bool:
        fm = _FRAME.match(body) or (_SYNTAX_FRAME.match(body) if 'File "' in body else None)
        if not fm:
            return False
        self.frame_width = len(body)
        self.frame_tabbed = body[:1] == "\t"
        tb.elided = False
        frame = Frame(fm["file"], int(fm["line"]), fm.groupdict().get("func") or "")
        if len(tb.frames) < MAX_FRAMES:
            tb.frames.append(frame)
        else:
            tb.frames[-1] = frame
        at = body.find('File "', fm.end())
        if at > 0 and _FRAME.match(body[at:]):
            # frames glued to one line (a paste that lost its line breaks): the code between them is the frame's
            frame.code = body[fm.end() : at].strip()[:300]
            self._frame(tb, body[at:])
        elif fm.end() < len(body) and not body[fm.end() :].isspace():
            frame.code = body[fm.end() :].strip()[:300]  # the last of them, its code glued too
        return True

    def _bare_exception(self, number: int, exc: str, msg: str, rank: str | None) -> None:
        """Keep an exception line that no traceback introduced, unless it repeats the last exception."""
        if exc.rsplit(".", 1)[-1] == _JAX_NOTE:
            self.jax_note[rank] = True
            return
        exc, msg = jax_unwrapped(exc, msg[:2000])
        for prev in reversed(self.res.tracebacks[-3:]):
            if prev.exc_type == exc and prev.message[:200] == msg[:200]:
                return
        tb = Traceback(
            self.source,
            number,
            exc_type=exc,
            message=msg,
            exc_line=number,
            rank=rank,
            chained=self.pending_chain.pop(rank, False),
            seq=self._seq(),
            bare=True,
        )
        wrapper = self.wrapping.pop(rank, None)
        if wrapper is not None and wrapper[0] == number - 1 and not tb.chained:
            # the line right after an exception whose message ends with ":" is the exception it wraps, printed
            # as the rest of its message: PyTorch's dynamo re-raises a backend's exception as
            # ``BackendCompilerFailed: backend='inductor' raised:`` + ``RuntimeError: msg``, with the original's
            # traceback. The frames shown are the wrapped exception's.
            tb.frames = list(wrapper[1].frames)
        self._keep_tb(tb)

    def _same_as_printed_before(self, tb: Traceback) -> None:
        """An exception line printed alone just before a traceback that ends with the same exception (a program
        or a logger printing the error, then ``traceback.print_exc()``; a paste that puts the error on top) is
        that exception: it gets the traceback's frames."""
        for prev in reversed(self.res.tracebacks[-5:]):
            if (
                prev.seq < tb.seq
                and prev.bare
                and not prev.frames
                and prev.source == tb.source
                and prev.rank == tb.rank
                and prev.exc_type == tb.exc_type
                and prev.message[:200] == tb.message[:200]
            ):
                prev.frames = list(tb.frames)
                return

    def _elastic_line(self, body: str) -> None:
        block = self.elastic
        if block is None:
            return
        self.elastic_left -= 1
        s = body.strip()
        if ":" in s and not s.startswith("Traceback"):
            key, _, value = s.partition(":")
            key = key.strip()
            if key in {"time", "host", "rank", "exitcode", "error_file", "traceback"} and key not in block.fields:
                block.fields[key] = value.strip()[:500]
        if self.elastic_left <= 0 or s.startswith("====="):
            self.elastic = None

    # -- keyword hits ---------------------------------------------------------------------------
    def _keywords(
        self, number: int, text: str, body: str, rank: str | None, seen: _Seen | bytes | bytearray | None = None
    ) -> None:
        c = self.compiled
        regex, within, order = c.keyword_regex, c.within, c.order
        if regex is None:
            return
        hits = line_hits(regex, text.encode("utf-8", "replace"), seen)
        if not hits:
            return
        # the alternation reports the longest keyword at each position; shorter ones inside it come from
        # ``within`` (precomputed), so only the keywords the line holds are looked at, never all of them
        low = text.lower()
        candidates: set[str] = set()
        for h in hits:
            for key in (h, h.lower()):
                candidates.update(within[key])
        rules: list[Rule] = []
        picked: set[int] = set()
        for kw in candidates:
            for r in self.rs.keyword_index.get(kw, ()):
                if id(r) not in picked and (kw in low if r.ignore_case else kw in text):
                    picked.add(id(r))
                    rules.append(r)
        rules.sort(key=lambda r: order.get(id(r), 0))
        match_body = body[4:] if body.startswith("E   ") else body  # _PYTEST_PREFIX, without a regex call
        for r in rules:
            groups: dict[str, str] | None = None
            if not r.patterns:
                groups = {}
            else:
                for p in r.patterns:
                    pm = p.search(match_body)
                    if pm:
                        groups = {k: v for k, v in pm.groupdict().items() if v is not None}
                        break
            if groups is None:
                continue
            self._add_finding(r, number, match_body.strip(), groups, rank or _inline_rank(body), text)

    def _add_finding(
        self, rule: Rule, number: int, text: str, groups: dict[str, str], rank: str | None, raw: str
    ) -> None:
        ts = _timestamp(raw) or (_timestamp(self.stamp) if self.stamp else None)
        if self.quiet_line == "apart":  # read in a handled traceback (``settle_handled``)
            self._keep(
                self.res.handled_findings,
                Finding(rule, self.source, number, text[:1000], groups, rank, ts, self._seq()),
            )
            return
        count = self.res.hits_per_rule.get(rule.id, 0) + 1
        self.res.hits_per_rule[rule.id] = count
        f = Finding(rule, self.source, number, text[:1000], groups, rank, ts, self._seq(), bool(self.quiet_line))
        if count <= MAX_FINDINGS_PER_RULE:
            self.res.findings.append(f)
        else:  # keep the first ones and the latest one
            for i in range(len(self.res.findings) - 1, -1, -1):
                if self.res.findings[i].rule is rule:
                    self.res.findings[i] = f
                    break
        if rank is not None and not rule.noise and not rule.downstream and rule.causes:
            prev = self.res.rank_first_error.get(rank)
            if prev is None or (ts and prev[3] and ts < prev[3]):
                self.res.rank_first_error[rank] = (self.source, number, text[:300], ts)

    def generic(self, number: int, text: str) -> None:
        """Lines that look like errors without matching any rule: fallback material."""
        low = text.lower()
        if (
            "error" in low
            or "exception" in low
            or "fatal" in low
            or "killed" in low
            or "abort" in low
            or "segmentation fault" in low
            or "timed out" in low
            or "timeout" in low
            or "  what():  " in text  # libstdc++'s terminate handler: the exception's message (``_STRUCTURAL``)
        ) and not NATIVE_FRAME.match(text):
            el = self.res.handled_error_lines if self.quiet_line == "apart" else self.res.error_lines
            if el is self.res.error_lines and (self.quiet_line == "maybe" or not _reports_error(text)):
                self.res.maybe_lines.add((self.source, number))  # no failure in a run that exited 0
            el.append((self.source, number, text.strip()[:500]))
            if len(el) > 400:
                del el[100:200]  # keep the first 100 and the most recent ones
        mm = _MEM.search(text) if "mem" in low else None  # _MEM needs "mem" in some case
        if mm:
            unit = mm["u"][0].upper()
            gib = float(mm["v"]) * _UNIT.get(unit, 1.0)
            ms = self.res.mem_series
            ms.append((gib, self.source, number))
            if len(ms) > MAX_MEM_SAMPLES:
                del ms[1::2]

    # -- helpers --------------------------------------------------------------------------------
    def _open_headless(self, number: int, rank: str | None, margin: int, ipython: bool = False) -> Traceback:
        """Open a traceback whose ``Traceback (most recent call last):`` header was not printed (an excerpt,
        a log handler, IPython): its frames start it."""
        tb = Traceback(
            self.source,
            number,
            rank=rank,
            chained=self.pending_chain.pop(rank, False),
            seq=self._seq(),
            headless=True,
            ipython=ipython,
            margin=margin,
        )
        self.open_tb[rank] = tb
        self._keep_tb(tb)
        return tb

    def _seq(self) -> int:
        self.res.seq += 1
        return self.res.seq

    def _keep(self, lst: list[Any], item: Any, cap: int = 50) -> None:
        lst.append(item)
        if len(lst) > cap:
            del lst[1]

    def _handled(self, tb: Traceback) -> str:
        """Whether a traceback just opened was printed and handled (``_LOW_RECORD``): "apart" (moved apart from
        the evidence, to ``ScanResult.handled_tracebacks``), "maybe" (flagged) or ""."""
        buf, at = self.buf, self.start
        after, self.after_hushed = self.after_hushed, ""
        if buf is None:
            return ""
        self._section()
        if at > 0:  # the line just before (the scan skips lines without a keyword)
            prev = bytes(buf[buf.rfind(b"\n", 0, at - 1) + 1 : at - 1]).rstrip(b"\r").decode("utf-8", "replace")
        else:
            prev = self.last_line.decode("utf-8", "replace")
        how = ""
        if self.passes or _PYTEST_RECORD.match(prev):
            how = "apart"
        elif tb.chained and after:
            how = after
        elif buf[at : at + 9] == b"Traceback" and _LOW_RECORD.match(prev):
            # (a header behind a prefix is relayed output, every line under its relay's record: not a record's)
            how = "apart" if _went_on(buf, at, self.n) else "maybe"
        self.hushed, self.hush = (tb, how) if how else (None, "")
        if how == "apart":
            tbs = self.res.tracebacks
            for i in range(len(tbs) - 1, max(-1, len(tbs) - 4), -1):
                if tbs[i] is tb:
                    del tbs[i]
                    break
            self._keep(self.res.handled_tracebacks, tb, cap=MAX_TRACEBACKS)
        elif how:
            tb.handled = True
        return how

    def _section(self) -> None:
        """Whether the line read is in pytest's PASSES/XPASSES sections: the last of its summary's section headers
        before it (looked for once per chunk's bytes)."""
        buf, at = self.buf, self.start
        if buf is None or at <= self.looked:
            return
        found = max(buf.rfind(mark, self.looked, at) for mark in _PASSES)
        sep = buf.rfind(b"==== ", self.looked, at)
        if sep > found:
            self.passes = False  # another section (or an "====" line the program printed) since
        elif found >= 0:
            self.passes = True
        self.looked = at

    def _keep_tb(self, tb: Traceback) -> None:
        tbs = self.res.tracebacks
        tbs.append(tb)
        if len(tbs) > MAX_TRACEBACKS:
            # keep the first few (the first failure) and the latest (the end of the story)
            del tbs[4]


_NO_HITS: frozenset[str] = frozenset()


def line_hits(regex: Any, raw: bytes, seen: _Seen | bytes | bytearray | None = None) -> set[str] | frozenset[str]:
    """The keywords ``regex.search`` finds in the line ``raw`` (its text's bytes), overlapping, the longest
    at each position; ``seen``: what the engine reported for the line (see ``_Seen``), which gives the same
    answer without the regex whenever the line's text is its bytes."""
    hits: set[str] | frozenset[str] | None = None
    if isinstance(seen, _Seen):
        hits = seen.hits(raw)
    elif seen is not None:  # the line's bytes, in which the engine saw no keyword
        hits = _NO_HITS if raw == (seen[:-1] if seen[-1:] == b"\n" else seen) else None
    if hits is None:
        found: set[str] = set()
        m = regex.search(raw)
        while m is not None:  # overlapping: a keyword may start inside the previous hit
            found.add(m.group(0).decode("utf-8", "replace"))
            m = regex.search(raw, m.start() + 1)
        hits = found
    return hits


class _Seen:
    """Where the engine found the keyword search's literals in one line of a block: enough to name the hits
    ``keyword_regex.search`` would give, without running it. At each position the alternation takes the
    longest exact keyword, else the longest case-folded one; a team card's keyword (KW_ANY) wins over that
    when longer (``CardKeywords.search`` sorts by length). Only for a line whose text is its bytes (valid
    UTF-8, no control character, no ``\\r`` redraw): the engine saw the bytes, the regex sees the text."""

    __slots__ = ("line", "start", "found", "table")

    def __init__(self, line: bytes | bytearray, start: int, found: list[tuple[int, int]], table: list[tuple[int, int]]):
        self.line, self.start, self.found, self.table = line, start, found, table

    def hits(self, text_bytes: bytes) -> set[str] | None:
        line = self.line
        if line[-1:] == b"\n":
            line = line[:-1]
        if text_bytes != line:
            return None
        if not self.found:
            return set()
        n, start, table = len(line), self.start, self.table
        best: dict[int, list[int]] = {}  # position -> [longest exact, longest folded, longest card keyword]
        for end, i in self.found:
            length, kinds = table[i]
            at = end - length - start
            if at < 0 or at + length > n:
                continue
            b = best.get(at)
            if b is None:
                b = best[at] = [0, 0, 0]
            if kinds & KW_EXACT and length > b[0]:
                b[0] = length
            if kinds & KW_FOLDED and length > b[1]:
                b[1] = length
            if kinds & KW_ANY and length > b[2]:
                b[2] = length
        return {line[at : at + max(ex or fo, card)].decode("utf-8", "replace") for at, (ex, fo, card) in best.items()}


def _reports_error(text: str) -> bool:
    """A generic error word (``_ERROR_WORD``) that reports an error: not one only inside an identifier, a module
    path, an object's repr or a versioned package name, nor the noun phrase "error handling". A word in a name
    still reports one where the name is a qualified exception class (``pip.exceptions.DistributionNotFound``,
    ``std::runtime_error``) or a code set to a non-zero value (``error_code=507018``, ``error=10``)."""
    if "  what():  " in text:
        return True  # libstdc++'s terminate handler
    for m in _ERROR_WORD.finditer(text):
        word = m.group()
        a, b = m.start(), m.end()
        if word.lower() == "error" and text[b : b + 9].lower() == " handling":
            continue
        before = text[a - 1 : a]
        if before == "<":
            continue  # an object's repr (``<Timeout [finished]>``)
        if not word.islower():
            return True  # ``RuntimeError``, ``ERROR``, ``CUDA_ERROR_…``: a class or a level
        after = text[b : b + 2]
        inside = (
            before in (".", "_", "/", "-")
            or after[:1] == "_"
            or (after[:1] == "s" and after[1:2] in (".", "/", "_"))
            or (after[:1] == "-" and after[1:2].isdigit())
            or after[:1] == "="
        )
        if not inside:
            return True
        rest = _NAME_REST.match(text, b)
        tail = rest.group() if rest else ""
        if any(c.isupper() for c in tail):
            return True  # a qualified class: ``hypothesis.errors.Flaky``
        start = a
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        if text[start - 2 : start] == "::":
            return True  # a C++ class: ``std::runtime_error``
        if word != "timeout" and _CODE_SET.match(text, b + len(tail.split(".", 1)[0])):
            return True  # a code set to a non-zero value: ``error_code=507018``, ``error=10``
    return False


def _went_on(buf: bytes | bytearray, at: int, end: int) -> bool:
    """Whether the program logged a record below ERROR (``_LOW_RECORD``) right after the traceback whose header
    line starts at ``buf[at]`` (and after its chained sequels): the first line at the margin after its exception
    line. A traceback the program died of is followed by the end of the output, the rest of its message, a
    launcher's error or another rank's output. Not known (False) past ``end`` or 400 lines."""
    start = buf.find(b"\n", at, end) + 1
    exc_read = False
    for _ in range(400):
        if start <= 0:
            return False
        nl = buf.find(b"\n", start, end)
        if nl < 0:
            if start >= end:
                return False
            nl = end  # the output's last line (a chunk ends at a line's end)
        line = bytes(buf[start:nl]).rstrip(b"\r")
        start = nl + 1
        if not line.strip() or line[:1] in (b" ", b"\t"):
            continue  # frames, their code, carets; indented notes
        if b"above exception" in line:
            exc_read = False  # a chained sequel follows
            continue
        if line.startswith(b"Traceback (most recent"):
            if exc_read:
                return False  # another traceback, not a sequel: another failure
            continue
        if not exc_read:
            exc_read = True  # the exception line
            continue
        return _LOW_RECORD.match(line.decode("utf-8", "replace")) is not None
    return False


def settle_handled(result: ScanResult, exit_code: int | None) -> None:
    """What the program printed and handled (``_LOW_RECORD``) once the exit status is known. A run that exited 0
    did not fail: every handled traceback, certain or "maybe", leaves the evidence, and so do the error lines that
    report no failure (``ScanResult.maybe_lines``). Else a "maybe" stays in it, and
    what is certainly handled (``ScanResult.handled_*``) joins it only when nothing else says how the run failed
    (no other traceback, pytest ``E`` line, stack dump or finding that names a cause): a best effort (the last
    exception the program logged before it gave up) beats no diagnosis. Called once, before the analysis."""
    if exit_code == 0:
        maybe = [t for t in result.tracebacks if t.handled]
        if maybe:
            result.tracebacks = [t for t in result.tracebacks if not t.handled]
            result.handled_tracebacks += maybe
        if any(f.handled for f in result.findings):
            result.handled_findings += [f for f in result.findings if f.handled]
            result.findings = [f for f in result.findings if not f.handled]
        if result.maybe_lines:
            keep = result.maybe_lines
            result.handled_error_lines += [e for e in result.error_lines if (e[0], e[1]) in keep]
            result.error_lines = [e for e in result.error_lines if (e[0], e[1]) not in keep]
        result.maybe_lines = set()
        return
    if not (result.handled_tracebacks or result.handled_findings or result.handled_error_lines):
        return
    if result.tracebacks or result.pytest_errors or result.dumps:
        return
    if any(not f.rule.noise and f.rule.causes and not f.rule.requires_failure for f in result.findings):
        return
    result.tracebacks = sorted(result.tracebacks + result.handled_tracebacks, key=lambda t: t.seq)
    result.findings = sorted(result.findings + result.handled_findings, key=lambda f: f.seq)
    for f in result.handled_findings:
        result.hits_per_rule[f.rule.id] = result.hits_per_rule.get(f.rule.id, 0) + 1
    order = {name: i for i, name in enumerate(result.sources)}
    result.error_lines = sorted(
        result.error_lines + result.handled_error_lines, key=lambda e: (order.get(e[0], 0), e[1])
    )
    result.handled_tracebacks, result.handled_findings, result.handled_error_lines = [], [], []


def printed_frame(text: str) -> Frame | None:
    """A frame as Python prints it (``File "x.py", line 3, in f``, or a SyntaxError's function-less
    ``File "x.py", line 3``) inside other text: pytest's ``E   `` lines print an exception as Python formats
    it, so a SyntaxError's location (the file that does not parse) and a traceback formatted into a
    message (pytest 7's unraisable-exception warning) show there, not as pytest's own entries."""
    if 'File "' not in text:
        return None
    fm = _FRAME.match(text) or _SYNTAX_FRAME.match(text)
    return Frame(fm["file"], int(fm["line"]), fm.groupdict().get("func") or "") if fm else None


def exception_line(text: str) -> tuple[str, str] | None:
    """(exception class, message) when ``text`` is an exception line as Python prints it below a traceback
    (``ValueError: msg``, ``Exception: msg``, ``django.core.exceptions.ImproperlyConfigured: msg``)."""
    if text[:1] not in _NAME_START:  # both patterns start with a class or module name (most log lines do not)
        return None
    m = _BARE_EXC.match(text) or _BARE_QUALIFIED.match(text)
    return (m["type"], m["msg"] or "") if m else None


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


# pytest's ``E   `` lines print the exception a test raised, whatever its class is named: pytest's own outcomes
# (``Failed`` of ``pytest.fail``, ``Skipped``, ``XFailed``: _pytest/outcomes.py sets their ``__module__`` to
# "builtins", so Python prints them unqualified), ``StopIteration`` and ``StopAsyncIteration``, and a warning
# raised as an error (``-W error``, ``filterwarnings = error``). Printed alone, such a line is no failure.
_RAISED_NAMED = re.compile(
    r"^(?P<type>Failed|Skipped|XFailed|StopIteration|StopAsyncIteration|(?:[A-Za-z_]\w*\.)*[A-Z]\w*Warning)(?::\s?(?P<msg>.*))?$"
)


def raised_line(text: str) -> tuple[str, str] | None:
    """(exception class, message) of an exception line pytest printed as the exception a test raised (an
    ``E   `` line): ``exception_line``'s classes and those named otherwise (``_RAISED_NAMED``)."""
    got = exception_line(text)
    if got is None and text[:1] in _NAME_START and (m := _RAISED_NAMED.match(text)) is not None:
        return m["type"], m["msg"] or ""
    return got


def jax_unwrapped(exc: str, msg: str) -> tuple[str, str]:
    """The exception a JAX traceback-filtering wrapper stands for (``UnfilteredStackTrace: TypeError: msg`` →
    ``TypeError``, ``msg``); any other exception as it is."""
    if exc.rsplit(".", 1)[-1] in JAX_WRAPPERS:
        inner = exception_line(msg.strip())
        if inner:
            return inner
    return exc, msg


def prefixed_exception(text: str) -> tuple[str, str] | None:
    """(exception class, message) of an exception line printed behind a prefix (``_PREFIX_SEP``): the
    first place after a separator where an exception line starts, so ``ValueError: KeyError: x`` stays a
    ``ValueError`` (it is tried whole first, by ``exception_line``). The scanner asks only for lines that
    ``_names_exception``."""
    for m in _PREFIX_SEP.finditer(text, 0, PREFIX_HEAD):
        got = exception_line(text[m.end() :])
        if got:
            return got
    return None


def summary_warning(text: str) -> tuple[str, str] | None:
    """(warning class, message) of pytest's short-summary line for a test a warning failed (``FAILED id -
    FutureWarning: msg`` under ``-W error``): the one place a warning class is the failure."""
    m = _PYTEST_SUMMARY_WARNING.match(text)
    return (m["type"], m["msg"] or "") if m else None


def _names_exception(text: str) -> bool:
    """Whether a line may name an exception class: by its kind, or by the module packages keep their
    exceptions in (``triton.runtime.errors.OutOfResources``, ``django.core.exceptions.ImproperlyConfigured``)."""
    return (
        "Error" in text
        or "Exception" in text
        or "Exit" in text
        or "Interrupt" in text
        or "Failure" in text
        or "Fault" in text
        or "errors." in text
        or "exceptions." in text
        or "exc." in text
    )


MAX_LINE_HELD = 400
# the start of a frame line, cut anywhere before its function's name
_FRAME_START = re.compile(r'^\s*File(?:\s+"[^"]*(?:",?(?:\s+line(?:\s+\d+(?:,?(?:\s+in)?)?)?)?)?)?\s*$')


def _unwrapped(head: str, rest: str) -> str | None:
    """A frame line cut by a wrap, joined again: ``head`` and the next line, with nothing between them (a
    wrap inside a word, or at a space it kept) or with the space a wrap dropped; None when neither joins
    into the start of a frame (``File "path", line N``)."""
    for joined in (head + rest, head.rstrip() + " " + rest):
        if _FRAME.match(joined) or _SYNTAX_FRAME.match(joined):
            return joined
    for joined in (head + rest, head.rstrip() + " " + rest):
        if _FRAME_START.match(joined) and len(joined) < MAX_LINE_HELD:  # still cut: wait for the next part
            return joined
    return None


def _elided(stripped: str) -> bool:
    """Whether a line (stripped) only marks a part of a traceback left out (``_ELISION``)."""
    return stripped[:1] in _ELISION_START and _ELISION.match(stripped) is not None


_ELISION_START = frozenset(".…[(<")


def _complete_statement(code: str) -> bool:
    """Whether a line of code ends its statement: its brackets balance, no triple-quoted string or ``\\``
    continuation is left open (a frame's code line cut by a paste's width is not complete either)."""
    if code.endswith("\\") or (code.count('"""') + code.count("'''")) % 2:
        return False
    depth = 0
    for ch in code:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth == 0


def _unlinked(text: str) -> str:
    """``text`` with Markdown links reduced to the text they show (``[line 7](vscode-notebook-cell:…)`` → ``line 7``)."""
    return _MD_LINK.sub(r"\1", text) if "](" in text else text


def _glued_output(body: str) -> bool:
    """A line behind REPL prompts or quote marks that is an exception line: output, not code typed at the
    prompt (``python -i`` fed a script prints its prompts with nothing after them, so the output lands on
    the prompt's line)."""
    return exception_line(_QUOTE.sub("", body).strip()) is not None


def _learnt(head: str) -> re.Pattern[str]:
    """The prefix a logger or launcher put before a traceback's line, as a pattern: its digits (a time, a
    pid, a rank) vary from line to line."""
    return re.compile(_DIGITS.sub(r"\\d+", re.escape(head)))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _inline_rank(text: str) -> str | None:
    m = _RANK_INLINE.search(text)
    return m["rank"] if m else None


def _timestamp(text: str) -> str | None:
    m = _GLOG_TS.search(text)
    if m:
        return f"{m['md']} {m['t']}"
    m = _ISO_TS.search(text)
    if m:
        return f"{m['m']}{m['d']} {m['t'].replace(',', '.')}"
    m = _SYSLOG_TS.search(text)
    if m:
        return f"{MONTHS.index(m['mon']) + 1:02d}{m['d'].replace(' ', '0')} {m['t']}"
    return None


def _candidate_pattern(ruleset: RuleSet) -> bytes:
    parts = list(_STRUCTURAL)
    if ruleset.keyword_regex is not None:
        parts.append(ruleset.keyword_regex.pattern)
    return b"|".join(b"(?:" + p + b")" for p in parts)


class _Within(dict[str, list[str]]):
    """index key → the index keys it contains (itself included), computed on first use: a log hits few
    distinct keywords, so computing this for all of them up front would only cost start-up time."""

    def __init__(self, keys: list[str]):
        super().__init__()
        self.keys_ = keys
        self.known = set(keys)

    def __missing__(self, key: str) -> list[str]:
        low = key.lower()
        found = [s for s in self.keys_ if s in key or s in low] if key in self.known else []
        self[key] = found
        return found


@dataclass
class CompiledRules:
    """What scanning needs from a rule set, compiled once per rule set and kept on it (``RuleSet.scanner``):
    the candidate-line regex (structural markers + every keyword), the keyword alternation, for each index
    key the keys it contains, the rules' order, and the multi-pattern engines' line finders (built on first
    use per engine; None where an engine is missing). A hit line then costs O(its hits) rather than
    O(all keywords)."""

    keyword_regex: re.Pattern[bytes] | None
    within: _Within
    order: dict[int, int]
    patterns: mpscan.Patterns
    engines: dict[str, mpscan.LineStarts | None] = field(default_factory=dict)

    @cached_property
    def candidates(self) -> re.Pattern[bytes]:
        """The candidate-line regex for Python's re, compiled only when Python searches (a small log, no
        engine installed): a fresh CLI on a big log with an engine saves its ~0.2 s compile."""
        return re.compile(self.patterns.combined)

    def line_starts(self) -> mpscan.LineStarts | None:
        """The line finder of the engine in use (``mpscan.engine_name``), or None for Python's re."""
        name = mpscan.engine_name()
        if name not in self.engines:
            self.engines[name] = mpscan.build(name, self.patterns)
        return self.engines[name]


def compiled(ruleset: RuleSet) -> CompiledRules:
    """The rule set's compiled scanner, built on first use. Two threads may both build it; either result
    is correct, so the last one stored wins."""
    if isinstance(ruleset.scanner, CompiledRules):
        return ruleset.scanner
    keep_cache(ruleset)  # the packs' parse, for the next process (when no team cards' folder forbade it)
    keywords = tuple((k, r.ignore_case) for r in ruleset.rules for k in r.keywords)
    hit_keywords = getattr(ruleset.keyword_regex, "hit_keywords", None)
    hits = hit_keywords() if hit_keywords is not None else None
    built = CompiledRules(
        keyword_regex=ruleset.keyword_regex,
        within=_Within(list(ruleset.keyword_index)),
        order={id(r): i for i, r in enumerate(ruleset.rules)},
        patterns=mpscan.Patterns(
            tuple(_STRUCTURAL),
            keywords,
            partial(_candidate_pattern, ruleset),
            None if hits is None else tuple(hits),
            _keep_out(ruleset),
            _card_parts(ruleset, keywords, hits),
            _PREFILTERS,
        ),
    )
    ruleset.scanner = built
    return built


def _card_parts(
    ruleset: RuleSet, keywords: tuple[tuple[str, bool], ...], hits: list[tuple[bytes, bool, int]] | None
) -> tuple[mpscan.Patterns, ...]:
    """The search split into the built-in rules' part and the team cards' (``mpscan.Patterns.parts``), when
    the rule set is built-in rules plus cards (``factory.with_cards``: the cards' rules last, the cards'
    keywords after the built-in ones); else none. The built-in part holds exactly what the rule set
    without cards would, so its engine database is the one already cached."""
    kr = ruleset.keyword_regex
    if kr is None or isinstance(kr, LazyRegex | re.Pattern):  # no cards; and asking a LazyRegex compiles it
        return ()
    count = getattr(kr, "card_rules", 0)
    base = getattr(kr, "base", None)
    base_hits = getattr(base, "hit_keywords", None)
    if not count or hits is None or base_hits is None or count > len(ruleset.rules):
        return ()
    own = base_hits()
    if own is None or list(hits[: len(own)]) != own:
        return ()
    split = sum(len(r.keywords) for r in ruleset.rules[: len(ruleset.rules) - count])
    keep_out = _keep_out(ruleset)
    return (
        mpscan.Patterns(tuple(_STRUCTURAL), keywords[:split], b"", tuple(own), keep_out, prefilters=_PREFILTERS),
        mpscan.Patterns((), keywords[split:], b"", tuple(hits[len(own) :]), keep_out),
    )


def _keep_out(ruleset: RuleSet) -> str | None:
    """The team cards' folder of a rule set with cards (``factory.with_cards``): no engine database is
    cached in a cache folder inside it."""
    kr = ruleset.keyword_regex
    if kr is None or isinstance(kr, LazyRegex | re.Pattern):  # asking a LazyRegex compiles it
        return None
    root = getattr(kr, "root", None)
    return root if isinstance(root, str) else None


def scan_stream(
    stream: BinaryIO,
    source: str,
    ruleset: RuleSet,
    result: ScanResult,
    *,
    deadline: float | None = None,
    tail_bytes: int = TAIL_AFTER_BUDGET,
) -> None:
    """Scan one binary stream into ``result``; memory is bounded by CHUNK + MAX_LINE. Past ``deadline``
    (``time.monotonic()``), a seekable stream skips to its last ``tail_bytes`` (once; counted in
    ``skipped_bytes``), so one huge log cannot hold a diagnosis beyond its time budget."""
    sc = _Scanner(ruleset, result, source)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    line_no = 0  # lines fully consumed before ``buf``
    # One buffer for the whole stream, read into in place: a partial line carried over to the next chunk
    # is moved to its front, and the engines and finders work on ``buf[:cut]`` by offsets, so a chunk is
    # never copied (copying a chunk twice cost more than finding its candidate lines).
    readinto = stream.readinto if isinstance(stream, io.FileIO | io.BytesIO) else None
    buf = bytearray(_capacity(stream) if readinto is not None else 2 * CHUNK + MAX_LINE)
    view = memoryview(buf)
    carry = 0  # bytes of a partial line at the front of ``buf``
    total = 0
    fast: mpscan.LineStarts | None = None
    try:
        while True:
            if deadline is not None and not sc.info.skipped_bytes and time.monotonic() > deadline:
                skipped = _skip_to_tail(stream, total, tail_bytes)
                if skipped:
                    sc.info.skipped_bytes = skipped
                    total += skipped
                    carry = 0
                    stream.readline(MAX_LINE)  # the line the jump landed in is partial
            if readinto is not None:
                if len(buf) - carry < CHUNK:  # a buffer sized for a small input: never read into nothing
                    view, buf = _grown(view, buf, carry + 1)
                room = min(CHUNK, len(buf) - carry)
                got = readinto(view[carry : carry + room]) or 0
                if got == room < CHUNK:  # more than the input's size said (it grows): the rest of a chunk
                    view, buf = _grown(view, buf, carry + CHUNK)
                    got += readinto(view[carry + got : carry + CHUNK]) or 0
            else:  # a pipe or another reader: read as asked, then copy in (its reads may come short)
                data = stream.read(CHUNK)
                got = len(data)
                view[carry : carry + got] = data
            if total == 0:
                with view[: carry + got] as first:  # released at once: ``_grown`` may resize ``buf`` later
                    _read_carrier(sc, first)
                if mpscan.worth_it(got):  # find candidate lines with an engine
                    fast = sc.compiled.line_starts()
            total += got
            if not got and not carry:
                break
            filled = carry + got
            if got:
                cut = buf.rfind(b"\n", 0, filled) + 1
                if cut == 0:  # no newline in a whole chunk: an over-long line; keep only its head
                    if filled > MAX_LINE:
                        sc.info.truncated_lines += 1
                        filled = MAX_LINE
                    carry = filled
                    continue
            else:
                cut = filled
            if sc.decode is not None and (sc.every_chunk or page_marks(buf, cut)):
                cut, filled = _decode_lines(buf, cut, filled, sc.decode)
            if sc.wrap:
                cut = wrap_cut(buf, cut, sc.wrap) if got else cut
                buf[:cut] = unwrap(view[:cut], sc.wrap)
            line_no = _scan_block(sc, buf, view, cut, fast, line_no, tail)
            if total <= PROGRESS_BYTES:
                count_progress(result, buf, cut)
            carry = filled - cut
            if carry:
                buf[:carry] = view[cut:filled]
    finally:
        view.release()
    sc.info.lines = line_no
    sc.info.bytes = total
    sc.info.tail = list(tail)
    # a traceback whose exception line never came (log cut mid-traceback) is still evidence
    sc.open_tb.clear()


def _read_carrier(sc: _Scanner, head: bytes | memoryview) -> None:
    """What the log's carrier did to every line, read on its first chunk (``carrier``): a terminal's hard wraps, a
    log's JSON-lines records, an envelope, a page's escaping; and the decoder every chunk then goes through."""
    sc.wrap = wrap_width(head)
    if sc.wrap:
        head = unwrap(head, sc.wrap)
    records = json_records(head)
    if records:
        head = unrecord(head)
    sc.envelope = detect(head)
    sc.escaped = page_escaped(head)
    continued = sc.envelope is not None and sc.envelope.name == "gitlab"
    sc.decode = carrier_decoder(sc.escaped, records, continued)
    sc.every_chunk = sc.escaped or records or continued
    sc.sublines = records


def _decode_lines(
    buf: bytearray, cut: int, filled: int, decode: Callable[[bytes | bytearray | memoryview], bytes]
) -> tuple[int, int]:
    """Undo what the carrier did to the whole lines ``buf[:cut]`` (``carrier.carrier_decoder``: its decoding only
    ever shortens what it changes), in place: the partial line after them is moved up behind them. The new ``cut``
    and ``filled``."""
    lines = decode(buf[:cut])
    if len(lines) == cut:
        return cut, filled
    rest = bytes(buf[cut:filled])
    buf[: len(lines)] = lines
    buf[len(lines) : len(lines) + len(rest)] = rest
    return len(lines), len(lines) + len(rest)


def _capacity(stream: BinaryIO) -> int:
    """The buffer a stream needs: a whole chunk plus a carried line, or less for an input known to be
    smaller (a small log or text needs no buffer of two chunks); ``scan_stream`` grows it if the input grows."""
    full = 2 * CHUNK + MAX_LINE
    try:
        if isinstance(stream, io.BytesIO):
            with stream.getbuffer() as data:
                left = data.nbytes - stream.tell()
        else:
            left = os.fstat(stream.fileno()).st_size - stream.tell()
    except (OSError, ValueError, AttributeError):
        return full
    return max(1, min(full, left + 1))


def _grown(view: memoryview, buf: bytearray, size: int) -> tuple[memoryview, bytearray]:
    """``buf`` grown to at least ``size`` bytes, with a new view of it (a bytearray cannot grow while
    viewed)."""
    if len(buf) >= size:
        return view, buf
    view.release()
    buf.extend(bytes(size - len(buf)))
    return memoryview(buf), buf


def _scan_block(
    sc: _Scanner,
    buf: bytearray,
    view: memoryview,
    n: int,
    fast: mpscan.LineStarts | None,
    line_no: int,
    tail: deque[str],
) -> int:
    """Find the candidate lines of ``buf[:n]`` (whole lines) and feed them; the new line count."""
    occ: mpscan.Occurrences | None = None
    if fast is not None:
        starts, occ = fast.scan(buf, n, view)
        find = mpscan.next_line(starts)
    else:
        find = _regex_finder(sc.compiled.candidates, buf, n)
    return _scan_chunk(sc, find, buf, line_no, tail, occ, getattr(fast, "table", None), n)


def _skip_to_tail(stream: BinaryIO, pos: int, tail_bytes: int) -> int:
    """Seek ``stream`` (now at ``pos``) to its last ``tail_bytes``; the bytes skipped, 0 when it cannot seek
    or the rest is already that short."""
    try:
        end = stream.seek(0, os.SEEK_END)
        start = max(pos, end - tail_bytes)
        stream.seek(start)
    except (OSError, ValueError):  # a pipe or a socket: read on, it cannot be skipped
        return 0
    return start - pos


def _regex_finder(
    big: re.Pattern[bytes], buf: bytes | bytearray, n: int | None = None
) -> Callable[[int], tuple[int, int] | None]:
    """``find(pos)``: the first candidate match in ``buf[pos:n]`` as (start, end), by Python's re."""
    endpos = len(buf) if n is None else n

    def find(pos: int) -> tuple[int, int] | None:
        m = big.search(buf, pos, endpos)
        return None if m is None else m.span()

    return find


def _scan_chunk(
    sc: _Scanner,
    find: Callable[[int], tuple[int, int] | None],
    buf: bytes | bytearray,
    line_no: int,
    tail: deque[str],
    occ: mpscan.Occurrences | None = None,
    table: list[tuple[int, int]] | None = None,
    n: int | None = None,
) -> int:
    """Feed the lines of ``buf[:n]`` that Python must see; ``occ``/``table``: the engine's keyword
    occurrences per line start (a line without an entry holds none), when it reported them."""
    pos = 0
    n = len(buf) if n is None else n
    sc.buf, sc.looked, sc.n = buf, 0, n
    subs = sc.sublines and buf.find(_SUB_BREAK, 0, n) >= 0  # a record of several lines in this chunk
    count = _record_lines if subs else newlines
    while pos < n:
        if sc.in_block:
            end = buf.find(b"\n", pos, n)
            end = n if end < 0 else end + 1
            line_no += not subs or buf[pos] != _SUB
            raw = buf[pos:end]
            sc.start = pos
            _process(sc, line_no, raw, _seen(raw, pos, occ, table))
            pos = end
            continue
        m = find(pos)
        if m is None:
            line_no += count(buf, pos, n)
            break
        start = buf.rfind(b"\n", pos, m[0])
        start = pos if start < 0 else start + 1
        line_no += count(buf, pos, start)
        end = buf.find(b"\n", m[1], n)
        end = n if end < 0 else end + 1
        line_no += not subs or buf[start] != _SUB
        raw = buf[start:end]
        sc.start = start
        _process(sc, line_no, raw, _seen(raw, start, occ, table))
        pos = end
    # the chunk's last line and its last section header, for the next chunk's first lines (``_handled``)
    if n:
        sc.last_line = bytes(buf[buf.rfind(b"\n", 0, n - 1) + 1 : n]).rstrip(b"\r\n")
        sc.start = n
        sc._section()
    # tail: the last lines of this chunk replace older ones
    last = buf[_tail_start(buf, n) : n].decode("utf-8", "replace").splitlines()
    for line in last[-TAIL_LINES:]:
        vis = _visible(line[:MAX_LINE])
        if sc.envelope is not None:
            vis = sc.envelope.open(vis)[0]
        if vis.strip():
            tail.append(vis)
    return line_no


_SUB_MARK = SUBLINE.encode()  # a record's further line starts with it
_SUB = _SUB_MARK[0]
_SUB_BREAK = b"\n" + _SUB_MARK


def _record_lines(buf: bytes | bytearray, start: int, end: int) -> int:
    """The records that start in the whole lines ``buf[start:end]``: its lines, less those that go on a record
    (``carrier.SUBLINE`` first), for line numbers that stay the log's."""
    if start >= end:
        return 0
    return newlines(buf, start, end) - buf.count(_SUB_BREAK, start, end) - (buf[start] == _SUB)


def newlines(buf: bytes | bytearray, start: int, end: int) -> int:
    """The newlines in ``buf[start:end]``, for line numbers. ``bytes.count`` of one byte is a scalar loop
    (~3 GB/s: a third of a big log's scan); deleting the byte with ``replace`` finds each one with
    ``memchr`` (vectorised) and copies the runs between them: 2-2.5x faster on log lines, though it copies
    the range twice (slice and result, so it goes by pieces of ``COUNT_PIECE``), and up to 20x slower where
    lines are a few bytes long (blank lines, binary data), one ``memchr`` call per newline. So each piece
    first counts its first ``COUNT_PROBE`` bytes, and only a piece whose lines there average at least
    ``COUNT_SPARSE`` bytes goes by ``replace``. Ranges under ``COUNT_BY_REPLACE`` bytes (between two nearby
    candidate lines) keep ``count``: below ~2 KiB the two cost the same."""
    total = 0
    while end - start >= COUNT_BY_REPLACE:
        piece = min(end, start + COUNT_PIECE)
        probe = start + COUNT_PROBE
        seen = buf.count(b"\n", start, probe)
        if seen * COUNT_SPARSE > COUNT_PROBE:  # short lines: ``replace`` would call ``memchr`` per line
            total += seen + buf.count(b"\n", probe, piece)
        else:
            total += seen + (piece - probe) - len(buf[probe:piece].replace(b"\n", b""))
        start = piece
    return total + buf.count(b"\n", start, end)


def _tail_start(buf: bytes | bytearray, n: int) -> int:
    """Where the text that holds the last ``TAIL_LINES`` lines of ``buf[:n]`` starts: after the newline
    that ends the line before them, within the last 64 KiB. Every newline ends a line of ``splitlines``
    (which also splits at other breaks), so the lines after it hold those lines; decoding every chunk's
    whole last 64 KiB for them cost more than its lines' search."""
    floor = max(0, n - 64 * 1024)
    at = n - 1  # the newline that ends the block is not a break before a line
    for _ in range(TAIL_LINES):
        at = buf.rfind(b"\n", floor, at) if at > floor else -1
        if at < 0:
            return floor
    return at + 1


def _seen(
    raw: bytes | bytearray, start: int, occ: mpscan.Occurrences | None, table: list[tuple[int, int]] | None
) -> _Seen | bytes | bytearray | None:
    """What the engine saw of the keywords in the line ``raw`` at ``start`` (see ``feed_line``): no object
    is made for the usual line without any (objects made per line cost the garbage collector too)."""
    if occ is None or table is None:
        return None
    found = occ.get(start)
    return _Seen(raw, start, found, table) if found else raw


def _process(sc: _Scanner, number: int, raw: bytes | bytearray, seen: _Seen | bytes | bytearray | None = None) -> None:
    if sc.sublines and raw[:1] == _SUB_MARK:  # a record's further line: read without its mark
        raw, seen = raw[1:], _behind(seen, 1)
    if len(raw) > MAX_LINE:
        raw = raw[:MAX_LINE]
        sc.info.truncated_lines += 1
        if isinstance(seen, _Seen):
            seen.line = raw
        elif seen is not None:
            seen = raw
    text = _visible(raw.decode("utf-8", "replace"))
    if sc.envelope is not None:
        carried = len(text)
        text, sc.stamp, sc.label = sc.envelope.open(text)
        if carried != len(text):  # the keywords the engine saw are where they were in the line, behind the envelope
            seen = _behind(seen, carried - len(text))
    if not sc.escaped and "&" in text and _HTML_ENTITY.search(text):
        text = html.unescape(text)
    if not text or text.isspace():
        if sc.dump is not None:
            sc.dump = None
        return
    sc.feed_line(number, text, seen)
    if not sc.dump_line:
        sc.generic(number, text)


def _behind(seen: _Seen | bytes | bytearray | None, cut: int) -> _Seen | bytes | bytearray | None:
    """``seen`` for the line without its first ``cut`` bytes (an envelope's ASCII: as many bytes as characters;
    where the text differs from the bytes anyway, ``line_hits`` finds the keywords itself)."""
    if isinstance(seen, _Seen):
        seen.line, seen.start = seen.line[cut:], seen.start + cut
        return seen
    return None if seen is None else seen[cut:]


def count_progress(result: ScanResult, data: bytes | bytearray, n: int | None = None) -> None:
    """Count the signs of work done in ``data[:n]`` (called per chunk; a counter's first value is kept
    across chunks, so ``step 1`` in one chunk and ``step 2`` in the next is progress)."""
    if result.progress >= PROGRESS_ENOUGH:
        return
    for m in _PROGRESS.finditer(data, 0, len(data) if n is None else n):
        word = m["counter"]
        if word is not None:
            key = bytes(word.lower())
            first = result.counters.setdefault(key, bytes(m["n"]))
            if first == m["n"]:
                continue  # the same number again (a header, a setting, or one step printed twice)
        result.progress += 1
        if result.progress >= PROGRESS_ENOUGH:
            return


def scan_text(text: str, source: str, ruleset: RuleSet, result: ScanResult) -> None:
    scan_stream(io.BytesIO(text.encode("utf-8", "replace")), source, ruleset, result)


def scan_file(path: str, source: str, ruleset: RuleSet, result: ScanResult, *, deadline: float | None = None) -> None:
    """Scan a log file (a compressed one as its text: ``logread.open_log``). A big one has its candidate lines
    found by a multi-pattern engine (``mpscan``: Hyperscan, else RE2), a small one, or any when neither is
    installed, by Python's re: same findings."""
    with open_log(path) as f:
        scan_stream(f, source, ruleset, result, deadline=deadline)


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
