"""Silva's template figure script (offline writer): runs in the sandbox on figure_data.json and
draws the paper's compound figures into figures/. Reads nothing else, writes nothing else."""

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = ["#225e3c", "#4c72b0", "#dd8452", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]


def short(label, width=22):
    label = label.replace(" (best of ", " (").replace("ablation: ", "abl: ")
    return label if len(label) <= width else label[: width - 1] + "…"


def bars(ax, groups, metric, names):
    labels = [g for g in groups if metric in groups[g]]
    for i, label in enumerate(labels):
        s = groups[label][metric]
        ax.bar(i, s["mean"], yerr=s["std"], capsize=4, color=COLORS[i % len(COLORS)], alpha=0.85, width=0.7)
        xs = [i + (k - (len(s["values"]) - 1) / 2) * 0.08 for k in range(len(s["values"]))]
        ax.scatter(xs, s["values"], s=10, color="black", zorder=3, linewidths=0)
    ax.set_xticks(
        range(len(labels)), [short(names.get(g, g)) for g in labels], rotation=25, ha="right", fontsize=7
    )
    lows = [
        min([groups[g][metric]["mean"] - groups[g][metric]["std"]] + groups[g][metric]["values"])
        for g in labels
    ]
    highs = [
        max([groups[g][metric]["mean"] + groups[g][metric]["std"]] + groups[g][metric]["values"])
        for g in labels
    ]
    span = max(highs) - min(lows) or abs(max(highs)) or 1.0
    ax.set_ylim(min(lows) - 0.25 * span, max(highs) + 0.15 * span)
    ax.grid(axis="y", alpha=0.3)
    ax.tick_params(axis="y", labelsize=7)


def main():
    data = json.load(open("figure_data.json"))
    os.makedirs("figures", exist_ok=True)
    primary = data["primary"]
    stages = [s for s in data["stages"] if s["groups"]]
    fig, axes = plt.subplots(1, len(stages), figsize=(2.3 * len(stages) + 0.6, 2.8), squeeze=False)
    for ax, s in zip(axes[0], stages):
        bars(ax, s["groups"], primary, data.get("names", {}))
        ax.set_title(s["stage"], fontsize=9)
    axes[0][0].set_ylabel(primary + " (mean ± sd, dots: seeds)", fontsize=8)
    fig.tight_layout()
    fig.savefig("figures/fig_stages.png", dpi=150)
    plt.close(fig)
    main_stage = next((s for s in stages if s["stage"] == data.get("main_stage")), stages[-1])
    metrics = [m for m in data["metrics"] if any(m in g for g in main_stage["groups"].values())]
    fig, axes = plt.subplots(1, len(metrics), figsize=(2.4 * len(metrics) + 0.6, 2.8), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        bars(ax, main_stage["groups"], m, data.get("names", {}))
        ax.set_title(m + (" (↓)" if data["directions"].get(m) == "minimize" else " (↑)"), fontsize=9)
    fig.tight_layout()
    fig.savefig("figures/fig_main.png", dpi=150)
    plt.close(fig)


main()
