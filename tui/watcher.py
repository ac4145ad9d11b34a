"""The live watcher, re-exported from :mod:`memdeck.core.watcher` (the headless ``memdeck watch``
uses the same path classification and inotify loop)."""

from memdeck.core.watcher import (  # noqa: F401
    DEBOUNCE_MS,
    HOME_NAMES,
    SOURCES,
    STEP_MS,
    WATCHED_DIRS,
    is_noise,
    source_of,
    watch_home,
)
