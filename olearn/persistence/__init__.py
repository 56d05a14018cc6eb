"""Model files and readable models."""
