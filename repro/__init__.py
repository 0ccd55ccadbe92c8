"""repro-matrix: run machine-dependent PyTorch failure reproductions in isolation and build a
driver x runtime x hardware compatibility matrix from their JUnit results.

The package must stay importable without torch: only scenario code running inside a case's
child process (and the fingerprint probe) imports torch.
"""

__version__ = "0.1.0"
