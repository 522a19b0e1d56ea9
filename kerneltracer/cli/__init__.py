"""The ``kerneltracer`` command line. Heavy imports happen inside commands, never here."""
