"""Interchange with other semantic tools (issue 14): dbt projects, Open Semantic Interchange (OSI)
YAML and Snowflake Cortex Analyst semantic models. Imports are idempotent, write one commit of
annotations with provenance source `import` (the file and its sha256 in the note), list what they
could not map, and reject bad input before writing anything (`InterchangeError`, naming the file and
the place)."""

from semantic.interop._common import ImportResult, InterchangeError, Unmapped
from semantic.interop.cortex import import_cortex
from semantic.interop.dbt import import_dbt
from semantic.interop.osi import export_osi, import_osi

__all__ = ["import_cortex", "import_dbt", "import_osi", "export_osi", "ImportResult", "InterchangeError", "Unmapped"]
