"""The test tier and seed every bench reads from the environment:
``SEED=n`` (default 1) changes the random inputs, ``FULL=1`` runs the long sweeps."""
import os

SEED = int(os.environ.get("SEED", "1"))
FULL = os.environ.get("FULL", "0") not in ("", "0")
