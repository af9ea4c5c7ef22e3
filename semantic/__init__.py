"""semcat semantic layer."""
