"""The gate's default tolerances, alone so that the CLI can show them without importing the gate."""

DEFAULT_TOLERANCE = 0.02  # absolute, on fractions (nDCG, recall, citation precision, rates)
DEFAULT_LATENCY_TOLERANCE = 1.0  # relative: p50 may take up to twice as long ...
LATENCY_SLACK_MS = 100.0  # ... and a slow-down under this many milliseconds never counts
