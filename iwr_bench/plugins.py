"""Everything a judge design needs, in one import (the public surface for design authors).

A design is a factory registered under a role and a name; the object it returns implements the
role's Protocol (for the judge, generator and metric roles: one ``async __call__``)::

    from iwr_bench.plugins import Grounding, GroundingRequest, element_label, register

    class FirstElement:
        name = "first"

        async def __call__(self, request: GroundingRequest) -> Grounding:
            els = request.observation.elements
            return Grounding(index=els[0].index if els else None, reason="first", grounder=self.name)

    @register("grounder", "first")
    def first() -> FirstElement:
        return FirstElement()

Roles: ``grounder`` (:class:`Grounder`), ``assertions`` (:class:`AssertionJudge`), ``rubric``
(:class:`RubricJudgeRole`), ``step`` (:class:`StepJudge`: performs and judges a whole action with
the page's tools, in place of a grounder and an assertion judge), ``replay`` (:class:`ReplayPolicy`:
how a Scroll or Press is performed and counted), ``generator`` (:class:`Generator`) and ``metric``
(:class:`PairMetric`). Capabilities a role's Protocol declares with a default
(``wants_screenshot`` of a grounder, ``text_from_grounder`` and ``unsure_verdict_passes`` of a
replay policy) may be left out by a design; :func:`capability` reads them.
The ``backend`` role (:class:`StageBackend`) says where the replay and metric stages run; its
product is not called, but it must have every member of the Protocol. A run picks it with
``[backend] kind`` or ``--backend`` and gives it ``[backend] options``; a factory that declares
``config`` also receives the run's :class:`~iwr_bench.engine.config.RunConfig`. The built-in
``in-process`` backend (:class:`~iwr_bench.engine.backends.inprocess.InProcessBackend`) is a
starting point to wrap or copy.
A step judge and a replay policy get the page's tools as a :class:`PageToolsProtocol` (a
:class:`PageTools` in process, a proxy with the same methods on the Ray backend): type them so.
Factory parameters are the design's options (``[judge.grounder] options = {...}`` in a run file);
a factory that declares ``judge_model``, ``votes`` or ``retries`` receives the run's judge model
(a pydantic-ai ``Model`` whose answers the run keeps) and settings (:data:`CONTEXT_PARAMETERS`
lists what the engine can give).

A backend, in short::

    from iwr_bench.plugins import register
    from iwr_bench.engine.backends.inprocess import InProcessBackend

    class Logged(InProcessBackend):
        name = "logged"

        async def replay(self, executor, task, page, evidence):
            print("replaying task", task.id)
            return await super().replay(executor, task, page, evidence)

    @register("backend", "logged")
    def logged() -> Logged:
        return Logged()

and a run picks it with ``--plugin logged.py --backend logged``.

The ``display`` role (:class:`Display`) shows a run while it runs: it is called with every event
(:data:`Event`; an agent's events arrive in one envelope, :class:`FromAgent`) and its ``drive``
runs the engine to its end. A display that only listens subclasses :class:`EventDisplay`; a run
picks it with ``--display NAME``.

Make it usable by ``pip install`` (an ``iwr_bench.plugins`` entry point naming the module), by a
run file's ``plugins = ["module", "path/to/file.py"]``, or by ``--plugin``; ``iwr judges list``
shows it. This module only re-exports: the classes live where they always did.

Designs that use torch vision models (EasyOCR, open_clip, timm, torchvision itself) import
torchvision through :func:`import_torchvision` first: beside a CPU build of torch, PyPI's
torchvision fails to import on its compiled operators, and this helper makes it import (on a
matching CUDA build it is a plain import). A plugin module that fails to import for that reason is
imported again once the helper has run, so module-level imports work too.
"""

from __future__ import annotations

from iwr_bench._torch import import_torchvision
from iwr_bench.agents.generation.protocol import Generator
from iwr_bench.agents.generation.records import GenerationResult
from iwr_bench.agents.grounding import (
    Candidate,
    Grounder,
    Grounding,
    GroundingRequest,
    element_kind,
    element_label,
    is_editable,
    split_quoted,
)
from iwr_bench.agents.judge.records import (
    AssertionJudge,
    AssertionRequest,
    AssertionVerdict,
    StepBudget,
    Verdict,
)
from iwr_bench.agents.judge.replay import Performed, ReplayPolicy
from iwr_bench.agents.judge.rubric import RubricJudgeRole, RubricResult
from iwr_bench.agents.judge.step import StepJudge, StepOutcome, StepRequest
from iwr_bench.dataset.layout import Task
from iwr_bench.dataset.models import ActionType
from iwr_bench.engine.backends.base import ExecutorFactory, FreeSlots, StageBackend, WorkerLost
from iwr_bench.engine.events import Event, FromAgent
from iwr_bench.engine.progress import Display, EventDisplay
from iwr_bench.errors import UserError
from iwr_bench.metrics.pair import PairMetric
from iwr_bench.registry import (
    CONTEXT_PARAMETERS,
    ENTRY_POINT_GROUP,
    Spec,
    capability,
    create,
    names,
    register,
)
from iwr_bench.tools.models import BoundingBox, Element, Observation, TextSnapshot
from iwr_bench.tools.surface import PageTabProtocol, PageToolsProtocol
from iwr_bench.tools.tools import PageTools

__all__ = [
    "CONTEXT_PARAMETERS",
    "ENTRY_POINT_GROUP",
    "ActionType",
    "AssertionJudge",
    "AssertionRequest",
    "AssertionVerdict",
    "BoundingBox",
    "Candidate",
    "Display",
    "Element",
    "Event",
    "EventDisplay",
    "ExecutorFactory",
    "FreeSlots",
    "FromAgent",
    "GenerationResult",
    "Generator",
    "Grounder",
    "Grounding",
    "GroundingRequest",
    "Observation",
    "PageTabProtocol",
    "PageTools",
    "PageToolsProtocol",
    "PairMetric",
    "Performed",
    "ReplayPolicy",
    "RubricJudgeRole",
    "RubricResult",
    "Spec",
    "StageBackend",
    "StepBudget",
    "StepJudge",
    "StepOutcome",
    "StepRequest",
    "Task",
    "TextSnapshot",
    "UserError",
    "Verdict",
    "WorkerLost",
    "capability",
    "create",
    "element_kind",
    "element_label",
    "import_torchvision",
    "is_editable",
    "names",
    "register",
    "split_quoted",
]
