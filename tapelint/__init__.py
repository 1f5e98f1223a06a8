"""tapelint: find double-backward and graph-retention hazards in PyTorch code."""

__version__ = "0.1.0"
