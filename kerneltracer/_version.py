"""The package's version, in a leaf module: code inside kerneltracer reads it from here, since
importing the package root (the public face, which reaches up to the API) from below would
be an arrow back up the layers."""

__version__ = "0.1.0"
