"""Modules a dependency imports at its top but the runtime never uses, loaded only when touched.

faster-whisper imports PyAV (``av``: FFmpeg's libraries, ~16 MiB resident) for ``decode_audio``,
which reads audio files; the runtime hands it arrays and never calls it. ``defer("av")`` puts a
stand-in in ``sys.modules``: ``import av`` costs nothing, and the first attribute read from it (a
tool decoding a file) imports the real package and hands that attribute on, so nothing behaves
differently. (``importlib.util.LazyLoader`` does not do for this: the import statement itself reads
the module's ``__spec__``, which loads it.) Code that walks ``sys.modules`` (``inspect.getmodule``,
which pydantic calls) finds ``__file__`` and the spec on the stand-in. ``audio.hearing`` calls it before anything imports
faster-whisper.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

DEFERRED = ("av",)
"""What ``audio.hearing`` defers."""


class DeferredModule(ModuleType):
    """Stands for a module not imported yet; the first attribute it lacks imports the real one."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(load(self.__name__), attr)


def defer(name: str) -> ModuleType | None:
    """Make ``import name`` cost nothing until the module is used (if it is installed and not
    imported yet); what ``sys.modules`` holds for it, or None when it is not installed."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    stand_in = DeferredModule(name)
    # What code that walks sys.modules reads (inspect.getmodule: ``__file__``) without loading it;
    # no ``__path__``: importing a submodule loads the real package first.
    stand_in.__spec__, stand_in.__loader__ = spec, spec.loader
    stand_in.__file__, stand_in.__package__ = spec.origin, spec.parent
    sys.modules[name] = stand_in
    return stand_in


def load(name: str) -> ModuleType:
    """The real module (imported now if only its stand-in was)."""
    module = sys.modules.get(name)
    if module is not None and not isinstance(module, DeferredModule):
        return module
    stand_in = sys.modules.pop(name, None)
    try:
        return importlib.import_module(name)
    except BaseException:
        if stand_in is not None:
            sys.modules[name] = stand_in
        raise


def is_loaded(name: str) -> bool:
    """Whether the real module is imported (not only deferred)."""
    module = sys.modules.get(name)
    return module is not None and not isinstance(module, DeferredModule)
