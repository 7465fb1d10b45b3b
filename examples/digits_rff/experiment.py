"""Do random Fourier features help a linear classifier on handwritten digits?

Silva file contract: read silva_params.json, write results.json (metrics and artifacts).
"""

import json
import time

from sklearn.datasets import load_digits
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

spec = json.load(open("silva_params.json"))
p, seed = spec["params"], spec["seed"] or 0

X, y = load_digits(return_X_y=True)
# The test split is fixed across seeds so every node is scored on the same held-out digits;
# the seed moves the train/validation split and the random features.
X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=0.25, random_state=1234, stratify=y)
X_train, X_val, y_train, y_val = train_test_split(
    X_rest, y_rest, test_size=0.25, random_state=seed, stratify=y_rest
)

steps = []
if not p["ablate_scaling"]:
    steps.append(StandardScaler())
if p["use_rff"] and not p["ablate_rff"]:
    steps.append(RBFSampler(gamma=p["gamma"], n_components=p["n_components"], random_state=seed))
steps.append(LogisticRegression(C=p["C"], max_iter=p["max_iter"]))
model = make_pipeline(*steps)

start = time.perf_counter()
model.fit(X_train, y_train)
train_time = time.perf_counter() - start

results = {
    "metrics": {
        "val_accuracy": float(model.score(X_val, y_val)),
        "test_accuracy": float(model.score(X_test, y_test)),
        "train_time_s": train_time,
    },
    "notes": f"{len(steps)} pipeline steps, {X_train.shape[0]} training digits",
}
print(json.dumps(results["metrics"]))
json.dump(results, open("results.json", "w"), indent=2)
