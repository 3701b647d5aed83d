"""Training of the support scorer's attention model (`librarian/answers/support_head.py`), in torch.

The torch module mirrors `SupportHead`'s numpy forward layer for layer; `export` copies its weights
into a `SupportHead`, and every figure `bench/support_scorer.py` prints is computed by that numpy
forward, so what is measured is what ships. Needs the `train` extra (torch); the product never
imports this file.

Early stopping without peeking: each training set keeps one eighth of its claims (grouped the same
way as the outer folds) as a validation split; the epoch with the best validation AUC is kept, and
the threshold is the one keeping the target recall of that split's backed pairs (out of sample).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from torch import nn

from librarian.answers.support import FEATURES, PairInputs, SupportScorer
from librarian.answers.support_head import SupportHead

DIMENSION = 384


@dataclass(frozen=True)
class TrainingConfig:
    hidden: int = 32
    epochs: int = 12
    batch_size: int = 64
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    dropout: float = 0.1
    seed: int = 0


class PaddedTexts:
    """Each distinct text's token vectors and rarity weights, padded once, so a batch is an index."""

    def __init__(self, inputs: PairInputs) -> None:
        longest = max((len(t) for t in inputs.tokens), default=1)
        n = len(inputs.tokens)
        self.tokens = torch.zeros((n, longest, DIMENSION))
        self.mask = torch.zeros((n, longest))
        self.weights = torch.zeros((n, longest))
        self.lengths = np.array([len(t) for t in inputs.tokens])
        for i, (vectors, weights) in enumerate(zip(inputs.tokens, inputs.token_weights, strict=True)):
            self.tokens[i, : len(vectors)] = torch.from_numpy(np.asarray(vectors, dtype=np.float32))
            self.mask[i, : len(vectors)] = 1.0
            self.weights[i, : len(vectors)] = torch.from_numpy(np.asarray(weights, dtype=np.float32))

    def take(self, index: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        width = max(1, int(self.lengths[index].max()))
        return self.tokens[index, :width], self.mask[index, :width], self.weights[index, :width]


class TorchHead(nn.Module):
    """`SupportHead` in torch (dropout only while training)."""

    def __init__(self, features: int, config: TrainingConfig) -> None:
        super().__init__()
        self.temperature = nn.Parameter(torch.tensor(10.0))
        self.forward_compare = nn.Linear(4 * DIMENSION, config.hidden)
        self.reverse_compare = nn.Linear(4 * DIMENSION, config.hidden)
        self.dropout = nn.Dropout(config.dropout)
        self.out = nn.Linear(4 * config.hidden + features, 1)

    def side(self, own, own_mask, own_weights, other, other_mask, compare: nn.Linear) -> torch.Tensor:
        sims = torch.einsum("bid,bjd->bij", own, other) * self.temperature
        aligned = torch.softmax(sims.masked_fill(other_mask[:, None, :] == 0, -1e4), dim=-1) @ other
        pairs = torch.cat([own, aligned, own * aligned, (own - aligned).abs()], dim=-1)
        compared = torch.relu(compare(self.dropout(pairs)))
        pool = own_weights * own_mask
        pool = torch.where(pool.sum(1, keepdim=True) > 0, pool, own_mask)
        mean = ((pool / pool.sum(1, keepdim=True).clamp_min(1e-9))[..., None] * compared).sum(1)
        top = compared.masked_fill(own_mask[..., None] == 0, -1e4).max(1).values
        return torch.cat([mean, top], dim=-1)

    def forward(self, claim, passage, features: torch.Tensor) -> torch.Tensor:
        a, a_mask, a_weights = claim
        b, b_mask, b_weights = passage
        pooled = [
            self.side(a, a_mask, a_weights, b, b_mask, self.forward_compare),
            self.side(b, b_mask, b_weights, a, a_mask, self.reverse_compare),
            features,
        ]
        return self.out(torch.cat(pooled, dim=-1)).squeeze(-1)


def export(model: TorchHead, mean: np.ndarray, scale: np.ndarray, threshold: float) -> SupportHead:
    def array(t: torch.Tensor) -> np.ndarray:
        return t.detach().numpy().astype(np.float32).copy()

    return SupportHead(
        feature_names=FEATURES,
        feature_mean=mean.astype(np.float32),
        feature_scale=scale.astype(np.float32),
        temperature=float(model.temperature.detach()),
        forward_weight=array(model.forward_compare.weight),
        forward_bias=array(model.forward_compare.bias),
        reverse_weight=array(model.reverse_compare.weight),
        reverse_bias=array(model.reverse_compare.bias),
        out_weight=array(model.out.weight)[0],
        out_bias=float(model.out.bias.detach()[0]),
        threshold=threshold,
    )


def head_scores(head: SupportHead, inputs: PairInputs, rows: np.ndarray) -> np.ndarray:
    """The shipped numpy forward's probabilities for the pairs `rows` (no rule)."""
    return SupportScorer(head=head).model_scores(inputs, rows)


def recall_threshold(labels: np.ndarray, scores: np.ndarray, recall: float) -> float:
    """The highest threshold that keeps `recall` of the backed pairs."""
    backed = np.sort(scores[labels == 1])
    return float(backed[int(np.floor((1.0 - recall) * len(backed)))])


class Trainer:
    def __init__(self, inputs: PairInputs, labels: np.ndarray, config: TrainingConfig) -> None:
        torch.set_num_threads(2)
        self.inputs, self.labels, self.config = inputs, labels, config
        self.texts = PaddedTexts(inputs)

    def _batches(self, rows: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """Shuffled batches of pairs of similar passage length (less padding, same distribution)."""
        order = rng.permutation(rows)
        size = self.config.batch_size
        batches = []
        for start in range(0, len(order), size * 8):
            block = order[start : start + size * 8]
            block = block[np.argsort(self.texts.lengths[self.inputs.passage_index[block]], kind="stable")]
            batches.extend(block[i : i + size] for i in range(0, len(block), size))
        rng.shuffle(batches)
        return batches

    def _logits(
        self, model: TorchHead, rows: np.ndarray, mean: np.ndarray, scale: np.ndarray
    ) -> torch.Tensor:
        features = torch.from_numpy(((self.inputs.features[rows] - mean) / scale).astype(np.float32))
        return model(
            self.texts.take(self.inputs.claim_index[rows]),
            self.texts.take(self.inputs.passage_index[rows]),
            features,
        )

    def train(
        self, rows: np.ndarray, validation: np.ndarray | None, epochs: int, recall: float
    ) -> tuple[SupportHead, int]:
        """Fit on `rows`; with a validation split, keep the best epoch by its AUC and take the threshold
        from it. Returns the exported head and the epoch count used."""
        config = self.config
        torch.manual_seed(config.seed)
        rng = np.random.default_rng(config.seed)
        x = self.inputs.features[rows]
        mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
        model = TorchHead(len(FEATURES), config)
        self._start_from_logistic(model, (x - mean) / scale, self.labels[rows])
        optimiser = torch.optim.AdamW(
            model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
        )
        loss = nn.BCEWithLogitsLoss()
        best: tuple[float, int, dict] = (-1.0, epochs, {})
        for epoch in range(1, epochs + 1):
            model.train()
            for batch in self._batches(rows, rng):
                optimiser.zero_grad()
                target = torch.from_numpy(self.labels[batch].astype(np.float32))
                loss(self._logits(model, batch, mean, scale), target).backward()
                optimiser.step()
            if validation is not None:
                model.eval()
                with torch.no_grad():
                    scores = self._logits(model, validation, mean, scale).numpy()
                auc = roc_auc_score(self.labels[validation], scores)
                if auc > best[0]:
                    best = (auc, epoch, {k: v.clone() for k, v in model.state_dict().items()})
        if validation is not None:
            model.load_state_dict(best[2])
        model.eval()
        head = export(model, mean, scale, threshold=0.5)
        if validation is not None:
            threshold = recall_threshold(
                self.labels[validation], head_scores(head, self.inputs, validation), recall
            )
            head = export(model, mean, scale, threshold=threshold)
        return head, best[1]

    @staticmethod
    def _start_from_logistic(model: TorchHead, standardised: np.ndarray, labels: np.ndarray) -> None:
        """Start the output layer at the logistic regression over FEATURES, with the attention part
        weighing nothing: training begins at the linear model and only has to learn what it adds."""
        from sklearn.linear_model import LogisticRegression

        linear = LogisticRegression(C=1.0, max_iter=2000).fit(standardised, labels)
        features = len(FEATURES)
        with torch.no_grad():
            model.out.weight.zero_()
            model.out.weight[0, -features:] = torch.from_numpy(linear.coef_[0].astype(np.float32))
            model.out.bias.fill_(float(linear.intercept_[0]))

    def train_with_validation(
        self, rows: np.ndarray, groups: np.ndarray, recall: float
    ) -> tuple[SupportHead, int]:
        """Hold out one eighth of `rows` (by group) for early stopping and the threshold."""
        inner, validation = next(GroupKFold(n_splits=8).split(rows, self.labels[rows], groups[rows]))
        return self.train(rows[inner], rows[validation], self.config.epochs, recall)
