"""semcat spark_bridge layer."""
