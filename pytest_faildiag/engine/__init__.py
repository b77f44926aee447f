"""The diagnosis engine: analyze → validate/rank → snapshot → report. No pytest import here."""

from ..fsio import atomic_write
from .api import collect, diagnose
from .report import render_markdown, render_text
from .snapshot import report_dict, write_snapshot

__all__ = ["collect", "diagnose", "render_markdown", "render_text", "report_dict", "write_snapshot", "atomic_write"]
