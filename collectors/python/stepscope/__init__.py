# SPDX-License-Identifier: MIT
"""stepscope: the Python collector for the stepscoped profiler daemon.

    import stepscope
    client = stepscope.attach(job="resnet50")       # or stepscope.Client(...)
    for batch in loader:
        with client.step(samples=len(batch)):
            with client.phase("forward"):
                ...

Standard library only; importing it imports no ML framework (framework hooks will live in
submodules such as ``stepscope.torch`` and import their framework themselves). See docs/PYTHON.md.
"""
import threading as _threading

from ._client import VERSION as __version__
from ._client import Client
from ._env import default_socket_path

__all__ = ["Client", "attach", "get_client", "default_socket_path", "__version__"]

_default = None
_default_lock = _threading.Lock()


def attach(**kwargs):
    """The process-wide default client, made with kwargs (see Client) on the first call. Later
    calls return the same client (kwargs are then ignored) unless it was closed."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Client(**kwargs)
        return _default


def get_client():
    """The process-wide default client; made from the environment if attach() was not called."""
    c = _default
    if c is not None and not c.closed:
        return c
    return attach()
