"""The demo Hermes home: ``memdeck --demo``, the TUI's tests and snapshots, benches.

One module per concept: ``story`` the content, ``plan`` the deterministic plan from a seed and a
clock, ``build`` the writer (:func:`build_demo_home`), ``location`` where ``--demo`` builds
(:func:`demo_home_dir`, :func:`fresh_demo_home`), ``big`` benchmark homes (:func:`build_big_home`).

The package re-exports its public API (the names the CLI, the TUI, the tests and the benches use):
``build_demo_home``, ``build_big_home``, ``demo_home_dir``, ``fresh_demo_home``, ``demo_plan``,
``DemoPlan``, ``DEMO_NOW``, ``DEMO_SEED``.
"""

from .big import build_big_home
from .build import build_demo_home
from .location import demo_home_dir, fresh_demo_home
from .plan import DemoPlan, demo_plan
from .story import DEMO_NOW, DEMO_SEED

__all__ = ["DEMO_NOW", "DEMO_SEED", "DemoPlan", "build_big_home", "build_demo_home", "demo_home_dir", "demo_plan",
           "fresh_demo_home"]
