"""The ``[backend]`` section of a run file: where the replay and metric stages run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class BackendSettings(BaseModel):
    """Where the stages that move (replay, metrics) run; everything else stays on the driver."""

    model_config = ConfigDict(extra="forbid")

    kind: str = "in-process"
    """The backend design: ``in-process`` (default: one process, no Ray needed), ``ray`` (replay and
    metric workers as Ray actors), or a name a plugin registered under the ``backend`` role. An
    unknown name fails when the run is set up, in one line naming the known ones."""
    options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Options of a plugin's backend (its factory's parameters); the built-in ones take none (Ray's
    settings are the fields below)."""
    address: str = ""
    """Ray only: the cluster to join (``HOST:PORT`` of ``ray start --head``, or ``auto``); empty: start
    a local Ray instance sized to this machine."""
    tries: int = Field(default=3, ge=1, le=10)
    """Ray only: how many times a pair's replay or metric batch is tried when the worker running it
    dies; after the last try the pair fails as ``worker_lost``."""
    replay_cpus: float = Field(default=0.5, gt=0, le=64)
    """Ray only: CPUs each replay worker (one browser page) claims from the cluster."""
    ready_timeout_s: float = Field(default=180.0, gt=0)
    """Ray only: how long to wait for the workers to start (a cluster without room for them fails
    after this, in one line)."""
