"""semcat's Spark bridge: PySpark jobs write Parquet and commit files + statistics to the catalog
atomically; reads see exactly a snapshot's files.

    from spark_bridge import Bridge, local_session
    bridge = Bridge(local_session(), "data")
    bridge.write(df, "wh.sales.orders", partition_by=["d"], author="etl", message="load")
"""

from __future__ import annotations

from spark_bridge.bridge import Bridge, BridgeTransaction, CommitResult
from spark_bridge.errors import BridgeError, CommitFailedError, CommitUnknownError, SchemaEvolutionError
from spark_bridge.plan import TableWrite
from spark_bridge.session import local_session

__all__ = ["Bridge", "BridgeTransaction", "CommitResult", "TableWrite", "BridgeError", "CommitFailedError",
           "CommitUnknownError", "SchemaEvolutionError", "local_session"]
