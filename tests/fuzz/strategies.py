"""Hypothesis strategies for hostile input: YAML-able values near Silva's schemas, raw text."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Values of every type a person might put anywhere, with edge cases (huge, negative, NaN, unicode).
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        ["", "..", "/", "/etc/passwd", "../../x", "ray", "inprocess", "local", "none", "maximize", "x" * 5000]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def near(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings that use real field names (so validation goes deep) with any value, plus typos."""
    known = st.fixed_dictionaries({}, optional={k: st.one_of(v, values) for k, v in fields.items()})
    extra = st.dictionaries(st.text(min_size=1, max_size=12), values, max_size=2)
    return st.builds(lambda a, b: {**b, **a}, known, extra)


metric = near(
    {
        "name": st.text(max_size=10),
        "direction": st.sampled_from(["maximize", "minimize", "up"]),
        "primary": st.booleans(),
    }
)
run_config = near(
    {
        "name": st.text(max_size=12),
        "template": st.sampled_from(["tpl", "missing", "/etc"]),
        "idea": st.sampled_from(["idea.yaml", "missing.yaml"]),
        "ideas": st.lists(values, max_size=2),
        "output_dir": st.just("runs"),
        "seed": st.integers(),
        "replicates": st.integers(-2, 5),
        "stages": st.dictionaries(
            st.sampled_from(["preliminary", "hyperparameter", "agenda", "ablation", "x"]),
            near({"max_nodes": st.integers(-1, 5)}),
            max_size=3,
        ),
        "budgets": near(
            {
                "wall_clock_s": st.floats(),
                "node_timeout_s": st.floats(),
                "max_nodes": st.integers(),
                "dollars": st.floats(),
            }
        ),
        "executor": near(
            {"kind": st.sampled_from(["ray", "inprocess", "k8s"]), "max_in_flight": st.integers(-1, 9)}
        ),
        "resources": st.dictionaries(
            st.text(max_size=8),
            near({"num_cpus": st.floats(), "num_gpus": st.floats(), "memory_mb": st.integers()}),
            max_size=2,
        ),
        "sandbox": st.one_of(
            st.sampled_from(["local", "docker", "none", "bogus"]), near({"provider": st.text(max_size=8)})
        ),
        "llm": near({"providers": values, "models": values, "roles": values}),
    }
)
idea = near(
    {
        "name": st.text(max_size=12),
        "title": st.text(max_size=40),
        "hypothesis": st.text(max_size=80),
        "experiments": st.lists(st.text(max_size=20), max_size=3),
        "risks": st.lists(st.text(max_size=20), max_size=2),
        "metrics": st.lists(metric, max_size=3),
        "datasets": st.lists(st.sampled_from(["d.csv", "/etc/passwd", "../x"]), max_size=2),
    }
)
template = near(
    {
        "name": st.text(max_size=12),
        "command": st.lists(st.sampled_from(["{python}", "experiment.py", ""]), max_size=3),
        "metrics": st.lists(metric, max_size=3),
        "hyperparameters": st.dictionaries(
            st.text(max_size=6),
            near(
                {
                    "type": st.sampled_from(["float", "int", "choice", "log"]),
                    "low": st.floats(),
                    "high": st.floats(),
                    "values": st.lists(scalars, max_size=3),
                    "default": scalars,
                }
            ),
            max_size=3,
        ),
        "fixed": st.dictionaries(st.text(max_size=6), scalars, max_size=2),
        "method": near({"name": st.text(max_size=6), "param": st.text(max_size=6)}),
        "ablations": st.lists(near({"name": st.text(max_size=6), "param": st.text(max_size=6)}), max_size=2),
    }
)
yaml_text = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
    st.sampled_from(
        [
            "a: &a [1]\nb: *a\n",
            "!!python/object:os.system ['true']\n",
            "- [\n",
            "{a: 1, a: 2}",
            "name: !!binary aGk=\n",
            "\t\tname: x\n",
            "---\n---\n",
            "%YAML 9.9\n---\nx: 1\n",
        ]
    ),
)
