"""Log timestamps to epoch seconds, on the node that wrote them.

Why on the node: glog (``E1130 13:45:35.944000``), Python logging (``2026-11-30 13:45:35,123``), torchrun's
failure summary (``2026-11-30_13:45:35``) and syslog (``Nov 30 13:45:35``) print the host's local time,
most without a year or a zone. Only the node knows its zone and the year its run started in, so the node
snapshot stores epoch seconds and the merge never guesses a zone. Every function returns None for text
it cannot read; none raises.
"""

from __future__ import annotations

import calendar
import re
import time
from datetime import datetime

_GLOG = re.compile(r"\b[EWIF](?P<mo>\d\d)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:\.\d+)?)\b")
_ISO = re.compile(
    r"\b(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[ T_](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:[.,]\d+)?)"
    r"(?P<z>Z|[+-]\d\d:?\d\d)?"
)
_SYSLOG = re.compile(
    r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\b"
)
_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}


def _local_epoch(y: int, mo: int, d: int, h: int, mi: int, s: float) -> float | None:
    """Epoch of a local wall-clock time (the zone and DST rules of this host)."""
    try:
        whole = int(s)
        base = time.mktime((y, mo, d, h, mi, whole, 0, 0, -1))
    except (OverflowError, ValueError):
        return None
    return base + (s - whole)


def _near_year(mo: int, d: int, h: int, mi: int, s: float, ref: float) -> float | None:
    """A year-less local time: the year that puts it closest to ``ref`` (a run that spans New Year)."""
    year = time.localtime(ref).tm_year
    best: float | None = None
    for y in (year - 1, year, year + 1):
        t = _local_epoch(y, mo, d, h, mi, s)
        if t is not None and (best is None or abs(t - ref) < abs(best - ref)):
            best = t
    return best


def parse_line_time(text: str, ref: float) -> float | None:
    """Epoch seconds of the first timestamp in ``text`` (glog, ISO/Python logging, torchrun summary,
    syslog); ``ref`` (a time during the run) supplies the year where the format has none."""
    m = _ISO.search(text)
    if m:
        sec = float(m["s"].replace(",", "."))
        if m["z"]:
            z = m["z"]
            try:
                dt = datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(sec))
            except ValueError:
                return None
            off = 0 if z == "Z" else (1 if z[0] == "+" else -1) * (int(z[1:3]) * 3600 + int(z[-2:]) * 60)
            return calendar.timegm(dt.timetuple()) - off + (sec - int(sec))
        return _local_epoch(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), sec)
    m = _GLOG.search(text)
    if m:
        return _near_year(int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), float(m["s"]), ref)
    m = _SYSLOG.match(text)
    if m:
        return _near_year(_MONTHS[m["mon"]], int(m["d"]), int(m["h"]), int(m["mi"]), float(m["s"]), ref)
    return None


def has_time(text: str) -> bool:
    """Cheap pre-check: does the line carry a timestamp this module reads?"""
    return bool(_ISO.search(text) or _GLOG.search(text) or _SYSLOG.match(text))
