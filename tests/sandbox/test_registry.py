"""Providers by registered name: one defined here (or in another package, by entry point) is
chosen in a run config, its typed options checked as the config loads, and passes the
conformance suite like the built-ins (docs/sandbox.md, "Providers")."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from engine.errors import ConfigError
from sandbox import SandboxProvider, get_provider, provider_names, sandbox_provider
from sandbox import base as sandbox_base
from sandbox.base import Sandbox
from sandbox.conformance import run_all
from silva import lifecycle
from silva.config import load_config
from tests.helpers import make_config, make_template

OPENED: list[tuple[str, Path]] = []  # (label, workspace) of every sandbox the provider opened


class JournalingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, description="names this provider's sandboxes in OPENED")
    tmp_mb: int = Field(512, gt=0, description="handed to the local provider")


class JournalingProvider:
    """The local provider, noting each sandbox it opens."""

    name = "journaling"

    def __init__(self, **options: object) -> None:
        self.options = JournalingOptions.model_validate(options)
        self.inner = get_provider("local", tmp_mb=self.options.tmp_mb)

    def check(self) -> None:
        self.inner.check()

    def open(self, workspace: Path, *, gpu_ids: Sequence[int] = ()) -> Sandbox:
        OPENED.append((self.options.label, workspace))
        return self.inner.open(workspace, gpu_ids=gpu_ids)


@pytest.fixture
def journaling(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[SandboxProvider]]:
    # A copy of the registry: the provider is gone again after the test.
    monkeypatch.setattr(sandbox_base, "_REGISTRY", dict(sandbox_base._registry()))
    yield sandbox_provider("journaling", options=JournalingOptions)(JournalingProvider)
    OPENED.clear()


def config(tmp_path: Path, **sandbox: object) -> Path:
    return make_config(tmp_path, make_template(tmp_path / "tpl"), sandbox=sandbox, budgets={"max_nodes": 2})


def test_a_registered_provider_is_chosen_in_a_run_config(tmp_path: Path, journaling: object) -> None:
    cfg = load_config(config(tmp_path, provider="journaling", options={"label": "mine"}))
    assert "journaling" in provider_names()
    _, journal = lifecycle.create_run(cfg)
    outcome = lifecycle.execute(cfg, journal)
    assert outcome.budget == "max_nodes", outcome
    ran = {n.id for n in journal.nodes.values() if n.is_finished}
    assert len(ran) == 2 and {label for label, _ in OPENED} == {"mine"}
    assert {ws.parent.name for _, ws in OPENED} == ran  # each attempt's workspace, in its provider


def test_its_options_are_checked_as_the_config_loads(tmp_path: Path, journaling: object) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(config(tmp_path, provider="journaling", options={"label": "x", "flavour": 1}))
    lines = str(err.value).splitlines()
    assert lines[1:] == [
        "  sandbox.options: flavour: the journaling sandbox has no such option (its options: label, tmp_mb)"
    ]
    with pytest.raises(ConfigError, match=r"sandbox.options: label: Field required"):
        load_config(config(tmp_path, provider="journaling"))


def test_an_unregistered_provider_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown sandbox provider 'journaling'; available: docker, local"):
        load_config(config(tmp_path, provider="journaling", options={"label": "x"}))


@pytest.mark.slow
def test_the_conformance_suite_runs_on_a_registered_provider(tmp_path: Path, journaling: object) -> None:
    results = run_all("journaling", tmp_path, label="conformance")
    assert results and all(status == "ok" for status in results.values()), results
    assert len(OPENED) == len(results)


def test_another_package_registers_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An installed distribution, as pip leaves it: its metadata names the module to load.
    dist = tmp_path / "silva_extra-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: silva-extra\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[silva.sandbox_providers]\nextra = silva_extra_box\n")
    (tmp_path / "silva_extra_box.py").write_text(
        "from sandbox import sandbox_provider\n"
        "from sandbox.none import NoneProvider\n"
        "@sandbox_provider('extra')\n"
        "class Extra(NoneProvider):\n"
        "    name = 'extra'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sandbox_base, "_REGISTRY", dict(sandbox_base._registry()))
    monkeypatch.setattr(sandbox_base, "_loaded", False)  # entry points are read again
    monkeypatch.delitem(sys.modules, "silva_extra_box", raising=False)
    assert provider_names() == ["docker", "extra", "local", "none"]
    assert get_provider("extra").name == "extra"
