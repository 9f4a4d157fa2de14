"""``python -m audio.fetch_models``: the documented command that installs the pinned models
(the installer itself is ``audio.tools.fetch_models``)."""

from audio.tools.fetch_models import main

if __name__ == "__main__":
    raise SystemExit(main())
