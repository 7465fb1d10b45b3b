"""Small LaTeX papers compiled with latexmk, a run directory they belong to, and a scripted
reviewer, for the review tests. A defective paper plants one defect per integrity check."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from engine import events as ev
from engine.aggregate import AggregationJob
from engine.journal import Journal
from engine.llm.providers.base import ProviderCall
from engine.node import AttemptResult, MetricSpec, MetricValue, Node
from review.paper import PAPERS_DIR

ACCURACY = MetricSpec(name="accuracy", primary=True)
METHOD = [0.91, 0.92, 0.93]  # mean 0.920, sd 0.010
BASELINE = [0.84, 0.85, 0.86]  # mean 0.850, sd 0.010

BIB = """@article{smith2020,
  title = {Random Features for Linear Models},
  author = {Smith, Ada and Jones, Bo},
  journal = {Journal of Learning},
  year = {2020}
}
"""

PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[margin=1in]{geometry}
\usepackage{graphicx}
\title{Filtering Noisy Labels by Loss Helps Linear Classifiers}
\author{Silva Test}
\date{}
\begin{document}
\maketitle
\begin{abstract}
We study small-loss filtering for a linear classifier trained on noisy labels.
\end{abstract}
"""

BODY = r"""\section{Introduction}
Label noise hurts linear classifiers~\cite{smith2020}. We drop the highest-loss samples and
retrain. Figure~\ref{fig:curve} shows the training loss and Figure~\ref{fig:bars} the accuracy.
With a learning rate of 0.1, filtering improves accuracy from 0.850 $\pm$ 0.010 to
0.920 $\pm$ 0.010 over three seeds (92.0\%; Welch t-test, $p < 0.05$).

\begin{figure}[h]
\centering
\includegraphics[width=0.45\linewidth]{figures/curve.png}
\caption{Training loss.}
\label{fig:curve}
\end{figure}

\begin{figure}[h]
\centering
\includegraphics[width=0.45\linewidth]{figures/bars.png}
\caption{Accuracy over seeds.}
\label{fig:bars}
\end{figure}
"""

DEFECTS = r"""
\section{More results}
A second view in Figure~\ref{fig:again} reaches 0.937 accuracy, as shown by~\cite{ghost2024}.
Table sizes are in \texttt{averyveryveryveryveryveryveryveryveryveryveryveryverylongunbreakableidentifier}.

\begin{figure}[h]
\centering
\includegraphics[width=0.45\linewidth]{figures/curve_again.png}
\caption{Training loss again.}
\label{fig:again}
\end{figure}

\begin{figure}[h]
\centering
\includegraphics[width=0.12\linewidth]{figures/tiny.png}
\caption{A thumbnail nobody mentions.}
\label{fig:tiny}
\end{figure}
\clearpage
""" + "\n\n".join(["Filler paragraph that pushes the main text over the page limit. " * 12] * 14)

ENDING = r"""
\bibliographystyle{plain}
\bibliography{references}
\end{document}
"""


def _plots(figures: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([1, 2, 3, 4, 5], [1.0, 0.6, 0.4, 0.3, 0.25], marker="o")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    fig.tight_layout()
    fig.savefig(figures / "curve.png", dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.bar(["baseline", "filtered"], [0.85, 0.92], yerr=[0.01, 0.01], color=["#999999", "#4c72b0"])
    ax.set_ylabel("accuracy")
    fig.tight_layout()
    fig.savefig(figures / "bars.png", dpi=100)
    plt.close(fig)


def write_paper(directory: Path, *, defective: bool) -> Path:
    """A compiled paper (paper.tex, paper.pdf, paper.log) in `directory`; returns the PDF."""
    directory.mkdir(parents=True, exist_ok=True)
    _plots(directory / "figures")
    if defective:
        shutil.copy(directory / "figures" / "curve.png", directory / "figures" / "curve_again.png")
        shutil.copy(directory / "figures" / "bars.png", directory / "figures" / "tiny.png")
        # The thumbnail must not count as a duplicate of bars.png: make it a different plot.
        from PIL import Image, ImageDraw

        img = Image.new("RGB", (400, 300), "white")
        ImageDraw.Draw(img).ellipse((50, 50, 350, 250), outline="black", width=6)
        img.save(directory / "figures" / "tiny.png", dpi=(100, 100))
    (directory / "references.bib").write_text(BIB)
    (directory / "paper.tex").write_text(PREAMBLE + BODY + (DEFECTS if defective else "") + ENDING)
    subprocess.run(
        ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=directory,
        capture_output=True,
        timeout=180,
        check=False,
    )
    pdf = directory / "paper.pdf"
    assert pdf.is_file(), (directory / "paper.log").read_text()[-3000:]
    return pdf


def make_run(run_dir: Path, ideas: dict[str, bool]) -> Path:
    """A run directory with one aggregation node (method vs baseline over three seeds) and a
    paper per idea (`ideas`: idea -> defective)."""
    journal = Journal.open(run_dir)
    journal.record(ev.RunStarted(config={}, metrics=[ACCURACY.model_dump()], stages=["s"]))
    node = journal.add_node(Node(stage="s", kind="aggregation", params={"lr": 0.1}))
    job = AggregationJob(
        node.id,
        1,
        run_dir,
        "filtering",
        [ACCURACY],
        {"filtered": {"accuracy": METHOD}, "baseline": {"accuracy": BASELINE}},
    )
    journal.attempt_started(node.id, 1)
    result: AttemptResult = job.run([])
    journal.attempt_finished(
        node.id,
        1,
        result.model_copy(
            update={"metrics": [MetricValue(name="accuracy", value=sum(METHOD) / 3, direction="maximize")]}
        ),
    )
    journal.log.close()
    for idea, defective in ideas.items():
        write_paper(run_dir / PAPERS_DIR / idea, defective=defective)
    return run_dir


def review_answer() -> dict[str, object]:
    return {
        "summary": "The paper filters high-loss samples before retraining a linear classifier.",
        "strengths": ["simple method", "replicated over seeds"],
        "weaknesses": ["one dataset only"],
        "questions": ["How does the keep ratio matter?"],
        "limitations": ["symmetric noise only"],
        "ethical_concerns": [],
        "soundness": 3,
        "presentation": 3,
        "contribution": 2,
        "overall": 6,
        "confidence": 4,
        "decision": "accept",
    }


META = {
    "summary": "Reviewers find a simple, replicated result on one dataset.",
    "strengths": ["clear method"],
    "weaknesses": ["narrow evaluation"],
    "disagreements": [],
    "soundness": 3,
    "presentation": 3,
    "contribution": 2,
    "overall": 5,
    "confidence": 4,
    "decision": "reject",
}


def scripted_reviewer(call: ProviderCall) -> str:
    """Answers reviews (overall 4 from skeptics, 6 otherwise), reflections and the meta-review."""
    step = call.context.get("review")
    if step == "meta":
        return json.dumps(META)
    answer = review_answer()
    if "skeptical reviewer" in call.messages[0].text:
        answer.update(overall=4, decision="reject")
    if step == "reflect":
        answer["summary"] = "Revised after reflection: " + str(answer["summary"])
    return json.dumps(answer)
