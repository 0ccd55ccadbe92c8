"""Containers: host kind and passthrough, images per variant, the docker run spec and job."""
