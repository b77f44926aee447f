"""pytest-faildiag: evidence-backed diagnoses of failed or hung test and training runs.

The public API is the engine (``diagnose``, ``write_snapshot``, renderers) and the model types; the
pytest plugin, the run wrapper and the integrations are built on it.
"""

from .model import Diagnosis, Evidence, FailurePoint, FailureProfile, RootCause, ValidationCheck
from .parse.logread import InputError

__version__ = "0.1.0"

__all__ = [
    "Diagnosis",
    "Evidence",
    "FailurePoint",
    "FailureProfile",
    "RootCause",
    "ValidationCheck",
    "InputError",
    "diagnose",
    "write_snapshot",
    "render_text",
    "render_markdown",
    "__version__",
]


def __getattr__(name: str):  # lazy: importing the package (e.g. as a pytest plugin) stays cheap
    if name in {"diagnose", "write_snapshot", "render_text", "render_markdown"}:
        from . import engine

        return getattr(engine, name)
    raise AttributeError(name)
