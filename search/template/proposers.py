"""Hyperparameter proposers without an LLM: scrambled Sobol points, or a scipy RBF surrogate.

Both are deterministic given the run seed and the settings already tried, so a resumed run
proposes exactly what the killed one would have. A setting already tried (or in flight) is
never proposed again; when a stage has tried every setting the pool can name, the stage closes
("candidate pool exhausted", search/template/search.py) and the run goes on.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
from scipy.interpolate import RBFInterpolator
from scipy.stats import qmc

from search.template.spec import Param

POOL_SIZE = 1024  # candidate points at first; a power of two keeps Sobol balanced
MAX_POOL = 2**16  # the pool doubles while a stage has tried every point in it, up to this
MIN_FIT_POINTS = 4  # below this a surrogate is noise: fall back to space filling
EXPLORATION = 0.3  # weight of distance-to-tried against predicted (standardized) metric


# Decoded pools by (space, seed): a template forest has a proposer per tree and stage, all on
# the same space. A longer pool extends a shorter one: Sobol points are a sequence.
_DECODED: dict[tuple[str, int], list[tuple[dict[str, Any], str]]] = {}


@functools.lru_cache(maxsize=64)
def _sobol(dim: int, seed: int, size: int) -> np.ndarray:
    pool = qmc.Sobol(d=dim, scramble=True, seed=seed).random(size)
    pool.flags.writeable = False  # shared by every proposer with this dimension and seed
    return pool


def canonical(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


class Tried:
    """The settings a stage has tried (its nodes in flight included), kept incrementally: the
    stage's nodes arrive oldest first, so only those after the last call are read. A discard
    takes a node out of the middle of the list, and the set is then rebuilt (rare: speculation
    that lost its premise). Rebuilding it on every call made a 2,000-node stage's proposals
    grow with the stage (2.5 to 15.7 ms a completion)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.keys: set[str] = set()
        self.count = 0
        self.last: str | None = None  # id of the last node read
        self.rebuilt = 0  # how many times the set was rebuilt (since a discard)

    def key(self, params: dict[str, Any]) -> str:
        return canonical({k: params[k] for k in self.names})

    def update(self, nodes: Sequence[Any]) -> set[str]:
        """`nodes`: the stage's nodes (objects with `id` and `params`), oldest first."""
        n = self.count
        if n and (len(nodes) < n or nodes[n - 1].id != self.last):
            self.keys, n = set(), 0
            self.rebuilt += 1
        self.keys.update(self.key(node.params) for node in nodes[n:])
        self.count = len(nodes)
        self.last = nodes[-1].id if nodes else None
        return self.keys


class Proposer:
    def __init__(self, space: dict[str, Param], seed: int, kind: str = "model") -> None:
        self.space = space
        self.names = sorted(space)
        self.kind = kind
        self.seed = seed
        self.size = POOL_SIZE
        self._key = (
            json.dumps({n: space[n].model_dump(mode="json") for n in self.names}, sort_keys=True),
            seed,
        )
        self._cursor = 0  # pool points before it are all tried (reset when the tried set shrinks)
        self._cursor_of: set[str] | None = None
        self._full = False  # the last doubling named no new setting: the space is all in the pool

    @property
    def pool(self) -> np.ndarray:
        return _sobol(max(len(self.names), 1), self.seed, self.size)

    @property
    def decoded(self) -> list[tuple[dict[str, Any], str]]:
        """The pool as settings with their keys, decoded once per space and seed."""
        have = _DECODED.setdefault(self._key, [])
        if len(have) < self.size:
            have += [(p, canonical(p)) for p in map(self._decode, self.pool[len(have) :])]
        return have[: self.size]

    def _decode(self, u: Sequence[float]) -> dict[str, Any]:
        return {n: self.space[n].from_unit(float(x)) for n, x in zip(self.names, u)}

    def _encode(self, params: dict[str, Any]) -> np.ndarray:
        return np.array([self.space[n].to_unit(params[n]) for n in self.names])

    def untried(
        self,
        seen: set[str],
        n: int,
        extra: AbstractSet[str] = frozenset(),
        *,
        scan_all: bool = False,
    ) -> list[dict[str, Any]]:
        """Up to `n` pool settings in neither `seen` (a set that only grows, as `Tried` keeps it)
        nor `extra`, in pool order (all of them if `scan_all`); the
        pool doubles, up to MAX_POOL, while doubling still brings settings not tried. An empty
        answer means the space is exhausted: every setting the pool can name was tried."""
        if seen is not self._cursor_of:  # another stage's set, or one rebuilt: start again
            self._cursor, self._cursor_of = 0, seen
        while True:
            pool = self.decoded
            out: list[dict[str, Any]] = []
            keys: set[str] = set()  # a set: a list made each call quadratic in the pool size
            for i in range(self._cursor, len(pool)):
                p, key = pool[i]
                if key in seen or key in extra or key in keys:
                    if not out and key in seen:
                        self._cursor = i + 1  # settings only join `seen` until it is rebuilt
                    continue
                out.append(dict(p))  # callers own what they get; the pool stays as decoded
                keys.add(key)
                if not scan_all and len(out) >= n:
                    return out
            if out or not self._grow():
                return out

    def _grow(self) -> bool:
        """Double the pool; False at MAX_POOL or when the new points name no new setting (a
        space of a few choices has fewer settings than points)."""
        if self.size >= MAX_POOL or self._full:
            return False
        before = {key for _, key in self.decoded}
        self.size *= 2
        self._full = all(key in before for _, key in self.decoded[self.size // 2 :])
        return not self._full

    def propose(
        self,
        n: int,
        tried: Sequence[dict[str, Any]],
        scored: Sequence[tuple[dict[str, Any], float]],
        seen: set[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Up to `n` new settings. `tried` includes in-flight ones, unless `seen` holds their keys
        (as `Tried` keeps them: then `tried` need only hold the others, and for the surrogate
        the settings to keep away from); `scored` holds (setting, metric oriented so that
        larger is better) for finished good nodes."""
        if not self.names:
            return []
        extra = {canonical({k: t[k] for k in self.names}) for t in tried}
        in_order = (
            self.kind == "sobol" or len(scored) < MIN_FIT_POINTS
        )  # Sobol order is already space filling
        if seen is None:
            seen, extra = extra, set()
        candidates = self.untried(seen, n, extra, scan_all=not in_order)
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
