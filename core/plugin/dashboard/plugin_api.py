"""memdeck's "Memory" tab: the API Hermes' web dashboard mounts at /api/plugins/memdeck/.

Written by `memdeck plugin install` into $HERMES_HOME/plugins/memdeck/dashboard/; `memdeck plugin
uninstall` removes it. Do not edit: the next install replaces it.

Hermes' web server imports this file (hermes_cli/web_server.py `_mount_plugin_api_routes`) and
mounts `router` behind its own authentication: every /api/ route but a short public list needs
the dashboard's session token (the X-Hermes-Session-Token header its SPA sends) on a loopback
bind, or the login session on any other bind. This router adds no way in of its own; each route
also asks Hermes' own check (`_require_token`) again. Every answer and every write is a function of
memdeck's core (`_core/plugin/dashboard_api.py`, vendored beside this directory): the same locked,
journaled writes as `memdeck pending approve|reject|edit` and `memdeck revert`. A refusal is 409
(404 when the record or change does not exist, 403 when the tab is read-only) with the reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel

#: $HERMES_HOME/plugins/memdeck (this file is in its dashboard/ directory)
PLUGIN_DIR = Path(__file__).resolve().parent.parent
#: the home the plugin is installed in: the one home this tab shows and writes
HOME_DIR = PLUGIN_DIR.parent.parent
_CORE_NAME = "hermes_dashboard_plugin_memdeck_core"


def _core(module: str) -> Any:
    """A module of the vendored core (``plugins/memdeck/_core``), imported once as package
    ``hermes_dashboard_plugin_memdeck_core`` (its modules import each other relatively)."""
    if _CORE_NAME not in sys.modules:
        init = PLUGIN_DIR / "_core" / "__init__.py"
        spec = importlib.util.spec_from_file_location(_CORE_NAME, init, submodule_search_locations=[str(init.parent)])
        if spec is None or spec.loader is None:
            raise ImportError(f"memdeck's core is missing at {init}; run `memdeck plugin install`")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_CORE_NAME] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(_CORE_NAME, None)
            raise
    return importlib.import_module(f"{_CORE_NAME}.{module}")


def _home() -> Any:
    return _core("home").HermesHome(HOME_DIR)


def _authenticated(request: Request) -> None:
    """Hermes' own check of a sensitive endpoint (its middleware ran it already): 401 otherwise."""
    try:
        from hermes_cli.web_server import _require_token
    except ImportError:  # a Hermes without it: its auth middleware alone guards /api/plugins/
        return
    _require_token(request)


router = APIRouter(dependencies=[Depends(_authenticated)])


def _user(request: Request) -> Any:
    return getattr(request.state, "session", None)


def _answer(call: Any) -> dict[str, Any]:
    refused = _core("errors").Refused
    try:
        return call()
    except refused as exc:
        status = 403 if exc.code == "read_only" else 404 if exc.code == "not_found" else 409
        raise HTTPException(status_code=status, detail={"refused": exc.reason, "code": exc.code}) from None


class EditBody(BaseModel):
    text: str
    op: int | None = None


@router.get("/state")
def state() -> dict[str, Any]:
    return _answer(lambda: _core("plugin.dashboard_api").tab_state(_home()))


@router.post("/pending/{pending_id}/approve")
def approve(pending_id: str, request: Request) -> dict[str, Any]:
    return _answer(lambda: _core("plugin.dashboard_api").approve(_home(), pending_id, _user(request)))


@router.post("/pending/{pending_id}/reject")
def reject(pending_id: str, request: Request) -> dict[str, Any]:
    return _answer(lambda: _core("plugin.dashboard_api").reject(_home(), pending_id, _user(request)))


@router.post("/pending/{pending_id}/edit")
def edit(pending_id: str, body: EditBody, request: Request) -> dict[str, Any]:
    return _answer(lambda: _core("plugin.dashboard_api").edit(_home(), pending_id, body.text, body.op, _user(request)))


@router.post("/changes/{change_id}/revert")
def revert(change_id: int, request: Request) -> dict[str, Any]:
    return _answer(lambda: _core("plugin.dashboard_api").revert(_home(), change_id, _user(request)))
