"""Graphs as 0/1 adjacency matrices (lists of lists): seeded draws, reachability, validity checks
and the scores Auto-Bench reports (reachability similarity, edge precision/recall/F1)."""

from __future__ import annotations

import random
from typing import Literal

Matrix = list[list[int]]
Kind = Literal["directed", "undirected"]


def empty(n: int) -> Matrix:
    return [[0] * n for _ in range(n)]


def random_dag(n: int, edge_prob: float, rng: random.Random) -> Matrix:
    """A DAG over a hidden random topological order: each forward pair is an edge with `edge_prob`."""
    order = list(range(n))
    rng.shuffle(order)
    adj = empty(n)
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < edge_prob:
                adj[order[a]][order[b]] = 1
    return adj


def random_undirected(n: int, edge_prob: float, rng: random.Random) -> Matrix:
    adj = empty(n)
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < edge_prob:
                adj[a][b] = adj[b][a] = 1
    return adj


def reachability(adj: Matrix) -> Matrix:
    """R[i][j] = 1 when j is reachable from i by a path of one edge or more (i != j)."""
    return [reachability_row(adj, i) for i in range(len(adj))]


def descendants(adj: Matrix, node: int) -> set[int]:
    return {j for j, r in enumerate(reachability_row(adj, node)) if r}


def reachability_row(adj: Matrix, node: int) -> list[int]:
    """Nodes reachable from `node`; the node itself only through a cycle (never in a valid DAG)."""
    n = len(adj)
    row, stack = [0] * n, [j for j in range(n) if adj[node][j]]
    while stack:
        j = stack.pop()
        if row[j]:
            continue
        row[j] = 1
        stack.extend(k for k in range(n) if adj[j][k])
    return row


def neighbours(adj: Matrix, node: int) -> set[int]:
    return {j for j, a in enumerate(adj[node]) if a and j != node}


def is_acyclic(adj: Matrix) -> bool:
    return not any(reachability_row(adj, i)[i] for i in range(len(adj)))


def invalid_reason(adj: object, n: int, kind: Kind) -> str:
    """'' for a usable hypothesis; otherwise what is wrong with it, for the agent and the trace."""
    if not isinstance(adj, list) or len(adj) != n:
        return f"expected {n} rows"
    for i, row in enumerate(adj):
        if not isinstance(row, list) or len(row) != n:
            return f"row {i}: expected {n} entries"
        if any(v not in (0, 1) or isinstance(v, bool) for v in row):
            return f"row {i}: entries must be 0 or 1"
    if any(adj[i][i] for i in range(n)):
        return "self-loops on the diagonal"
    if kind == "undirected":
        bad = next(((i, j) for i in range(n) for j in range(n) if adj[i][j] != adj[j][i]), None)
        if bad:
            return f"not symmetric at ({bad[0]}, {bad[1]})"
    elif not is_acyclic(adj):
        return "contains a directed cycle"
    return ""


def off_diagonal(m: Matrix) -> list[int]:
    return [m[i][j] for i in range(len(m)) for j in range(len(m)) if i != j]


def similarity(a: Matrix, b: Matrix) -> float:
    """Share of off-diagonal entries on which two matrices agree (1.0 for n = 1)."""
    xs, ys = off_diagonal(a), off_diagonal(b)
    return 1.0 if not xs else sum(x == y for x, y in zip(xs, ys, strict=True)) / len(xs)


def edges(adj: Matrix, kind: Kind) -> set[tuple[int, int]]:
    n = len(adj)
    return {
        (i, j) for i in range(n) for j in range(n) if adj[i][j] and i != j and (kind == "directed" or i < j)
    }


def edge_scores(truth: Matrix, guess: Matrix, kind: Kind) -> tuple[float, float, float]:
    """(precision, recall, F1) of the guessed edges; an empty truth guessed empty scores 1."""
    t, g = edges(truth, kind), edges(guess, kind)
    hit = len(t & g)
    precision = hit / len(g) if g else float(not t)
    recall = hit / len(t) if t else float(not g)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def symmetrize(adj: Matrix) -> Matrix:
    n = len(adj)
    return [[int(bool(adj[i][j] or adj[j][i])) if i != j else 0 for j in range(n)] for i in range(n)]
