"""AttentionTrace: the one data type that capture produces and analysis and drawing consume.

A trace is a list of :class:`AttentionRecord`, one per attention call in call order, plus free-form
metadata (model name, text, ...).  It saves to one safetensors file whose header carries the JSON
metadata; loading never unpickles anything.

The package keeps each job in its own module: ``_types`` the two types, their views and the assembling of a
generation's decoding steps; ``_file`` the file format (:meth:`AttentionTrace.save`, :meth:`AttentionTrace.load`);
``_hf`` the conversion of Hugging Face outputs (:meth:`AttentionTrace.from_hf_outputs`).
"""

from ._types import KINDS, STORED_DTYPES, AttentionRecord, AttentionTrace, Kind, StoredDtype, as_kind

__all__ = ["KINDS", "STORED_DTYPES", "AttentionRecord", "AttentionTrace", "Kind", "StoredDtype", "as_kind"]
