"""This machine: fingerprint, NVIDIA and AMD readers, the torch probe, the doctor."""
