"""roce-fabric: provision and validate RoCEv2 lossless Ethernet fabrics for GPU clusters."""

__version__ = "0.1.0"
