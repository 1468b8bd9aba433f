"""What the evaluator `senpai init` writes prints: the same kind of quantity as the train metric.

The verifier judges the holdout metric by `holdout.direction`, and `senpai init` writes that
direction from the quantity the evaluator computes, never from the train metric's name: an
evaluator that printed a classifier's accuracy under `direction: minimize` (because the train
metric was a loss) would merge candidates that classify worse. So init picks the quantity from the
train metric's name and the kind of model the script fits (`guess`), asks when it cannot tell, and
writes both the evaluator's code for it and its direction.
"""

import ast
import re
from dataclasses import dataclass
from typing import Literal

_CLASSIFIERS = {"LogisticRegression", "LogisticRegressionCV", "SVC", "LinearSVC", "NuSVC", "GaussianNB", "MultinomialNB"}
_CLASSIFIERS |= {"BernoulliNB", "ComplementNB", "Perceptron", "load_iris", "load_wine", "load_breast_cancer", "load_digits"}
_REGRESSORS = {"LinearRegression", "Ridge", "RidgeCV", "Lasso", "LassoCV", "ElasticNet", "ElasticNetCV", "SVR", "LinearSVR"}
_REGRESSORS |= {"NuSVR", "BayesianRidge", "HuberRegressor", "load_diabetes", "fetch_california_housing"}


@dataclass(frozen=True)
class Quantity:
    """One quantity the evaluator can print: `name` (its key is `holdout_<name>`), which way is
    better, the kind of model it scores, a phrase for people, and the body of the evaluator's
    `score(model, x, y) -> float` (`imports` above it)."""

    name: str
    direction: Literal["maximize", "minimize"]
    model: Literal["classifier", "regressor"]
    what: str
    imports: str
    body: str

    @property
    def metric(self) -> str:
        return f"holdout_{self.name}"

    @property
    def needs(self) -> str:
        """The estimator method the evaluator calls."""
        return "predict_proba" if "predict_proba" in self.body else "predict"


QUANTITIES = {
    q.name: q
    for q in (
        Quantity(
            "accuracy", "maximize", "classifier", "the fraction of examples classified right",
            "from sklearn.metrics import accuracy_score", "return float(accuracy_score(y, model.predict(x)))",
        ),
        Quantity(
            "log_loss", "minimize", "classifier", "the log loss of the predicted class probabilities, in nats",
            "from sklearn.metrics import log_loss",
            "return float(log_loss(y, model.predict_proba(x), labels=model.classes_))",
        ),
        Quantity(
            "f1", "maximize", "classifier", "the F1 score, macro-averaged over the classes",
            "from sklearn.metrics import f1_score", 'return float(f1_score(y, model.predict(x), average="macro"))',
        ),
        Quantity(
            "auc", "maximize", "classifier", "the area under the ROC curve (one class against the rest)",
            "from sklearn.metrics import roc_auc_score",
            "proba = model.predict_proba(x)\nscores = proba[:, 1] if proba.shape[1] == 2 else proba\n"
            'return float(roc_auc_score(y, scores, multi_class="ovr", labels=model.classes_))',
        ),
        Quantity(
            "mse", "minimize", "regressor", "the mean squared error, in the label's units squared",
            "from sklearn.metrics import mean_squared_error", "return float(mean_squared_error(y, model.predict(x)))",
        ),
        Quantity(
            "rmse", "minimize", "regressor", "the root mean squared error, in the label's units",
            "from sklearn.metrics import mean_squared_error",
            "return float(np.sqrt(mean_squared_error(y, model.predict(x))))",
        ),
        Quantity(
            "mae", "minimize", "regressor", "the mean absolute error, in the label's units",
            "from sklearn.metrics import mean_absolute_error", "return float(mean_absolute_error(y, model.predict(x)))",
        ),
        Quantity(
            "r2", "maximize", "regressor", "the coefficient of determination R^2 (1 is perfect)",
            "from sklearn.metrics import r2_score", "return float(r2_score(y, model.predict(x)))",
        ),
    )
}  # fmt: skip


def estimator(tree: ast.Module | None) -> Literal["classifier", "regressor"] | None:
    """Whether the script fits a classifier or a regressor, from the names it uses (`...Classifier`,
    `LogisticRegression`, `load_iris`; `...Regressor`, `Ridge`, `load_diabetes`); None if it names
    neither or both."""
    if tree is None:
        return None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name.split(".")[-1] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    classifier = any(n.endswith("Classifier") or n in _CLASSIFIERS for n in names)
    regressor = any(n.endswith("Regressor") or n in _REGRESSORS for n in names)
    return "classifier" if classifier and not regressor else "regressor" if regressor and not classifier else None


def guess(metric: str, model: str | None) -> str | None:
    """The QUANTITIES name the evaluator should print for train metric `metric` of a `model`
    ("classifier", "regressor" or None: unknown): one the name states (`val_accuracy`, `rmse`,
    `val_f1`, `nll`), else for a generic `loss` (or `score`) the model's usual one (a classifier's
    log loss (accuracy), a regressor's MSE (R^2)); None if it cannot tell (`val_loss` of an unknown
    model, `perplexity`, `bleu`): then init asks."""
    words = [w for w in re.split(r"[^a-z0-9]+", metric.lower()) if w]
    stated = {"acc": "accuracy", "accuracy": "accuracy", "f1": "f1", "auc": "auc", "rocauc": "auc", "r2": "r2"}
    stated |= {"mse": "mse", "rmse": "rmse", "mae": "mae", "logloss": "log_loss", "nll": "log_loss"}
    stated |= {"xent": "log_loss", "crossentropy": "log_loss"}
    found = {stated[w] for w in words if w in stated}
    if {"log", "loss"} <= set(words) or {"cross", "entropy"} <= set(words):
        found.add("log_loss")
    if len(found) == 1:
        name = found.pop()
        return name if model is None or QUANTITIES[name].model == model else None
    if found:
        return None
    if any(w == "loss" or w.endswith("loss") for w in words):
        return {"classifier": "log_loss", "regressor": "mse"}.get(model or "")
    if "score" in words:
        return {"classifier": "accuracy", "regressor": "r2"}.get(model or "")
    return None


def unclear(metric: str, model: str | None) -> str:
    """Why `guess(metric, model)` found nothing, as a sentence, and what to pick from."""
    named = guess(metric, None)
    if named and model:
        why = f"{metric} names {named}, a {QUANTITIES[named].model}'s quantity, but the script fits a {model}"
    elif guess(metric, "classifier") and model is None:
        why = f"{metric} could be a classifier's or a regressor's, and init cannot tell which the script fits"
    else:
        why = f"{metric} names no quantity init knows"
    kinds = {m: ", ".join(q.name for q in QUANTITIES.values() if q.model == m) for m in ("classifier", "regressor")}
    return f"{why}; pick what the evaluator prints: {kinds['classifier']} (a classifier) or {kinds['regressor']} (a regressor)"
