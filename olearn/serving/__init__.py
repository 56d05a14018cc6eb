"""The prediction server (--daemon)."""
