"""Loads weft's asyncio companion (weft_asyncio.py) at interpreter start,
then the sitecustomize this one shadows, if any."""

import sys

try:
    import weft_asyncio  # noqa: F401
except Exception:
    pass


def _chain():
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)


try:
    _chain()
except Exception:
    pass
