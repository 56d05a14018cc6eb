"""Small synthetic examples, and the learner kernel run on them directly (no parsing)."""
import numpy as np

from olearn.engine.learner import OnlineLearner


def random_examples(seed=3, n=300, bits=8):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=1 << bits)
    examples = []
    for _ in range(n):
        idx = rng.choice(1 << bits, size=rng.integers(1, 8), replace=False)
        val = rng.normal(scale=rng.choice([0.1, 1.0, 10.0]), size=len(idx))
        label = float(truth[idx] @ val + rng.normal(scale=0.1)) if rng.random() > 0.1 else None
        imp = float(rng.choice([1.0, 1.0, 0.5, 2.0, 0.0]))
        examples.append((label, imp, list(zip(idx.tolist(), val.tolist()))))
    return examples


def kernel_predictions(examples, config, learner=None):
    """The kernel's output for each example."""
    return kernel_outputs(examples, config, learner)[:, 0]


def kernel_outputs(examples, config, learner=None):
    """The kernel's prediction array (output, raw; with --oaa, the classes' scores after the
    two columns of their first class's number: ``OnlineLearner.scores`` picks them)."""
    from olearn.data.batch import ExampleBatch
    offsets = np.cumsum([0] + [len(f) for _, _, f in examples])
    numbers = np.array([[np.nan if y is None else y, imp, 0.0] for y, imp, _ in examples],
                       dtype=np.float32)
    index = np.array([j for _, _, f in examples for j, *_ in f], dtype=np.uint32)
    value = np.array([x for _, _, f in examples for _, x, *_ in f], dtype=np.float32)
    # a feature may name its namespace third (else namespace 0)
    namespace = np.array([(*rest, 0)[0] for _, _, f in examples for _, _, *rest in f],
                         dtype=np.uint8)
    empty = np.zeros((0, 4), dtype=np.int64)
    batch = ExampleBatch(np.zeros(0, np.uint8), "", 0, numbers, np.full((len(examples), 2), -1),
                         np.zeros(len(examples), np.int64), offsets, index, value,
                         namespace, empty, empty, 0, 0)
    learner = learner or OnlineLearner(config)
    preds = learner.new_predictions(batch)
    learner.learn(batch, preds)
    return preds
