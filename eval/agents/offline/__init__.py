"""The offline agent (HARNESS.md, Agents): a deterministic catalog reader with generic rules."""

from eval.agents.offline.agent import OfflineAgent

__all__ = ["OfflineAgent"]
