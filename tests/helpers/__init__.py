"""What several test modules share: float64 references, tiny models and data, the CLI-process steps.
Imported as ``helpers.<module>`` (pytest puts tests/ on the path: ``pythonpath`` in pyproject.toml)."""
