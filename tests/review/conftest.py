"""One compiled run directory (a clean and a defective paper) for the module; tests copy it."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.llm import LLM, LLMConfig, build_gateway
from engine.llm.providers.scripted import ScriptedProvider, ScriptFn
from tests.review.papers import make_run, scripted_reviewer


@pytest.fixture(scope="session")
def compiled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("latexmk") is None or shutil.which("pdfimages") is None:
        pytest.skip("needs latexmk and poppler-utils (make system-deps)")
    return make_run(tmp_path_factory.mktemp("review") / "run", {"good": False, "bad": True})


@pytest.fixture
def run_dir(compiled_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(compiled_run, copy)
    return copy


def scripted_config(price: float = 0.0, max_reasks: int = 2) -> LLMConfig:
    return LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {
                "toy": {"provider": "offline", "model": "toy-1", "price": {"input": price, "output": price}}
            },
            "roles": {"review": {"model": "toy", "max_tokens": 2048}},
            "max_reasks": max_reasks,
        }
    )


LLMFactory = Callable[..., tuple[LLM, ScriptedProvider]]


@pytest.fixture
def make_llm(tmp_path: Path) -> Iterator[LLMFactory]:
    gateways = []

    def make(
        fn: ScriptFn = scripted_reviewer,
        *,
        ledger_dir: Path | None = None,
        dollars: float | None = None,
        price: float = 0.0,
        delay_s: float = 0.0,
    ) -> tuple[LLM, ScriptedProvider]:
        provider = ScriptedProvider("offline", fn=fn, delay_s=delay_s)
        gateway = build_gateway(
            scripted_config(price),
            ledger_dir or tmp_path / "llm",
            dollars,
            {},
            providers={"offline": provider},
        )
        gateways.append(gateway)
        return gateway.client(), provider

    yield make
    for g in gateways:
        g.close()
