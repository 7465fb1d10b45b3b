"""A section a model's max_tokens cut mid-command is closed before it joins the paper."""

from __future__ import annotations

from writeup.llm_writer import close_groups


def test_a_cut_section_is_closed() -> None:
    cut = "We report \\textbf{accuracy of $\\frac{a}{b} \\begin{itemize}\\item one"
    closed = close_groups(cut)
    assert closed.count("{") - closed.count("\\{") == closed.count("}") - closed.count("\\}")
    assert closed.endswith("\\item one\n\\end{itemize}$}")  # innermost first


def test_stray_closers_go_and_whole_text_stays() -> None:
    assert close_groups("a} b \\} c}") == "a b \\} c"
    whole = "Fine \\emph{text} with $x$ and \\begin{center}y\\end{center}."
    assert close_groups(whole) == whole
