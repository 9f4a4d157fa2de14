"""hearing"""

from audio.hearing.deferred_imports import DEFERRED, defer

for _name in DEFERRED:
    defer(_name)
