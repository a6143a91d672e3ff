"""FSA: FlashAttention inside one systolic array (see README.md).

``fsa.scaled_dot_product_attention`` (:mod:`fsa.api`) is torch's attention
call run on FSA; it is loaded on first use, so ``import fsa`` stays light
(the hardware generator imports ``fsa.hw`` without the software stack).
"""

__all__ = ["scaled_dot_product_attention", "AttentionStats"]


def __getattr__(name: str):
    if name in __all__:
        from fsa import api

        return getattr(api, name)
    raise AttributeError(f"module 'fsa' has no attribute {name!r}")
