"""Running and watching processes: the supervisor that starts, watches and ends a worker
tree (orchestrator side), the lifeline that ties a worker's life to its parent's (worker
side), and the shared-memory segments a killed tree leaves behind.

Both sides of the process boundary import it, so it imports nothing of ours and no framework.

All three modules are its face: ``supervisor``, ``lifeline``, ``shm``.
"""

__all__ = ["lifeline", "shm", "supervisor"]
