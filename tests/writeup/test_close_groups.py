"""A section a model's max_tokens cut mid-command is closed before it joins the paper."""

from __future__ import annotations

from pathlib import Path

from writeup.figures import Figure
from writeup.llm_writer import close_groups
from writeup.offline import figure_env


def test_a_cut_section_is_closed() -> None:
    cut = "We report \\textbf{accuracy of $\\frac{a}{b} \\begin{itemize}\\item one"
    closed = close_groups(cut)
    assert closed.count("{") - closed.count("\\{") == closed.count("}") - closed.count("\\}")
    assert closed.endswith("\\item one\n\\end{itemize}$}")  # innermost first


def test_stray_closers_go_and_whole_text_stays() -> None:
    assert close_groups("a} b \\} c}") == "a b \\} c"
    whole = "Fine \\emph{text} with $x$ and \\begin{center}y\\end{center}."
    assert close_groups(whole) == whole


def test_a_caption_with_a_blank_line_stays_one_paragraph() -> None:
    """SmolLM2 wrote a caption with a blank line: LaTeX ended the caption there and no PDF came out."""
    tex = figure_env(Figure("fig_main.png", Path("fig_main.png")), "Accuracy by group.\n\n  Bars: means.")
    assert "\\caption{Accuracy by group. Bars: means.}" in tex and "\n\n" not in tex
