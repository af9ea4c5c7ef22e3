"""semcat eval layer."""
