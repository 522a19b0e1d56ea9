"""``python -m kerneltracer.worker JOB.json``."""

import sys

from kerneltracer.worker.main import main

if __name__ == "__main__":  # spawn-based frameworks (vLLM) re-import the main module
    sys.exit(main(sys.argv[1:]))
