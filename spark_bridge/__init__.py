"""semcat's Spark bridge: PySpark jobs write Parquet and commit files + statistics to the catalog
atomically; reads see exactly a snapshot's files.

    from spark_bridge import Bridge, local_session
    bridge = Bridge(local_session(), "data")
    bridge.write(df, "wh.sales.orders", partition_by=["d"], author="etl", message="load")
"""

from __future__ import annotations

from .bridge import Bridge, BridgeTransaction, CommitResult
from .errors import BridgeError, CommitFailedError, CommitUnknownError, SchemaEvolutionError
from .plan import TableWrite
from .session import local_session

__all__ = ["Bridge", "BridgeTransaction", "CommitResult", "TableWrite", "BridgeError", "CommitFailedError",
           "CommitUnknownError", "SchemaEvolutionError", "local_session"]
