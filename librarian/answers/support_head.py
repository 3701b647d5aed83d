"""The support scorer's learned part: a small attention model over MiniLM's token vectors, run in numpy.

Why a learned interaction and not only hand-made signals: a sentence of the same document can share
the claim's topic and most of its words yet not state what the claim states (a methods sentence, a
background sentence). Decomposable attention (Parikh et al., 2016) compares each claim token with
the passage tokens it attends to, so it can notice that the claim's relation ("reduces", "is
associated with") has no counterpart, which averaged similarities miss. The token vectors come from
the bundled MiniLM, frozen; only the comparison (one layer per direction) and the final mix are
trained, about 100k weights, by `python bench/support_scorer.py --write` on SciFact's rationales
(README "Citations" has the out-of-sample figures). Inference needs numpy alone; training needs torch
(the `train` extra), which the product never imports.

The model, per (claim, passage) pair, in both directions (claim→passage and passage→claim):
    attention  a_i attends to the other side's tokens with softmax(temperature · cosine)
    compare    v_i = relu(W · [a_i, b̃_i, a_i ⊙ b̃_i, |a_i − b̃_i|] + c)
    pool       rarity-weighted mean of v_i (stop words weigh 0), and max of v_i
    score      sigmoid(w · [pools of both directions, standardised FEATURES] + bias)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

WEIGHTS_FILE = Path(__file__).resolve().parent / "assets" / "support_head.npz"


def _softmax_rows(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class SupportHead:
    """Weights of one trained model; `threshold` is the score that keeps 80% of backed pairs out of
    sample (chosen on the out-of-fold scores of the run that wrote the file)."""

    feature_names: tuple[str, ...]
    feature_mean: np.ndarray
    feature_scale: np.ndarray
    temperature: float
    forward_weight: np.ndarray  # (hidden, 4 · 384): claim tokens compared with what they attend to
    forward_bias: np.ndarray
    reverse_weight: np.ndarray  # the same from the passage's side
    reverse_bias: np.ndarray
    out_weight: np.ndarray  # (4 · hidden + len(feature_names),)
    out_bias: float
    threshold: float

    @classmethod
    def load(cls, path: Path = WEIGHTS_FILE) -> SupportHead:
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        return cls(
            feature_names=tuple(str(n) for n in arrays["feature_names"]),
            feature_mean=arrays["feature_mean"].astype(np.float32),
            feature_scale=arrays["feature_scale"].astype(np.float32),
            temperature=float(arrays["temperature"]),
            forward_weight=arrays["forward_weight"].astype(np.float32),
            forward_bias=arrays["forward_bias"].astype(np.float32),
            reverse_weight=arrays["reverse_weight"].astype(np.float32),
            reverse_bias=arrays["reverse_bias"].astype(np.float32),
            out_weight=arrays["out_weight"].astype(np.float32),
            out_bias=float(arrays["out_bias"]),
            threshold=float(arrays["threshold"]),
        )

    def save(self, path: Path) -> None:
        np.savez_compressed(
            path,
            feature_names=np.array(self.feature_names),
            feature_mean=self.feature_mean,
            feature_scale=self.feature_scale,
            temperature=np.float32(self.temperature),
            forward_weight=self.forward_weight,
            forward_bias=self.forward_bias,
            reverse_weight=self.reverse_weight,
            reverse_bias=self.reverse_bias,
            out_weight=self.out_weight,
            out_bias=np.float32(self.out_bias),
            threshold=np.float32(self.threshold),
        )

    def _side(
        self,
        own: np.ndarray,
        own_weights: np.ndarray,
        other: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray,
    ) -> np.ndarray:
        """Compare each of `own`'s tokens with its soft alignment in `other`; pool to 2 · hidden values."""
        hidden = weight.shape[0]
        if len(own) == 0 or len(other) == 0:
            return np.zeros(2 * hidden, dtype=np.float32)
        aligned = _softmax_rows(self.temperature * (own @ other.T)) @ other
        compared = np.maximum(
            np.concatenate([own, aligned, own * aligned, np.abs(own - aligned)], axis=1) @ weight.T + bias,
            0.0,
        )
        pool = own_weights if own_weights.sum() > 0 else np.ones(len(own), dtype=np.float32)
        return np.concatenate([(pool / pool.sum()) @ compared, compared.max(axis=0)])

    def logit(
        self,
        features: np.ndarray,
        claim_tokens: np.ndarray,
        claim_weights: np.ndarray,
        passage_tokens: np.ndarray,
        passage_weights: np.ndarray,
    ) -> float:
        """The model's logit for one pair: `features` is its FEATURES row, tokens are unit vectors."""
        a = np.asarray(claim_tokens, dtype=np.float32)
        b = np.asarray(passage_tokens, dtype=np.float32)
        wa = np.asarray(claim_weights, dtype=np.float32)
        wb = np.asarray(passage_weights, dtype=np.float32)
        pooled = np.concatenate(
            [
                self._side(a, wa, b, self.forward_weight, self.forward_bias),
                self._side(b, wb, a, self.reverse_weight, self.reverse_bias),
                (np.asarray(features, dtype=np.float32) - self.feature_mean) / self.feature_scale,
            ]
        )
        return float(pooled @ self.out_weight + self.out_bias)
