"""Held-out suite B: agents, a fake OpenAI-protocol model server, and the case harness."""
