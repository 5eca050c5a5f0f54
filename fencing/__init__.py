"""The running reconcile's fence (its lease and deadline), visible to every I/O layer: see
:mod:`fencing.fence`. The lowest layer of the house: it imports nothing of ours."""

from fencing.fence import DeadlineExceeded, Fence, FenceError, LeaseLost, check, current, fenced, timeout

__all__ = ["DeadlineExceeded", "Fence", "FenceError", "LeaseLost", "check", "current", "fenced", "timeout"]
