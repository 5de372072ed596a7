"""Whether results are torch tensors or NumPy arrays."""

import importlib.util


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def want_torch(as_torch):
    """`as_torch` None: torch when it is installed."""
    if as_torch is None:
        return torch_available()
    if as_torch and not torch_available():
        raise ImportError("torch is not installed: pip install torch, or pass as_torch=False")
    return bool(as_torch)
