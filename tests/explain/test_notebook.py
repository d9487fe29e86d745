"""docs/tutorial.ipynb runs from top to bottom, offline, without an error (executed with nbclient)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "tutorial.ipynb"


@pytest.mark.slow
def test_tutorial_notebook_runs_without_error(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 10, f"expected the topics' figures in the outputs, got {len(images)}"


def test_the_stored_notebook_carries_its_outputs():
    """A reader browsing the repository sees the figures and numbers, not only code (the file is stored executed,
    without stderr streams that would carry a machine's paths)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 10 and not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"]
