"""Never a traceback in the TUI: UI callbacks that fail become a toast or a banner."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def toast_on_error(fn: F) -> F:
    """Wrap an action or event handler: an exception becomes an error toast (and is logged)."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the point of this wrapper: an action's exception becomes a toast
            app = getattr(self, "app", self)
            try:
                app.log.error(f"{fn.__name__} failed: {exc!r}")
                app.notify(f"{fn.__name__.removeprefix('action_').replace('_', ' ')}: {type(exc).__name__}: {exc}",
                           severity="error", markup=False)
            except Exception:  # noqa: BLE001 - the app is closing: nothing to toast into
                pass
            return None

    return wrapper  # type: ignore[return-value]
