"""Hyperparameter proposers without an LLM: scrambled Sobol points, or a scipy RBF surrogate.

Both are deterministic given the run seed and the settings already tried, so a resumed run
proposes exactly what the killed one would have. A setting already tried (or in flight) is
never proposed again.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.interpolate import RBFInterpolator
from scipy.stats import qmc

from search.template.spec import Param

POOL_SIZE = 1024  # candidate points; a power of two keeps Sobol balanced
MIN_FIT_POINTS = 4  # below this a surrogate is noise: fall back to space filling
EXPLORATION = 0.3  # weight of distance-to-tried against predicted (standardized) metric


_DECODED: dict[tuple[str, int], list[tuple[dict[str, Any], str]]] = {}


@functools.lru_cache(maxsize=64)
def _sobol(dim: int, seed: int) -> np.ndarray:
    pool = qmc.Sobol(d=dim, scramble=True, seed=seed).random(POOL_SIZE)
    pool.flags.writeable = False  # shared by every proposer with this dimension and seed
    return pool


def canonical(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


class Proposer:
    def __init__(self, space: dict[str, Param], seed: int, kind: str = "model") -> None:
        self.space = space
        self.names = sorted(space)
        self.kind = kind
        self.pool = _sobol(max(len(self.names), 1), seed)
        self._key = (
            json.dumps({n: space[n].model_dump(mode="json") for n in self.names}, sort_keys=True),
            seed,
        )

    @property
    def decoded(self) -> list[tuple[dict[str, Any], str]]:
        """The pool as settings with their keys, decoded once per space and seed (a template
        forest has a proposer per tree and stage, all on the same space)."""
        if self._key not in _DECODED:
            _DECODED[self._key] = [(p, canonical(p)) for p in map(self._decode, self.pool)]
        return _DECODED[self._key]

    def _decode(self, u: Sequence[float]) -> dict[str, Any]:
        return {n: self.space[n].from_unit(float(x)) for n, x in zip(self.names, u)}

    def _encode(self, params: dict[str, Any]) -> np.ndarray:
        return np.array([self.space[n].to_unit(params[n]) for n in self.names])

    def propose(
        self,
        n: int,
        tried: Sequence[dict[str, Any]],
        scored: Sequence[tuple[dict[str, Any], float]],
    ) -> list[dict[str, Any]]:
        """Up to `n` new settings. `tried` includes in-flight ones; `scored` holds (setting,
        metric oriented so that larger is better) for finished good nodes."""
        if not self.names:
            return []
        seen = {canonical({k: t[k] for k in self.names}) for t in tried}
        in_order = (
            self.kind == "sobol" or len(scored) < MIN_FIT_POINTS
        )  # Sobol order is already space filling
        candidates: list[dict[str, Any]] = []
        keys: set[str] = set()  # a set: a list made each call quadratic in the pool size
        for p, key in self.decoded:
            if key not in seen and key not in keys:
                candidates.append(dict(p))  # callers own what they get; the pool stays as decoded
                keys.add(key)
                if in_order and len(candidates) >= n:
                    break
        if not candidates:
            return []
        if in_order:
            return candidates[:n]
        return self._by_surrogate(n, candidates, tried, scored)

    def _by_surrogate(
        self,
        n: int,
        candidates: list[dict[str, Any]],
        tried: Sequence[dict[str, Any]],
        scored: Sequence[tuple[dict[str, Any], float]],
    ) -> list[dict[str, Any]]:
        x = np.array([self._encode(p) for p, _ in scored])
        y = np.array([v for _, v in scored], dtype=float)
        y = (y - y.mean()) / (y.std() or 1.0)
        model = RBFInterpolator(x, y, kernel="thin_plate_spline", smoothing=1e-3, degree=1)
        cx = np.array([self._encode(p) for p in candidates])
        predicted = model(cx)
        anchors = [self._encode({k: t[k] for k in self.names}) for t in tried]
        chosen: list[dict[str, Any]] = []
        available = np.ones(len(candidates), dtype=bool)
        for _ in range(min(n, len(candidates))):
            # Distance to everything tried or already chosen: batch proposals spread out.
            dist = np.min(np.linalg.norm(cx[:, None, :] - np.array(anchors)[None, :, :], axis=2), axis=1)
            score = np.where(available, predicted + EXPLORATION * dist / np.sqrt(len(self.names)), -np.inf)
            i = int(np.argmax(score))
            chosen.append(candidates[i])
            available[i] = False
            anchors.append(cx[i])
        return chosen
