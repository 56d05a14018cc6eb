"""The exponential-weights family: EG, BOA, SAEW and its calibration."""
