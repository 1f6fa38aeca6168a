"""Text leakage: what an adversary reads back from a language model's update, exactly or by optimisation.

- :mod:`.observation`: what a view holds (the update's named tensors, the visible coordinates, public facts).
- :mod:`.span_attack`: the exact span attack of the DAGER family (Petrov et al., NeurIPS 2024): the first
  attention layer's gradient spans that layer's inputs, so a vocabulary test recovers the tokens at each
  position, and the second layer's span orders them into sequences.
- :mod:`.baseline`: an optimisation baseline (TAG / LAMP style: soft tokens, gradient matching), its restarts
  in one vmapped pass (:mod:`.baseline_batch`) or one after another (:mod:`.baseline_serial`).
- :mod:`.views`: the observation each protection hands each adversary.

Every attack reads only :class:`~.observation.TextObservation` and returns a typed result: when an assumption of
the attack does not hold, the result says which and why, and recovers nothing it cannot justify.
"""
