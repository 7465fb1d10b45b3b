"""Hostile YAML: alias bombs, huge and deep documents get a short, clear error (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import MAX_YAML_BYTES, load_yaml
from engine.errors import ConfigError
from silva.cli.main import main

BOMB = (
    "a: &a ["
    + ",".join(['"lol"'] * 9)
    + "]\n"
    + "".join(f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefg", "bcdefgh"))
    + "name: *h\n"
)


def test_alias_bomb_refused_with_a_short_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 1000
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "aliases (*name) expand to more than" in err and len(err) < 400


def test_moderate_alias_use_is_fine_and_bad_values_are_trimmed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Expands to ~300 kB: under the limit, so it loads; the invalid value is echoed in 200 chars.
    small = (
        "a: &a ["
        + ",".join(['"lol"'] * 9)
        + "]\n"
        + "".join(f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcd", "bcde"))
        + "name: *e\n"
    )
    path = tmp_path / "run.yaml"
    path.write_text(small)
    assert isinstance(load_yaml(path)["name"], list)
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "name = [[[[[" in err and len(err) < 2000


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
        ("a: [unclosed\n" + "x" * 100_000, "not valid YAML"),
        ("x: 1\n" + "#" * MAX_YAML_BYTES, "a Silva YAML file may hold at most"),
    ],
)
def test_bad_documents(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected) as info:
        load_yaml(path)
    assert len(str(info.value)) < 1000


def test_not_utf8_and_directory(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_yaml(tmp_path / "b.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_yaml(tmp_path)


def test_many_errors_are_counted_not_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("name: t\ntemplate: x\n" + "".join(f"junk{i}: 1\n" for i in range(500)))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "more problem(s)" in err and err.count("unknown field") <= 20
