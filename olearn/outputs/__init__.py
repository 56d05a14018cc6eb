"""The progress table and summary, predictions, audit, metrics, learning curves."""
